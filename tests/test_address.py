"""Address pools, custom LAN sizes, the forward filter's prefixes and the
compile benchmark's generated topology."""

import ipaddress

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from beonet.compiler import pipeline
from beonet.compiler.errors import CompileError
from beonet.compiler.model import ip_int, ip_text
from beonet.outputs import plan as render


def compile_dict(topo):
    return render.plan(pipeline.compile_text(yaml.safe_dump(topo, sort_keys=False), "t.yml"))


def errors_of(topo):
    with pytest.raises(CompileError) as err:
        compile_dict(topo)
    return [str(p) for p in err.value.problems]


def mesh(dims, **addressing):
    topo = {"name": "m", "family": "mesh", "mesh": {"dims": dims}}
    if addressing:
        topo["addressing"] = addressing
    return topo


# -- pools too small name one that fits -------------------------------------------

def test_lan_pool_too_small_names_a_pool_that_fits():
    # 8x8x16: each dimension takes the largest one's 192 segments (576 /24s in all)
    (msg,) = errors_of(mesh([8, 8, 16], lan="10.1.0.0/16"))
    assert "addressing.lan: pool 10.1.0.0/16 holds 65,536 addresses" in msg
    assert ("85 /24 segments per dimension; the topology needs 147,456 addresses: "
            "use 10.0.0.0/14 or larger") in msg
    plan = compile_dict(mesh([8, 8, 16], lan="10.0.0.0/14"))
    assert len(plan["nodes"]) == 1024


def test_lan_pool_smaller_than_one_segment_names_one_that_fits():
    (msg,) = errors_of(mesh([2, 2], lan="10.1.0.0/26"))
    assert msg.endswith("pool 10.1.0.0/26 is smaller than one /24 segment: use 10.1.0.0/24 or larger")


def test_p2p_pool_too_small_names_a_pool_that_fits():
    topo = {"name": "g", "family": "metagraph", "addressing": {"p2p": "10.255.0.0/28"},
            "metagraph": {"groups": 4, "nodes_per_group": 9, "p2p_per_node": 1}}
    (msg,) = errors_of(topo)
    assert msg.endswith("pool 10.255.0.0/28 holds 8 /31 links; the topology needs 18: "
                        "use 10.255.0.0/26 or larger")
    topo["addressing"]["p2p"] = "10.255.0.0/26"
    assert compile_dict(topo)["nodes"]


# -- a custom LAN is sized by its own members -------------------------------------

def custom(lans, links=()):
    nodes = sorted({m for members in lans for m in members} | {e for link in links for e in link})
    return {"name": "c", "family": "custom", "custom": {
        "nodes": nodes,
        "segments": [{"name": "lan%d" % i, "members": list(m)} for i, m in enumerate(lans)],
        "links": [{"ends": list(link)} for link in links]}}


def test_custom_lan_of_twenty_gets_a_27_among_two_thousand_nodes():
    racks = [["r%02dn%02d" % (r, k) for k in range(20)] for r in range(100)]
    links = [(racks[r][0], racks[r + 1][1]) for r in range(99)]
    plan = compile_dict(custom(racks, links))
    for r in range(100):
        assert plan["segments"]["lan%d" % r]["prefix"] == "10.0.%d.0/27" % r
    assert plan["nodes"]["r42n19"]["interfaces"][0]["addresses"] == ["10.0.42.20/27"]


@pytest.mark.parametrize("size,plen", [(2, 30), (6, 29), (7, 28), (14, 28), (30, 27), (31, 26)])
def test_custom_lan_prefix_is_the_smallest_that_holds_its_members(size, plen):
    plan = compile_dict(custom([["n%d" % k for k in range(size)]]))
    assert plan["segments"]["lan0"]["prefix"] == "10.0.0.0/%d" % plen


def test_custom_lan_prefix_given_for_all_applies_to_every_lan():
    topo = custom([["a", "b"], ["b", "c"]])
    topo["addressing"] = {"lan_prefix": 26}
    plan = compile_dict(topo)
    assert [s["prefix"] for s in plan["segments"].values()] == ["10.0.0.0/26", "10.0.0.64/26"]


