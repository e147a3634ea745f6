"""The two modules of the live-state proof, thin over module_utils: beonet_verify's
collect mode (one read-only call on each node) and beonet_verify_live (the proof on
the controller); their documentation parses."""

import importlib.util
import json
import os
import subprocess
import sys
import types

import pytest
import yaml
from conftest import ROOT

from beonet.agent import collect
from beonet.compiler import pipeline
from beonet.livestate import synthetic
from beonet.outputs import plan as render

RAW = json.loads((ROOT / "tests/livestate/raw-node.json").read_text())
for _key in collect.SIX:                # recorded before the IPv6 readings: a node without IPv6
    RAW["commands"].setdefault(_key, [])


def _load(name):
    import ansible.module_utils
    if str(ROOT / "module_utils") not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(str(ROOT / "module_utils"))
    spec = importlib.util.spec_from_file_location(name + "_module", ROOT / "library" / ("%s.py" % name))
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    return lib


VERIFY = _load("beonet_verify")
LIVE = _load("beonet_verify_live")


class _Exit(Exception):
    def __init__(self, result):
        super().__init__(result.get("msg", ""))
        self.result = result


class _Module:
    """An AnsibleModule whose commands answer from the recording (nft missing when asked)."""

    def __init__(self, params, spec, no_nft=False):
        self.params = {k: v.get("default") for k, v in spec.items()}
        self.params.update(params)
        self.no_nft, self.commands = no_nft, []
        self.check_mode = self._diff = False

    def get_bin_path(self, name):
        return None if name == "nft" and self.no_nft else "/usr/sbin/" + name

    def run_command(self, cmd, **_):
        self.commands.append(list(cmd))
        argv = [os.path.basename(cmd[0])] + list(cmd[1:])
        key = next((k for k, a in collect.COMMANDS if a == argv), "routes")   # the route check's read
        return 0, json.dumps(RAW["commands"][key]), ""

    def fail_json(self, **result):
        raise _Exit(dict(result, failed=True))

    def exit_json(self, **result):
        raise _Exit(result)


def _run(lib, monkeypatch, params, spec, **kw):
    fake = _Module(params, spec, **kw)
    monkeypatch.setattr(lib, "AnsibleModule", lambda **_: fake)
    with pytest.raises(_Exit) as exc:
        lib.main()
    return exc.value.result, fake.commands


def test_collect_mode_runs_each_command_once_and_returns_the_state(monkeypatch):
    monkeypatch.setattr(VERIFY, "read_text", RAW["files"].get)
    asked = []
    monkeypatch.setattr(VERIFY.collect, "ask_neighbours", asked.append)
    result, commands = _run(VERIFY, monkeypatch, {"collect": True}, VERIFY.ARGUMENT_SPEC)
    # the neighbour the kernel marks FAILED is asked once more, then the table read again
    neigh = dict(collect.COMMANDS)["neigh"]
    assert [c[1:] for c in commands] == [argv[1:] for _k, argv in collect.COMMANDS] + [neigh[1:]]
    assert asked == [[("10.0.1.99", "eth1")]]
    assert result["changed"] is False
    assert result["state"] == collect.state_of(RAW["commands"], RAW["files"].get)


def test_collect_mode_on_a_node_without_nft_says_so(monkeypatch):
    monkeypatch.setattr(VERIFY, "read_text", RAW["files"].get)
    monkeypatch.setattr(VERIFY.collect, "ask_neighbours", lambda targets: None)
    result, commands = _run(VERIFY, monkeypatch, {"collect": True}, VERIFY.ARGUMENT_SPEC, no_nft=True)
    assert not any("nft" in c[0] for c in commands)
    assert result["state"]["filter"]["error"] == "nft -j list ruleset: nft is not installed"


def test_the_trace_mode_still_needs_node_and_plan(monkeypatch):
    result, _commands = _run(VERIFY, monkeypatch, {}, VERIFY.ARGUMENT_SPEC)
    assert result["failed"] and result["msg"] == ("summarise and collect are False but all of the following "
                                                  "are missing: node, plan")


SPEC = LIVE.ARGUMENT_SPEC


def test_the_live_module_proves_the_plan_from_its_states(monkeypatch):
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/custom-example.yml")))
    prefixes = render.prefixes(plan)
    states = {n: synthetic.plan_state(p, prefixes) for n, p in plan["nodes"].items()}
    proof = sys.modules["ansible.module_utils.beonet.livestate.proof"]
    monkeypatch.setattr(proof, "time", types.SimpleNamespace(monotonic=iter([10.0, 12.5]).__next__))
    result, _ = _run(LIVE, monkeypatch, {"plan": plan, "prefixes": prefixes, "states": states}, SPEC)
    assert result["changed"] is False and result["proven"] == result["pairs"] == 42
    assert result["mismatches"] == [] and result["sampled"] >= 1
    assert result["seconds"] == 2.5          # the proof's own clock, start to end


