"""routing.engine frr: loopback addresses, the node plan's routing object and FRR's files
rendered from it (golden files), and the errors of each."""

from __future__ import annotations

import ipaddress

import pytest
import yaml
from conftest import ROOT, golden

from beonet.agent import frr, nodeplan
from beonet.compiler import pipeline
from beonet.compiler.errors import CompileError
from beonet.outputs import plan as render

GOLDEN = ROOT / "tests" / "golden" / "frr"


def compiled(family: str, params: dict, routing: dict | None = None, addressing: dict | None = None):
    topo = {"name": "t", "family": family, family: params, "routing": routing or {"engine": "frr"}}
    if addressing:
        topo["addressing"] = addressing
    return pipeline.compile_text(yaml.safe_dump(topo, sort_keys=False), "t.yml")


def test_every_node_gets_a_loopback_in_node_order():
    plan = render.plan(compiled("mesh", {"dims": [2, 3]}))
    loops = [n["routing"]["loopback"] for n in plan["nodes"].values()]
    assert loops == ["10.254.0.%d/32" % k for k in range(1, 7)]
    assert all(n["routing"]["bfd"] == {"interval_ms": 100, "multiplier": 3} for n in plan["nodes"].values())


def test_static_routes_give_no_routing_object():
    plan = render.plan(compiled("mesh", {"dims": [2, 2]}, routing={"engine": "static"}))
    assert not any("routing" in n for n in plan["nodes"].values())
    assert frr.frr_files("node-0-0", plan["nodes"]["node-0-0"]) == {}


@pytest.mark.parametrize("family,params,node", [
    ("mesh", {"dims": [2, 2]}, "node-0-0"),
    ("metagraph", {"groups": 4, "nodes_per_group": 3, "p2p_per_node": 1}, "node01"),
])
def test_frr_conf_golden(family, params, node):
    c = compiled(family, params, routing={"engine": "frr", "bfd": {"interval_ms": 50, "multiplier": 4}})
    n = render.plan(c)["nodes"][node]
    files = frr.frr_files(node, n)
    assert sorted(files) == [frr.FRR_DAEMONS, frr.FRR_CONF]
    golden(GOLDEN / ("%s-%s.conf" % (family, node)), files[frr.FRR_CONF])
    golden(GOLDEN / "daemons", files[frr.FRR_DAEMONS])


def test_p2p_nics_are_point_to_point_lans_broadcast():
    c = compiled("metagraph", {"groups": 4, "nodes_per_group": 3, "p2p_per_node": 1})
    plan = render.plan(c)
    name, n = next((k, v) for k, v in plan["nodes"].items() if any("peer" in i for i in v["interfaces"]))
    conf = frr.frr_conf(name, n, n["routing"])
    blocks = conf.split("interface ")[2:]
    p2p = [b for b in blocks if "point-to-point" in b]
    assert len(p2p) == sum(1 for i in n["interfaces"] if "peer" in i) >= 1
    assert len(blocks) == len(frr.ospf_nics(n)) and "ospf router-id 10.254." in conf


def test_bond_members_are_not_in_ospf():
    n = render.plan(compiled("bonded", {"nodes": 3, "channels": 2}))["nodes"]["node01"]
    assert [i["kind"] for i in frr.ospf_nics(n)] == ["bond"]
    assert sum(1 for i in n["interfaces"] if "bond" in i) == 2


def test_the_loopback_pool_must_hold_every_node():
    with pytest.raises(CompileError) as err:
        compiled("mesh", {"dims": [4, 4]}, addressing={"loopback": "10.254.0.0/29"})
    text = str(err.value)
    assert "addressing.loopback" in text and "holds 6 loopback addresses; the topology needs 16" in text
    assert "use 10.254.0.0/27 or larger" in text


def test_the_loopback_pool_must_not_overlap_a_segment():
    with pytest.raises(CompileError) as err:
        compiled("mesh", {"dims": [2, 2]}, addressing={"loopback": "10.0.0.0/24"})
    assert "addressing.loopback" in str(err.value) and "overlaps 10.0.0.0/24 of segment" in str(err.value)


def test_a_loopback_pool_without_frr_is_an_error():
    with pytest.raises(CompileError) as err:
        compiled("mesh", {"dims": [2, 2]}, routing={"engine": "static"},
                 addressing={"loopback": "10.254.0.0/16"})
    assert "only routing.engine frr gives nodes loopback addresses (the engine is static)" in str(err.value)


@pytest.mark.parametrize("routing,key", [
    ({"engine": "ospf"}, "routing.engine"),
    ({"engine": "frr", "bfd": {"interval_ms": 5}}, "routing.bfd.interval_ms"),
    ({"engine": "frr", "bfd": {"multiplier": 1}}, "routing.bfd.multiplier"),
    ({"engine": "frr", "bfd": {"timer": 1}}, "routing.bfd"),
])
def test_bad_routing_settings_name_their_key(routing, key):
    with pytest.raises(CompileError) as err:
        compiled("mesh", {"dims": [2, 2]}, routing=routing)
    assert key in str(err.value)


def _node_plan():
    return render.plan(compiled("mesh", {"dims": [2, 2]}))["nodes"]["node-0-0"]


@pytest.mark.parametrize("routing,found", [
    ("frr", "plan.routing: must be a mapping, not text"),
    ({"engine": "static", "loopback": "10.254.0.1/32", "bfd": {"interval_ms": 100, "multiplier": 3}},
     "plan.routing.engine: must be frr"),
    ({"engine": "frr", "loopback": "10.254.0.1/24", "bfd": {"interval_ms": 100, "multiplier": 3}},
     "plan.routing.loopback: must be a /32"),
    ({"engine": "frr", "loopback": "nowhere", "bfd": {"interval_ms": 100, "multiplier": 3}},
     "plan.routing.loopback: 'nowhere' is not an IPv4 interface"),
    ({"engine": "frr", "loopback": "10.254.0.1/32", "bfd": {"interval_ms": 9, "multiplier": 3}},
     "plan.routing.bfd.interval_ms: must be a whole number from 10 to 60000"),
    ({"engine": "frr", "loopback": "10.254.0.1/32", "bfd": None}, "plan.routing.bfd: must be a mapping"),
])
def test_the_node_refuses_a_bad_routing_object(routing, found):
    n = _node_plan()
    n["routing"] = routing
    problems = nodeplan.plan_problems("node-0-0", n)
    assert any(found in p for p in problems), problems


def test_a_good_routing_object_passes():
    assert nodeplan.plan_problems("node-0-0", _node_plan()) == []


def test_the_forward_filter_admits_the_loopbacks():
    c = compiled("mesh", {"dims": [2, 3]})
    plan = render.plan(c)
    assert render.prefixes(plan) == render.graph_prefixes(c.graph)
    covered = {str(a) for p in render.prefixes(plan) if p.startswith("10.254.")
               for a in ipaddress.IPv4Network(p)}
    assert covered == {n["routing"]["loopback"].split("/")[0] for n in plan["nodes"].values()}
    static = compiled("mesh", {"dims": [2, 3]}, routing={"engine": "static"})
    assert not any(p.startswith("10.254.") for p in render.graph_prefixes(static.graph))


def test_zebra_puts_the_loopback_on_lo():
    n = render.plan(compiled("mesh", {"dims": [2, 2]}))["nodes"]["node-0-1"]
    conf = frr.frr_conf("node-0-1", n, n["routing"])
    assert "interface lo\n ip address 10.254.0.2/32\n ip ospf area 0\n ip ospf passive\n" in conf
