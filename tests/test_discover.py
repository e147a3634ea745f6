"""Discovery of the real cabling: beacon frames, candidate NICs, and a real run
in network namespaces (a switch, a hub, a cable, a NIC going nowhere, a NIC that
was down and must be put back down)."""

import itertools
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
import types

import pytest
from conftest import ROOT, needs_host

from beonet.agent import discover as d

RUN = "r1"


# -- beacon frames ---------------------------------------------------------------------------

def test_a_beacon_round_trips_and_is_a_broadcast_of_the_experimental_ethertype():
    frame = d.encode_beacon(RUN, "node07", "enp3s0f1", "02:00:00:00:00:07")
    assert frame[:6] == b"\xff" * 6
    assert frame[6:12] == bytes([2, 0, 0, 0, 0, 7])
    assert frame[12:14] == b"\x88\xb5"
    assert len(frame) >= d.MIN_FRAME
    assert d.decode_beacon(frame, RUN) == ("node07", "enp3s0f1", "02:00:00:00:00:07")


def test_a_beacon_padded_on_the_way_still_decodes():
    frame = d.encode_beacon("", "n", "e", "02:00:00:00:00:01") + b"\0" * 30
    assert d.decode_beacon(frame, "") == ("n", "e", "02:00:00:00:00:01")


def _frame(payload, ethertype=b"\x88\xb5"):
    return b"\xff" * 6 + b"\x02" * 6 + ethertype + payload


@pytest.mark.parametrize("frame", [
    d.encode_beacon("other-run", "n", "e", "02:00:00:00:00:01"),
    _frame(json.dumps({"beonet": 1, "run": RUN, "node": "n", "nic": "e", "mac": "m"}).encode(),
           ethertype=b"\x08\x00"),
    _frame(b"not json"),
    _frame(b"\xff\xfe"),
    _frame(b"[1, 2]"),
    _frame(json.dumps({"beonet": 2, "run": RUN, "node": "n", "nic": "e", "mac": "m"}).encode()),
    _frame(json.dumps({"beonet": 1, "run": RUN, "node": "n", "nic": 3, "mac": "m"}).encode()),
    _frame(json.dumps({"beonet": 1, "run": RUN, "node": "", "nic": "e", "mac": "m"}).encode()),
    b"\xff" * 12,
], ids=["other run", "other ethertype", "not json", "not utf-8", "not an object",
        "other format", "nic not a string", "empty node", "truncated"])
def test_anything_but_a_beacon_of_this_run_is_ignored(frame):
    assert d.decode_beacon(frame, RUN) is None


class _Queue:
    """A socket's receive queue: (frame, address) pairs, then nothing waiting."""

    def __init__(self, items):
        self.items = list(items)

    def recvfrom(self, _size):
        if not self.items:
            raise BlockingIOError()
        return self.items.pop(0)


def test_only_beacons_the_nic_itself_received_count():
    """Our own frames, and frames another NIC received (queued before the socket
    was bound to its NIC), are not neighbours of this NIC."""
    theirs = d.encode_beacon(RUN, "node05", "ens13", "02:42:64:68:00:06")
    peer = d.encode_beacon(RUN, "node21", "eno1", "02:42:64:68:09:03")
    own = d.encode_beacon(RUN, "node06", "eno1", "02:42:64:68:09:02")
    heard = set()
    d._receive(_Queue([(theirs, ("eth0", 0x88B5, 1, 1, b"")),
                       (own, ("eno1", 0x88B5, d.PACKET_OUTGOING, 1, b"")),
                       (peer, ("eno1", 0x88B5, 1, 1, b""))]), "eno1", "node06", RUN, heard)
    assert heard == {("node21", "eno1", "02:42:64:68:09:03")}


def test_a_beacon_too_long_for_a_frame_is_refused_naming_node_and_nic():
    with pytest.raises(d.DiscoveryError, match="node07: the beacon of eth1 is .* bytes"):
        d.encode_beacon("x" * 1600, "node07", "eth1", "02:00:00:00:00:01")


@pytest.mark.parametrize("window", [0, -1, d.MAX_WINDOW + 1])
def test_a_window_out_of_range_is_refused(window):
    assert "window must be more than 0" in d.check_window(window)
    with pytest.raises(d.DiscoveryError, match="^node07: window must"):
        d.discover("node07", RUN, window, sysfs="/nonexistent")


# -- the pace: cheap when long, and still heard within the settle time ---------------------------

class _Lan:
    """A simulated clock and the frames on their way to a listener's NICs: each
    neighbour beacons every `period` seconds from its own phase; wait() (select) moves
    the clock to the first frame waiting or to its timeout, sleep() moves it on."""

    def __init__(self, neighbours, period, horizon, drops=0):
        self.now = 5000.0
        self.wakes = []
        self.sleeps = []
        self.nics = {nic: _SimNic(self, nic, k, neighbours, period, horizon, drops) for k, nic in
                     enumerate(("eth0", "eth1"))}

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def wait(self, socks, _w, _x, timeout):
        ready = [s for s in socks if s.waiting()]
        if not ready:
            first = min(s.next_frame() for s in socks)
            self.now = min(first, self.now + timeout)
            ready = [s for s in socks if s.waiting()]
        self.wakes.append(self.now)
        return ready, [], []


