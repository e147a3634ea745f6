"""Single failures (metrics.failures): small graphs counted by hand, the routed figures
against removing each element and searching, the static figures of nodes against
resilience's single_path."""

import itertools

import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from test_metrics import brute_resilience
from test_properties import SETTINGS, PlanTables, custom_topologies, dump

from beonet import cli
from beonet.compiler import failures, pipeline
from beonet.outputs import plan as render


def by_name(compiled):
    """({element: pairs} routed, {element: pairs} static) over nodes, cables and LANs."""
    el = failures.Elements(compiled.graph)
    routed = failures.routed_counts(el)
    static, _every, _some = failures.static_counts(compiled.graph, compiled.proof, el)
    return dict(zip(el.names, routed)), dict(zip(el.names, static))


def failover_by_name(compiled):
    """({element: pairs} every branch, {element: pairs} some branch) of the failover routes."""
    el = failures.Elements(compiled.graph)
    _one, every, some = failures.static_counts(compiled.graph, compiled.proof, el)
    return dict(zip(el.names, every)), dict(zip(el.names, some))


def compile_custom(nodes, segments=(), links=()):
    topo = {"name": "f", "family": "custom",
            "custom": {"nodes": list(nodes), "segments": [{"name": k, "members": m} for k, m in segments],
                       "links": [{"ends": e} for e in links]}}
    return pipeline.compile_text(dump(topo), "f.yml")


def test_chain():
    # a - b - c over two links; every node's address is on its first NIC: a and b on
    # a--b, c on b--c.
    routed, static = by_name(compile_custom("abc", links=[["a", "b"], ["b", "c"]]))
    ab, bc = "a:eth1 <-> b:eth1", "b:eth2 <-> c:eth1"
    # b's death parts a from c (1 pair); either link parts one end from the two others (2)
    assert routed == {"a": 0, "b": 1, "c": 0, ab: 2, bc: 2}
    # a--b: a <-> b and a <-> c cross it, and it holds b's address, so b <-> c too (3);
    # b--c: b <-> c and a <-> c cross it (c's address: the same two)
    assert static == {"a": 0, "b": 1, "c": 0, ab: 3, bc: 2}


def test_ring_failover_branches():
    # a - b - c - d - a over four links; the addresses of a and b are on a--b, c's on
    # b--c, d's on c--d. The diagonals a <-> c and b <-> d each have two equal branches.
    every, some = failover_by_name(compile_custom("abcd", links=[["a", "b"], ["b", "c"],
                                                                 ["c", "d"], ["d", "a"]]))
    da = "d:eth2 <-> a:eth2"
    # d--a: only a <-> d has every branch on it (each end reaches the other's address
    # over it in one hop); the diagonals have a branch on it and one around it
    assert (every[da], some[da]) == (1, 3)
    # a--b holds the addresses of a and b: their 5 pairs, whatever the branches
    assert every["a:eth1 <-> b:eth1"] == some["a:eth1 <-> b:eth1"] == 5
    # a node's death: every diagonal pair has a branch around it, none through it only
    assert [every[v] for v in "abcd"] == [0, 0, 0, 0] and [some[v] for v in "abcd"] == [1, 1, 1, 1]


def test_star_on_a_lan():
    # four nodes on one switch: a NIC's cable parts its node from the 3 others; the
    # switch parts all 6 pairs; no node forwards
    four = ["n1", "n2", "n3", "n4"]
    routed, static = by_name(compile_custom(four, segments=[["sw", four]]))
    expect = {"n1": 0, "n2": 0, "n3": 0, "n4": 0, "sw": 6,
              "n1:eth1": 3, "n2:eth1": 3, "n3:eth1": 3, "n4:eth1": 3}
    assert routed == expect
    assert static == expect


