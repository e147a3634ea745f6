"""metrics.resilience by classes of destinations against the pair-by-pair
algorithm it replaced (kept below as the oracle): the same figures for every
family, with failover routes or without, with nodes down (tables of separate
components) and with tables no proof would pass; and a cost that grows with
the proof's (nodes x classes), with no size where it stops being computed."""

import random
import statistics
from typing import NamedTuple
from unittest import mock

import pytest
import yaml
from conftest import ROOT
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_properties import SETTINGS, custom_topologies, dump, mesh_dims

from beonet.compiler import load, pipeline
from beonet.compiler import metrics as metrics_stage
from beonet.compiler.errors import CompileError
from beonet.compiler.model import ON_LINK
from beonet.compiler.schema import MAX_NODES

# -- the oracle: the algorithm of commit 17eb615, unchanged but for a guard ---------
# (n route lookups per destination, every pair walked; see the module docstring)


class Hang(Exception):
    """The oracle's dominator walk would loop for ever (tables no proof passes)."""


class _Towards(NamedTuple):
    first: list[int]
    dom: list[int]
    at_risk: dict[int, int]


_CUT = -2


def _towards(proof, addr, t, n, multipath=True):
    hops = []
    for table in proof.tables:
        entry = table.lookup(addr)
        hops.append(() if entry is None else
                    (t,) if entry[0] == ON_LINK else (entry[0], *entry[2]))
    hops[t] = (t,)
    length = _lengths(hops, t)
    dom, depth = [t] * n, [0] * n
    for x in sorted(range(n), key=length.__getitem__):
        if x == t:
            continue
        if length[x] < 0 or any(length[y] < 0 for y in hops[x]):
            dom[x] = hops[x][0] if length[x] >= 0 else _CUT
            continue
        d = hops[x][0]
        for y in hops[x][1:]:
            steps = 0
            while d != y:
                steps += 1
                if steps > 4 * n + 4:
                    raise Hang()
                if depth[d] >= depth[y]:
                    d = dom[d]
                else:
                    y = dom[y]
        dom[x], depth[x] = d, depth[d] + 1
    return _Towards([h[0] if length[i] >= 0 else _CUT for i, h in enumerate(hops)], dom,
                    _at_risk(hops, length, t) if multipath else {})


def _at_risk(hops, length, t):
    reach = [0] * len(hops)
    for x in sorted((i for i in range(len(hops)) if length[i] > 0), key=lambda i: -length[i]):
        reach[x] |= 1 << x
        for y in hops[x]:
            reach[y] |= reach[x]
    out = {}
    for x, h in enumerate(hops):
        if length[x] > 0 and h[0] != t and len(set(h)) == 1:
            out[h[0]] = out.get(h[0], 0) | reach[x]
    return out


def _lengths(hops, t):
    n = len(hops)
    length = [-2] * n
    length[t] = 0
    for i in range(n):
        chain = []
        while length[i] == -2 and hops[i] and len(chain) <= n:
            chain.append(i)
            i = hops[i][0]
        known = length[i] if length[i] != -2 and len(chain) <= n else -1
        for c in reversed(chain):
            known = known + 1 if known >= 0 else -1
            length[c] = known
        if length[i] == -2:
            length[i] = -1
    return length


def _on_way(up, s, t):
    out = set()
    x = up[s]
    steps = 0
    while x != t:
        out.add(x)
        x = up[x]
        steps += 1
        if steps > len(up):
            raise Hang()
    return out


def oracle(graph, proof):
    n = len(graph.nodes)
    multipath = any(r.alt_via for node in graph.nodes for r in node.routes)
    trees = [_towards(proof, node.address, node.index, n, multipath) for node in graph.nodes]
    single, failover = [0] * n, [0] * n
    for s in range(n):
        for t in range(s + 1, n):
            if trees[t].first[s] == _CUT or trees[s].first[t] == _CUT:
                continue
            for v in _on_way(trees[t].first, s, t) | _on_way(trees[s].first, t, s):
                single[v] += 1
            for v in _on_way(trees[t].dom, s, t) | _on_way(trees[s].dom, t, s):
                failover[v] += 1
    risk = _pairs_at_risk(trees, n) if multipath else list(single)
    names = [node.name for node in graph.nodes]
    counts = {"single_path": single, "failover": failover, "failover_at_risk": risk}
    return {"computed": True, "single_path": dict(zip(names, single)),
            "failover": dict(zip(names, failover)), "failover_at_risk": dict(zip(names, risk)),
            "max": {k: max(v, default=0) for k, v in counts.items()},
            "mean": {k: round(statistics.fmean(v), 3) if n else 0.0 for k, v in counts.items()}}