class _SimNic:
    def __init__(self, lan, name, fd, neighbours, period, horizon, drops):
        self.lan, self.name, self.fd, self.drops = lan, name, fd + 100, drops
        self.sent = []
        beacons = [(lan.now + (k + 0.25 + fd / 2) * period / neighbours + j * period,
                    d.encode_beacon(RUN, "peer%02d" % k, "eth0", "02:00:00:00:%02x:01" % k))
                   for k in range(neighbours) for j in range(int(horizon / period) + 1)]
        self.queue = sorted(beacons)

    def fileno(self):
        return self.fd

    def waiting(self):
        return bool(self.queue) and self.queue[0][0] <= self.lan.now

    def next_frame(self):
        return self.queue[0][0] if self.queue else float("inf")

    def recvfrom(self, _size):
        if not self.waiting():
            raise BlockingIOError()
        return self.queue.pop(0)[1], (self.name, 0x88B5, 1, 1, b"")

    def send(self, _frame):
        self.sent.append(self.lan.now)

    def getsockopt(self, level, option, size):
        assert (level, option, size) == (d.SOL_PACKET, d.PACKET_STATISTICS, 8)
        return struct.pack("II", 0, self.drops)


def _exchange(lan, window, tmp_path, **kw):
    frames = {name: b"beacon of " + name.encode() for name in lan.nics}
    return d.exchange("me", RUN, lan.nics, frames, window, str(tmp_path), clock=lan.clock, wait=lan.wait,
                      sleep=lan.sleep, **kw)


def _per_second(times, start, end):
    return sum(1 for t in times if start <= t < end) / (end - start)


def test_a_short_run_keeps_a_quarter_second_pace_and_reads_every_frame_at_once(tmp_path):
    lan = _Lan(31, d.INTERVAL, 12)
    start = lan.now
    heard, _carried = _exchange(lan, d.FAST, tmp_path)
    assert {nic: len(h) for nic, h in heard.items()} == {"eth0": 31, "eth1": 31}
    gaps = [b - a for a, b in zip(lan.nics["eth0"].sent, lan.nics["eth0"].sent[1:])]
    assert len(gaps) >= 30 and all(0.8 * d.INTERVAL <= g <= 1.2 * d.INTERVAL + 1e-9 for g in gaps)
    assert lan.sleeps == [] and _per_second(lan.wakes, start, start + d.FAST) > 2 * 31 * 4 * 0.9


def test_a_long_run_backs_off_to_the_ceiling_and_wakes_a_few_times_a_second(tmp_path):
    """After FAST seconds: one beacon per MAX_INTERVAL (+-JITTER), and the frames of 62
    neighbours beaconing four times a second read in a few wake-ups a second, none lost."""
    lan = _Lan(31, d.INTERVAL, 100)
    start = lan.now
    heard, _carried = _exchange(lan, 100, tmp_path)
    assert {nic: len(h) for nic, h in heard.items()} == {"eth0": 31, "eth1": 31}
    sent = lan.nics["eth1"].sent
    gaps = [b - a for a, b in zip(sent, sent[1:]) if a >= start + d.FAST + 2 * d.MAX_INTERVAL]
    assert len(gaps) > 70 and all(0.8 * d.MAX_INTERVAL <= g <= 1.2 * d.MAX_INTERVAL + 1e-9 for g in gaps)
    slow = _per_second(lan.wakes, start + d.FAST + 5, start + 100)
    assert slow <= 1 / d.HOLD + 1 / (0.8 * d.MAX_INTERVAL) + 0.5, slow
    assert not any(nic.queue and nic.queue[0][0] < lan.now - d.HOLD for nic in lan.nics.values())


def test_the_settle_time_holds_several_beacons_of_every_listener_at_the_slowest_pace(tmp_path):
    """The rule of the settle time: a listener started last may wait CARRIER_WAIT for its
    carrier; in what is left of SETTLE_MIN every other listener sends SETTLE_BEACONS
    beacons at least, however long it has run; and the playbook settles that long."""
    lan = _Lan(1, d.INTERVAL, 300)
    start = lan.now
    _exchange(lan, 300, tmp_path)
    sent = lan.nics["eth0"].sent
    span = d.SETTLE_MIN - d.CARRIER_WAIT
    fewest = min(sum(1 for t in sent if a <= t < a + span)
                 for a in (start + k * 0.05 for k in range(int((300 - span) / 0.05))))
    assert fewest >= d.SETTLE_BEACONS >= 3
    playbook = (ROOT / "playbooks/discover.yml").read_text()
    settle = int(re.search(r"beonet_discover_settle \| default\((\d+)\)", playbook).group(1))
    assert d.SETTLE_MIN <= settle < d.SETTLE_MIN + 1


