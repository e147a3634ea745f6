"""The lab's wire check (python -m beonet.labs.wire): how it pairs nodes, adds
up concurrent runs and judges them; the runner with tokex replaced by canned
runs (molecule/links runs it on a real lab)."""

import pytest
import yaml
from conftest import ROOT

from beonet.compiler import pipeline
from beonet.labs import wire
from beonet.outputs import plan as render

TOPOLOGY = str(ROOT / "topologies" / "hub-and-switch.yml")


@pytest.fixture(scope="module")
def plan():
    return render.plan(pipeline.compile_file(TOPOLOGY))


def _run(start, seconds, size=65536, count=400, exchange=0.0, median=0.0):
    return {"start": start, "seconds": seconds, "size": size, "count": count,
            "exchange_MBps": exchange, "rtt_us": {"median": median}}


def test_aggregate_counts_the_common_window():
    one = _run(100.0, 2.0)
    assert wire.aggregate([one]) == pytest.approx(65536 * 400 / 2.0 / 1e6)
    # two pairs that drift apart: bytes of both over first start to last end
    two = [_run(100.0, 2.0), _run(100.5, 3.5)]
    assert wire.aggregate(two) == pytest.approx(2 * 65536 * 400 / 4.0 / 1e6)


def test_pairs_and_lans(plan):
    assert wire.lans(plan) == ["hub", "switch"]
    assert wire.pairs(plan, "hub") == [(("n1", "10.40.0.1"), ("n2", "10.40.0.2")),
                                       (("n3", "10.40.0.3"), ("n4", "10.40.0.4"))]
    small = {"segments": {"p": {"kind": "p2p", "members": [{"node": "a", "address": "x"}] * 2},
                          "l": {"kind": "lan", "members": [{"node": "a", "address": "x"}] * 3},
                          "c": {"kind": "channel", "members": [{"node": "a"}] * 4}}}
    assert wire.lans(small) == []


def test_wire_like_is_the_check_s_own_rule():
    assert wire.wire_like_burst(10, 1500) == 3076 and wire.wire_like_burst(100, 1500) == 3125
    assert wire.wire_like_burst(1000, 1500) == 31250 and wire.wire_like_burst(100, 9000) == 18076


def test_wire_bytes_and_pingpong_bounds():
    # 8 KB: 6 segments of at most 1448 bytes, 90 bytes each of headers and wire overhead
    assert wire.wire_bytes(8192, 1500) == 8732 and wire.wire_bytes(65536, 1500) == 69676
    assert wire.wire_bytes(8192, 9000) == 8282
    # 100 Mbit/s: a 3125-byte bucket; 146 % and 98 % of the link
    assert wire.pingpong_bound(8192, 100, 1500) == pytest.approx(8192 * 12.5 / (8732 - 3125))
    assert wire.pingpong_bound(65536, 100, 1500) == pytest.approx(12.309, abs=0.001)
    # a token that fits in the bucket cannot be checked
    assert wire.pingpong_bound(8192, 1000, 1500) is None
    assert wire.pingpong_bound(8192, 100, 9000) is None


def test_streams_last_about_two_seconds():
    assert wire.stream_count(100) == 381          # 25 MB at 12.5 MB/s
    assert wire.stream_count(1000) == 3814
    assert wire.stream_count(10) == 100           # at least 100 tokens


def test_pingpong_checks():
    bound8, bound64 = wire.pingpong_bound(8192, 100, 1500), wire.pingpong_bound(65536, 100, 1500)
    assert wire.check_pingpong("s", 8192, 16.7, bound8) is None       # wire-like bucket (measured)
    assert "23.52 MB/s, over the 18.26" in wire.check_pingpong("s", 8192, 23.52, bound8)  # 10 ms bucket
    assert wire.check_pingpong("s", 65536, 12.18, bound64) is None
    assert wire.check_pingpong("s", 65536, 12.5, bound64) is None      # within the timing slack
    assert "s: ping-pong of 65536 B" in wire.check_pingpong("s", 65536, 15.39, bound64)
    assert wire.check_pingpong("s", 8192, 200.0, None) is None


@pytest.mark.parametrize("medium,one,two,missed", [
    ("switched", 11.7, 23.4, []),
    ("switched", 11.7, 12.0, ["under 1.60 x one pair's"]),
    ("shared", 11.4, 11.4, []),
    ("shared", 11.7, 23.4, ["not one medium"]),
    ("shared", 7.0, 7.0, ["one stream 7.00 MB/s, under 7.50"]),
    ("shared", 8.4, 8.4, []),                   # a slow host's hub (67 %)
])
def test_stream_checks(medium, one, two, missed):
    found = wire.check_streams("seg", medium, 12.5, one, two)
    assert len(found) == len(missed)
    assert all(m in f for m, f in zip(missed, found))


