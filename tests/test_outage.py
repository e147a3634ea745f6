"""beonet lab outage (labs/outage.py): which pairs a failure's probes watch, how a
pair's outage is read from ping's output, and the command's refusals."""

import json
import re

import pytest
from conftest import ROOT, needs_host

from beonet import cli
from beonet.compiler import pipeline
from beonet.labs import frrstate, outage
from beonet.labs.base import LabError
from beonet.outputs import plan as render
from beonet.outputs.ipfamily import cluster_address


def _mesh():
    compiled = pipeline.compile_file(str(ROOT / "topologies" / "routed-mesh-2x2.yml"))
    plan = render.plan(compiled)
    return plan, outage._paths(compiled, list(plan["nodes"]))


def test_a_node_failure_watches_the_pairs_through_it_and_none_of_its_own():
    plan, paths = _mesh()
    pairs = outage.affected(plan, paths, "node", "node-0-1")
    assert pairs and all("node-0-1" not in p for p in pairs)
    assert all(any("node-0-1" in b[:-1] for b in paths[s][d]) for s, d in pairs)
    through = {(s, d) for s in paths for d in paths[s] if "node-0-1" not in (s, d)
               and any("node-0-1" in b[:-1] for b in paths[s][d])}
    assert set(pairs) == through


def test_a_switch_failure_watches_every_pair_with_a_hop_across_it():
    plan, paths = _mesh()
    seg = plan["nodes"]["node-0-0"]["interfaces"][0]["segment"]
    members = {n for n, node in plan["nodes"].items() if any(i["segment"] == seg for i in node["interfaces"])}
    pairs = outage.affected(plan, paths, "switch", seg)
    assert pairs
    for s, d in pairs:
        assert any(a in members and b in members for b_ in paths[s][d] for a, b in zip([s] + b_[:-1], b_))


def test_a_cable_failure_watches_the_hops_over_that_cable_at_that_node():
    plan, paths = _mesh()
    nic = plan["nodes"]["node-0-0"]["interfaces"][0]
    pairs = outage.affected(plan, paths, "cable", "node-0-0:%s" % nic["name"])
    assert pairs and all("node-0-0" in (s, d) or any("node-0-0" in b for b in paths[s][d]) for s, d in pairs)
    assert outage.affected(plan, paths, "cable", "node-0-0:nosuch") == []


def _ping(seqs, start=1000.0, missing=()):
    lines = ["PING 10.254.0.2 (10.254.0.2) 56(84) bytes of data."]
    for s in seqs:
        t = start + (s - 1) * 0.1
        if s in missing:
            lines.append("[%.6f] no answer yet for icmp_seq=%d" % (t + 0.1, s))
        else:
            lines.append("[%.6f] 64 bytes from 10.254.0.2: icmp_seq=%d ttl=63 time=0.05 ms" % (t, s))
    return lines


def test_an_outage_lasts_from_the_failure_to_the_first_answer_after_the_last_loss():
    lines = _ping(range(1, 41), missing={12, 13, 14, 16})
    took = outage.outage_of(lines, fault_at=1001.05)        # probe 12 was sent at 1001.1
    assert took == pytest.approx(1000 + 16 * 0.1 - 1001.05)   # probe 17, at 1001.6
    assert outage.outage_of(_ping(range(1, 41)), fault_at=1001.05) == 0.0
    assert outage.outage_of(_ping(range(1, 41), missing=set(range(20, 41))), fault_at=1001.05) is None
    assert outage.outage_of(["ping: connect: Network is unreachable"], fault_at=1001.05) is None
    # a loss before the failure is not the failure's
    assert outage.outage_of(_ping(range(1, 41), missing={3}), fault_at=1001.05) == 0.0


def test_the_outcome_line_names_the_worst_pair_and_the_pairs_lost():
    out = outage.Outcome("cable a:eth1", "frr", [("a", "b"), ("b", "a")], {"a>b": 0.25, "b>a": 0.31},
                         live_pairs=12, window=5.0)
    assert out.line() == ("outage: frr, cable a:eth1: 2 pairs probed (IPv4) every 100 ms, all back after "
                          "0.31 s (worst b>a); 0 of 12 live pairs lost for good")
    out.never, out.lost = ["a>b"], ["a>b", "c>b"]
    assert "1 never back within 5 s; 2 of 12 live pairs lost for good" in out.line()
    assert outage.report(out, "json").startswith("{")


FAKE_PING = """#!/bin/sh
# ping -n -D -O -i 0.1 ADDR as iputils' ping behaves: answers until killed, the third
# probe meets a router's "unreachable"; with -w (a deadline) that error ends it;
# 10.0.0.9 has no route at the start
for a; do addr=$a; [ "$a" = -w ] && deadline=1; done
[ "$addr" = 10.0.0.9 ] && echo "ping: connect: Network is unreachable" && exit 2
i=1; while :; do
  if [ $i = 3 ]; then echo "[3.000000] From 10.0.0.254 icmp_seq=3 Destination Net Unreachable"
    [ -n "$deadline" ] && exit 1
  else echo "[$i.000000] 64 bytes from $addr: icmp_seq=$i ttl=64 time=0.1 ms"; fi
  i=$((i+1)); sleep 0.05
done
"""


