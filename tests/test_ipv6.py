"""IPv6: dual-stack and IPv6-only plans, walked without the compiler's prover
(test_properties' walker, in each IP version), and the hostile IPv6 settings."""

import ipaddress
import json
import re

import pytest
import yaml
from conftest import ROOT
from hypothesis import given, settings
from test_properties import SETTINGS, custom_topologies, dump, walk_all

from beonet.compiler import ipv6, pipeline
from beonet.compiler.errors import CompileError, Problems
from beonet.outputs import plan as render

SHIPPED = sorted(p.stem for p in (ROOT / "topologies").glob("*.yml"))
V4_KEYS = ("lan", "lan_prefix", "p2p", "p2p_prefix", "loopback")
IPV4_TEXT = re.compile(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b")


def with_ipv6(data, only=False):
    """The topology dual stack, or IPv6-only (its IPv4 pools left out)."""
    data = dict(data)
    pools = {k: v for k, v in (data.get("addressing") or {}).items() if not (only and k in V4_KEYS)}
    data["addressing"] = dict(pools, ipv6=True, **({"ipv4": False} if only else {}))
    return dump(data)


def shipped(name):
    return yaml.safe_load((ROOT / "topologies" / ("%s.yml" % name)).read_text())


def compiled_plan(text):
    return render.plan(pipeline.compile_text(text, "six.yml"))


def every_branch(plan, version):
    branches = {}
    walk_all(plan, branches, version)
    return branches


def without_ipv6(plan):
    """The plan with every IPv6 key, address and route taken out."""
    out = json.loads(json.dumps(plan))
    for node in out["nodes"].values():
        node.pop("address6")
        node.get("routing", {}).pop("loopback6", None)
        for iface in node["interfaces"]:
            iface["addresses"] = [a for a in iface["addresses"] if ":" not in a]
        for key in ("routes", "learned"):
            if key in node:
                node[key] = [r for r in node[key] if ":" not in r["to"]]
    for seg in out["segments"].values():
        seg.pop("prefix6", None)
        for m in seg["members"]:
            m.pop("address6", None)
    return out


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_topologies_route_every_pair_shortest_in_both_families(name):
    """Dual stack: IPv6 takes every pair over the same branches as IPv4, each on a
    shortest path; IPv6-only: the same again; the IPv4 part is the IPv4-only plan."""
    data = shipped(name)
    dual = compiled_plan(with_ipv6(data))
    only = compiled_plan(with_ipv6(data, only=True))
    branches = every_branch(dual, 4)
    assert every_branch(dual, 6) == branches
    assert every_branch(only, 6) == branches
    four = dict(data, addressing={k: v for k, v in (data.get("addressing") or {}).items() if k != "ipv6"})
    alone = compiled_plan(dump(four))
    assert without_ipv6(dual)["nodes"] == alone["nodes"]
    assert without_ipv6(dual)["segments"] == alone["segments"]
    assert not IPV4_TEXT.search(json.dumps({"nodes": only["nodes"], "segments": only["segments"]}))


@settings(**dict(SETTINGS, max_examples=25))
@given(custom_topologies(max_nodes=10))
def test_custom_graphs_route_every_pair_shortest_in_ipv6(topo):
    dual = compiled_plan(with_ipv6(topo))
    assert every_branch(dual, 6) == every_branch(dual, 4)


def test_addresses_follow_the_rfcs():
    plan = compiled_plan(with_ipv6(shipped("metanode-testbed-frr")))
    ula = ipv6.unique_local("metanode-testbed-frr")
    assert ula.prefixlen == 48 and ula.subnet_of(ipaddress.IPv6Network("fd00::/8"))
    for seg in plan["segments"].values():
        if "prefix6" in seg:
            net = ipaddress.IPv6Network(seg["prefix6"])
            assert net.subnet_of(ula) and net.prefixlen == (64 if seg["kind"] == "lan" else 127)
            assert all(ipaddress.IPv6Address(m["address6"]) in net for m in seg["members"])
    loops = [ipaddress.IPv6Interface(n["routing"]["loopback6"]) for n in plan["nodes"].values()]
    assert all(x.network.prefixlen == 128 for x in loops) and len(set(loops)) == len(loops)
    assert {n["address6"] for n in plan["nodes"].values()} == {str(x.ip) for x in loops}


def test_the_unique_local_prefix_is_the_names_and_stable():
    assert ipv6.unique_local("a") == ipv6.unique_local("a") != ipv6.unique_local("b")
    assert str(ipv6.unique_local("")).startswith("fde3:b0c4:4298::")    # SHA-256("") = e3b0c44298...


def test_given_pools_are_used_and_the_rest_come_from_the_name():
    data = dict(shipped("metanode-fig2"), addressing={"ipv6": {"lan": "fd00:1:2::/56"}})
    plan = compiled_plan(dump(data))
    lans = [s["prefix6"] for s in plan["segments"].values() if s["kind"] == "lan"]
    links = [s["prefix6"] for s in plan["segments"].values() if s["kind"] == "p2p"]
    assert lans and all(ipaddress.IPv6Network(p).subnet_of(ipaddress.IPv6Network("fd00:1:2::/56"))
                        for p in lans)
    assert all(ipaddress.IPv6Network(p).subnet_of(ipaddress.IPv6Network(ipv6.default_pools(
        "metanode-fig2")["p2p"])) for p in links)


def test_ipv4_only_is_the_default_and_writes_no_ipv6():
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies" / "routed-mesh.yml")))
    assert ":" not in json.dumps({"nodes": plan["nodes"], "segments": plan["segments"]}).replace('":', "")


def test_the_compact_plan_of_a_large_cluster_says_the_same():
    text = with_ipv6({"name": "big", "family": "mesh", "mesh": {"dims": [24, 24]}})
    compiled = pipeline.compile_text(text, "big.yml")
    assert json.loads(render.compact_nodes_json(compiled.graph)) == render.node_plans(compiled.graph)
    only = pipeline.compile_text(with_ipv6({"name": "big", "family": "mesh", "mesh": {"dims": [24, 24]}},
                                           only=True), "big.yml")
    assert json.loads(render.compact_nodes_json(only.graph)) == render.node_plans(only.graph)


def test_a_route_out_of_the_nic_holding_its_source_alone_states_none():
    """The kernel sends from that NIC's address anyway (RFC 6724 rule 5); every other
    IPv6 route keeps its source, IPv4 routes and FRR's always do."""
    for engine in ("static", "frr"):
        data = dict(shipped("metanode-testbed"), routing={"engine": engine})
        plan = compiled_plan(with_ipv6(data))
        kept = dropped = 0
        for node in plan["nodes"].values():
            sole = {i["name"]: [a.split("/")[0] for a in i["addresses"] if ":" in a]
                    for i in node["interfaces"]}
            for r in node.get("routes", []) + node.get("learned", []):
                devs = {h["dev"] for h in r.get("nexthops", [r])}
                own = ":" in r["to"] and engine == "static" and devs == {r["dev"]} \
                    and sole[r["dev"]] == [node["address6"]]
                assert ("src" not in r) == own, (node["address6"], r)
                kept, dropped = kept + ("src" in r and ":" in r["to"]), dropped + own
        assert kept and (dropped > kept if engine == "static" else dropped == 0)


MESH = {"name": "m", "family": "mesh", "mesh": {"dims": [3, 3]}}
FRR = {"name": "f", "family": "mesh", "mesh": {"dims": [2, 2]}, "routing": {"engine": "frr"}}


@pytest.mark.parametrize("topology, addressing, path, message", [
    (MESH, {"ipv6": "yes"}, "addressing.ipv6", "must be true or false or a mapping"),
    (MESH, {"ipv6": 1}, "addressing.ipv6", "must be true or false or a mapping"),
    (MESH, {"ipv6": {"lan": "fd00::1/64"}}, "addressing.ipv6.lan", "must be an IPv6 network"),
    (MESH, {"ipv6": {"lan": "fd00::"}}, "addressing.ipv6.lan", "must be an IPv6 network"),
    (MESH, {"ipv6": {"lan": "10.0.0.0/8"}}, "addressing.ipv6.lan", "must be an IPv6 network"),
    (MESH, {"ipv6": {"lan": "fd00::/129"}}, "addressing.ipv6.lan", "must be an IPv6 network"),
    (MESH, {"ipv6": {"lan": "fd00::/64\n"}}, "addressing.ipv6.lan", "must be an IPv6 network"),
    (MESH, {"ipv6": {"lan": "fd00::%eth0/64"}}, "addressing.ipv6.lan", "must be an IPv6 network"),
    (MESH, {"ipv6": {"lan": ["fd00::/48"]}}, "addressing.ipv6.lan", "must be an IPv6 network"),
    (MESH, {"ipv6": {"wan": "fd00::/48"}}, "addressing.ipv6.wan", "unknown key"),
    (MESH, {"ipv6": {"lan": "ff02::/64"}}, "addressing.ipv6.lan", "multicast space"),
    (MESH, {"ipv6": {"lan": "fe80::/64"}}, "addressing.ipv6.lan", "link-local space"),
    (MESH, {"ipv6": {"lan": "::/64"}}, "addressing.ipv6.lan", "unspecified"),
    (MESH, {"ipv6": {"lan": "::ffff:0:0/96"}}, "addressing.ipv6.lan", "IPv4-mapped"),
    (MESH, {"ipv6": {"p2p": "::1/128"}}, "addressing.ipv6.p2p", "loopback"),
    (MESH, {"ipv6": {"lan": "::/0"}}, "addressing.ipv6.lan", "unicast"),
    (MESH, {"ipv6": {"lan": "fd00::/63"}}, "addressing.ipv6.lan",
     "holds 2 /64 LANs; the topology needs 6: use fd00::/61 or larger"),
    (MESH, {"ipv6": {"lan": "fd00::/65"}}, "addressing.ipv6.lan", "holds 0 /64 LANs"),
    (FRR, {"ipv6": {"loopback": "fd00::/127"}}, "addressing.ipv6.loopback",
     "holds 2 loopbacks; the topology needs 5: use fd00::/125 or larger"),
    (MESH, {"ipv6": {"lan": "fd00::/48", "p2p": "fd00:0:0:1::/64"}}, "addressing.ipv6.p2p",
     "overlaps the lan pool"),
    (MESH, {"ipv4": False}, "addressing.ipv4", "needs addressing.ipv6"),
    (MESH, {"ipv4": False, "ipv6": False}, "addressing.ipv4", "needs addressing.ipv6"),
    (MESH, {"ipv4": False, "ipv6": True, "lan": "10.0.0.0/8"}, "addressing.lan", "addressing.ipv4 is false"),
    (MESH, {"ipv4": False, "ipv6": True, "p2p_prefix": 30}, "addressing.p2p_prefix",
     "addressing.ipv4 is false"),
    (MESH, {"ipv4": "no", "ipv6": True}, "addressing.ipv4", "must be true or false"),
])
def test_hostile_ipv6_settings_are_refused_naming_the_key(topology, addressing, path, message):
    with pytest.raises(CompileError) as err:
        pipeline.compile_text(dump(dict(topology, addressing=addressing)), "six.yml")
    text = str(err.value)
    assert "six.yml:" in text and path + ":" in text and message in text, text


def test_ipv6_off_on_the_cluster_nics_and_ipv6_addresses_are_refused_together():
    with pytest.raises(CompileError, match=r"six.yml:\d+: ipv6: false turns IPv6 off"):
        pipeline.compile_text(dump(dict(MESH, ipv6=False, addressing={"ipv6": True})), "six.yml")


def test_a_custom_prefix_on_an_ipv6_only_cluster_is_refused():
    topo = {"name": "c", "family": "custom", "addressing": {"ipv4": False, "ipv6": True},
            "custom": {"nodes": ["a", "b"], "links": [{"ends": ["a", "b"], "prefix": "10.9.0.0/31"}]}}
    with pytest.raises(CompileError, match=r"links\[0\].prefix: an IPv4 prefix; addressing.ipv4 is false"):
        pipeline.compile_text(dump(topo), "six.yml")


def test_the_proof_refuses_ipv6_that_breaks_the_correspondence():
    compiled = pipeline.compile_text(with_ipv6(MESH), "six.yml")
    graph = compiled.graph
    problems = Problems()
    ipv6.check(graph, problems)
    assert not problems
    a, b = [s for s in graph.segments if s.kind == "lan"][:2]
    b.net6 = a.net6
    ipv6.check(graph, problems)
    assert any("overlaps" in p.message for p in problems.items)
    fresh = pipeline.compile_text(with_ipv6(FRR), "six.yml").graph
    fresh.nodes[1].loopback6 = fresh.nodes[0].interfaces[0].addresses6[0]
    problems = Problems()
    ipv6.check(fresh, problems)
    assert any("not apart" in p.message for p in problems.items)