def test_a_receive_queue_that_drops_frames_is_read_more_often(tmp_path):
    lan = _Lan(31, d.INTERVAL, 30, drops=1)
    _exchange(lan, 30, tmp_path)
    held = [s for s in lan.sleeps if s > 0]
    assert held and max(held) <= d.HOLD / 2 and lan.sleeps[-1] == 0


def test_the_stop_mark_ends_a_long_run_within_a_beacon(tmp_path):
    lan = _Lan(3, d.MAX_INTERVAL, 200)
    end = lan.now + 150
    _exchange(lan, 1000, tmp_path, stop=lambda: lan.now >= end)
    assert end <= lan.now <= end + 1.2 * d.MAX_INTERVAL + d.HOLD


class _Opts:
    """A socket whose options are recorded; SO_RCVBUFFORCE refused unless root."""

    def __init__(self, root):
        self.root, self.set = root, {}

    def setsockopt(self, level, option, value):
        if option == d.SO_RCVBUFFORCE and not self.root:
            raise PermissionError(1, "Operation not permitted")
        self.set[option] = value

    def getsockopt(self, level, option, size=None):
        if level != socket.SOL_SOCKET:
            raise OSError(92, "Protocol not available")       # no PACKET_STATISTICS
        return 2 * self.set.get(d.SO_RCVBUFFORCE, min(self.set.get(socket.SO_RCVBUF, 0), 212992))


@pytest.mark.parametrize("root, granted", [(True, 2 * d.RCVBUF), (False, 2 * 212992)])
def test_the_receive_queue_is_made_large_enough_for_a_hold(root, granted):
    assert d.receive_queue(_Opts(root)) == granted
    assert d.dropped(_Opts(root)) == 0          # no statistics: nothing known dropped