def _pairs_at_risk(trees, n):
    pairs = [set() for _node in range(n)]
    for t in range(n):
        for v, mask in trees[t].at_risk.items():
            mask &= ~(1 << v)
            while mask:
                low = mask & -mask
                s = low.bit_length() - 1
                mask ^= low
                if trees[t].first[s] != _CUT and trees[s].first[t] != _CUT:
                    pairs[v].add((min(s, t), max(s, t)))
    return [len(p) for p in pairs]


# -- helpers ----------------------------------------------------------------------

def same(compiled):
    """metrics.resilience equals the oracle, field by field, by templates with
    corrections and by walking every pair; the figures."""
    want = oracle(compiled.graph, compiled.proof)
    for share in (float("inf"), -1.0):
        with mock.patch.object(metrics_stage, "PAIRWISE_HOST_ROUTES", share):
            got = metrics_stage.resilience(compiled.graph, compiled.proof, force=True)
        for key in want:
            assert got[key] == want[key], (key, share)
    got = metrics_stage.resilience(compiled.graph, compiled.proof)
    # with IPv6 and failover routes, what the counts mean for IPv6 (the figures are the same)
    six = compiled.graph.v6 and any(r.alt_via for node in compiled.graph.nodes for r in node.routes)
    assert {k: v for k, v in got.items() if k != "ipv6"} == want
    assert got.get("ipv6") == (metrics_stage.IPV6_FAILOVER if six else None)
    return got


def family_text(family, params, failover):
    return yaml.safe_dump({"name": "r", "family": family, family: params,
                           "routing": {"failover": failover}}, sort_keys=False)


def compile_or_skip(text, down=None):
    try:
        return pipeline.compile_text(text, "r.yml", down=down)
    except CompileError:
        assume(False)
        raise


def some_down(compiled, data, most=3):
    """Names of up to `most` nodes, never all of them (None: none down)."""
    names = [node.name for node in compiled.graph.nodes]
    if len(names) < 3 or not data.draw(st.booleans(), label="down"):
        return None
    k = data.draw(st.integers(1, min(most, len(names) - 2)), label="how many down")
    return data.draw(st.permutations(names), label="order")[:k]


metagraphs = st.tuples(st.integers(2, 6), st.integers(2, 7), st.integers(1, 3)).filter(
    lambda lpc: lpc[0] <= lpc[1] * lpc[2] + 1)
trees = st.fixed_dictionaries({"levels": st.integers(2, 3), "fanout": st.integers(2, 3),
                               "nodes_per_leaf": st.integers(1, 4),
                               "downlink_mbit": st.just(100), "uplink_mbit": st.just(1000)})
families = st.one_of(
    st.tuples(st.just("metagraph"), metagraphs.map(
        lambda lpc: {"groups": lpc[0], "nodes_per_group": lpc[1], "p2p_per_node": lpc[2]})),
    st.tuples(st.just("mesh"), mesh_dims.map(lambda dims: {"dims": dims})),
    st.tuples(st.just("tree"), trees),
    st.tuples(st.just("bonded"), st.fixed_dictionaries({"nodes": st.integers(2, 9),
                                                         "channels": st.integers(1, 3)})))


# -- equal to the oracle ------------------------------------------------------------

@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT))
                                         for p in (ROOT / "topologies").glob("*.yml")
                                         if "engine: frr" not in p.read_text()))   # no static routes
def test_shipped_topologies_equal_the_oracle(path):
    same(pipeline.compile_file(str(ROOT / path)))


@pytest.mark.parametrize("failover", [True, False])
@pytest.mark.parametrize("family,params", [
    ("metagraph", {"groups": 10, "nodes_per_group": 12, "p2p_per_node": 1}),
    ("metagraph", {"groups": 9, "nodes_per_group": 10, "p2p_per_node": 2}),
    ("mesh", {"dims": [16, 16]}),
    ("mesh", {"dims": [5, 5, 5]}),
])
def test_a_few_hundred_nodes_equal_the_oracle(family, params, failover):
    """Sizes where host routes (failover, up to 256 nodes; meta-graph peers) abound."""
    same(pipeline.compile_text(family_text(family, params, failover), "r.yml"))


@settings(**SETTINGS)
@given(families, st.booleans(), st.data())
def test_generated_families_equal_the_oracle(family_params, failover, data):
    family, params = family_params
    text = family_text(family, params, failover)
    # a tree keeps a node under every leaf: bisection divides by them (see the report)
    most = params["nodes_per_leaf"] - 1 if family == "tree" else 3
    down = some_down(compile_or_skip(text), data, most) if most else None
    same(compile_or_skip(text, down))


@settings(**SETTINGS)
@given(custom_topologies(max_nodes=14), st.booleans(), st.data())
def test_custom_graphs_equal_the_oracle(topo, failover, data):
    text = dump({**topo, "routing": {"failover": failover}})
    down = some_down(compile_or_skip(text), data, most=4)
    r = same(compile_or_skip(text, down))
    if not failover:
        assert r["failover"] == r["single_path"] == r["failover_at_risk"]


