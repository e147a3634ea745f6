"""Discovery of how a node's NICs are really cabled: what the ``beonet_discover`` module runs.

Standard library only, Python 3.8 (it travels to the node inside the module).

Every candidate NIC (Ethernet, not loopback, not a management NIC, not a
bridge, bond, VLAN, tunnel or other virtual device; veths only when asked)
sends a small beacon frame, broadcast with the local experimental EtherType
0x88B5, every quarter second, while the node records the beacons of the same
run that each NIC receives. Every node of the cluster runs the same window at
about the same time, so each NIC ends up with the list of NICs (node, NIC, MAC)
it reaches at layer 2: through a cable, a hub or a switch.

A listener that runs longer than FAST seconds (a background one, waiting for
the other batches to start) costs little: its beacons back off to one every
MAX_INTERVAL seconds, and it reads its sockets at most every HOLD seconds (the
frames wait in a receive queue made large enough for them) instead of waking
up for every frame. The rule that keeps discovery whole: every listener runs
at once for the settle time, and a listener started last may spend
CARRIER_WAIT of it waiting for its NICs' carrier, so the settle time must hold
CARRIER_WAIT and a few beacons at the slowest pace: SETTLE_MIN (7.8 s; the
playbook's ``beonet_discover_settle`` is 8 by default).

No address is touched. A NIC that was down is brought up for the window with
IPv6 turned off on it (so the kernel gives it no link-local address and sends
nothing of its own), and is put back down, with IPv6 as it was, afterwards,
also on error or SIGTERM.
"""

from __future__ import annotations

import contextlib
import fnmatch
import ipaddress
import json
import os
import random
import re
import select
import shlex
import signal
import socket
import struct
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from . import procs
from .files import atomic_write
from .names import IFNAME_RULE, escaped, ifname_problem, node_name_problem, shown, type_word

FORMAT = 1
ETHERTYPE = 0x88B5                 # IEEE local experimental EtherType 1
ETH_P_ALL = 0x0003
BROADCAST = b"\xff" * 6
MIN_FRAME = 60                     # shortest Ethernet frame without its FCS
MAX_PAYLOAD = 1500
PACKET_OUTGOING = 4                # pkttype of our own frames seen by an ETH_P_ALL socket
SO_ATTACH_FILTER = 26
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
SIOCETHTOOL = 0x8946
ETHTOOL_GDRVINFO = 0x3
IFF_UP = 0x1
ARPHRD_ETHER = 1
INTERVAL = 0.25                    # seconds between two beacons of a NIC, for the first FAST seconds
FAST = 10.0                        # a one-batch run (window 10 s) keeps INTERVAL and a wake-up per frame
MAX_INTERVAL = 1.0                 # then the interval doubles up to this ceiling
JITTER = 0.2                       # each interval is drawn within +-20 %
HOLD = 0.5                         # after FAST, frames gather this long between two reads
CARRIER_WAIT = 3.0                 # seconds a NIC brought up gets to find its carrier (probe only)
SETTLE_BEACONS = 4                 # beacons of every neighbour the settle time holds at the slowest pace
SETTLE_MIN = CARRIER_WAIT + SETTLE_BEACONS * MAX_INTERVAL * (1 + JITTER)   # 7.8 s: the least settle time
# Receive queue asked for each socket (the kernel doubles it; as root beyond rmem_max): a
# NIC on one LAN with 1,000 others at the fast pace (4.8 beacons/s) gathers 2,400 frames
# in HOLD; the kernel counts 830 bytes a beacon on a veth (measured), up to 3 KiB where a
# NIC's driver takes page-sized buffers: 7 MiB at most. When the queue drops frames all
# the same (PACKET_STATISTICS), the hold is halved.
RCVBUF = 4 << 20
SO_RCVBUFFORCE = 33
SOL_PACKET = 263
PACKET_STATISTICS = 6
MAX_KNOWN = 65536                  # distinct frames a NIC remembers having read (not decoded again)
MAX_WINDOW = 3600.0
SYS = "/sys/class/net"
PROC = "/proc"
RUN_DIR = "/run/beonet/discover"   # a background run's pid, stop mark and report (emptied at boot)
RUN_RULE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
COLLECT_WAIT = 10.0                # seconds a stopped background listener gets to write its report
COLLECT_MARK = "beonet-discover-collect"   # collect_command's first line
SUPERSEDE_WAIT = 20.0              # seconds a listener of an earlier run gets to stop for a new one
SUPERSEDED = "superseded by run "  # the stop mark a new run leaves (collect leaves an empty one)
# uevent DEVTYPE of the virtual devices that are never candidates
DEVTYPES = {"bridge": "bridge", "bond": "bond", "vlan": "vlan", "wlan": "wireless",
            "macvlan": "macvlan", "ipvlan": "ipvlan", "vxlan": "vxlan"}
