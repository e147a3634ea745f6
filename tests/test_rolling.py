"""The order of a rolling push and the neighbours each node asks before its change is
confirmed (outputs/rolling.py)."""

from conftest import ROOT

from beonet.compiler import pipeline
from beonet.outputs import plan as render
from beonet.outputs import rolling


def _plan(name, down=()):
    return render.plan(pipeline.compile_file(str(ROOT / "topologies" / name), down=list(down)))


def test_leaves_change_first_then_the_gateways_each_in_plan_order():
    plan = _plan("metanode-testbed.yml")
    order = rolling.order(plan)
    gateways = [n for n in plan["nodes"] if plan["nodes"][n]["forwarding"]]
    assert sorted(order) == sorted(plan["nodes"]) and order[-len(gateways):] == gateways
    assert not any(plan["nodes"][n]["forwarding"] for n in order[:-len(gateways)])


def test_a_node_asks_its_gateways_first_then_its_segment_at_most_per_nic():
    plan = _plan("metanode-testbed.yml")
    asked = rolling.node_neighbours(plan, "node01")
    on_lan = [t for t in asked if t["nic"] == "eth1"]
    gateways = {r["via"] for r in plan["nodes"]["node01"]["routes"] if r["dev"] == "eth1"}
    assert len(on_lan) == rolling.PER_NIC and {t["address"] for t in on_lan[:len(gateways)]} == gateways
    assert [t for t in asked if t["nic"] == "eth2"] == [
        {"nic": "eth2", "address": "10.255.0.1", "node": "node10"}]
    assert all(t["node"] != "node01" for t in asked)


def test_dead_nodes_are_never_asked():
    plan = _plan("routed-mesh.yml", down=["node-0-1"])
    assert all(t["node"] != "node-0-1" for ts in rolling.neighbours(plan).values() for t in ts)
    assert "node-0-1" not in rolling.neighbours(plan)