@settings(max_examples=40, deadline=None, database=None)
@given(st.lists(st.integers(2, 40), min_size=1, max_size=6), st.data())
def test_adding_a_member_moves_no_address(sizes, data):
    """Appending a node to any LAN keeps every existing address; only that LAN's
    prefix may grow, from the same network address."""
    lans = [["l%dn%d" % (i, k) for k in range(size)] for i, size in enumerate(sizes)]
    links = [(lans[i][0], lans[i + 1][-1]) for i in range(len(lans) - 1)]
    before = compile_dict(custom(lans, links))
    grown = data.draw(st.integers(0, len(lans) - 1))
    lans[grown].append("added")
    after = compile_dict(custom(lans, links))
    for name, node in before["nodes"].items():
        for old, new in zip(node["interfaces"], after["nodes"][name]["interfaces"]):
            assert [a.split("/")[0] for a in old["addresses"]] == \
                [a.split("/")[0] for a in new["addresses"]]
    for name, seg in before["segments"].items():
        old = ipaddress.ip_network(seg["prefix"])
        new = ipaddress.ip_network(after["segments"][name]["prefix"])
        assert new == old or (name == "lan%d" % grown and new.network_address == old.network_address)


# -- the forward filter's prefixes ------------------------------------------------

def _union(nets):
    return {a for n in nets for a in range(int(n.network_address), int(n.broadcast_address) + 1)}


@settings(max_examples=80, deadline=None, database=None)
@given(st.lists(st.tuples(st.integers(0, 255), st.integers(24, 32)), max_size=12))
def test_aggregate_covers_exactly_the_union_with_the_fewest_blocks(items):
    nets = [ipaddress.ip_network(("10.0.0.%d" % (a & ~((1 << (32 - p)) - 1) & 255), p)) for a, p in items]
    spans = [(int(n.network_address), int(n.broadcast_address) + 1) for n in nets]
    got = [ipaddress.ip_network(("%s" % ipaddress.ip_address(net), plen))
           for net, plen in render.aggregate(spans)]
    want = list(ipaddress.collapse_addresses(nets))
    assert got == want
    assert _union(got) == _union(nets)


def test_aggregate_of_the_whole_space_and_of_nothing():
    assert render.aggregate([(0, 1 << 32)]) == [(0, 0)]
    assert render.aggregate([]) == []


@pytest.mark.parametrize("groups,per_group", [(4, 9), (20, 19)])
def test_forward_prefixes_do_not_grow_with_the_links(groups, per_group):
    plan = compile_dict({"name": "g", "family": "metagraph", "metagraph": {
        "groups": groups, "nodes_per_group": per_group, "p2p_per_node": 1}})
    nets = [ipaddress.ip_network(p) for p in render.prefixes(plan)]
    segs = [ipaddress.ip_network(s["prefix"]) for s in plan["segments"].values() if s.get("prefix")]
    assert len(nets) <= 8 < len(segs)
    assert all(any(s.subnet_of(n) for n in nets) for s in segs)
    assert sum(n.num_addresses for n in nets) == sum(s.num_addresses for s in segs)


@pytest.mark.parametrize("text,value", [
    ("10.1.2.3", 0x0A010203), ("0.0.0.0", 0), ("255.255.255.255", 0xFFFFFFFF),
    ("010.0.0.1", 0x08000001),          # a leading zero is octal, as inet_aton(3) reads it
    ("0x0a.0.0.1", 0x0A000001), ("10.1", 0x0A000001), ("10.1.2", 0x0A010002)])
def test_ip_int_reads_addresses_as_inet_aton_does(text, value):
    assert ip_int(text) == value
    assert ip_int(ip_text(value)) == value


@pytest.mark.parametrize("text", ["", "256.0.0.1", "1.2.3.4.5", "a.b.c.d", "1.2.3.-4", "1..2.3"])
def test_ip_int_refuses_text_that_is_no_address(text):
    with pytest.raises(ValueError, match="not an IPv4 address"):
        ip_int(text)


@pytest.mark.parametrize("value", [-1, 1 << 32])
def test_ip_text_refuses_a_number_that_is_no_address(value):
    with pytest.raises(ValueError, match="not an IPv4 address"):
        ip_text(value)


@settings(max_examples=200, deadline=None, database=None)
@given(st.integers(0, 0xFFFFFFFF))
def test_ip_text_is_the_dotted_quad_of_ipaddress(value):
    assert ip_text(value) == str(ipaddress.IPv4Address(value))