def _canned(monkeypatch, stream, pair2, pingpong):
    """tokex replaced: a stream of one pair at `stream` MB/s, the second pair
    of a two-pair run at `pair2`, ping-pongs at `pingpong[size]` x the link."""
    seen = []

    def clients(lab, jobs):
        seen.append((lab, [(pair, args) for pair, args in jobs]))
        if "--mode" in jobs[0][1]:
            secs = 65536 * 400 / 1e6 / stream
            runs = [_run(0.0, secs)]
            if len(jobs) == 2:
                runs.append(_run(0.0, 65536 * 400 / 1e6 / pair2))
            return runs
        size = int(jobs[0][1][1])
        return [_run(0.0, 1.0, size=size, exchange=pingpong[size] * 12.5, median=900)]
    monkeypatch.setattr(wire, "clients", clients)
    return seen


def test_measure_lan_of_a_hub_and_a_switch(plan, monkeypatch, capsys):
    seen = _canned(monkeypatch, stream=11.4, pair2=11.4, pingpong={8192: 1.3, 65536: 0.97})
    # two pairs each at one pair's rate on the hub: twice the throughput, not one medium
    assert "not one medium" in wire.measure_lan("lab", plan, "hub")[0]
    assert wire.measure_lan("lab", plan, "switch") == []
    out = capsys.readouterr().out
    assert "beonet-measured: hub (shared, 100 Mbit/s = 12.50 MB/s): one stream 11.40" in out
    assert ("switch: ping-pong 8192 B tokens: exchange 16.25 MB/s (130.0 % of the link; bound 18.26)"
            in out)
    # the hub missed its check: its streams measured once more, still missed
    assert [len(jobs) for _, jobs in seen] == [1, 2, 1, 2, 1, 2, 1, 2, 1, 1]
    assert "hub (shared): two pairs carried 22.80 MB/s" in out and "measuring the streams again" in out
    _canned(monkeypatch, stream=11.7, pair2=11.7, pingpong={8192: 1.9, 65536: 1.9})
    assert [m.split(":")[1] for m in wire.measure_lan("lab", plan, "switch")] == [
        " ping-pong of 8192 B tokens exchanged 23.75 MB/s, over the 18.26 MB/s a wire-like bucket allows",
        " ping-pong of 65536 B tokens exchanged 23.75 MB/s, over the 12.31 MB/s a wire-like bucket allows"]


def test_main_prepares_measures_and_stops(monkeypatch, tmp_path, capsys):
    calls = []
    source = tmp_path / "tokex.c"
    source.write_text("int main(void) { return 0; }\n")
    monkeypatch.setattr(wire, "_prepare", lambda conts, text: calls.append(("prepare", conts, text)))
    monkeypatch.setattr(wire, "_stop", lambda conts: calls.append(("stop", conts)))
    monkeypatch.setattr(wire, "measure_lan",
                        lambda lab, plan, seg, version: ["%s: missed" % seg] if seg == "hub" else [])
    assert wire.main([TOPOLOGY, "--name", "mol-links", "--tokex", str(source)]) == 1
    conts = ["mol-links-n%d" % k for k in range(1, 5)]
    assert calls == [("prepare", conts, source.read_text()), ("stop", conts)]
    assert "wire: hub: missed" in capsys.readouterr().err
    monkeypatch.setattr(wire, "measure_lan", lambda lab, plan, seg, version: [])
    assert wire.main([TOPOLOGY, "--tokex", str(source)]) == 0


def _addressed(tmp_path, addressing):
    """hub-and-switch.yml with this addressing, as a file; its plan."""
    doc = yaml.safe_load(open(TOPOLOGY, encoding="utf-8"))
    doc["addressing"] = addressing
    path = tmp_path / "hub-and-switch.yml"
    path.write_text(yaml.safe_dump(doc))
    return str(path), render.plan(pipeline.compile_file(str(path)))


@pytest.mark.parametrize("addressing,args,version", [
    ({"ipv4": False, "ipv6": True}, [], 6), ({"ipv6": True}, [], 4), ({"ipv6": True}, ["--family", "6"], 6)])
def test_main_measures_over_the_plan_s_family(monkeypatch, tmp_path, addressing, args, version):
    """IPv4 where the plan has it, else IPv6; --family 6 picks a dual-stack plan's IPv6."""
    path, six = _addressed(tmp_path, addressing)
    seen = []
    monkeypatch.setattr(wire, "_prepare", lambda conts, text: None)
    monkeypatch.setattr(wire, "_stop", lambda conts: None)
    monkeypatch.setattr(wire, "measure_lan", lambda lab, plan, seg, v: seen.append((seg, v)) or [])
    assert wire.main([path, *args]) == 0
    assert seen == [("hub", version), ("switch", version)]
    key = "address6" if version == 6 else "address"
    assert wire.lans(six, version) == ["hub", "switch"]
    hub = six["segments"]["hub"]["members"]
    assert wire.pairs(six, "hub", version) == [((hub[0]["node"], hub[0][key]), (hub[1]["node"], hub[1][key])),
                                               ((hub[2]["node"], hub[2][key]), (hub[3]["node"], hub[3][key]))]