def test_a_real_socket_pair_listened_on_in_the_long_pace_hears_every_neighbour():
    """exchange on real descriptors (select, reads), past FAST at once."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("discover_cost", ROOT / "scripts" / "discover_cost.py")
    cost = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cost)
    got = cost.measure(neighbours=5, nics=2, seconds=1.5, interval=0.25, fast=0.0)
    assert got["heard"] == 10 and got["dropped"] == 0


# -- candidate NICs from a fake /sys/class/net ---------------------------------------------------

def _nic(root, name, kind="1", devtype=None, entries=(), physical=False):
    base = root / name
    base.mkdir()
    (base / "type").write_text(kind + "\n")
    (base / "address").write_text("02:00:00:00:00:%02x\n" % (len(name)))
    (base / "uevent").write_text("INTERFACE=%s\n%s" % (name, "DEVTYPE=%s\n" % devtype if devtype else ""))
    for entry in entries + (("device",) if physical else ()):
        (base / entry).mkdir()


@pytest.fixture
def fake_sys(tmp_path):
    root = tmp_path / "net"
    root.mkdir()
    _nic(root, "lo", kind="772")
    _nic(root, "eno1", physical=True)
    _nic(root, "enp3s0f1", physical=True)
    _nic(root, "enp3s0f0", physical=True)
    _nic(root, "docker0", devtype="bridge", entries=("bridge",))
    _nic(root, "br1", entries=("bridge",))
    _nic(root, "bond0", devtype="bond", entries=("bonding",))
    _nic(root, "enp3s0f1.10", devtype="vlan")
    _nic(root, "tun0", kind="65534", entries=("tun_flags",))
    _nic(root, "tap0", entries=("tun_flags",))
    _nic(root, "wlp2s0", devtype="wlan", physical=True)
    _nic(root, "ib0", kind="32", physical=True)
    _nic(root, "dummy0")
    _nic(root, "veth1a2b")
    return root


def _driver(name):
    return {"dummy0": "dummy", "veth1a2b": "veth"}.get(name)


# -- the background run: start, stop and collect ------------------------------------------

def _fake_discover(ends):
    """A discover() that listens until told to stop (ends "stopped"), returns at once
    (its cap), or fails."""
    def fake(node, run, window, management, include_virtual, exclude, stop):
        if ends == "fails":
            raise d.DiscoveryError("%s: no such device" % node)
        deadline = time.monotonic() + 20
        while ends == "stopped" and not stop() and time.monotonic() < deadline:
            time.sleep(0.02)
        return {"format": 1, "node": node, "run": run, "nics": [], "window": window}
    return fake


@pytest.mark.parametrize("ends", ["stopped", "cap"])
def test_a_background_listener_runs_until_it_is_collected_or_its_cap(tmp_path, monkeypatch, ends):
    monkeypatch.setattr(d, "discover", _fake_discover(ends))
    # the agent's clock 12.5 s on at each reading: the listener's start and end
    clock = itertools.count(100.0, 12.5)
    monkeypatch.setattr(d, "time", types.SimpleNamespace(monotonic=lambda: next(clock), time=time.time,
                                                         sleep=time.sleep))
    started = d.start_background("A", "1764201234", 30.0, ["eth9"], True, [], folder=str(tmp_path))
    pid = started["pid"]
    assert pid > 0 and pid != os.getpid() and started["superseded"] == []
    assert (tmp_path / "1764201234-A.pid").read_text() == "%d\n1764201234\nA\n" % pid
    got = d.collect_background("A", "1764201234", folder=str(tmp_path))
    assert got["discovery"] == {"format": 1, "node": "A", "run": "1764201234", "nics": [], "window": 30.0}
    assert got["ended"] == ends and got["listened"] == 12.5
    assert list(tmp_path.iterdir()) == []          # its files are gone


def test_a_background_listener_that_fails_is_reported_by_collect(tmp_path, monkeypatch):
    monkeypatch.setattr(d, "discover", _fake_discover("fails"))
    d.start_background("A", "r1", 30.0, folder=str(tmp_path))
    with pytest.raises(d.DiscoveryError, match="^A: the background discovery failed: A: no such device$"):
        d.collect_background("A", "r1", folder=str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_collect_without_a_started_listener_or_report_says_so(tmp_path):
    with pytest.raises(d.DiscoveryError, match="^A: no discovery run r2 was started here"):
        d.collect_background("A", "r2", folder=str(tmp_path))
    (tmp_path / "r3-A.pid").write_text("1\n")        # started, but it never writes a report
    with pytest.raises(d.DiscoveryError, match="wrote no report within 0 s"):
        d.collect_background("A", "r3", folder=str(tmp_path), wait=0.0, sleep=lambda s: None)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("run", ["", "../x", "a/b", "r\n", "x" * 65, "a b"])
def test_a_background_run_needs_a_plain_name_for_its_files(tmp_path, run):
    with pytest.raises(d.DiscoveryError, match="run must be 1 to 64 letters, digits"):
        d.start_background("A", run, 30.0, folder=str(tmp_path))
    with pytest.raises(d.DiscoveryError, match="run must be 1 to 64 letters, digits"):
        d.collect_background("A", run, folder=str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_a_background_cap_out_of_range_is_refused(tmp_path):
    with pytest.raises(d.DiscoveryError, match="window must be more than 0"):
        d.start_background("A", "r4", 0.0, folder=str(tmp_path))


def _stoppable(log):
    """A discover() that listens until told to stop, then notes in log that it put its
    NICs back (and how it was told), as the real one does on leaving."""
    def fake(node, run, window, management, include_virtual, exclude, stop):
        deadline = time.monotonic() + 20
        while not stop() and time.monotonic() < deadline:
            time.sleep(0.02)
        with open(log, "a") as fh:
            fh.write("%s %s put back\n" % (run, node))
        return {"format": 1, "node": node, "run": run, "nics": []}
    return fake


def test_a_new_run_stops_the_nodes_earlier_listener_which_leaves_no_report(tmp_path, monkeypatch):
    """The earlier run's listener is told by its stop mark, puts its NICs back and
    removes its files before the new one starts; another node's listener (the
    namespace labs run several nodes on one machine) is left alone."""
    log = tmp_path / "log"
    folder = tmp_path / "run"
    monkeypatch.setattr(d, "discover", _stoppable(str(log)))
    first = d.start_background("A", "r1", 30.0, folder=str(folder))
    d.start_background("B", "r1", 30.0, folder=str(folder))
    second = d.start_background("A", "r2", 30.0, folder=str(folder))
    assert second["superseded"] == ["r1"] and second["pid"] != first["pid"]
    assert log.read_text() == "r1 A put back\n"            # before the new listener started
    assert sorted(p.name for p in folder.iterdir()) == ["r1-B.pid", "r2-A.pid"]
    with pytest.raises(d.DiscoveryError, match="^A: no discovery run r1 was started here .* a later run"):
        d.collect_background("A", "r1", folder=str(folder))
    assert d.collect_background("A", "r2", folder=str(folder))["ended"] == "stopped"
    assert d.collect_background("B", "r1", folder=str(folder))["ended"] == "stopped"
    assert list(folder.iterdir()) == []


def test_the_same_run_started_again_replaces_its_listener(tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setattr(d, "discover", _stoppable(str(log)))
    d.start_background("A", "r1", 30.0, folder=str(tmp_path / "run"))
    again = d.start_background("A", "r1", 30.0, folder=str(tmp_path / "run"))
    assert again["superseded"] == ["r1"] and log.read_text() == "r1 A put back\n"
    assert d.collect_background("A", "r1", folder=str(tmp_path / "run"))["ended"] == "stopped"
    assert log.read_text() == "r1 A put back\n" * 2


def test_leftovers_of_listeners_gone_are_removed_and_no_pid_is_trusted(tmp_path, monkeypatch):
    """A listener killed, or one that reached its cap uncollected, leaves files whose
    pid file nobody holds: they are removed, even when the pid now names a running
    process (this one), which is never signalled."""
    monkeypatch.setattr(d, "discover", _stoppable(str(tmp_path.parent / (tmp_path.name + ".log"))))
    (tmp_path / "r0-A.pid").write_text("%d\nr0\nA\n" % os.getpid())
    (tmp_path / "r0-A.report").write_text("{}")
    (tmp_path / "old-A.pid").write_text("%d\n" % os.getpid())          # written by an earlier beonet
    (tmp_path / "r-x-A.pid").write_text("1\nr\nx-A\n")              # node x-A's, run r
    started = d.start_background("A", "r9", 30.0, folder=str(tmp_path))
    assert started["superseded"] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r-x-A.pid", "r9-A.pid"]
    d.collect_background("A", "r9", folder=str(tmp_path))


def test_a_listener_that_does_not_stop_when_told_keeps_the_new_run_from_starting(tmp_path):
    held = tmp_path / "r0-A.pid"
    held.write_text("4242\nr0\nA\n")
    with open(held) as fh:
        import fcntl
        fcntl.flock(fh, fcntl.LOCK_EX)                         # "its listener" holds it
        assert d.alive(str(held))
        with pytest.raises(d.DiscoveryError, match="^A: the listener of run r0 still runs 0 s after it "
                                                   "was told to stop .*; run r1 was not started$"):
            d.start_background("A", "r1", 30.0, folder=str(tmp_path), wait=0.0)
    assert (tmp_path / "r0-A.stop").read_text() == "superseded by run r1\n"
    assert not (tmp_path / "r1-A.pid").exists() and not d.alive(str(held))


def test_only_a_pid_file_named_for_the_run_and_node_counts(tmp_path):
    (tmp_path / "r1-A.pid").write_text("1\nr1\nA\n")
    (tmp_path / "r-2-A.pid").write_text("1\nr-2\nA\n")
    (tmp_path / "x-A.pid").write_text("1\nx\nB-A\n")
    (tmp_path / "bad run-A.pid").write_text("1\n")
    (tmp_path / ".r3-A.pid.7.tmp").write_text("1\nr3\nA\n")
    (tmp_path / "r1-A.report").write_text("{}")
    assert sorted(d.runs_here("A", str(tmp_path))) == ["r-2", "r1"]
    assert d.runs_here("A", str(tmp_path / "none")) == {}


def test_only_physical_ethernet_nics_are_candidates(fake_sys):
    chosen, skipped = d.candidates(str(fake_sys), ["eno1"], False, [], _driver)
    assert chosen == ["enp3s0f0", "enp3s0f1"]
    assert {s["name"]: s["why"] for s in skipped} == {
        "lo": "loopback", "eno1": "management", "docker0": "bridge", "br1": "bridge",
        "bond0": "bond", "enp3s0f1.10": "vlan", "tun0": "not Ethernet (type 65534)",
        "tap0": "tun", "wlp2s0": "wireless", "ib0": "not Ethernet (type 32)",
        "dummy0": "dummy", "veth1a2b": "veth (include_virtual admits it)"}


def test_include_virtual_admits_veths_and_exclude_takes_names_and_globs(fake_sys):
    chosen, skipped = d.candidates(str(fake_sys), [], True, ["enp3s0f*"], _driver)
    assert chosen == ["eno1", "veth1a2b"]
    assert {"name": "enp3s0f0", "why": "excluded"} in skipped


def test_a_nic_whose_driver_is_unknown_is_virtual(fake_sys):
    assert d.skip_reason("dummy0", str(fake_sys), [], True, [], lambda _n: None) == "virtual"


def test_a_missing_nic_folder_is_an_error_naming_it(tmp_path):
    with pytest.raises(d.DiscoveryError, match="cannot list the NICs in .*/none: "):
        d.candidates(str(tmp_path / "none"), [], False, [])


def test_default_routes_of_both_families_mark_management_nics(tmp_path):
    net = tmp_path / "net"
    net.mkdir()
    (net / "route").write_text(
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
        "eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
        "enp1s0\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
    (net / "ipv6_route").write_text(
        "%s 00 %s 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 eno2\n"
        "%s 00 %s 00 %s ffffffff 00000001 00000000 00200200 lo\n"
        "fe800000000000000000000000000000 40 %s 00 %s 00000100 00000001 00000000 00000001 enp1s0\n"
        % ("0" * 32, "0" * 32, "0" * 32, "0" * 32, "0" * 32, "0" * 32, "0" * 32))
    assert d.default_route_nics(str(tmp_path)) == {"eth0", "eno2"}
    assert d.default_route_nics(str(tmp_path / "missing")) == set()


def test_the_nic_holding_the_connection_address_is_found():
    out = ("1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n"
           "2: eth0    inet 192.0.2.10/24 brd 192.0.2.255 scope global eth0\n"
           "3: enp1s0@if7    inet6 2001:db8::5/64 scope global\n"
           "4: bad    inet notanaddress\n")
    assert d.address_nics("192.0.2.10", out) == {"eth0"}
    assert d.address_nics("2001:db8::5", out) == {"enp1s0"}
    assert d.address_nics("198.51.100.1", out) == set()
    assert d.address_nics("not-an-address", out) == set()


def test_management_nics_join_the_given_ones_and_the_default_route(tmp_path, monkeypatch):
    monkeypatch.delenv("SSH_CONNECTION", raising=False)
    (tmp_path / "net").mkdir()
    (tmp_path / "net/route").write_text("Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"
                                        "eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\n")
    assert d.management_nics(["ib9"], str(tmp_path)) == ["eth0", "ib9"]


def test_the_ssh_sessions_nic_is_a_management_nic_and_none_is_when_ip_cannot_run(tmp_path, monkeypatch):
    monkeypatch.setenv("SSH_CONNECTION", "192.0.2.1 50000 192.0.2.10 22")
    asked = []

    def ip(argv, timeout):
        asked.append(argv)
        return 0, "2: eth1    inet 192.0.2.10/24 brd 192.0.2.255 scope global eth1\n", ""
    monkeypatch.setattr(d.procs, "run", ip)
    assert d.management_nics([], str(tmp_path)) == ["eth1"] and asked == [["ip", "-o", "addr", "show"]]
    monkeypatch.setattr(d.procs, "run", lambda argv, timeout: (d.procs.NOT_RUN, "", "cannot run ip"))
    assert d.management_nics([], str(tmp_path)) == []


# -- a real run in network namespaces -------------------------------------------------------------

needs_netns = needs_host("the agent's discovery between network namespaces (veths, a bridge)", "ip",
                   netns=True)
PREFIX = "bdisc%d" % (os.getpid() % 10000)


def _ip(*args, ns=None, check=True):
    cmd = ["ip"] + (["netns", "exec", ns, "ip"] if ns else []) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, check=check)


class Lab:
    """Namespaces: one per node, and SW holding a switch (br0) and a hub (hub0, no learning)."""

    def __init__(self):
        self.namespaces = []

    def ns(self, short):
        name = "%s%s" % (PREFIX, short)
        if name not in self.namespaces:
            _ip("netns", "add", name)
            self.namespaces.append(name)
            _ip("link", "set", "lo", "up", ns=name)
        return name

    def cable(self, a, a_nic, b, b_nic, up=True):
        """A veth pair from NIC a_nic of namespace a to b_nic of namespace b."""
        tmp = "t%s" % PREFIX[-6:]
        _ip("link", "add", a_nic, "netns", self.ns(a), "type", "veth", "peer", "name", tmp,
            "netns", self.ns(b))
        _ip("link", "set", tmp, "name", b_nic, ns=self.ns(b))
        for ns, nic in ((a, a_nic), (b, b_nic)):
            if up:
                _ip("link", "set", nic, "up", ns=self.ns(ns))

    def port(self, node, nic, switch, port):
        self.cable(node, nic, "SW", port)
        _ip("link", "set", port, "master", switch, ns=self.ns("SW"))

    def switch(self, name, learning=True):
        _ip("link", "add", name, "type", "bridge", "ageing_time", "30000" if learning else "0",
            ns=self.ns("SW"))
        _ip("link", "set", name, "up", ns=self.ns("SW"))

    def delete(self):
        for name in self.namespaces:
            _ip("netns", "del", name, check=False)


@pytest.fixture
def lab():
    made = Lab()
    try:
        yield made
    finally:
        made.delete()


AGENT = ("import json, sys\nfrom beonet.agent import discover\n"
         "print(json.dumps(discover.discover(*json.loads(sys.argv[1]), **json.loads(sys.argv[2]))))\n")


def _agent(lab, node, window, **options):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "module_utils"))
    env.pop("SSH_CONNECTION", None)
    return subprocess.Popen(
        ["ip", "netns", "exec", lab.ns(node), sys.executable, "-c", AGENT,
         json.dumps([node, RUN, window]), json.dumps(dict({"include_virtual": True}, **options))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _reports(procs):
    out = {}
    for node, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, "%s: %s" % (node, stderr)
        out[node] = json.loads(stdout)
    return out


def _neighbours(report):
    return {nic["name"]: sorted((n["node"], n["nic"]) for n in nic["neighbours"])
            for nic in report["nics"]}


def _flags(lab, node, nic):
    return json.loads(_ip("-j", "link", "show", "dev", nic, ns=lab.ns(node)).stdout)[0]["flags"]


def _wired(lab):
    """A, B, C on a switch; A and B on a cable (B's end down); C twice on a hub with A;
    C's enp9s0 goes nowhere; A has a management NIC with the default route and a bridge."""
    lab.switch("br0")
    lab.switch("hub0", learning=False)
    lab.port("A", "enp3s0f1", "br0", "pa")
    lab.port("B", "enp4s0", "br0", "pb")
    lab.port("C", "eth7", "br0", "pc")
    lab.cable("A", "enp3s0f0", "B", "enp3s0f0")
    _ip("link", "set", "enp3s0f0", "down", ns=lab.ns("B"))
    lab.port("A", "ens9", "hub0", "ha")
    lab.port("C", "ens9", "hub0", "hc1")
    lab.port("C", "ens10", "hub0", "hc2")
    lab.cable("C", "enp9s0", "SW", "nowhere", up=False)
    _ip("link", "set", "enp9s0", "up", ns=lab.ns("C"))
    lab.cable("A", "eth0", "SW", "mgmt")
    _ip("link", "set", "mgmt", "up", ns=lab.ns("SW"))
    _ip("addr", "add", "10.250.0.1/24", "dev", "eth0", ns=lab.ns("A"))
    _ip("route", "add", "default", "via", "10.250.0.254", ns=lab.ns("A"))
    _ip("link", "add", "docker0", "type", "bridge", ns=lab.ns("A"))


@needs_netns
def test_discovery_finds_switch_hub_and_cable_neighbours_and_restores_links(lab):
    _wired(lab)
    before = _ip("-j", "addr", "show", "dev", "enp3s0f0", ns=lab.ns("B")).stdout
    procs = {node: _agent(lab, node, 2.0) for node in ("A", "B", "C")}
    reports = _reports(procs)
    assert _neighbours(reports["A"]) == {
        "enp3s0f0": [("B", "enp3s0f0")],
        "enp3s0f1": [("B", "enp4s0"), ("C", "eth7")],
        "ens9": [("C", "ens10"), ("C", "ens9")]}
    assert _neighbours(reports["B"]) == {
        "enp3s0f0": [("A", "enp3s0f0")], "enp4s0": [("A", "enp3s0f1"), ("C", "eth7")]}
    assert _neighbours(reports["C"]) == {
        "enp9s0": [], "eth7": [("A", "enp3s0f1"), ("B", "enp4s0")],
        "ens10": [("A", "ens9"), ("C", "ens9")], "ens9": [("A", "ens9"), ("C", "ens10")]}
    a = reports["A"]
    assert a["management"] == ["eth0"] and {"name": "eth0", "why": "management"} in a["skipped"]
    assert {"name": "docker0", "why": "bridge"} in a["skipped"]
    assert {"name": "lo", "why": "loopback"} in a["skipped"]
    b_cable = [n for n in reports["B"]["nics"] if n["name"] == "enp3s0f0"][0]
    assert b_cable["was_up"] is False and b_cable["carrier"] is True
    c_nowhere = [n for n in reports["C"]["nics"] if n["name"] == "enp9s0"][0]
    assert c_nowhere["carrier"] is False and c_nowhere["was_up"] is True
    mac = _ip("-j", "link", "show", "dev", "enp4s0", ns=lab.ns("B")).stdout
    assert json.loads(mac)[0]["address"] in [n["mac"] for n in a["nics"][1]["neighbours"]]
    assert "UP" not in _flags(lab, "B", "enp3s0f0")
    assert _ip("-j", "addr", "show", "dev", "enp3s0f0", ns=lab.ns("B")).stdout == before
    assert _ip("-j", "addr", "show", "dev", "eth0", ns=lab.ns("A")).stdout.count("10.250.0.1") == 1


@needs_netns
def test_carrier_seen_during_the_window_counts_when_the_peer_goes_down_before_it_ends(lab):
    lab.cable("A", "enp1s0", "B", "enp1s0")
    _ip("link", "set", "enp1s0", "down", ns=lab.ns("B"))
    reports = _reports({"A": _agent(lab, "A", 3.0), "B": _agent(lab, "B", 1.0)})
    assert "LOWER_UP" not in _flags(lab, "A", "enp1s0")
    assert [(n["carrier"], n["was_up"]) for n in reports["A"]["nics"]] == [(True, True)]
    assert [(n["carrier"], n["was_up"]) for n in reports["B"]["nics"]] == [(True, False)]


@needs_netns
def test_probe_only_reads_carrier_without_beacons_and_puts_the_nic_back_down(lab):
    lab.cable("A", "enp1s0", "B", "enp1s0")
    _ip("link", "set", "enp1s0", "down", ns=lab.ns("A"))
    report = _reports({"A": _agent(lab, "A", 0, probe_only=True)})["A"]
    assert report["probe_only"] is True
    assert [(n["name"], n["carrier"], n["was_up"], n["neighbours"]) for n in report["nics"]] == [
        ("enp1s0", True, False, [])]
    assert "UP" not in _flags(lab, "A", "enp1s0")


def _ipv6_off(lab, node, nic):
    return subprocess.run(["ip", "netns", "exec", lab.ns(node), "cat",
                           "/proc/sys/net/ipv6/conf/%s/disable_ipv6" % nic],
                          capture_output=True, text=True, check=True).stdout.strip()


@needs_netns
def test_a_nic_brought_up_is_put_back_down_when_discovery_is_terminated(lab):
    lab.cable("A", "enp1s0", "B", "enp1s0")
    _ip("link", "set", "enp1s0", "down", ns=lab.ns("A"))
    proc = _agent(lab, "A", 30)
    deadline = time.monotonic() + 10
    while "UP" not in _flags(lab, "A", "enp1s0") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "UP" in _flags(lab, "A", "enp1s0") and _ipv6_off(lab, "A", "enp1s0") == "1"
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=10)
    assert proc.returncode != 0 and "discovery stopped by signal" in err
    assert "UP" not in _flags(lab, "A", "enp1s0") and _ipv6_off(lab, "A", "enp1s0") == "0"
    assert "inet6" not in _ip("-j", "addr", "show", "dev", "enp1s0", ns=lab.ns("A")).stdout