# (sysfs entry, why): a device with that entry is never a candidate
MARKERS = (("bridge", "bridge"), ("bonding", "bond"), ("tun_flags", "tun"),
           ("wireless", "wireless"), ("phy80211", "wireless"))

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    Neighbour = tuple[str, str, str]   # (node, NIC, MAC)
    Driver: TypeAlias = "Callable[[str], str | None]"   # a string: the agent runs on Python 3.8
    Ready: TypeAlias = "tuple[list[Any], list[Any], list[Any]]"
    Waiter: TypeAlias = "Callable[[list[Any], list[Any], list[Any], float], Ready]"   # select.select


class DiscoveryError(Exception):
    """Discovery could not run; the message names the node and the NIC."""


def mac_bytes(mac: str) -> bytes:
    parts = mac.split(":")
    if len(parts) != 6:
        raise ValueError("not a MAC address: %r" % mac)
    return bytes(int(p, 16) for p in parts)


def encode_beacon(run: str, node: str, nic: str, mac: str) -> bytes:
    """The broadcast frame NIC nic of node sends in run (padded to the shortest frame)."""
    payload = json.dumps({"beonet": 1, "run": run, "node": node, "nic": nic, "mac": mac},
                         sort_keys=True, separators=(",", ":")).encode("utf-8")
    if len(payload) > MAX_PAYLOAD:
        raise DiscoveryError("%s: the beacon of %s is %d bytes, more than a frame holds "
                             "(shorten the node name or the run id)" % (node, nic, len(payload)))
    frame = BROADCAST + mac_bytes(mac) + struct.pack("!H", ETHERTYPE) + payload
    return frame.ljust(MIN_FRAME, b"\0")


def decode_beacon(frame: bytes, run: str) -> Neighbour | None:
    """(node, NIC, MAC) of a beacon of this run; None for any other frame."""
    if len(frame) < 15 or frame[12:14] != struct.pack("!H", ETHERTYPE):
        return None
    try:
        data = json.loads(frame[14:].rstrip(b"\0").decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("beonet") != 1 or data.get("run") != run:
        return None
    fields = (data.get("node"), data.get("nic"), data.get("mac"))
    if not all(isinstance(f, str) and f for f in fields):
        return None
    return (str(fields[0]), str(fields[1]), str(fields[2]))


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except (OSError, ValueError):
        return None


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def ethtool_driver(name: str) -> str | None:
    """The driver of a NIC (ETHTOOL_GDRVINFO), None when the kernel does not say."""
    import array
    import fcntl
    buf = array.array("B", struct.pack("=I", ETHTOOL_GDRVINFO) + b"\0" * 192)
    ifreq = struct.pack("16sP", name.encode()[:15], buf.buffer_info()[0]).ljust(40, b"\0")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifreq)
    except OSError:
        return None
    return buf.tobytes()[4:36].split(b"\0", 1)[0].decode("ascii", "replace") or None


def _devtype(base: str) -> str | None:
    for line in (_read(os.path.join(base, "uevent")) or "").splitlines():
        if line.startswith("DEVTYPE="):
            return line[len("DEVTYPE="):]
    return None


def _virtual_kind(base: str) -> str | None:
    """Why a device is a bridge, bond, VLAN, tunnel, wireless...; None for a plain NIC."""
    devtype = _devtype(base)
    if devtype:
        return DEVTYPES.get(devtype, devtype)
    for entry, why in MARKERS:
        if os.path.exists(os.path.join(base, entry)):
            return why
    return None


