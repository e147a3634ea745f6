"""beonet diff: golden outputs for appending, removing, remapping a NIC, changing a rate
and changing the family; the exit status; plan.json on either side; bad input."""

from __future__ import annotations

import json
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
    assert diff._changed(old, new, "s", "d", memo, 0) and memo["x"]
    assert not diff._changed(old, new, "t", "d", memo, 0)


@pytest.mark.parametrize("text,message", [
    ("{nope", "not a plan.json: Expecting property name"),
    ('{"nodes": {}}', "not a plan.json (no beonet.plan_format and nodes)"),
    ('{"beonet": {"plan_format": 99}, "nodes": {"a": {}}}', "plan_format 99 is newer"),
    ('{"beonet": {"plan_format": 2}, "nodes": {"a": {"address": "x"}}}',
     "a: plan.address: 'x' is not an IPv4"),
])
def test_a_bad_plan_file_is_refused(capsys, tmp_path, text, message):
    bad = tmp_path / "plan.json"
    bad.write_text(text)
    code, out, err = run(capsys, "diff", str(bad), mesh(tmp_path, "m", [2, 2]))
    assert code == 2 and out == "" and message in err


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