def test_routed_mesh_4x4():
    # 4x4 mesh, a LAN per row (the nodes' home, eth1) and per column (eth2). A routing
    # daemon loses nothing: every node has two LANs and every LAN's nodes reach each
    # other over the columns. Static routes: a node forwards 9 pairs (resilience); its
    # home cable cuts its own 15 pairs and the 9 it forwards, which enter on one NIC and
    # leave on the other (24); its column NIC carries its 3 column peers and the 9 nodes
    # off its row and column it reaches through its column (first hop), plus the 9 (21).
    # A row LAN holds the addresses of 4 nodes: every pair of them, C(16,2) - C(12,2) = 54;
    # a column LAN carries the first hop of each of its 4 nodes to the 12 off its row:
    # 4 x 12 - C(4,2) pairs counted twice = 42.
    compiled = pipeline.compile_file(str(ROOT / "topologies/routed-mesh.yml"))
    routed, static = by_name(compiled)
    assert set(routed.values()) == {0}
    f = compiled.metrics["failures"]
    assert f["static"]["node"]["histogram"] == {"9": 16}
    assert f["static"]["cable"]["histogram"] == {"21": 16, "24": 16}
    assert f["static"]["lan"]["histogram"] == {"42": 4, "54": 4}
    assert static["node-0-0:eth1"] == 24 and static["node-0-0:eth2"] == 21


def test_sc98_testbed():
    # 4 groups of 9 on a LAN each (eth1, the home), each node one link to another group.
    # Nothing parts the graph: a group LAN down, its nodes still reach each other over
    # their links and the other groups. Static routes: a node forwards 28 pairs
    # (resilience); its LAN cable cuts its own 35 and the 28 it forwards between its LAN
    # and its link (63); a group's LAN cuts every pair with one of its 9 nodes,
    # C(36,2) - C(27,2) = 279 (the other groups' pairs never cross it: each group links
    # to each other group directly).
    compiled = pipeline.compile_file(str(ROOT / "topologies/metanode-testbed.yml"))
    routed, static = by_name(compiled)
    assert set(routed.values()) == {0}
    f = compiled.metrics["failures"]["static"]
    assert f["node"]["histogram"] == {"28": 36}
    assert f["lan"]["histogram"] == {"279": 4}
    assert f["cable"]["histogram"]["63"] == 36 and f["cable"]["elements"] == 36 + 18
    # a link carries its two ends' pairs between their groups (what each forwards)
    links = [v for k, v in static.items() if "<->" in k]
    assert len(links) == 18 and all(28 < v < 63 for v in links)


def brute_routed(graph):
    """{element: pairs} by removing each element and counting the live pairs that can no
    longer reach each other (a search per element)."""
    segs = graph.routed_segments()
    attach = [(node.index, k, iface.name) for k, seg in enumerate(segs) for node, iface, _h in seg.members]
    nodes = range(len(graph.nodes))

    def parted(dead_node=None, dead_seg=None, dead_edge=None):
        adj = {}
        for e, (a, k, _name) in enumerate(attach):
            if a != dead_node and k != dead_seg and e != dead_edge:
                adj.setdefault(("n", a), []).append(("s", k))
                adj.setdefault(("s", k), []).append(("n", a))
        comp = {}
        for v in nodes:
            if v == dead_node or ("n", v) in comp:
                continue
            todo = [("n", v)]
            comp[("n", v)] = v
            while todo:
                for w in adj.get(todo.pop(), []):
                    if w not in comp:
                        comp[w] = v
                        todo.append(w)
        live = [v for v in nodes if v != dead_node]
        return sum(1 for s, t in itertools.combinations(live, 2) if comp[("n", s)] != comp[("n", t)])

    base = parted()
    out = {}
    for node in graph.nodes:        # pairs with the dead node were never counted after its death
        out[node.name] = parted(dead_node=node.index) - (base - _parted_with(graph, attach, node.index))
    for k, seg in enumerate(segs):
        if seg.kind == "p2p":
            name = " <-> ".join("%s:%s" % (m[0].name, m[1].name) for m in seg.members)
            out[name] = parted(dead_seg=k) - base
        else:
            out[seg.name] = parted(dead_seg=k) - base
            for e, (a, kk, name) in enumerate(attach):
                if kk == k:
                    out["%s:%s" % (graph.nodes[a].name, name)] = parted(dead_edge=e) - base
    return out