def _python_in(lab, node, code):
    return subprocess.run(["ip", "netns", "exec", lab.ns(node), sys.executable, "-c", code],
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "module_utils")))


@needs_netns
def test_a_nic_brought_up_is_put_back_down_on_error(lab):
    lab.cable("A", "enp1s0", "B", "enp1s0")
    _ip("link", "set", "enp1s0", "down", ns=lab.ns("A"))
    code = ("from beonet.agent import discover\n"
            "with discover.links_up('A', ['enp1s0']) as raised:\n"
            "    assert raised == ['enp1s0'] and discover.is_up('enp1s0')\n"
            "    raise RuntimeError('inside the window')\n")
    proc = _python_in(lab, "A", code)
    assert "RuntimeError: inside the window" in proc.stderr
    assert "UP" not in _flags(lab, "A", "enp1s0")


@needs_netns
def test_a_nic_that_cannot_be_brought_up_is_reported_by_name(lab):
    code = ("from beonet.agent import discover\n"
            "try:\n"
            "    with discover.links_up('A', ['nosuch0']):\n"
            "        pass\n"
            "except discover.DiscoveryError as exc:\n"
            "    print(exc)\n")
    proc = _python_in(lab, "A", code)
    assert proc.stdout.startswith("A: bringing nosuch0 up for discovery failed:")