def test_the_live_modules_result_keys_are_the_documented_ones(monkeypatch):
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/custom-example.yml")))
    prefixes = render.prefixes(plan)
    states = {n: synthetic.plan_state(p, prefixes) for n, p in plan["nodes"].items()}
    states[next(iter(states))].update(links={}, unread=["links"], errors=["links: no usable output"])
    result, _ = _run(LIVE, monkeypatch, {"plan": plan, "prefixes": prefixes, "states": states}, SPEC)
    documented = yaml.safe_load(LIVE.RETURN)
    assert set(result) - {"changed", "invocation"} == set(documented) - {"commands", "expected", "traced"}
    picked, _ = _run(LIVE, monkeypatch, {"plan": plan, "prefixes": prefixes, "prove": False}, SPEC)
    assert set(picked) - {"changed"} == {k for k, v in documented.items()
                                         if v["returned"] in ("success", "when prove is false",
                                                              "when prove or mode is live")}
    read, _ = _run(LIVE, monkeypatch, {"plan": plan, "prefixes": prefixes, "outputs": {},
                                       "unreachable": list(states)}, SPEC)
    assert set(read) - {"changed"} == set(result) - {"changed"} | {"traced"}
    assert result["unreadable"] == ["head"] and result["unread_pairs"] >= 2 * (len(states) - 1)
    assert result["pairs"] == sum(result[k] for k in ("proven", "mismatched", "unjudged", "dead_pairs",
                                                      "unread_pairs"))


def test_the_live_module_picks_the_sample_from_the_plan_alone(monkeypatch):
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/routed-mesh.yml")))
    prefixes = render.prefixes(plan)
    picked, _ = _run(LIVE, monkeypatch, {"plan": plan, "prefixes": prefixes, "prove": False}, SPEC)
    states = {n: synthetic.plan_state(p, prefixes) for n, p in plan["nodes"].items()}
    proven, _ = _run(LIVE, monkeypatch, {"plan": plan, "prefixes": prefixes, "states": states}, SPEC)
    # the same pairs as the proof picks when every node is alive, and no proof
    assert picked["sample"] == proven["sample"] and picked["sampled"] == proven["sampled"] > 1
    assert "proven" not in picked and picked["changed"] is False
    missing, _ = _run(LIVE, monkeypatch, {"plan": plan, "prefixes": prefixes}, SPEC)
    assert missing["failed"] and missing["msg"] == ("beonet_verify_live: states or outputs is required "
                                                    "unless prove is false")


def test_the_live_module_picks_the_commands_and_reads_their_outputs(monkeypatch):
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/routed-mesh.yml")))
    prefixes = render.prefixes(plan)
    picked, _ = _run(LIVE, monkeypatch, {"plan": plan, "prefixes": prefixes, "prove": False}, SPEC)
    assert set(picked["commands"]) == set(plan["nodes"])
    assert {n: e for n, e in picked["expected"].items() if e} == picked["sample"]
    traced, _ = _run(LIVE, monkeypatch, {"plan": plan, "prefixes": prefixes, "prove": False,
                                         "mode": "traceroute", "paths": {"x": {}}}, SPEC)
    assert "sample" not in traced and set(traced["expected"]) == set(plan["nodes"])
    read, _ = _run(LIVE, monkeypatch, {"plan": plan, "prefixes": prefixes, "outputs": {"nope": ""},
                                       "expected": picked["expected"]}, SPEC)
    assert read["dead"] == sorted(plan["nodes"]) and read["traced"]["checked"] == 0


def test_the_compile_picks_for_verify_as_the_live_module_does(monkeypatch):
    topology = _load("beonet_topology")
    spec = {"topology": {}, "hosts": {}, "interfaces": {"default": {}}, "management": {},
            "down": {"default": []}, "paths": {"default": False}, "verify": {},
            "max_targets": {"default": 64}, "dest": {}}
    params = {"topology": str(ROOT / "topologies/routed-mesh.yml")}
    plain, _ = _run(topology, monkeypatch, params, spec)
    assert "verify" not in plain
    live, _ = _run(topology, monkeypatch, dict(params, verify="live"), spec)
    picked, _ = _run(LIVE, monkeypatch, {"plan": plain["plan"], "prefixes": plain["prefixes"],
                                         "prove": False}, SPEC)
    picked.update(changed=None, seconds=None)
    assert dict(live["verify"], changed=None, seconds=None) == picked
    traced, _ = _run(topology, monkeypatch, dict(params, verify="traceroute", paths=True, max_targets=2),
                     spec)
    assert all(len(e) == 2 for e in traced["verify"]["expected"].values())
    assert set(traced["verify"]) == {"expected", "commands"}