def _parted_with(graph, attach, v):
    """Pairs with node v that are already parted before any failure."""
    adj = {}
    for a, k, _name in attach:
        adj.setdefault(("n", a), []).append(("s", k))
        adj.setdefault(("s", k), []).append(("n", a))
    seen, todo = {("n", v)}, [("n", v)]
    while todo:
        for w in adj.get(todo.pop(), []):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return sum(1 for node in graph.nodes if ("n", node.index) not in seen)


@settings(**SETTINGS)
@given(custom_topologies(max_nodes=10), st.integers(0, 12))
def test_routed_equals_removing_each_element(topo, down):
    names = [n if isinstance(n, str) else n["name"] for n in topo["custom"]["nodes"]]
    dead = [names[down]] if down < len(names) else None
    compiled = pipeline.compile_text(dump(topo), "prop.yml", down=dead)
    routed, static = by_name(compiled)
    assert routed == brute_routed(compiled.graph)
    # the static routes lose at least what the graph loses
    assert all(static[k] >= v for k, v in routed.items())


@settings(**SETTINGS)
@given(custom_topologies(max_nodes=10), st.booleans())
def test_static_nodes_equal_resilience_single_path(topo, failover):
    compiled = pipeline.compile_text(dump({**topo, "routing": {"failover": failover}}), "prop.yml")
    _routed, static = by_name(compiled)
    single, failover_cut, risk = brute_resilience(render.plan(compiled))
    assert {v: static[v] for v in single} == single == compiled.metrics["resilience"]["single_path"]
    every, some = failover_by_name(compiled)
    assert {v: every[v] for v in single} == failover_cut
    assert {v: some[v] for v in single} == brute_some_branch(render.plan(compiled))
    # every branch crossing it implies the preferred one does, which implies some does;
    # a pair the dead node may cut for good (the flow hash decides) has a branch through it
    assert all(every[k] <= static[k] <= some[k] for k in static)
    assert all(risk[v] <= some[v] for v in single)


def brute_some_branch(plan):
    """{node: pairs of others some branch of which, either way, passes the node}."""
    tables = PlanTables(plan)
    names = list(plan["nodes"])
    count = dict.fromkeys(names, 0)
    for s, t in itertools.combinations(names, 2):
        passed = {v for way in (tables.branches(s, t), tables.branches(t, s)) for b in way for v in b[1:-1]}
        for v in passed:
            count[v] += 1
    return count


@pytest.mark.parametrize("name", ["custom-example", "backends-chain", "switch-tree", "bonded-dual-net"])
def test_shipped_static_nodes_equal_resilience(name):
    compiled = pipeline.compile_file(str(ROOT / "topologies" / ("%s.yml" % name)))
    _routed, static = by_name(compiled)
    single = compiled.metrics["resilience"]["single_path"]
    assert {v: static[v] for v in single} == single
    assert compiled.metrics["failures"]["routed"]["node"]["worst"] is not None


def test_static_steps_cap_and_force(monkeypatch, capsys):
    monkeypatch.setattr(failures, "STATIC_STEPS", 10)
    topology = str(ROOT / "topologies/routed-mesh.yml")
    static = pipeline.compile_file(topology).metrics["failures"]["static"]
    assert not static["computed"] and "--resilience" in static["reason"]
    assert "cable" not in static and static["node"]["histogram"] == {"9": 16}
    forced = pipeline.compile_file(topology, resilience=True).metrics["failures"]["static"]
    assert forced["computed"]
    assert forced["failover"]["cable"]["worst"] == {"name": "node-0-0:eth1", "pairs": 15}
    assert forced["disrupted"]["cable"]["worst"] == {"name": "node-0-0:eth1", "pairs": 24}
    assert cli.main(["metrics", topology]) in (0, None)
    text = capsys.readouterr().out
    assert "single failures" in text and "not computed" in text