def skip_reason(name: str, sysfs: str, management: Iterable[str], include_virtual: bool,
                exclude: Iterable[str], driver: Driver = ethtool_driver) -> str | None:
    """Why NIC name is not a candidate for discovery; None when it is one."""
    base = os.path.join(sysfs, name)
    kind = _read(os.path.join(base, "type"))
    if name == "lo" or kind == "772":
        return "loopback"
    if ifname_problem(name):
        return "a name beonet does not write (%s)" % IFNAME_RULE
    if name in management:
        return "management"
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in exclude):
        return "excluded"
    if kind != str(ARPHRD_ETHER):
        return "not Ethernet (type %s)" % (kind or "unknown")
    virtual = _virtual_kind(base)
    if virtual:
        return virtual
    if os.path.exists(os.path.join(base, "device")):
        return None
    found = driver(name)
    if found == "veth":
        return None if include_virtual else "veth (include_virtual admits it)"
    return found or "virtual"


def candidates(sysfs: str, management: Iterable[str], include_virtual: bool,
               exclude: Iterable[str], driver: Driver = ethtool_driver
               ) -> tuple[list[str], list[dict[str, str]]]:
    """(candidate NIC names, [{name, why}] of the others), both sorted by name."""
    management = set(management)
    exclude = list(exclude)
    chosen: list[str] = []
    skipped: list[dict[str, str]] = []
    try:
        names = sorted(os.listdir(sysfs))
    except OSError as exc:
        raise DiscoveryError("cannot list the NICs in %s: %s" % (sysfs, exc)) from exc
    for name in names:
        why = skip_reason(name, sysfs, management, include_virtual, exclude, driver)
        if why is None:
            chosen.append(name)
        else:
            skipped.append({"name": name, "why": why})
    return chosen, skipped


def default_route_nics(proc: str = PROC) -> set[str]:
    """The NICs holding an IPv4 or IPv6 default route."""
    found: set[str] = set()
    for line in (_read(os.path.join(proc, "net/route")) or "").splitlines()[1:]:
        f = line.split()
        if len(f) >= 8 and f[1] == "00000000" and f[7] == "00000000":
            found.add(f[0])
    for line in (_read(os.path.join(proc, "net/ipv6_route")) or "").splitlines():
        f = line.split()
        if len(f) == 10 and f[0] == "0" * 32 and f[1] == "00" and f[9] != "lo":
            found.add(f[9])
    return found


def address_nics(address: str, ip_output: str) -> set[str]:
    """The NICs of ``ip -o addr show`` output that hold address."""
    try:
        wanted = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return set()
    found: set[str] = set()
    for line in ip_output.splitlines():
        f = line.split()
        if len(f) >= 4 and f[2] in ("inet", "inet6"):
            try:
                if ipaddress.ip_interface(f[3]).ip == wanted:
                    found.add(f[1].split("@")[0])
            except ValueError:
                continue
    return found


def _connection_nics() -> set[str]:
    """The NICs holding the address this SSH session came in on (none without SSH)."""
    fields = os.environ.get("SSH_CONNECTION", "").split()
    if len(fields) != 4:
        return set()
    return address_nics(fields[2], procs.run(["ip", "-o", "addr", "show"], 10)[1])


def management_nics(explicit: Iterable[str], proc: str = PROC) -> list[str]:
    """The NICs discovery never touches: those given, the default route's and the SSH session's."""
    return sorted(set(explicit) | default_route_nics(proc) | _connection_nics())


def _ifreq_flags(name: str, flags: int | None = None) -> int:
    """The interface flags of name (SIOCGIFFLAGS), or set them (SIOCSIFFLAGS)."""
    import fcntl
    request = struct.pack("16sH", name.encode()[:15], flags or 0).ljust(40, b"\0")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        reply = fcntl.ioctl(s.fileno(), SIOCGIFFLAGS if flags is None else SIOCSIFFLAGS, request)
    return int(struct.unpack("16sH", reply[:18])[1])


def is_up(name: str) -> bool:
    return bool(_ifreq_flags(name) & IFF_UP)


def set_up(name: str, up: bool) -> None:
    flags = _ifreq_flags(name)
    _ifreq_flags(name, flags | IFF_UP if up else flags & ~IFF_UP)


def _has_ipv6_address(name: str, proc: str) -> bool:
    return any(line.split()[-1:] == [name]
               for line in (_read(os.path.join(proc, "net/if_inet6")) or "").splitlines())


