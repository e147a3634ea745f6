"""verify on a cluster where nodes die: allowed hop lists (plan format 2), bounded
traces, and the diagnosis that tells dead nodes from broken paths.

A diamond a-{b,c}-d written by hand (these tests do not depend on the compiler);
ping and traceroute are faked: each answers from a table of what the network does."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT
from test_live_proof import only_plan  # noqa: F401  (a fixture)

from beonet.agent import diagnose, verify
from beonet.livestate import readout


def _node(addr, *ifaces, forwarding=False):
    return {"address": addr, "forwarding": forwarding, "routes": [], "interfaces": [
        {"name": "eth%d" % k, "kind": "ethernet", "segment": "s%d" % k, "addresses": [a]}
        for k, a in enumerate(ifaces, 1)]}


NODES = {"a": _node("10.0.1.1", "10.0.1.1/24", "10.0.2.1/24"),
         "b": _node("10.0.1.2", "10.0.1.2/24", "10.0.5.2/24", forwarding=True),
         "c": _node("10.0.2.3", "10.0.2.3/24", "10.0.6.3/24", forwarding=True),
         "d": _node("10.0.9.4", "10.0.9.4/32", "10.0.5.4/24", "10.0.6.4/24")}
ADDR = {name: n["address"] for name, n in NODES.items()}
VIA_B, VIA_C = ["10.0.1.2", "10.0.9.4"], ["10.0.2.3", "10.0.9.4"]
EXPECTED_A = {"b": [["10.0.1.2"]], "c": [["10.0.2.3"]], "d": [VIA_B, VIA_C]}


def _trace_text(addr, hops):
    lines = ["traceroute to %s (%s), 4 hops max, 60 byte packets" % (addr, addr)]
    lines += ["%2d  %s" % (k, h if h == "*" else "%s  0.051 ms" % h) for k, h in enumerate(hops, 1)]
    return "\n".join(lines) + "\n"


class _Exit(Exception):
    def __init__(self, result):
        super().__init__(result.get("msg", ""))
        self.result = result


class _FakeNetwork:
    """The module's AnsibleModule: ping answers unless the target is in `silent`;
    traceroute prints `traces[address]` (a list of hop lists, one per attempt, the
    last repeated); every command is recorded."""

    def __init__(self, params, silent=(), traces=None, routes=(0, "[]", "")):
        self.params = {k: v.get("default") for k, v in LIB.ARGUMENT_SPEC.items()}
        self.params.update(params)
        self.silent, self.traces, self.commands = set(silent), traces or {}, []
        self.check_mode, self.routes = True, routes

    def get_bin_path(self, name):
        return "/usr/bin/" + name

    def run_command(self, cmd, **_):
        self.commands.append(list(cmd))
        if cmd[0].endswith("ping"):
            return (1 if cmd[-1] in self.silent else 0), "", ""
        if cmd[0] == "traceroute":
            answers = self.traces[cmd[-1]]
            attempt = sum(1 for c in self.commands if c[0] == "traceroute" and c[-1] == cmd[-1])
            return 0, _trace_text(cmd[-1], answers[min(attempt, len(answers)) - 1]), ""
        if cmd[0].endswith("ip") and "route" in cmd:
            return self.routes
        if cmd[0].endswith("ip") and cmd[1] == "-j":
            return 0, "[]", ""
        raise AssertionError(cmd)

    def fail_json(self, **result):
        raise _Exit(dict(result, failed=True))

    def exit_json(self, **result):
        raise _Exit(result)


def _load():
    import ansible.module_utils
    ansible.module_utils.__path__.append(str(ROOT / "module_utils"))
    spec = importlib.util.spec_from_file_location("beonet_verify_module", ROOT / "library/beonet_verify.py")
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    return lib


LIB = _load()


def _run(monkeypatch, params, forwarding="1\n", **network):
    fake = _FakeNetwork(params, **network)
    monkeypatch.setattr(LIB, "AnsibleModule", lambda **_: fake)
    monkeypatch.setattr(LIB, "read_text", lambda path: forwarding if path.endswith("ip_forward") else None)
    monkeypatch.setattr(LIB.beonet_node, "live_tso", lambda plan: {})
    with pytest.raises(_Exit) as exc:
        LIB.main()
    return exc.value.result, fake.commands


def _from_a(monkeypatch, traces, silent=(), forwarding="0\n"):
    params = {"node": "a", "plan": NODES["a"], "targets": {k: ADDR[k] for k in EXPECTED_A},
              "expected": EXPECTED_A}
    return _run(monkeypatch, params, forwarding, silent={ADDR[s] for s in silent},
                traces={ADDR[k]: v for k, v in traces.items()})


def test_any_allowed_hop_list_is_right_and_the_trace_is_bounded(monkeypatch):
    result, commands = _from_a(monkeypatch, {"b": [["10.0.1.2"]], "c": [["10.0.2.3"]], "d": [VIA_C]})
    assert result["mismatches"] == [] and result["checked"] == 3 and result["silent"] == []
    assert result["targets"] == ["b", "c", "d"] and result["forwarding"] is False
    traces = [c for c in commands if c[0] == "traceroute"]
    assert ["traceroute", "-n", "-I", "-N", "1", "-q", "1", "-w", "1", "-m", "4", "10.0.1.2"] in traces
    assert len(traces) == 3                                       # nothing traced twice
    # each target pinged once (the pings run side by side: their order is the threads')
    assert sorted(c[-1] for c in commands if c[0].endswith("ping")) == ["10.0.1.2", "10.0.2.3", "10.0.9.4"]


def test_a_differing_pair_is_traced_again_but_a_silent_target_only_once(monkeypatch):
    lost_then_fine = [["10.0.2.3", "*"], VIA_C]
    result, commands = _from_a(monkeypatch, {"b": [["*", "*", "*", "*"]], "c": [["10.0.2.3"]],
                                             "d": lost_then_fine}, silent=["b"])
    assert result["silent"] == ["b"]
    assert [r["pair"] for r in result["mismatches"]] == ["a -> b"]
    assert result["mismatches"][0]["expected"] == [["10.0.1.2"]]
    traced = [c[-1] for c in commands if c[0] == "traceroute"]
    assert traced.count(ADDR["b"]) == 1 and traced.count(ADDR["d"]) == 2
    assert [c[8] for c in commands if c[0] == "traceroute" and c[-1] == ADDR["d"]] == ["1", "3"]
    # a silent target's probes all go at once (past where its path stops, each waits 1 s)
    assert [c[4] for c in commands if c[0] == "traceroute" and c[-1] == ADDR["b"]] == ["4"]
    assert [c[4] for c in commands if c[0] == "traceroute" and c[-1] == ADDR["d"]] == ["1", "1"]


def test_routes_that_cannot_be_read_are_one_problem_not_every_route_missing(monkeypatch):
    cut_short = (0, "[]", "Dump was interrupted and may be inconsistent.")
    result, commands = _run(monkeypatch, {"node": "a", "plan": NODES["a"], "targets": {}, "expected": {}},
                            routes=cut_short)
    assert [p for p in result["problems"] if "route" in p] == [
        "a: could not read its routes (ip -j -4 route show table main: Dump was interrupted and may be "
        "inconsistent.); run verify again"]
    assert sum(1 for c in commands if "route" in c) == 2                # read twice


def test_a_plain_hop_list_counts_as_one_branch():
    assert verify.allowed_paths(["10.0.1.2", "10.0.9.4"]) == [VIA_B]
    assert verify.allowed_paths([VIA_B, VIA_C]) == [VIA_B, VIA_C] and verify.allowed_paths(None) == []
    assert verify.on_allowed_path([VIA_B, VIA_C], VIA_C) and not verify.on_allowed_path([VIA_B], VIA_C)
    assert verify.longest_path(EXPECTED_A) == 2 and verify.longest_path({}) == 0
    assert verify.expected_text([VIA_B, VIA_C]) == "10.0.1.2 10.0.9.4 or 10.0.2.3 10.0.9.4"


def _row(src, dst, expected, seen):
    return {"pair": "%s -> %s" % (src, dst), "source": src, "destination": dst,
            "expected": expected, "seen": seen}


def _result(targets, silent=(), mismatches=(), forwarding=True):
    return {"targets": list(targets), "silent": list(silent), "mismatches": list(mismatches),
            "forwarding": forwarding}


def test_a_dead_gateway_breaks_pairs_it_is_not_part_of():
    """b answers nobody: dead. a -> d stopped where the branch through b goes on: broken
    through b. Pairs to b are counted, not listed."""
    stop = ["*", "*", "*", "*"]
    results = {"a": _result("bcd", "b", [_row("a", "b", [["10.0.1.2"]], stop),
                                         _row("a", "d", [VIA_B, VIA_C], stop)]),
               "c": _result("abd", "b", [_row("c", "b", [["10.0.6.3", "10.0.1.2"]], stop)]),
               "d": _result("abc", "b", [_row("d", "b", [["10.0.5.2"]], stop)], forwarding=False)}
    s = diagnose.summarise(results, [], NODES)
    assert s["dead"] == ["b"] and s["dead_pairs"] == 3
    assert [(r["pair"], r["through"]) for r in s["broken"]] == [("a -> d", ["b (dead)"])]
    assert s["other_path"] == [] and s["lost"] == []
    assert s["lines"] == ["nodes dead or unreachable (1): b",
                          "pairs broken through a dead gateway or one with forwarding off (1):",
                          "  a -> d  stops before b (dead); seen * * * *",
                          "pairs that arrive by another path (0)",
                          "pairs that do not arrive (0)",
                          "pairs to or from dead nodes (3)"]


def test_a_target_one_source_cannot_ping_is_not_dead():
    results = {"a": _result("bd", "d"), "b": _result("ad")}
    assert diagnose.dead_nodes(results, []) == []
    assert diagnose.dead_nodes(results, ["c"]) == ["c"]                 # Ansible could not reach c
    assert diagnose.dead_nodes({"a": _result("bd", "d"), "b": _result("ad", "d")}, []) == ["d"]
    cut_off = {"a": _result("bd", "d"), "b": _result("ad", "d"), "d": _result("ab", "a")}
    assert diagnose.dead_nodes(cut_off, []) == []              # d reaches b: alive, cut off from a, b
    assert diagnose.dead_nodes(dict(cut_off, d=_result("ab", "ab")), []) == ["d"]


def test_forwarding_off_arriving_elsewhere_and_lost_pairs_are_told_apart():
    rows = [_row("a", "d", [VIA_B, VIA_C], ["10.0.2.3", "*", "*", "*"]),     # c forwards nothing
            _row("b", "c", [["10.0.1.1", "10.0.2.3"]], ["10.0.5.4", "10.0.2.3"]),   # another path
            _row("d", "a", [["10.0.5.2", "10.0.1.1"]], ["10.0.5.2", "*", "*"])]     # b forwards: lost
    results = {"a": _result("bcd", mismatches=rows[:1]), "b": _result("acd", mismatches=rows[1:2]),
               "c": _result("abd", forwarding=False), "d": _result("abc", mismatches=rows[2:])}
    s = diagnose.summarise(results, [], NODES)
    assert s["dead"] == [] and s["dead_pairs"] == 0
    assert [(r["pair"], r["through"]) for r in s["broken"]] == [("a -> d", ["c (forwarding off)"])]
    assert [r["pair"] for r in s["other_path"]] == ["b -> c"]
    assert [r["pair"] for r in s["lost"]] == ["d -> a"]
    assert "  d -> a  seen 10.0.5.2 * *" in s["lines"]


def test_a_gateway_that_answers_but_does_not_forward_is_named():
    row = _row("a", "d", [VIA_C], ["10.0.2.3", "10.0.2.3", "10.0.2.3"])
    s = diagnose.summarise({"a": _result("cd", mismatches=[row]), "c": _result("ad", forwarding=False)},
                           [], NODES)
    assert [r["through"] for r in s["broken"]] == [["c (forwarding off)"]]


def test_the_module_summarises_without_reading_a_node(monkeypatch):
    stop = ["*", "*", "*", "*"]
    results = {"a": _result("bd", "b", [_row("a", "d", [VIA_B, VIA_C], stop)])}
    result, commands = _run(monkeypatch, {"summarise": True, "results": results, "unreachable": ["c"],
                                          "nodes": NODES})
    assert commands == [] and result["dead"] == ["b", "c"]
    assert result["summary"][0] == "nodes dead or unreachable (2): b, c"
    assert [r["through"] for r in result["broken"]] == [["b (dead)", "c (dead)"]]


# The playbook's summary and failure, through Ansible ---------------------------

def _verify_tasks():
    """verify.yml's second play: its vars, and its tasks with the ones that read nodes
    (read and trace, prove) replaced by facts given (``fake_proof``: the prove task's
    result, its ``traced`` made from the given trace results as the module makes it)."""
    plays = yaml.safe_load((ROOT / "playbooks/verify.yml").read_text())
    tasks = []
    for task in plays[1]["tasks"]:
        if "beonet_verify_live" in task:
            tasks.append({"name": "Prove (given)", "ansible.builtin.set_fact": {
                "beonet_verify_proof": "{{ fake_proof }}"}, "run_once": True})
        elif "ansible.builtin.raw" in task:
            # one raw call per node: its command picked on the controller, bounded in time,
            # a node routed by FRR waiting for its routing to settle at most T seconds
            command = ("T={{ beonet_verify_settle | int }}; "
                       "{{ beonet_plan_result.verify.commands[inventory_hostname] }}")
            assert task["ansible.builtin.raw"] == command
            assert task["timeout"] == "{{ beonet_verify_timeout | int }}" and task["failed_when"] is False
            tasks.append({"name": "Read (given)", "ansible.builtin.set_fact": {
                "beonet_verify_read": {"stdout": ""}}})
        else:
            tasks.append(task)
    return plays[1]["vars"], tasks


def _play(tmp_path, results, mode, proof=None, plan_result=None, report=None):
    """Run verify.yml's second play on hosts a, b, c, d (d fails first, as an unreachable
    node drops out); (return code, {task name: host results})."""
    pvars, tasks = _verify_tasks()
    reached = {n: r for n, r in results.items() if n != "d"}
    proof = dict(proof or {}, traced=readout.summarise(reached, ["d"], NODES, 0.5))
    play = {"hosts": "all", "gather_facts": False,
            "vars": dict(pvars, beonet_plan_result=plan_result or {"plan": {"nodes": NODES}},
                         fake_proof=proof, beonet_verify_mode=mode, **({"beonet_verify_report": report}
                                                                          if report else {})),
            "tasks": [{"name": "d is down", "ansible.builtin.fail": {"msg": "unreachable"},
                       "when": "inventory_hostname == 'd'"}] + tasks}
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play]))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LIBRARY=str(ROOT / "library"),
               ANSIBLE_MODULE_UTILS=str(ROOT / "module_utils"))
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                          "-i", "a,b,c,d,", "-c", "local",
                          "-e", "ansible_python_interpreter=%s" % sys.executable,
                          str(tmp_path / "play.yml")], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=False)
    out = json.loads(res.stdout[res.stdout.index("{"):])
    return res.returncode, {t["task"]["name"]: t["hosts"] for t in out["plays"][0]["tasks"]}


def _failure(by_name):
    failed = next(h for h in by_name.values() if any(v.get("failed") and "msg" in v and
                                                     isinstance(v["msg"], list) for v in h.values()))
    return next(iter(failed.values()))["msg"]


def test_the_playbook_prints_the_summary_first_and_fails_on_a_broken_pair(tmp_path):
    """verify.yml's summary and failure tasks in traceroute mode, run by Ansible on local
    hosts whose trace results are given."""
    stop = ["*", "*", "*", "*"]
    results = {"a": dict(_result("bcd", "d", [_row("a", "d", [VIA_B, VIA_C], stop)]), checked=3,
                         problems=[]),
               "b": dict(_result("acd", "d"), checked=3, problems=[]),
               "c": dict(_result("abd", "d"), checked=3, problems=["c: forwarding is off, the plan says on"])}
    returncode, by_name = _play(tmp_path, results, "traceroute",
                                plan_result={"plan": {"nodes": NODES}, "paths": {n: {} for n in "abcd"}})
    summary = next(iter(by_name["Summary"].values()))["msg"]
    assert summary[0].startswith("9 pairs traced in ")
    assert summary[0].endswith(" s; 1 mismatches; 1 state problems")
    assert summary[1] == "nodes dead or unreachable (1): d"
    assert summary[-3:] == ["pairs to or from dead nodes (1)", "state problems (1):",
                            "  c: forwarding is off, the plan says on"]
    assert _failure(by_name) == [
        "a -> d | 10.0.1.2 10.0.9.4 or 10.0.2.3 10.0.9.4 | * * * *", "c: forwarding is off, the plan says on"]
    assert returncode == 2


def test_the_report_is_kept_for_the_view_before_the_check_fails(tmp_path):
    stop = ["*", "*", "*", "*"]
    results = {"a": dict(_result("bcd", "d", [_row("a", "d", [VIA_B, VIA_C], stop)]), checked=3, problems=[]),
               "b": dict(_result("acd", "d"), checked=3, problems=[]),
               "c": dict(_result("abd", "d"), checked=3, problems=[])}
    report = tmp_path / "verify.json"
    returncode, by_name = _play(tmp_path, results, "traceroute", report=str(report),
                                plan_result={"plan": {"nodes": NODES}, "paths": {n: {} for n in "abcd"}})
    kept = json.loads(report.read_text())
    assert returncode == 2 and kept["traced"]["dead"] == ["d"]
    assert [r["pair"] for r in kept["traced"]["mismatches"]] == ["a -> d"]


def _live_play(tmp_path, **proof):
    """verify.yml in live mode on a, b, c with the proof's result given (the rest of
    its keys as a healthy proof has them), a tracing b: (return code, tasks, summary)."""
    proof = dict({"proven": 6, "mismatched": 0, "unjudged": 0, "unread_pairs": 0, "seconds": 0.01,
                  "mismatches": [], "problems": [], "dead": [], "unreadable": [], "unjudged_nodes": [],
                  "summary": [], "sample": {"a": {"b": [["10.0.1.2"]]}}}, **proof)
    results = {"a": dict(_result("b"), checked=1, problems=[]),
               "b": dict(_result(""), checked=0, problems=[]),
               "c": dict(_result(""), checked=0, problems=[])}
    returncode, by_name = _play(tmp_path, results, "live", proof)
    return returncode, by_name, next(iter(by_name["Summary"].values()))["msg"]


def test_the_playbook_in_live_mode_prints_both_summaries_and_fails_on_a_live_mismatch(tmp_path):
    """The default mode: the live proof's line and diagnosis first, then the sample's
    traces; a pair the live state breaks fails the play in the traceroute rows' shape."""
    row = dict(_row("a", "d", [VIA_B, VIA_C], ["10.0.2.3", "*"]), why="c (forwarding off)", kind="broken")
    lines = ["nodes dead or unreachable (1): d",
             "pairs broken through a dead gateway or one with forwarding off (1):",
             "  stops before c (forwarding off): 1 pair, e.g. a -> d"]
    returncode, by_name, summary = _live_play(
        tmp_path, proven=5, mismatched=1, mismatches=[row], dead=["d"], summary=lines,
        problems=["c: link down on NIC eth2 (no carrier)"])
    assert summary[0].startswith("5 pairs proven from the live state in ")
    assert summary[0].endswith(" s (the walk 0.0 s); 1 mismatches; 0 not judged; 0 not proven (state "
                               "unreadable); 1 state problems")
    assert summary[1:4] == lines
    assert summary[4].startswith("1 pairs traced in ")
    assert summary[4].endswith("0 mismatches; 0 state problems")
    assert _failure(by_name) == ["a -> d | 10.0.1.2 10.0.9.4 or 10.0.2.3 10.0.9.4 | 10.0.2.3 *",
                                 "c: link down on NIC eth2 (no carrier)"]
    assert returncode == 2