def test_collect_and_trace_in_one_call(monkeypatch):
    monkeypatch.setattr(VERIFY, "read_text", RAW["files"].get)
    monkeypatch.setattr(VERIFY.collect, "ask_neighbours", lambda targets: None)
    asked = {}

    def state_problems(name, plan, read, tso):
        asked["state"] = (name, plan)
        return ["%s: forwarding is off" % name]

    def route_problems(name, plan, routes):
        asked["routes"] = (name, plan, routes)
        return ["%s: route missing: 10.0.9.0/24" % name], ["-10.0.9.0/24"]
    monkeypatch.setattr(VERIFY.verify, "state_problems", state_problems)
    monkeypatch.setattr(VERIFY.verify, "route_problems", route_problems)
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/routed-mesh.yml")))
    node = next(iter(plan["nodes"]))
    result, commands = _run(VERIFY, monkeypatch, {"collect": True, "node": node, "plan": plan["nodes"][node],
                                                  "trace": False}, VERIFY.ARGUMENT_SPEC)
    # both checks ran on this node's plan, the routes on the table read last, and their
    # problems and diff are the module's
    assert asked["state"] == (node, plan["nodes"][node])
    assert asked["routes"][:2] == (node, plan["nodes"][node]) and asked["routes"][2]
    assert result["state"]["routes"] and result["checked"] == 0
    assert result["problems"] == ["%s: forwarding is off" % node, "%s: route missing: 10.0.9.0/24" % node]
    assert result["route_diff"] == ["-10.0.9.0/24"]
    assert commands[-1][0].endswith("ip")
    assert commands[-1][1:] == ["-j", "-4", "route", "show", "table", "main"]


def test_the_live_module_refuses_a_plan_with_a_message(monkeypatch):
    result, _ = _run(LIVE, monkeypatch, {"plan": {"nodes": "x"}, "prefixes": [], "states": {}}, SPEC)
    assert result["failed"] and result["msg"].startswith("beonet_verify_live: plan.nodes: must be a mapping")


@pytest.mark.parametrize("module, word", [("beonet_verify", "collect"), ("beonet_verify_live", "unjudged")])
def test_the_documentation_parses(module, word):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    res = subprocess.run([doc, "-M", "library", module],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0 and word in res.stdout, res.stderr


def test_the_trace_mode_compares_the_ipv6_table_where_the_plan_has_ipv6(monkeypatch):
    # the routes of a dual-stack node's IPv6 table: its plan's, less one, and a stray one
    monkeypatch.setattr(VERIFY, "read_text", RAW["files"].get)
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/dual-stack-mesh.yml")))
    node = plan["nodes"]["node-0-0"]
    six = [r for r in node["routes"] if ":" in r["to"] and "nexthops" not in r]
    live = [{"dst": r["to"], "gateway": r["via"], "dev": r["dev"], "prefsrc": r["src"]} for r in six[1:]]
    live.append({"dst": "2001:db8:100::/64", "gateway": "2001:db8::1", "dev": node["interfaces"][0]["name"]})
    monkeypatch.setattr(VERIFY.verify, "state_problems", lambda *_a: [])
    fake = _Module({"node": "node-0-0", "plan": node, "trace": False}, VERIFY.ARGUMENT_SPEC)
    fake.run_command = lambda cmd, **_: (0, json.dumps(live if "-6" in cmd else []), "")
    monkeypatch.setattr(VERIFY, "AnsibleModule", lambda **_: fake)
    with pytest.raises(_Exit) as exc:
        VERIFY.main()
    problems = [p for p in exc.value.result["problems"] if ":" in p.split(": ", 2)[-1]]
    assert "node-0-0: route not in the plan: 2001:db8:100::/64 via 2001:db8::1 dev eth1" in problems
    assert any(p.startswith("node-0-0: route missing: %s " % six[0]["to"]) for p in problems)
    assert "+2001:db8:100::/64 via 2001:db8::1 dev eth1" in exc.value.result["route_diff"]


def test_the_trace_mode_of_an_ipv4_plan_reads_no_ipv6_table(monkeypatch):
    monkeypatch.setattr(VERIFY, "read_text", RAW["files"].get)
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/routed-mesh.yml")))
    _result, commands = _run(VERIFY, monkeypatch, {"node": "node-0-0", "plan": plan["nodes"]["node-0-0"],
                                                   "trace": False}, VERIFY.ARGUMENT_SPEC)
    assert not any("-6" in c for c in commands)