def test_nodes_down_that_split_the_graph_equal_the_oracle():
    """A chain cut in two and a meta-graph group cut off: pairs in different
    components count for no node."""
    chain = ("name: chain\nfamily: custom\ncustom:\n  nodes: [a, b, c, d, e]\n  links:\n"
             "    - {ends: [a, b]}\n    - {ends: [b, c]}\n    - {ends: [c, d]}\n    - {ends: [d, e]}\n")
    c = pipeline.compile_text(chain, "chain.yml", down="c")
    assert c.components == [["a", "b"], ["d", "e"]]
    same(c)
    meta = family_text("metagraph", {"groups": 3, "nodes_per_group": 3, "p2p_per_node": 1}, True)
    full = pipeline.compile_text(meta, "m.yml")
    peers = [m.name for seg in full.graph.segments if seg.kind == "p2p"
             for m, _iface, _host in seg.members if m.group != 0
             and any(o.group == 0 for o, _i, _h in seg.members)]
    split = pipeline.compile_text(meta, "m.yml", down=peers)
    assert len(split.components) == 2
    same(split)


@settings(**SETTINGS)
@given(st.one_of(families, custom_topologies(max_nodes=10).map(lambda t: ("custom", t))),
       st.booleans(), st.randoms(use_true_random=False))
def test_tables_no_proof_passes_equal_the_oracle(family_params, failover, rnd):
    """Entries deleted at random (routes, host routes, whole tables): missing
    routes, branches of unequal length and loops the proof would refuse."""
    family, params = family_params
    text = (dump({**params, "routing": {"failover": failover}}) if family == "custom"
            else family_text(family, params, failover))
    c = compile_or_skip(text)
    _tamper(c, rnd)
    try:
        want = oracle(c.graph, c.proof)
    except Hang:
        assume(False)
        raise
    for share in (float("inf"), -1.0):
        with mock.patch.object(metrics_stage, "PAIRWISE_HOST_ROUTES", share):
            assert metrics_stage.resilience(c.graph, c.proof, force=True) == want


def _tamper(compiled, rnd: random.Random):
    tables = compiled.proof.tables
    for i in rnd.sample(range(len(tables)), rnd.randint(1, min(3, len(tables)))):
        if rnd.random() < 0.2:
            tables[i] = type(tables[i])()
            continue
        for bucket in tables[i].by_len.values():
            for net in list(bucket):
                if rnd.random() < 0.3:
                    del bucket[net]


def test_pairs_without_routes_count_for_nobody():
    """test_metrics' cut of b3 (nobody reaches it, it reaches nobody), against the oracle."""
    c = pipeline.compile_file(str(ROOT / "topologies" / "custom-example.yml"))
    b3 = c.graph.by_name["b3"]
    for table in c.proof.tables:
        for bucket in table.by_len.values():
            for net in list(bucket):
                if net == b3.address & ~((1 << (32 - 27)) - 1) or net == b3.address:
                    del bucket[net]
    c.proof.tables[b3.index] = type(c.proof.tables[0])()
    assert same(c)["single_path"]["b3"] == 0


# -- cost -------------------------------------------------------------------------

def test_no_size_the_compiler_accepts_is_left_out():
    assert metrics_stage.RESILIENCE_UP_TO >= MAX_NODES


def test_more_steps_than_the_bound_are_left_out_unless_forced(monkeypatch):
    """A 3D mesh: every node has a way of its own towards each class; the
    projection after the first class passes the bound, and forced it is computed."""
    text = family_text("mesh", {"dims": [4, 4, 4]}, True)
    monkeypatch.setattr(metrics_stage, "RESILIENCE_STEPS", 2000)
    left = pipeline.compile_text(text, "m.yml").metrics["resilience"]
    assert not left["computed"]
    assert left["reason"].startswith("about ") and left["reason"].endswith(
        "steps, more than 2000: `beonet metrics --resilience` computes it")
    source, _problems = load.load_text(text, "m.yml")
    forced = pipeline.compile_source(source, resilience=True)
    assert forced.metrics["resilience"] == oracle(forced.graph, forced.proof)


def test_a_thousand_node_metagraph_is_computed_by_classes():
    """L=25 P=40 C=1 with failover (1,000 nodes, 30,400 host routes): computed by
    classes of destinations (what it costs: `make bench`, its metrics case)."""
    c = pipeline.compile_text(family_text("metagraph", {"groups": 25, "nodes_per_group": 40,
                                                        "p2p_per_node": 1}, True), "m.yml")
    r = metrics_stage.resilience(c.graph, c.proof)
    assert r["computed"] and r == c.metrics["resilience"]
    assert r["max"] == {"single_path": 1560, "failover": 1560, "failover_at_risk": 1560}
    assert r["mean"] == {"single_path": 1209.6, "failover": 343.2, "failover_at_risk": 1498.4}