def _silence_ipv6(name: str, proc: str) -> str | None:
    """Turn IPv6 off on a down NIC that has no IPv6 address; the path to turn it back on."""
    path = os.path.join(proc, "sys/net/ipv6/conf", name, "disable_ipv6")
    if _read(path) != "0" or _has_ipv6_address(name, proc):
        return None
    _write(path, "1")
    return path


@contextlib.contextmanager
def links_up(node: str, names: Iterable[str], proc: str = PROC) -> Iterator[list[str]]:
    """Bring the NICs that are down up, and yield their names; put them back as they were
    on leaving, also on error."""
    raised: list[tuple[str, str | None]] = []
    try:
        for name in names:
            try:
                if is_up(name):
                    continue
                raised.append((name, None))
                raised[-1] = (name, _silence_ipv6(name, proc))
                set_up(name, True)
            except OSError as exc:
                raise DiscoveryError("%s: bringing %s up for discovery failed: %s"
                                     % (node, name, exc)) from exc
        yield [name for name, _state in raised]
    finally:
        _put_back(node, raised)


def _put_back(node: str, raised: list[tuple[str, str | None]]) -> None:
    failures = []
    for name, ipv6 in reversed(raised):
        try:
            set_up(name, False)
            if ipv6:
                _write(ipv6, "0")
        except OSError as exc:
            failures.append("%s: putting %s back down failed: %s" % (node, name, exc))
    if failures:
        raise DiscoveryError("; ".join(failures))


def report_mac(sysfs: str, name: str) -> str:
    """The NIC's own MAC address: a bond member's permanent one (every member of a
    bond carries the bond's), else its address; empty when the kernel does not say."""
    return (_read(os.path.join(sysfs, name, "bonding_slave", "perm_hwaddr"))
            or _read(os.path.join(sysfs, name, "address")) or "")


def carrier(sysfs: str, name: str) -> bool:
    return _read(os.path.join(sysfs, name, "carrier")) == "1"


def wait_for_carrier(sysfs: str, names: list[str], seconds: float = CARRIER_WAIT) -> None:
    """Wait until every NIC of names has its carrier, at most seconds."""
    end = time.monotonic() + seconds
    while names and time.monotonic() < end and not all(carrier(sysfs, n) for n in names):
        time.sleep(0.1)


def _bpf_beacons_only() -> bytes:
    """A classic BPF program keeping the frames of EtherType 0x88B5 only."""
    return b"".join(struct.pack("=HBBI", *insn) for insn in (
        (0x28, 0, 0, 12),           # ldh [12]
        (0x15, 0, 1, ETHERTYPE),    # jeq #ETHERTYPE, keep, drop
        (0x06, 0, 0, 0xFFFF),       # keep: ret #65535
        (0x06, 0, 0, 0)))           # drop: ret #0


def open_socket(node: str, name: str) -> socket.socket:
    """A raw socket on NIC name seeing every frame the NIC receives (bond and bridge
    members too), filtered to beacons where the kernel allows. It is opened for no
    protocol and receives nothing until bound to the NIC: a socket opened for every
    protocol would queue, until bound, frames that other NICs receive."""
    import array
    try:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    except OSError as exc:
        raise DiscoveryError("%s: opening a raw socket failed (discovery runs as root): %s"
                             % (node, exc)) from exc
    try:
        program = array.array("B", _bpf_beacons_only())
        fprog = struct.pack("HP", len(program) // 8, program.buffer_info()[0])
        with contextlib.suppress(OSError):
            s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
        receive_queue(s)
        s.bind((name, ETH_P_ALL))
        s.setblocking(False)
    except OSError as exc:
        s.close()
        raise DiscoveryError("%s: listening on %s failed: %s" % (node, name, exc)) from exc
    return s


def _receive(s: socket.socket, nic: str, node: str, run: str, heard: set[Neighbour],
             known: set[bytes] | None = None) -> None:
    """Record every beacon of this run waiting on socket s (not our own). known: the
    frames read before (a neighbour's beacon is the same frame every time), not
    decoded again; at most MAX_KNOWN."""
    while True:
        try:
            frame, addr = s.recvfrom(2048)         # a beacon is at most 1,514 bytes
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
        if len(addr) > 2 and (addr[2] == PACKET_OUTGOING or addr[0] != nic):
            continue                # our own frame, or one another NIC received
        if known is not None:
            if frame in known:
                continue
            if len(known) < MAX_KNOWN:
                known.add(frame)
        beacon = decode_beacon(frame, run)
        if beacon and beacon[:2] != (node, nic):
            heard.add(beacon)


def receive_queue(s: socket.socket, size: int = RCVBUF) -> int:
    """Make socket s's receive queue hold size bytes (RCVBUF: see there), beyond
    rmem_max where allowed (root); the bytes the kernel grants."""
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, size)
    except OSError:
        with contextlib.suppress(OSError):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
    try:
        return int(s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
    except OSError:
        return 0


def dropped(s: socket.socket) -> int:
    """Frames socket s's full receive queue dropped since the last call (0 when the
    kernel does not say)."""
    try:
        return int(struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))[1])
    except (OSError, struct.error, AttributeError):
        return 0