def test_a_family_the_plan_has_not_is_refused(tmp_path, capsys):
    path, six = _addressed(tmp_path, {"ipv4": False, "ipv6": True})
    assert wire.lans(six, 4) == []
    assert wire.main([path, "--family", "4"]) == 2
    assert "has no IPv4 addresses (--family 4)" in capsys.readouterr().err
    assert wire.main([TOPOLOGY, "--family", "6"]) == 2
    assert "hub-and-switch.yml has no IPv6 addresses (--family 6)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        wire.main([TOPOLOGY, "--family", "5"])
    assert exc.value.code == 2 and "invalid choice: 5" in capsys.readouterr().err


def test_ipv6_headers_cost_20_bytes_more_a_segment():
    # 8 KB over IPv6: 6 segments of at most 1428 bytes, 110 bytes each of headers and overhead
    assert wire.wire_bytes(8192, 1500, 6) == 8192 + 6 * 110 == wire.wire_bytes(8192, 1500) + 6 * 20
    assert wire.pingpong_bound(8192, 100, 1500, 6) == pytest.approx(8192 * 12.5 / (8852 - 3125))


def test_main_needs_a_lan_of_four(capsys):
    assert wire.main([str(ROOT / "topologies" / "routed-mesh-2x2.yml")]) == 1
    assert "no LAN with four members" in capsys.readouterr().err


class _Proc:
    def __init__(self, out="", rc=0):
        self.stdout, self.stderr, self.returncode = out, "boom", rc

    def communicate(self):
        return self.stdout, self.stderr


def test_container_commands(monkeypatch):
    """tokex built from the source on stdin, a server left by an interrupted
    check stopped first; clients of one call start at one instant; stop."""
    calls = []
    monkeypatch.setattr(wire.subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw)) or _Proc())
    wire._prepare(["c1", "c2"], "SOURCE")
    assert [c[0][:4] for c in calls] == [["docker", "exec", "-i", "c1"], ["docker", "exec", "-i", "c2"]]
    script = calls[0][0][-1]
    assert script.index("kill $(cat serve.pid") < script.index("gcc -O2") < script.index("serve -p 5391")
    assert calls[0][1]["input"] == "SOURCE"
    calls.clear()
    wire._stop(["c1"])
    assert calls[0][0][:3] == ["docker", "exec", "c1"]
    assert "kill $(cat /tmp/beonet-wire/serve.pid)" in calls[0][0][-1]
    monkeypatch.setattr(wire.subprocess, "run", lambda cmd, **kw: _Proc(rc=1))
    with pytest.raises(RuntimeError, match="c1: sh -c .* failed: boom"):
        wire._prepare(["c1"], "SOURCE")

    started = []
    out = '{"runs": [{"start": 1.0, "seconds": 2.0}]}'
    monkeypatch.setattr(wire.subprocess, "Popen", lambda cmd, **kw: started.append(cmd) or _Proc(out))
    pair = (("n1", "10.0.0.1"), ("n2", "10.0.0.2"))
    runs = wire.clients("lab", [(pair, ["-n", "5"]), (pair, ["-n", "6"])])
    assert runs == [{"start": 1.0, "seconds": 2.0}] * 2
    assert started[0][:5] == ["docker", "exec", "lab-n1", wire.WORK + "/tokex", "client"]
    assert started[0][started[0].index("-H") + 1] == "10.0.0.2"
    at = [c[c.index("--start-at") + 1] for c in started]
    assert at[0] == at[1] and started[1][-2:] == ["-n", "6"]
    monkeypatch.setattr(wire.subprocess, "Popen", lambda cmd, **kw: _Proc(rc=3))
    with pytest.raises(RuntimeError, match="tokex client failed: boom"):
        wire.clients("lab", [(pair, [])])


def test_a_stream_slowed_once_is_measured_again(plan, monkeypatch, capsys):
    """A loaded host can wake the shaper late for a whole run: a missed stream check
    is measured again, and only a third miss in a row counts."""
    rates = iter([7.0, 7.0, 7.0, 7.0, 11.4, 11.4, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0])   # a call's pairs, each

    def clients(lab, jobs):
        if "--mode" not in jobs[0][1]:
            size = int(jobs[0][1][1])
            return [_run(0.0, 1.0, size=size, exchange=12.0, median=900)]
        rate = next(rates)
        return [_run(0.0, 65536 * 400 / 1e6 / rate) for _ in jobs]
    monkeypatch.setattr(wire, "clients", clients)
    assert [m for m in wire.measure_lan("lab", plan, "switch") if "stream" in m] == []
    assert "one stream 11.40 MB/s" in capsys.readouterr().out
    missed = wire.measure_lan("lab", plan, "switch")
    assert [m.split(":")[1] for m in missed if "stream" in m] == [
        " one stream 7.00 MB/s, under 7.50 MB/s (0.60 x the link)"]