# -- the playbook, on "nodes" that are namespaces of this machine ---------------------------------

STUB_CABLING = '''#!/usr/bin/python
import json
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec={"topology": {"type": "str"}, "discovered": {"type": "dict"},
                                      "host_vars_dir": {"type": "str"}},
                       supports_check_mode=True)
with open(%r, "w") as fh:
    json.dump(module.params, fh)
module.exit_json(changed=False)
'''


def _inventory(lab, tmp_path, nodes):
    hosts = {}
    for node in nodes:
        python = tmp_path / ("python-%s" % node)
        python.write_text("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n" % (lab.ns(node), sys.executable))
        python.chmod(0o755)
        hosts[node] = {"ansible_connection": "local", "ansible_python_interpreter": str(python)}
    hosts["C"]["beonet_management_interface"] = "eth9"
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"beonet_nodes": {"hosts": hosts, "vars": {
        "beonet_topology_file": "/topologies/site.yml", "beonet_discover_include_virtual": True,
        "beonet_management_interface": "none"}}}))
    return inventory


@needs_netns
@pytest.mark.parametrize("check, forks", [(False, 5), (True, 5), (False, 2)],
                         ids=["run", "check mode", "in the background (more nodes than forks)"])
def test_the_playbook_runs_every_node_at_once_and_hands_the_reports_to_the_cabling_check(
        lab, tmp_path, check, forks):
    lab.cable("A", "enp1s0", "B", "enp1s0")
    lab.switch("br0")
    lab.port("B", "enp2s0", "br0", "pb")
    lab.port("C", "enp2s0", "br0", "pc")
    _ip("link", "set", "enp2s0", "down", ns=lab.ns("C"))
    lab.cable("C", "eth9", "SW", "m9")
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "beonet_cabling.py").write_text(STUB_CABLING % str(tmp_path / "cabling-args.json"))
    env = dict(os.environ, ANSIBLE_LIBRARY="%s:%s" % (stub, ROOT / "library"))
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
         "-i", str(_inventory(lab, tmp_path, "ABC")), "playbooks/discover.yml",
         "-f", str(forks), "-e", "beonet_discover_settle=2", "-e", "beonet_discover_window=3",
         "-e", "beonet_host_vars_dir=%s" % (tmp_path / "host_vars")] + (["--check"] if check else []),
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recap = proc.stdout[proc.stdout.index("PLAY RECAP"):]
    assert all(re.search(r"^%s +: ok=\d+ +changed=0 " % node, recap, re.M) for node in "ABC"), recap
    args = json.loads((tmp_path / "cabling-args.json").read_text())
    assert (tmp_path / "beonet-discovery.json").exists() is not check
    written = args["discovered"] if check else json.loads((tmp_path / "beonet-discovery.json").read_text())
    assert args == {"topology": "/topologies/site.yml", "discovered": written,
                    "host_vars_dir": str(tmp_path / "host_vars")}
    assert {node: _neighbours(report) for node, report in written.items()} == {
        "A": {"enp1s0": [("B", "enp1s0")]},
        "B": {"enp1s0": [("A", "enp1s0")], "enp2s0": [("C", "enp2s0")]},
        "C": {"enp2s0": [("B", "enp2s0")]}}
    assert len({report["run"] for report in written.values()}) == 1
    assert [r["management"] for r in written.values()] == [[], [], ["eth9"]]
    assert "UP" not in _flags(lab, "C", "enp2s0")


@pytest.mark.parametrize("node", ["../etc", "a/b", "", "1abc"])
def test_a_background_run_needs_a_node_name_for_its_files(tmp_path, node):
    with pytest.raises(d.DiscoveryError, match="is not a name"):
        d.start_background(node, "r5", 30.0, folder=str(tmp_path))
    assert list(tmp_path.iterdir()) == []