def next_interval(elapsed: float, previous: float, fast: float = FAST) -> float:
    """Seconds to a NIC's next beacon (before jitter): INTERVAL for the first fast
    seconds of the window, then twice the previous, up to MAX_INTERVAL."""
    if elapsed < fast:
        return INTERVAL
    return min(MAX_INTERVAL, previous * 2)


def _send(socks: dict[str, socket.socket], frames: dict[str, bytes], sysfs: str, carried: set[str]) -> None:
    """Every NIC's beacon, once; the NICs with carrier join carried."""
    carried.update(name for name in socks if carrier(sysfs, name))
    for name, s in socks.items():
        with contextlib.suppress(OSError):     # no carrier yet: try again next time
            s.send(frames[name])


def exchange(node: str, run: str, socks: dict[str, socket.socket], frames: dict[str, bytes],
             window: float, sysfs: str = SYS, stop: Callable[[], bool] | None = None,
             fast: float = FAST, clock: Callable[[], float] = time.monotonic,
             wait: Waiter = select.select,
             sleep: Callable[[float], None] = time.sleep) -> tuple[dict[str, set[Neighbour]], set[str]]:
    """Send every NIC's beacon (jittered; next_interval) for window seconds, or until
    stop() is true, and record, per NIC, the beacons it receives; and the NICs that had
    their carrier at some send (a peer may go down before this window ends). After the
    first fast seconds, the sockets are read at most every HOLD seconds: the frames that
    arrive meanwhile wait in their queues (the hold is halved whenever one drops some)."""
    heard: dict[str, set[Neighbour]] = {name: set() for name in socks}
    known: dict[str, set[bytes]] = {name: set() for name in socks}
    carried: set[str] = set()
    by_fd = {s.fileno(): name for name, s in socks.items()}
    start = clock()
    end, next_send, interval, hold = start + window, start, INTERVAL, HOLD
    while True:
        now = clock()
        if now >= end or (stop is not None and stop()):
            return heard, carried
        if now >= next_send:
            _send(socks, frames, sysfs, carried)
            interval = next_interval(now - start, interval, fast)
            next_send = now + interval * random.uniform(1 - JITTER, 1 + JITTER)
        ready = wait(list(socks.values()), [], [], max(0.0, min(next_send, end) - clock()))[0]
        for s in ready:
            name = by_fd[s.fileno()]
            _receive(s, name, node, run, heard[name], known[name])
        if ready and clock() - start >= fast:
            if sum(dropped(s) for s in ready):     # every counter read: each read resets it
                hold = hold / 2 if hold > 0.05 else 0.0
            sleep(max(0.0, min(hold, next_send - clock(), end - clock())))


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """Turn SIGTERM into SystemExit while discovery runs, so links are put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        raise SystemExit("discovery stopped by signal %d" % signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _listen(node: str, run: str, nics: list[str], sysfs: str, window: float,
            stop: Callable[[], bool] | None = None) -> tuple[dict[str, set[Neighbour]], set[str]]:
    socks: dict[str, socket.socket] = {}
    try:
        for name in nics:
            socks[name] = open_socket(node, name)
        frames = {name: encode_beacon(run, node, name, _read(os.path.join(sysfs, name, "address"))
                                      or "00:00:00:00:00:00") for name in nics}
        return exchange(node, run, socks, frames, window, sysfs, stop)
    finally:
        for s in socks.values():
            s.close()


def check_window(window: float) -> str | None:
    if not 0 < window <= MAX_WINDOW:
        return "window must be more than 0 and at most %d seconds, not %s" % (MAX_WINDOW, window)
    return None


def discover(node: str, run: str, window: float, management: Iterable[str] = (),
             include_virtual: bool = False, exclude: Iterable[str] = (),
             probe_only: bool = False, sysfs: str = SYS, proc: str = PROC,
             stop: Callable[[], bool] | None = None) -> dict[str, Any]:
    """The discovery report of this node (see the module's RETURN); the window ends
    early when stop() is true (a background run told to stop)."""
    problem = check_window(window)
    if problem and not probe_only:
        raise DiscoveryError("%s: %s" % (node, problem))
    mgmt = management_nics(management, proc)
    nics, skipped = candidates(sysfs, mgmt, include_virtual, exclude)
    heard: dict[str, set[Neighbour]] = {name: set() for name in nics}
    carried: set[str] = set()
    with _sigterm_as_exit(), links_up(node, nics, proc) as raised:
        if probe_only:
            wait_for_carrier(sysfs, raised)
        else:
            heard, carried = _listen(node, run, nics, sysfs, window, stop)
        carriers = {name: name in carried or bool(heard[name]) or carrier(sysfs, name)
                    for name in nics}
    return {"format": FORMAT, "node": node, "run": run, "management": mgmt,
            "probe_only": probe_only,
            "nics": [{"name": name, "mac": report_mac(sysfs, name),
                      "carrier": carriers[name], "was_up": name not in raised,
                      "neighbours": [{"node": n, "nic": i, "mac": m} for n, i, m in sorted(heard[name])]}
                     for name in nics],
            "skipped": skipped}


# -- in the background: one call starts the listener, another stops it and collects ---------
# With more nodes than Ansible runs at once, the nodes are started batch by batch; a
# listener that runs until it is told to stop (or its cap) overlaps every other one
# however long the starting takes, where a fixed window would have to guess it.
# A listener lives no longer than its run: a new run started on the node tells every
# listener of the node still running (files of any run in RUN_DIR) to stop, waits until
# each has put its NICs back and removed its files (it writes no report: nobody would
# collect it), and only then starts its own. Whether a listener still runs is read from
# the lock it holds on its pid file for as long as it lives, never from the pid (which
# may be another process's by now); no process is ever killed.

def run_problem(run: str) -> str | None:
    """Why run cannot name a background run's files (None: it can)."""
    if not RUN_RULE.match(run):
        return "run must be 1 to 64 letters, digits, _ or - for a background run, not %s" % escaped(run)
    return None


def run_paths(node: str, run: str, folder: str = RUN_DIR) -> dict[str, str]:
    """The files of a node's background run: pid, stop (the mark that ends it), report
    (named by run and node: a node name starts with a letter and has no '/');
    DiscoveryError when either cannot name a file."""
    problem = run_problem(run) or node_name_problem(node)
    if problem:
        raise DiscoveryError("%s: %s" % (escaped(node), problem))
    return {k: os.path.join(folder, "%s-%s.%s" % (run, node, k)) for k in ("pid", "stop", "report")}


def start_paths(node: str, run: str, cap: float, folder: str = RUN_DIR) -> dict[str, str]:
    """run_paths, once the cap of a background run is checked too (DiscoveryError)."""
    paths = run_paths(node, run, folder)
    problem = check_window(cap)
    if problem:
        raise DiscoveryError("%s: %s" % (node, problem))
    return paths


def _remove(paths: dict[str, str]) -> None:
    for path in paths.values():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _listen_detached(paths: dict[str, str], args: dict[str, Any]) -> None:
    """The listener's body, in its own session with the standard streams on /dev/null:
    discover until the stop mark appears or the cap, then write the report (or the
    error) for collect_background; when a new run superseded it, remove its files and
    write none. Never returns."""
    started = time.monotonic()
    told: list[str] = []

    def stop() -> bool:
        if not told and os.path.exists(paths["stop"]):
            told.append(_read(paths["stop"]) or "")
        return bool(told)
    try:
        report: dict[str, Any] = {"discovery": discover(stop=stop, **args)}
        report["ended"] = "stopped" if told else "cap"
    except BaseException as exc:      # noqa: BLE001 - whatever ended it is reported, never lost
        report = {"error": str(exc) or type(exc).__name__}
    if told and told[0].startswith(SUPERSEDED):
        _remove(paths)                # the new run waits for this (the pid file's lock) first
        os._exit(0)
    report["listened"] = round(time.monotonic() - started, 1)
    with contextlib.suppress(OSError):
        atomic_write(paths["report"], json.dumps(report), mode=0o600, durable=False)
    os._exit(0)


def _claim(path: str, run: str, node: str) -> int:
    """Write this listener's pid file (pid, run, node), locked for as long as the
    listener lives (the descriptor is kept open until the process ends, however)."""
    import fcntl
    tmp = os.path.join(os.path.dirname(path), ".%s.%d.tmp" % (os.path.basename(path), os.getpid()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)      # locked before it has its name: never seen unlocked
    os.write(fd, ("%d\n%s\n%s\n" % (os.getpid(), run, node)).encode("utf-8"))
    os.replace(tmp, path)
    return fd


def alive(pid_file: str) -> bool:
    """Whether the listener of a pid file still runs: it holds the file's lock until
    it ends (also when killed). A pid file nobody holds is a leftover."""
    import fcntl
    try:
        fd = os.open(pid_file, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def runs_here(node: str, folder: str = RUN_DIR) -> dict[str, dict[str, str]]:
    """The background runs of node with a pid file in folder: run -> its files. A pid
    file names its run and node (another node's files may share the name's end)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return {}
    tail = "-%s.pid" % node
    out = {}
    for name in sorted(names):
        run = name[:-len(tail)]
        if name.startswith(".") or not name.endswith(tail) or run_problem(run):
            continue
        lines = (_read(os.path.join(folder, name)) or "").split("\n")
        if len(lines) < 3 or lines[1:3] == [run, node]:
            out[run] = run_paths(node, run, folder)
    return out


def supersede(node: str, run: str, folder: str = RUN_DIR, wait: float = SUPERSEDE_WAIT,
              sleep: Callable[[float], None] = time.sleep) -> list[str]:
    """Tell every listener of node still running here (another run's, or this run's
    started before) to stop, wait until they are gone, and remove what they and the
    listeners gone before them left; the runs told, sorted. DiscoveryError when one
    is still running after wait seconds (starting beside it would race for the NICs)."""
    runs = runs_here(node, folder)
    told = [r for r, paths in runs.items() if alive(paths["pid"])]
    for other in told:
        atomic_write(runs[other]["stop"], SUPERSEDED + run + "\n", mode=0o600, durable=False)
    waited = 0.0
    while waited < wait and any(alive(runs[r]["pid"]) for r in told):
        sleep(0.1)
        waited += 0.1
    still = [r for r in told if alive(runs[r]["pid"])]
    if still:
        raise DiscoveryError("%s: the listener of run %s still runs %.0f s after it was told to stop "
                             "(a pid file in %s is held); run %s was not started"
                             % (node, ", ".join(still), wait, folder, run))
    for paths in runs.values():
        _remove(paths)
    return told


def _child(write: int, paths: dict[str, str], args: dict[str, Any]) -> None:
    """In the forked child: detach, fork the listener, which claims its pid file, tells
    its pid through the pipe and listens. Never returns."""
    try:
        procs.detach()
        if os.fork():
            os._exit(0)
        _claim(paths["pid"], args["run"], args["node"])      # its descriptor stays open: the lock
        os.write(write, b"%d" % os.getpid())
        os.close(write)
        _listen_detached(paths, args)
    finally:
        os._exit(1)                   # only when something above raised: the caller sees no pid


def start_background(node: str, run: str, cap: float, management: Iterable[str] = (),
                     include_virtual: bool = False, exclude: Iterable[str] = (),
                     folder: str = RUN_DIR, wait: float = SUPERSEDE_WAIT) -> dict[str, Any]:
    """Start this node's listener in the background (a grandchild in its own session),
    once every listener of the node still running has stopped (supersede); return at
    once {"pid": its pid, "superseded": [the runs told to stop]}. It listens until
    collect_background marks it to stop, or for cap seconds at most."""
    paths = start_paths(node, run, cap, folder)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    superseded = supersede(node, run, folder, wait)
    _remove(paths)
    args = {"node": node, "run": run, "window": cap, "management": list(management),
            "include_virtual": include_virtual, "exclude": list(exclude)}
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        _child(write, paths, args)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        pid = int(fh.read() or b"0")
    os.waitpid(child, 0)
    if not pid:
        raise DiscoveryError("%s: the background listener of run %s could not start (writing its pid "
                             "file in %s failed)" % (node, run, folder))
    return {"pid": pid, "superseded": superseded}


def collect_background(node: str, run: str, folder: str = RUN_DIR, wait: float = COLLECT_WAIT,
                       sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Mark the background run to stop, wait for its report (at most wait seconds),
    remove its files and return {"discovery", "ended" ("stopped" | "cap"), "listened"}."""
    paths = run_paths(node, run, folder)
    if not os.path.exists(paths["pid"]) and not os.path.exists(paths["report"]):
        raise _not_started(node, run)
    atomic_write(paths["stop"], "", mode=0o600, durable=False)
    waited = 0.0
    while not os.path.exists(paths["report"]) and waited < wait:
        sleep(0.1)
        waited += 0.1
    try:
        with open(paths["report"], encoding="utf-8") as fh:
            text: str | None = fh.read()
    except OSError:
        text = None
    finally:
        _remove(paths)
    return _collected(node, run, text, wait)


def collect_command(node: str, run: str, folder: str = RUN_DIR, wait: float = COLLECT_WAIT) -> str:
    """collect_background as one POSIX shell command (no Python on the node: the
    controller runs it over the connection and reads its output with parse_collected).
    Prints a first line ``COLLECT_MARK: report|none|late``, then the report."""
    q = {k: shlex.quote(v) for k, v in run_paths(node, run, folder).items()}
    return ("umask 077; p=%s s=%s r=%s; "
            "if [ ! -e \"$p\" ] && [ ! -e \"$r\" ]; then echo '%s: none'; exit 0; fi; : > \"$s\"; "
            "i=0; while [ ! -e \"$r\" ] && [ $i -lt %d ]; do sleep 0.1; i=$((i+1)); done; "
            "if [ -e \"$r\" ]; then echo '%s: report'; cat \"$r\"; else echo '%s: late'; fi; "
            "rm -f \"$p\" \"$s\" \"$r\""
            % (q["pid"], q["stop"], q["report"], COLLECT_MARK, int(wait * 10), COLLECT_MARK, COLLECT_MARK))


def parse_collected(node: str, run: str, output: str, wait: float = COLLECT_WAIT) -> dict[str, Any]:
    """What collect_command printed, as collect_background returns it (or its error)."""
    first, _sep, rest = output.lstrip().partition("\n")
    state = first[len(COLLECT_MARK) + 2:].strip() if first.startswith(COLLECT_MARK + ": ") else ""
    if state == "none":
        raise _not_started(node, run)
    return _collected(node, run, rest if state == "report" else None, wait)


def _not_started(node: str, run: str) -> DiscoveryError:
    return DiscoveryError("%s: no discovery run %s was started here (or the node restarted since, "
                          "or a later run started here stopped it)" % (node, run))


def _collected(node: str, run: str, text: str | None, wait: float) -> dict[str, Any]:
    """A background run's report read back (None: none was written within wait)."""
    try:
        report: Any = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        report = None
    who = escaped(node)
    if not isinstance(report, dict):
        raise DiscoveryError("%s: the background discovery of run %s wrote no report within %.0f s"
                             % (who, escaped(run), wait))
    if "error" in report:
        raise DiscoveryError("%s: the background discovery failed: %s"
                             % (who, escaped(str(report["error"]))[:300]))
    why = collected_problem(report)
    if why:
        raise DiscoveryError("%s: the report of discovery run %s %s" % (who, escaped(run), why))
    return report


def collected_problem(report: dict[str, Any]) -> str | None:
    """Why a background run's report is not what collect_background returns (None: it is)."""
    missing = [k for k in ("discovery", "ended", "listened") if k not in report]
    if missing:
        return "lacks %s" % ", ".join(missing)
    if not isinstance(report["discovery"], dict):
        return "holds discovery: %s, not a mapping" % type_word(report["discovery"])
    if report["ended"] not in ("stopped", "cap"):
        return "holds ended: %s, not 'stopped' or 'cap'" % shown(report["ended"])
    listened = report["listened"]
    if isinstance(listened, bool) or not isinstance(listened, (int, float)) or not 0 <= listened < 1e9:
        return "holds listened: %s, not a number of seconds" % shown(listened)
    return None