def test_the_playbook_in_live_mode_fails_on_a_node_whose_state_could_not_be_read(tmp_path):
    """No mismatch, no dead node: the unreadable node's one problem fails the play, and the
    pairs not proven are counted in the first line."""
    problem = ("c: state unreadable: could not read its links (ip -j link show: Error); its pairs are not "
               "proven, run verify again")
    lines = ["nodes dead or unreachable (0)", "nodes whose state could not be read, to verify again (1): c"]
    returncode, by_name, summary = _live_play(tmp_path, unread_pairs=6, problems=[problem], unreadable=["c"],
                                              summary=lines)
    assert summary[0].endswith("0 mismatches; 0 not judged; 6 not proven (state unreadable); "
                               "1 state problems")
    assert summary[1:3] == lines
    assert _failure(by_name) == [problem] and returncode == 2


def test_the_compile_picks_for_the_mode_and_the_proof_reads_the_raw_outputs():
    plays = yaml.safe_load((ROOT / "playbooks/verify.yml").read_text())
    assert plays[1]["vars"]["beonet_verify_mode"] == "live"
    assert plays[0]["vars"]["beonet_plan_verify"] == "{{ beonet_verify_mode | default('live') }}"
    [prove] = [t["beonet_verify_live"] for t in plays[1]["tasks"] if "beonet_verify_live" in t]
    assert prove["mode"] == "{{ beonet_verify_mode }}"
    assert "'beonet_verify_read'" in prove["outputs"] and "attribute='stdout'" in prove["outputs"]
    assert prove["expected"] == "{{ beonet_plan_result.verify.expected }}"