in_a_shell = needs_host("the probe script as a node's POSIX shell runs it (sh, grep, sleep, timeout)",
                        "sh", "grep", "sleep", "timeout")


def _probe_run(tmp_path, monkeypatch, addrs):
    """Run one source's probe script with a fake ping on PATH; returns the process."""
    import subprocess

    (tmp_path / "bin").mkdir(exist_ok=True)
    (tmp_path / "bin" / "ping").write_text(FAKE_PING)
    (tmp_path / "bin" / "ping").chmod(0o755)
    monkeypatch.setattr(outage, "PROBES", str(tmp_path / "probes"))
    monkeypatch.setattr(outage, "READY", 0.5)
    env = {"PATH": "%s:/usr/bin:/bin" % (tmp_path / "bin")}
    return subprocess.Popen(["sh", "-c", outage._probe_script(addrs, 6)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)


@in_a_shell
def test_the_probes_say_ready_once_each_has_an_answer_and_end_when_told(tmp_path, monkeypatch):
    proc = _probe_run(tmp_path, monkeypatch, ["10.0.0.2", "10.0.0.3"])
    assert proc.stdout.readline() == "ready\n"
    outage._run_for([proc], 0.3)
    assert proc.returncode is not None
    for addr in ("10.0.0.2", "10.0.0.3"):
        text = (tmp_path / "probes" / addr).read_text()
        # an ICMP error on the way does not end the probe: the pair is seen coming back
        assert "64 bytes from %s: icmp_seq=1 " % addr in text and "icmp_seq=4 " in text
    assert "ping -n -D -O -i 0.1 10.0.0.2 >" in outage._probe_script(["10.0.0.2"], 6)
    assert "ping -n -c 3 -i 0.2 -W 1 10.254.0.2" in outage._once_script(["10.254.0.2"])


@in_a_shell
def test_a_probe_that_never_answered_refuses_the_measurement_before_any_failure(tmp_path, monkeypatch):
    # a ping started while a destination has no route ends at once ("connect: Network
    # is unreachable"): measured, it would read as a pair never back
    proc = _probe_run(tmp_path, monkeypatch, ["10.0.0.2", "10.0.0.9"])
    proc.args = ["docker", "exec", "-i", "lab-a"] + proc.args
    assert outage._started([proc], {"10.0.0.9": "b"}, "lab") == ["a to b"]
    outage._run_for([proc], 0)


def test_probes_that_get_no_first_answer_are_ended_and_the_lab_settled_again(monkeypatch):
    settles, ended, said = [], [], [["a to b"], []]
    monkeypatch.setattr(outage, "_settle", lambda *a: settles.append(1) or 2.0)
    monkeypatch.setattr(outage, "_probe", lambda *a: ["probes %d" % len(settles)])
    monkeypatch.setattr(outage, "_started", lambda procs, owner, lab: said.pop(0))
    monkeypatch.setattr(outage, "_run_for", lambda procs, seconds: ended.append((procs, seconds)))
    plan = {"nodes": {"a": {"address": "10.0.0.1"}, "b": {"address": "10.0.0.2"}}}
    assert outage._ready("lab", plan, ["a", "b"], True, [("a", "b")], 7) == (2.0, ["probes 2"])
    assert len(settles) == 2 and ended == [(["probes 1"], 0)]
    said[:] = [["a to b"]]
    monkeypatch.setattr(outage, "SETTLE", 0.0)
    monkeypatch.setattr(outage.time, "monotonic", iter(range(0, 1000, 5)).__next__)
    with pytest.raises(LabError, match="without an answer before the failure \\(a to b\\); nothing"):
        outage._ready("lab", plan, ["a", "b"], True, [("a", "b")], 7)


@pytest.mark.parametrize("args,code,message", [
    (["--node", "a", "--cable", "a:eth1"], 2, "one of --node, --cable or --switch"),
    ([], 2, "one of --node, --cable or --switch"),
    (["--provider", "vm", "--node", "a"], 2, "the Docker lab"),
    (["--node", "a"], 1, "no Docker lab in"),
    (["--node", "a", "--window", "nan"], 2, "--window must be 1 to 600 seconds"),
    (["--node", "a", "--window", "-5"], 2, "--window must be 1 to 600 seconds"),
    (["--node", "a", "--window", "1e9"], 2, "--window must be 1 to 600 seconds"),
    (["--cable", "../a:eth1\n", "--provider", "vm"], 2, "the Docker lab"),
])
def test_outage_refusals(capsys, tmp_path, monkeypatch, args, code, message):
    """Options that do not go together exit 2 (usage), a lab that is not there 1."""
    monkeypatch.chdir(tmp_path)
    topo = tmp_path / "t.yml"
    topo.write_text((ROOT / "topologies" / "routed-mesh-2x2.yml").read_text())
    assert cli.main(["lab", "outage", str(topo)] + args) == code
    assert message in capsys.readouterr().err


def test_outage_json_is_alone_on_stdout_the_faults_lines_go_to_stderr(capsys, tmp_path, monkeypatch):
    import json

    def measure(*_args):
        print("beonet lab: cable a:eth1 down: a:eth1 lost carrier")
        return outage.Outcome("cable a:eth1", "frr", [("a", "b")], {"a>b": 0.2}, live_pairs=2, window=6)
    monkeypatch.setattr(outage, "measure", measure)
    cli.main(["lab", "outage", "t.yml", "--cable", "a:eth1", "--outage-format", "json"])
    out, err = capsys.readouterr()
    assert json.loads(out)["back_max_s"] == 0.2 and "lost carrier" in err


def test_outage_names_a_node_the_plan_lacks_before_anything(tmp_path, monkeypatch):
    from beonet.labs import base

    monkeypatch.setattr(outage, "load_state", lambda *_a: {"lab": "l", "faults": {"nodes": []}})
    topo = str(ROOT / "topologies" / "routed-mesh-2x2.yml")
    for what in ("../x:eth1", "a/b:eth1", "node\n:eth1"):
        with pytest.raises(base.LabError, match="no node"):
            outage.measure(topo, str(tmp_path), None, "cable", what)


@pytest.mark.parametrize("what,message", [
    ("node-0-0", "--cable: 'node-0-0' is not NODE:NIC"),
    ("node-0-0:", "--cable: 'node-0-0:' is not NODE:NIC"),
    ("node-0-0:eth9", "--cable node-0-0:eth9: node-0-0 has no NIC 'eth9' in the plan"),
])
def test_outage_refuses_a_cable_without_a_nic_of_the_plan(tmp_path, monkeypatch, what, message):
    monkeypatch.setattr(outage, "load_state", lambda *_a: {"lab": "l", "faults": {"nodes": []}})
    topo = str(ROOT / "topologies" / "routed-mesh-2x2.yml")
    with pytest.raises(LabError) as caught:
        outage.measure(topo, str(tmp_path), None, "cable", what)
    assert message in str(caught.value)


def _fake_lab(monkeypatch, answers):
    """A lab whose every-pair asks lose answers[k] pairs on the k-th ask (the last one
    ever after); records the failures made."""
    made, asks = [], []

    def every_pair(_lab, _plan, live, out):
        lost = answers[min(len(asks), len(answers) - 1)]
        asks.append(lost)
        out.live_pairs += len(live) * (len(live) - 1)
        out.lost += ["%s>%s" % (live[0], live[1])] * lost

    monkeypatch.setattr(outage, "load_state", lambda *_a: {"lab": "l", "faults": {"nodes": []}})
    monkeypatch.setattr(outage, "_every_pair", every_pair)
    monkeypatch.setattr(outage.time, "sleep", lambda _s: None)
    monkeypatch.setattr(outage.faults, "fault", lambda *a, **k: made.append(k["action"]))
    monkeypatch.setattr(outage, "_probe", lambda *_a: [])
    monkeypatch.setattr(outage, "_outages", lambda *_a: None)
    return made, asks


def test_an_outage_waits_until_every_pair_answers_before_the_failure(tmp_path, monkeypatch):
    made, asks = _fake_lab(monkeypatch, [3, 1, 0])
    monkeypatch.setattr(outage.time, "monotonic", iter(range(0, 1000, 5)).__next__)
    topo = str(ROOT / "topologies" / "routed-mesh-2x2.yml")
    out = outage.measure(topo, str(tmp_path), None, "node", "node-0-1", window=1)
    # three asks to settle, then the one with the failure in place; stop, then start
    assert asks == [3, 1, 0, 0] and made == ["stop", "start"]
    # a clock 5 s on at each reading: the start, after each of the two unanswered asks,
    # and when every pair answered
    assert out.as_dict()["settled_s"] == 15.0
    # the node came back without the state site.yml set at run time: the report says so
    assert out.as_dict()["restarted"] == "node-0-1"
    assert out.line().endswith("; node-0-1 was started again without its run-time network state: "
                               "site.yml --limit node-0-1 applies its plan")


def test_an_outage_on_a_lab_that_does_not_settle_fails_nothing(tmp_path, monkeypatch):
    from beonet.labs import base

    made, _asks = _fake_lab(monkeypatch, [2])
    monkeypatch.setattr(outage, "SETTLE", 0.0)
    monkeypatch.setattr(outage.time, "monotonic", iter(range(0, 1000, 5)).__next__)
    topo = str(ROOT / "topologies" / "routed-mesh-2x2.yml")
    with pytest.raises(base.LabError, match="has not settled after 0 s: 2 of 12 pairs"):
        outage.measure(topo, str(tmp_path), None, "cable", "node-0-0:eth1", window=1)
    assert made == []


def _ospf(states: list[tuple[str, str]]) -> str:
    return json.dumps({"neighbors": {"10.254.0.%d" % k: [{"converged": state, "ifaceName": nic + ":10.0.0.1"}]
                                     for k, (nic, state) in enumerate(states)}})


def _frr_said(bfd_up: int, ospf: list[tuple[str, str]]) -> str:
    bfd = json.dumps([{"peer": "10.0.0.%d" % k, "status": "up"} for k in range(bfd_up)]
                     + [{"peer": "10.0.1.9", "status": "init"}])
    return "%s\n%s\n%s" % (bfd, frrstate.SPLIT, _ospf(ospf))


SETTLED_2X2 = [("eth1", "Full"), ("eth2", "Full")]


def test_with_frr_an_outage_also_waits_until_every_bfd_session_is_up(tmp_path, monkeypatch):
    made, _asks = _fake_lab(monkeypatch, [0])
    topo = tmp_path / "mesh-frr.yml"
    topo.write_text("name: m\nfamily: mesh\nmesh: {dims: [2, 2]}\nrouting: {engine: frr}\n")
    rounds = []

    def docker(args, timeout=60):
        # each node of the 2x2 mesh has one neighbour on each of its two segments;
        # in the first round node-0-0 has only one of its two sessions up
        if args[-1] == "show bfd peers json":       # the sessions before and after the failure
            return "[]"
        assert "show bfd peers json" in args[-1] and "show ip ospf neighbor json" in args[-1]
        if args[1].endswith("node-0-0"):
            rounds.append(1)
        up = 1 if len(rounds) == 1 and args[1].endswith("node-0-0") else 2
        return _frr_said(up, SETTLED_2X2)

    monkeypatch.setattr(outage, "_docker", docker)
    out = outage.measure(str(topo), str(tmp_path), None, "node", "node-0-1", window=1)
    assert len(rounds) == 2 and made == ["stop", "start"] and out.engine == "frr"
    monkeypatch.setattr(outage, "SETTLE", 0.0)
    monkeypatch.setattr(outage, "_docker", lambda args, timeout=60: "not json")
    says = "FRR is not settled everywhere: node-0-0 \\(0 of 2 BFD sessions up\\)"
    with pytest.raises(LabError, match=says):
        outage.measure(str(topo), str(tmp_path), None, "node", "node-0-1", window=1)


@pytest.mark.parametrize(("ospf", "says"), [
    ([("eth1", "Full"), ("eth2", "ExStart")], "1 of 2 OSPF neighbours settled; forming on eth2"),
    ([("eth1", "Full")], "1 of 2 OSPF neighbours settled"),
    # on a point-to-multipoint LAN every member becomes adjacent: 2-Way is still forming
    ([("eth1", "Full"), ("eth2", "2-Way")], "1 of 2 OSPF neighbours settled; forming on eth2"),
])
def test_with_frr_an_outage_waits_until_every_ospf_adjacency_has_formed(tmp_path, monkeypatch, ospf, says):
    made, _asks = _fake_lab(monkeypatch, [0])
    topo = tmp_path / "mesh-frr.yml"
    topo.write_text("name: m\nfamily: mesh\nmesh: {dims: [2, 2]}\nrouting: {engine: frr}\n")
    asked = []

    def docker(args, timeout=60):
        if args[-1] == "show bfd peers json":
            return "[]"
        asked.append(args[1])
        first = len(asked) <= 4
        return _frr_said(2, ospf if first and args[1].endswith("node-0-0") else SETTLED_2X2)

    monkeypatch.setattr(outage, "_docker", docker)
    out = outage.measure(str(topo), str(tmp_path), None, "node", "node-0-1", window=1)
    assert len(asked) > 4 and made == ["stop", "start"] and out.engine == "frr"
    monkeypatch.setattr(outage, "SETTLE", 0.0)
    monkeypatch.setattr(outage, "_docker", lambda args, timeout=60: _frr_said(2, ospf))
    with pytest.raises(LabError, match="node-0-0 \\(%s\\)" % re.escape(says)):
        outage.measure(str(topo), str(tmp_path), None, "node", "node-0-1", window=1)


@pytest.mark.parametrize("said", [
    "", "not json", "null", "[]", '{"neighbors": []}', '{"neighbors": {"a": "Full"}}',
    '{"neighbors": {"a": [null, 7, "Full"]}}', '{"neighbors": {"a": [{"converged": NaN}]}}',
    '{"neighbors": {"a": [{"converged": "Full", "ifaceName": ["eth0"]}]}}',
    "[" * 100000,
])
def test_a_node_s_ospf_state_that_is_not_what_frr_prints_settles_nothing(said):
    settled, _forming = frrstate.ospf_settled(said)
    assert settled <= 1 and frrstate.bfd_up(said) == 0 and frrstate.sessions_up(said) == {}


def test_a_node_s_nic_names_are_reported_as_given_not_interpreted():
    said = _ospf([("../eth1\nx", "Full"), ("a/b", "ExStart")])
    assert frrstate.ospf_settled(said) == (1, ["a/b"])


def _sessions(peers: dict[str, tuple[int, float]], down: tuple[str, ...] = ()) -> str:
    return json.dumps([{"peer": p, "id": ident, "status": "up", "uptime": up, "interface": "eth1"}
                       for p, (ident, up) in peers.items()]
                      + [{"peer": p, "id": 99, "status": "down", "downtime": 3} for p in down])


def test_a_bfd_session_went_down_when_it_is_gone_another_or_younger_than_the_time_between():
    before = frrstate.sessions_up(_sessions({"10.0.0.2": (1, 50), "10.0.0.3": (2, 50), "10.0.0.4": (3, 50),
                                             "10.0.0.5": (4, 50), "10.0.0.6": (5, 50)}))
    after = frrstate.sessions_up(_sessions({"10.0.0.2": (1, 60), "10.0.0.3": (7, 60), "10.0.0.4": (3, 2),
                                            "10.0.0.5": (4, 9)}, down=("10.0.0.6",)))
    # 10 s between the readings: a session up 9 s is the same one (FRR counts whole seconds)
    assert frrstate.went_down(before, after, 10.0) == ["10.0.0.3", "10.0.0.4", "10.0.0.6"]
    assert frrstate.went_down(before, before, 0.0) == []


@pytest.mark.parametrize("said", [
    "", "{}", '[{"peer": "10.0.0.2", "id": "1", "status": "up", "uptime": 5}]',
    '[{"peer": "10.0.0.2", "id": 1, "status": "up", "uptime": true}]',
    '[{"peer": "10.0.0.2", "id": 1, "status": "up", "uptime": -1}]',
    '[{"peer": ["10.0.0.2"], "id": 1, "status": "up", "uptime": 5}]',
    '[{"peer": "10.0.0.2", "id": 1, "status": "init", "uptime": 5}]', "[" * 100000,
    '[{"peer": "10.0.0.2", "id": 1, "status": "up", "uptime": NaN}]',
    '[{"peer": "10.0.0.2", "id": 1, "status": "up", "uptime": "1e999"}]',
])
def test_bfd_sessions_not_as_frr_prints_them_are_no_sessions(said):
    assert frrstate.sessions_up(said) == {}


def test_an_outage_with_frr_names_the_bfd_sessions_dropped_the_failure_did_not_touch(tmp_path, monkeypatch):
    made, _asks = _fake_lab(monkeypatch, [0])
    topo = tmp_path / "mesh-frr.yml"
    topo.write_text("name: m\nfamily: mesh\nmesh: {dims: [2, 2]}\nrouting: {engine: frr}\n")
    plan = render.plan(pipeline.compile_file(str(topo)))
    nics = {n: {i["segment"]: i["addresses"][0].split("/")[0] for i in node["interfaces"] if i["addresses"]}
            for n, node in plan["nodes"].items()}
    shared = {(a, b): next(iter(set(nics[a]) & set(nics[b])), None) for a in nics for b in nics if a != b}
    peers = {n: {nics[m][seg]: m for (a, m), seg in shared.items() if a == n and seg} for n in nics}
    reads = []

    def docker(args, timeout=60):
        node = args[1].removeprefix("l-")
        if args[-1] != "show bfd peers json":
            return _frr_said(2, SETTLED_2X2)
        reads.append(node)
        first = reads.count(node) == 1
        # after the failure node-0-0's session to node-1-0 is another one; the sessions
        # to the stopped node-0-1 are down, as the failure has them
        return _sessions({addr: (7 if not first and node == "node-0-0" and m == "node-1-0" else 1, 100)
                          for addr, m in peers[node].items() if first or m != "node-0-1"})

    monkeypatch.setattr(outage, "_docker", docker)
    out = outage.measure(str(topo), str(tmp_path), None, "node", "node-0-1", window=1)
    # the failed node is read before the failure (its own link-local addresses), not after
    assert made == ["stop", "start"] and sorted(set(reads)) == sorted(plan["nodes"])
    assert reads.count("node-0-1") == 1 and reads.count("node-0-0") == 2
    assert out.bfd_dropped == ["node-0-0>node-1-0 on %s" % shared[("node-0-0", "node-1-0")]]
    assert "; BFD dropped 1 session the failure did not touch (node-0-0>node-1-0 on " in out.line()
    assert out.as_dict()["bfd_dropped"] == out.bfd_dropped


def test_a_bfd_session_on_the_failed_switch_or_cable_is_the_failure_s_not_a_drop():
    plan, _paths = _mesh()
    a = plan["nodes"]["node-0-0"]["interfaces"][0]
    seg = a["segment"]
    peer = next(n for n, node in plan["nodes"].items() if n != "node-0-0"
                and any(i["segment"] == seg for i in node["interfaces"]))
    other = next(i for i in plan["nodes"]["node-0-0"]["interfaces"] if i["addresses"] and i["segment"] != seg)
    addr = {n: {i["segment"]: i["addresses"][0].split("/")[0] for i in node["interfaces"] if i["addresses"]}
            for n, node in plan["nodes"].items()}
    far = next(n for n in plan["nodes"] if n != "node-0-0" and other["segment"] in addr[n])
    before = {"node-0-0": {addr[peer][seg]: (1, 50.0), addr[far][other["segment"]]: (2, 50.0)}}
    after: dict = {"node-0-0": {}}
    drops = outage.bfd_dropped(plan, "switch", seg, before, after, 5.0)
    assert drops == ["node-0-0>%s on %s" % (far, other["segment"])]
    assert outage.bfd_dropped(plan, "cable", "node-0-0:%s" % a["name"], before, after, 5.0) == drops
    # a cable of another node on the same segment does not take node-0-0's session down
    assert len(outage.bfd_dropped(plan, "cable", "%s:%s" % (far, "nosuch"), before, after, 5.0)) == 2


def test_a_bfd_peer_named_oddly_is_reported_as_given_not_interpreted():
    plan, _paths = _mesh()
    odd = "../10.0.0.9/x\ny"
    said = json.dumps([{"peer": odd, "id": 3, "status": "up", "uptime": 1e300}])
    before = {"node-0-0": frrstate.sessions_up(said)}
    assert before["node-0-0"] == {odd: (3, 1e300)}
    assert outage.bfd_dropped(plan, "node", "node-1-1", before, {}, 2.0) == ["node-0-0>%s on ?" % odd]
    # in the one-line report a node's words are escaped: no line break or control character
    out = outage.Outcome("node node-1-1", "frr", bfd_dropped=["node-0-0>%s\u2028 on ?" % odd])
    assert out.line().isprintable() and "\n" not in out.line() and "\u2028" not in out.line()


@pytest.mark.parametrize("text", ['[{"status": "up", "id": 1, "uptime": NaN, "peer": "a"}]',
                                  '[{"status": "up", "status": "down"}]',
                                  "[" * 100_000 + "]" * 100_000, "[]" + " " * (64 << 20)])
def test_what_a_node_prints_that_is_not_strict_json_counts_as_nothing(text):
    assert frrstate.loads(text) is None and frrstate.bfd_up(text) == 0
    assert frrstate.ospf_settled(text) == (0, [])


# -- IPv6: an IPv6-only plan's nodes probed at their IPv6 addresses, OSPFv3 settled too

def _six_topology(tmp_path, addressing, frr=False):
    topo = tmp_path / "mesh6.yml"
    topo.write_text("name: m\nfamily: mesh\nmesh: {dims: [2, 2]}\naddressing: %s\n%s"
                    % (addressing, "routing: {engine: frr}\n" if frr else ""))
    return topo


def test_the_probes_ping_an_ipv6_address_with_ping_6_and_read_its_replies():
    assert "timeout 50 ping -6 -n -D -O -i 0.1 fd00::2 > " in outage._probe_script(["fd00::2"], 10)
    assert "(ping -6 -n -c 3 -i 0.2 -W 1 fd00::2 >/dev/null" in outage._once_script(["fd00::2"])
    assert "(ping -n -c 3 -i 0.2 -W 1 10.0.0.2 >/dev/null" in outage._once_script(["10.0.0.2"])
    lines = [line.replace("10.254.0.2", "fd00::2") for line in _ping(range(1, 41), missing={12, 13, 14, 16})]
    assert "64 bytes from fd00::2: icmp_seq=1 " in lines[1]
    assert outage.outage_of(lines, fault_at=1001.05) == pytest.approx(1000 + 16 * 0.1 - 1001.05)


@pytest.mark.parametrize("addressing,family", [("{ipv4: false, ipv6: true}", "IPv6"),
                                               ("{ipv6: true}", "IPv4")])
def test_an_outage_probes_an_ipv6_only_plan_over_ipv6_and_a_dual_stack_one_over_ipv4(
        tmp_path, monkeypatch, addressing, family):
    topo = _six_topology(tmp_path, addressing)
    plan = render.plan(pipeline.compile_file(str(topo)))
    asked = {}

    def each(_lab, commands, timeout=30):
        asked.update(commands)
        return {n: "\n".join("ok %s" % a for a in re.findall(r"echo ok (\S+) ", cmd[-1]))
                for n, cmd in commands.items()}

    monkeypatch.setattr(outage, "load_state", lambda *_a: {"lab": "l", "faults": {"nodes": []}})
    monkeypatch.setattr(outage, "_each", each)
    monkeypatch.setattr(outage, "_probe", lambda *_a: [])
    monkeypatch.setattr(outage, "_outages", lambda *_a: None)
    monkeypatch.setattr(outage.time, "sleep", lambda _s: None)
    made = []
    monkeypatch.setattr(outage.faults, "fault", lambda *a, **k: made.append(k["action"]))
    out = outage.measure(str(topo), str(tmp_path), None, "node", "node-0-1", window=1)
    assert made == ["stop", "start"] and out.family == family and out.lost == [] and out.live_pairs == 6
    key = "address6" if family == "IPv6" else "address"
    want = plan["nodes"]["node-1-1"][key]
    ping = "ping -6" if family == "IPv6" else "ping"
    assert "%s -n -c 3 -i 0.2 -W 1 %s >" % (ping, want) in asked["node-0-0"][-1]
    assert '"family": "%s"' % family in outage.report(out, "json")


def _frr_said6(bfd_up: int, ospf: list[tuple[str, str]], ospf6: list[tuple[str, str]]) -> str:
    neighbours = {"neighbors": [{"neighborId": "10.254.0.%d" % k, "state": state, "interfaceName": nic,
                                 "ifState": "DR"} for k, (nic, state) in enumerate(ospf6)]}
    return "%s\n\n%s\n%s" % (_frr_said(bfd_up, ospf), frrstate.SPLIT6, json.dumps(neighbours, indent=2))


@pytest.mark.parametrize(("addressing", "bfd", "ospf", "ospf6", "says"), [
    ("{ipv6: true}", 4, SETTLED_2X2, [("eth1", "Full"), ("eth2", "ExStart")],
     "1 of 2 OSPFv3 neighbours settled; forming on eth2"),
    ("{ipv6: true}", 2, SETTLED_2X2, SETTLED_2X2, "2 of 4 BFD sessions up"),
    ("{ipv4: false, ipv6: true}", 2, [], [("eth1", "Full")], "1 of 2 OSPFv3 neighbours settled"),
])
def test_with_frr_and_ipv6_an_outage_waits_for_ospfv3_and_both_families_bfd_sessions(
        tmp_path, monkeypatch, addressing, bfd, ospf, ospf6, says):
    _fake_lab(monkeypatch, [0])
    topo = _six_topology(tmp_path, addressing, frr=True)
    asked = []

    def docker(args, timeout=60):
        if args[-1] == "show bfd peers json":
            return "[]"
        asked.append(args[-1])
        return _frr_said6(bfd, ospf, ospf6)

    monkeypatch.setattr(outage, "_docker", docker)
    monkeypatch.setattr(outage, "SETTLE", 0.0)
    with pytest.raises(LabError, match="node-0-0 \\(%s\\)" % re.escape(says)):
        outage.measure(str(topo), str(tmp_path), None, "node", "node-0-1", window=1)
    assert all("vtysh -c 'show ipv6 ospf6 neighbor json'" in a for a in asked)
    settled = 4 if "ipv4: false" not in addressing else 2
    monkeypatch.setattr(outage, "_docker", lambda args, timeout=60: "[]" if args[-1] == "show bfd peers json"
                        else _frr_said6(settled, SETTLED_2X2 if settled == 4 else [], SETTLED_2X2))
    out = outage.measure(str(topo), str(tmp_path), None, "node", "node-0-1", window=1)
    assert out.engine == "frr" and out.family == ("IPv4" if settled == 4 else "IPv6")


def test_without_ipv6_ospfv3_is_not_asked():
    assert "ospf6" not in " ".join(frrstate.STATE) and frrstate.STATE == frrstate.state_command(False)
    assert frrstate.sections("b%so%sx" % (frrstate.SPLIT, frrstate.SPLIT6)) == ("b", "o", "x")
    assert frrstate.sections("b%so" % frrstate.SPLIT) == ("b", "o", "")


@pytest.mark.parametrize("said", [
    "", "not json", "null", "[]", '{"neighbors": {}}', '{"neighbors": ["Full"]}',
    '{"neighbors": [null, 7, {"state": NaN}]}',
    '{"neighbors": [{"state": ["Full"], "interfaceName": "eth0"}]}',
    "[" * 100000,
])
def test_a_node_s_ospfv3_state_that_is_not_what_frr_prints_settles_nothing(said):
    assert frrstate.ospf6_settled(said)[0] == 0


def test_ospfv3_neighbours_full_are_settled_and_the_others_name_their_nic():
    said = json.dumps({"neighbors": [{"neighborId": "10.254.0.%d" % k, "state": state, "interfaceName": nic}
                                     for k, (nic, state) in enumerate([("eth1", "Full"), ("eth2", "Twoway"),
                                                                       ("eth2", "Loading")])]})
    assert frrstate.ospf6_settled(said) == (1, ["eth2"])


# --- IPv6: the family probed, and OSPFv3's BFD sessions with link-local peers

def _dual(tmp_path, extra=""):
    topo = tmp_path / "mesh6.yml"
    topo.write_text("name: m\nfamily: mesh\nmesh: {dims: [2, 2]}\naddressing: {ipv6: true}\n" + extra)
    return topo


def test_an_outage_probes_the_family_asked_for_and_says_which(tmp_path, monkeypatch):
    _fake_lab(monkeypatch, [0])
    probed = []
    monkeypatch.setattr(outage, "_probe", lambda _lab, plan, pairs, _s: probed.append(
        {cluster_address(plan["nodes"][d]) for _s_, d in pairs}) or [])
    topo = str(_dual(tmp_path))
    four = outage.measure(topo, str(tmp_path), None, "node", "node-0-1", window=1)
    six = outage.measure(topo, str(tmp_path), None, "node", "node-0-1", window=1, family=6)
    assert (four.family, six.family) == ("IPv4", "IPv6") and "probed (IPv6)" in six.line()
    assert probed[0] and all(":" not in a for a in probed[0]) and all(":" in a for a in probed[1])


@pytest.mark.parametrize("text, family", [("", 6), ("addressing: {ipv4: false, ipv6: true}\n", 4)])
def test_an_outage_of_a_family_the_plan_has_not_is_refused_before_anything_is_made(tmp_path, monkeypatch,
                                                                                  capsys, text, family):
    made, _asks = _fake_lab(monkeypatch, [0])
    topo = tmp_path / "t.yml"
    topo.write_text("name: m\nfamily: mesh\nmesh: {dims: [2, 2]}\n" + text)
    assert cli.main(["lab", "outage", str(topo), "--node", "node-0-1", "--family", str(family)]) == 2
    assert made == []
    said = capsys.readouterr().err
    assert "outage: --family %d: the plan has no IPv%d addresses" % (family, family) in said


def _bfd6(peers):
    """show bfd peers json of sessions to link-local peers: (peer, local, NIC)."""
    return json.dumps([{"peer": p, "local": mine, "interface": nic, "id": k + 1, "status": "up", "uptime": 50}
                       for k, (p, mine, nic) in enumerate(peers)])


def test_link_local_bfd_peers_are_named_by_their_node_through_the_lab_s_nics():
    plan, _paths = _mesh()
    seg = {n: {i["name"]: i["segment"] for i in node["interfaces"]} for n, node in plan["nodes"].items()}
    a, b = "node-0-0", "node-1-0"
    shared = next(s for s in seg[a].values() if s in seg[b].values())
    nic_a = next(n for n, s in seg[a].items() if s == shared)
    nic_b = next(n for n, s in seg[b].items() if s == shared)
    segment_of = {"%s:%s" % (a, nic_a): shared, "%s:%s" % (b, nic_b): shared}
    said = {a: _bfd6([("fe80::b", "fe80::a", nic_a)]), b: _bfd6([("fe80::a", "fe80::b", nic_b)])}
    before = {n: frrstate.sessions_up(text) for n, text in said.items()}
    assert list(before[a]) == ["fe80::b%%%s" % nic_a]
    held = frrstate.link_local_holders(said, segment_of)
    assert held == {("fe80::a", shared): a, ("fe80::b", shared): b}
    peers = outage.Peers(plan, segment_of, held)
    assert peers.of(a, "fe80::b%" + nic_a) == (b, shared)
    assert peers.of(a, "fe80::b%nosuch") == ("fe80::b%nosuch", "?")
    # the cable between them took both sessions down: the failure's, not a drop
    assert outage.bfd_dropped(plan, "cable", "%s:%s" % (a, nic_a), before, {}, 5.0, peers) == []
    other = next(n for n in plan["nodes"] if n not in (a, b))
    assert outage.bfd_dropped(plan, "node", other, before, {}, 5.0, peers) == \
        ["%s>%s on %s" % (a, b, shared), "%s>%s on %s" % (b, a, shared)]


@pytest.mark.parametrize("peer", [{"peer": "fe80::1", "interface": ["eth0"]}, {"peer": "fe80::1%eth0"},
                                  {"peer": "fe80::1", "interface": None}])
def test_a_link_local_peer_without_a_plain_nic_keeps_its_text(peer):
    said = json.dumps([dict(peer, id=1, status="up", uptime=5)])
    assert list(frrstate.sessions_up(said)) == [peer["peer"]]
    said = json.dumps([dict(peer, local="fe80::2")])
    assert frrstate.link_local_holders({"n": said}, {"n:eth0": "s"}) == {}
