"""beonet diff: golden outputs for appending, removing, remapping a NIC, changing a rate
and changing the family; the exit status; plan.json on either side; bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, golden
from test_cli import run

from beonet.compiler import pipeline
from beonet.outputs import diff
from beonet.outputs import plan as render

GOLDEN = ROOT / "tests" / "golden" / "diff"


def topology(tmp_path: Path, name: str, **doc) -> str:
    path = tmp_path / ("%s.yml" % name)
    path.write_text(yaml.safe_dump({"name": "cluster", **doc}, sort_keys=False))
    return str(path)


def mesh(tmp_path: Path, name: str, dims: list[int], **extra) -> str:
    return topology(tmp_path, name, family="mesh", mesh={"dims": dims}, **extra)


def both_ways(capsys, tmp_path: Path, case: str, old: str, new: str, *flags: str) -> dict:
    code, out, err = run(capsys, "diff", old, new, *flags)
    assert code == 1 and err == ""
    golden(GOLDEN / ("%s.txt" % case), out.replace(str(tmp_path) + "/", ""))
    code, out, _ = run(capsys, "diff", old, new, "--format", "json", *flags)
    assert code == 1
    return json.loads(out)


def test_appending_a_column_adds_four_nodes_and_renumbers_nothing(capsys, tmp_path):
    found = both_ways(capsys, tmp_path, "append", mesh(tmp_path, "4x4", [4, 4]),
                      mesh(tmp_path, "4x5", [4, 5]))
    assert found["nodes_added"] == ["node-0-4", "node-1-4", "node-2-4", "node-3-4"]
    assert found["nodes_removed"] == [] and found["renumbered"] == []
    assert found["paths_changed"]["count"] == 0 and found["paths_changed"]["compared"] == 240
    assert all(set(c) == {"routes_added"} for c in found["nodes_changed"].values())
    assert not found["same"]


def test_removing_a_column(capsys, tmp_path):
    found = both_ways(capsys, tmp_path, "remove", mesh(tmp_path, "4x5", [4, 5]),
                      mesh(tmp_path, "4x4", [4, 4]))
    assert found["nodes_removed"] == ["node-0-4", "node-1-4", "node-2-4", "node-3-4"]
    assert found["renumbered"] == [] and found["paths_changed"]["count"] == 0
    assert all(set(c) == {"routes_removed"} for c in found["nodes_changed"].values())


def test_remapping_a_nic_changes_its_name_and_routes_not_its_paths(capsys, tmp_path):
    topo = mesh(tmp_path, "m", [2, 2])
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"beonet_nodes": {"hosts": {
        "node-0-0": {"beonet_interfaces": {"eth1": "enp2s0", "eth2": "enp1s0"}},
        "node-0-1": {}, "node-1-0": {}, "node-1-1": {}}}}))
    assert run(capsys, "build", topo, "-o", str(tmp_path / "before"))[0] == 0
    found = both_ways(capsys, tmp_path, "remap-nic", str(tmp_path / "before" / "plan.json"), topo,
                      "-i", str(inv))
    assert list(found["nodes_changed"]) == ["node-0-0"]
    change = found["nodes_changed"]["node-0-0"]
    assert change["interfaces_added"] == ["enp1s0", "enp2s0"]
    assert change["interfaces_removed"] == ["eth1", "eth2"]
    assert found["renumbered"] == [] and found["paths_changed"]["count"] == 0


def test_changing_a_rate(capsys, tmp_path):
    found = both_ways(capsys, tmp_path, "rate", mesh(tmp_path, "slow", [2, 2], link={"rate_mbit": 100}),
                      mesh(tmp_path, "fast", [2, 2]))
    assert len(found["nodes_changed"]) == 4
    assert found["nodes_changed"]["node-0-0"]["interfaces_changed"]["eth1"] == {"rate_mbit": [100, 1000]}
    assert found["paths_changed"]["count"] == 0


def test_changing_the_family_renumbers_and_reroutes(capsys, tmp_path):
    names = {"pattern": "node{index}"}
    old = mesh(tmp_path, "mesh", [2, 3], nodes=names)
    new = topology(tmp_path, "meta", family="metagraph", nodes=names,
                   metagraph={"groups": 2, "nodes_per_group": 3, "p2p_per_node": 1})
    found = both_ways(capsys, tmp_path, "family", old, new)
    assert found["nodes_added"] == [] and found["nodes_removed"] == []
    assert found["renumbered"] and found["paths_changed"]["count"] > 0
    example = found["paths_changed"]["examples"][0]
    assert example["old"][0] == example["new"][0] and example["old"] != example["new"]


def test_the_same_plan_exits_0(capsys, tmp_path):
    topo = mesh(tmp_path, "m", [3, 3])
    assert run(capsys, "build", topo, "-o", str(tmp_path / "b"))[0] == 0
    code, out, _ = run(capsys, "diff", str(tmp_path / "b" / "plan.json"), topo)
    assert code == 0 and out.endswith("the plans are the same\n")


class FakeWalker:
    """next_names from a table {(node, destination): next nodes}."""

    def __init__(self, table: dict) -> None:
        self.table, self.names = table, sorted({n for n, _d in table} | {"d"})

    def next_names(self, src: str, dst: str) -> tuple[str, ...]:
        return self.table[src, dst]


def test_a_path_through_a_node_that_changes_its_route_changes():
    """A pair's path changes when any node on it routes differently, even where the
    source's own next hop stays the same; a pair whose nodes all route as before does not."""
    old = FakeWalker({("s", "d"): ("x",), ("x", "d"): ("d",), ("t", "d"): ("d",)})
    new = FakeWalker({("s", "d"): ("x",), ("x", "d"): ("y",), ("y", "d"): ("d",), ("t", "d"): ("d",)})
    memo: dict = {}
    assert diff._changed(old, new, "s", "d", memo) and memo["x"]
    assert not diff._changed(old, new, "t", "d", memo)