def test_a_node_the_connection_finds_stopped_is_dead_not_unreadable(tmp_path):
    """verify.yml's play vars through Ansible: a read that never ran on its node (the
    Docker lab's connection: a failed command, nothing printed, "is not running") makes
    the node dead; one that ran and failed leaves it to be named unreadable."""
    pvars, _tasks = _verify_tasks()
    stopped = "Error response from daemon: Container 9b is not running"
    reads = {"a": {"rc": 1, "stdout": "", "stderr": stopped},
             "b": {"rc": 1, "stdout": "", "stderr": "mktemp: failed to create directory"},
             "c": {"rc": 0, "stdout": "=== out links 0", "stderr": ""}}
    play = {"hosts": "all", "gather_facts": False, "vars": dict(pvars, reads=reads),
            "tasks": [{"name": "Read (given)", "ansible.builtin.set_fact": {
                          "beonet_verify_read": "{{ reads[inventory_hostname] }}"}},
                      {"name": "Sorted", "ansible.builtin.debug": {
                          "msg": "{{ [beonet_verify_stopped, beonet_verify_answered] }}"}, "run_once": True}]}
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play]))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="json")
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                          "-i", "a,b,c,", "-c", "local",
                          "-e", "ansible_python_interpreter=%s" % sys.executable, str(tmp_path / "play.yml")],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    out = json.loads(res.stdout[res.stdout.index("{"):])
    sorted_ = next(iter(out["plays"][0]["tasks"][1]["hosts"].values()))["msg"]
    assert res.returncode == 0 and [sorted(x) for x in sorted_] == [["a"], ["b", "c"]]


def test_dead_nodes_are_told_on_an_ipv6_only_cluster(only):
    owner = diagnose.owners(only["nodes"])
    assert owner[only["nodes"]["node-1-1"]["address6"]] == "node-1-1"
    key = verify.target_key("node-1-1", True)
    results = {"node-0-0": {"targets": [key], "silent": [key], "forwarding": True, "mismatches": [
        {"pair": "node-0-0 -> " + key, "source": "node-0-0", "destination": key, "expected": [["x"]],
         "seen": ["*"]}]}}
    got = diagnose.summarise(results, [], only["nodes"])
    assert got["dead"] == ["node-1-1"] and got["dead_pairs"] == 1