@pytest.mark.parametrize("text,message", [
    ("{nope", "YAML syntax error"),
    ('{"nodes": {}}', "not a plan.json (no beonet.plan_format and nodes)"),
    ('{"beonet": {"plan_format": 99}, "nodes": {"a": {}}}', "plan_format 99 is newer"),
    ('{"beonet": {"plan_format": 2}, "nodes": {"a": {"address": "x"}}}',
     "a: plan.address: 'x' is not an IPv4"),
    ('{"beonet": {"plan_format": 3}, "nodes": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "nests deeper than 12 levels"),
    ('{"beonet": {"plan_format": 3}, "beonet": {"plan_format": 3}, "nodes": {}}',
     "plan.json:1: beonet: duplicate key (first at line 1)"),
])
def test_a_bad_plan_file_is_refused(capsys, tmp_path, text, message):
    bad = tmp_path / "plan.json"
    bad.write_text(text)
    code, out, err = run(capsys, "diff", str(bad), mesh(tmp_path, "m", [2, 2]))
    assert code == 2 and out == "" and message in err and "Traceback" not in err


def test_a_missing_file_and_a_bad_topology_are_errors(capsys, tmp_path):
    code, _, err = run(capsys, "diff", str(tmp_path / "none.yml"), mesh(tmp_path, "m", [2, 2]))
    assert code == 2 and "cannot read" in err and "No such file" in err
    bad = topology(tmp_path, "bad", family="mesh", mesh={"dims": [1]})
    code, _, err = run(capsys, "diff", bad, mesh(tmp_path, "m", [2, 2]))
    assert code == 2 and "bad.yml" in err and "nothing written" in err


def test_paths_are_sampled_above_the_limit(monkeypatch):
    plan = render.plan(pipeline.compile_text(yaml.safe_dump({"name": "c", "family": "mesh",
                                                             "mesh": {"dims": [4, 4]}}), "c.yml"))
    monkeypatch.setattr(diff, "PATHS_ALL_UP_TO", 8)
    monkeypatch.setattr(diff, "PATHS_SAMPLE", 5)
    found = diff.diff(plan, plan)
    assert found["paths_changed"] == {"count": 0, "compared": 5 * 15, "sampled": True, "examples": []}
    assert found["same"]


@pytest.mark.parametrize("value", ["-1", "nan", "1e9", "../5", str(10 ** 30)])
def test_examples_must_be_a_small_whole_number(capsys, tmp_path, value):
    topo = mesh(tmp_path, "m", [2, 2])
    code, out, err = run(capsys, "diff", topo, topo, "--examples", value)
    assert code == 2 and out == "" and "--examples: a whole number from 0 to 100000" in err


def test_a_file_name_with_a_line_break_is_shown_escaped(capsys, tmp_path):
    code, _, err = run(capsys, "diff", str(tmp_path / "a\nb.yml"), mesh(tmp_path, "m", [2, 2]))
    assert code == 2 and "cannot read" in err and "a\nb.yml" not in err


def test_a_chain_deeper_than_the_recursion_limit_is_walked():
    """A path of 5,000 hops (a chain topology's) is walked without recursion; one
    node routing differently at the far end changes the path of every node before it."""
    n = 5000
    chain = {("n%d" % i, "d"): ("n%d" % (i + 1),) for i in range(n)}
    chain["n%d" % n, "d"] = ("d",)
    other = {**chain, ("n%d" % n, "d"): ("x",), ("x", "d"): ("d",)}
    memo: dict = {}
    assert not diff._changed(FakeWalker(chain), FakeWalker(chain), "n0", "d", memo)
    memo = {}
    assert diff._changed(FakeWalker(chain), FakeWalker(other), "n0", "d", memo)
    assert memo["n0"] and memo["n%d" % (n // 2)]


def test_a_loop_counts_as_changed():
    old = FakeWalker({("a", "d"): ("b",), ("b", "d"): ("d",)})
    new = FakeWalker({("a", "d"): ("b",), ("b", "d"): ("a",)})
    assert diff._changed(new, new, "a", "d", {}) and not diff._changed(old, old, "a", "d", {})


def built_plan(capsys, tmp_path: Path) -> dict:
    topo = mesh(tmp_path, "m", [2, 2])
    assert run(capsys, "build", topo, "-o", str(tmp_path / "built"))[0] == 0
    return json.loads((tmp_path / "built" / "plan.json").read_text())


def _drop_segments(p: dict) -> None:
    del p["segments"]


def _bad_prefix(p: dict) -> None:
    p["segments"]["d0-0"]["prefix"] = "10.0.0.0/33"


def _bad_address(p: dict) -> None:
    p["nodes"]["node-0-0"]["interfaces"][1]["addresses"] = ["10.0.0.1/33"]


def _many_nodes(p: dict) -> None:
    one = p["nodes"]["node-0-0"]
    p["nodes"] = {"n%d" % i: one for i in range(10_001)}      # one more than the limit


def _interfaces_not_a_list(p: dict) -> None:
    p["nodes"]["node-0-0"]["interfaces"] = p["nodes"]["node-0-0"]["interfaces"][0]


@pytest.mark.parametrize("spoil,message", [
    (_drop_segments, "segments: must be a mapping of segments, not null"),
    (_bad_prefix, "segments.d0-0.prefix: '10.0.0.0/33' is not an IPv4 network"),
    (_bad_address, "plan.interfaces[1].addresses[0]: '10.0.0.1/33' is not an IPv4 interface"),
    (_many_nodes, "10001 nodes, more than the 10000"),
    (_interfaces_not_a_list, "node-0-0: plan.interfaces: must be a list, not a mapping"),
])
def test_a_spoiled_plan_json_is_refused(capsys, tmp_path, spoil, message):
    plan = built_plan(capsys, tmp_path)
    spoil(plan)
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps(plan))
    code, out, err = run(capsys, "diff", str(bad), str(tmp_path / "m.yml"))
    assert code == 2 and out == "" and message in err and "Traceback" not in err


@pytest.mark.parametrize("key", ["routes", "addresses"])
def test_parts_a_node_plan_may_leave_out_are_read_as_empty(capsys, tmp_path, key):
    plan = built_plan(capsys, tmp_path)
    node = plan["nodes"]["node-0-0"]
    del (node if key == "routes" else node["interfaces"][1])[key]
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    code, out, _ = run(capsys, "diff", str(tmp_path / "plan.json"), str(tmp_path / "m.yml"))
    assert code == 1 and ("+ " if key == "routes" else "addresses: (none) ->") in out


def test_a_fifo_is_refused_without_opening_it_for_long(capsys, tmp_path):
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)
    code, out, err = run(capsys, "diff", str(fifo), mesh(tmp_path, "m", [2, 2]))
    assert code == 2 and out == "" and "a pipe, socket or device, not a file" in err


def test_bfd_timers_are_a_difference_and_flow_style_yaml_is_a_topology(capsys, tmp_path):
    old = mesh(tmp_path, "old", [2, 2], routing={"engine": "frr"})
    new = tmp_path / "new.yml"
    new.write_text("{name: cluster, family: mesh, mesh: {dims: [2, 2]}, "
                   "routing: {engine: frr, bfd: {interval_ms: 300}}}\n")
    code, out, err = run(capsys, "diff", old, str(new))
    assert code == 1 and err == "" and "the plans are the same" not in out
    assert "  routing.bfd.interval_ms: 100 -> 300" in out
    code, out, _ = run(capsys, "diff", str(new), str(new))
    assert code == 0 and "the plans are the same" in out
