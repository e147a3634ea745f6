"""The scaled routing, proof and metrics agree with the plain per-pair rules.

Routing treats a LAN as one vertex and meshes use their coordinates; here a
reference router works the slow way (a LAN as a clique of its members, one
BFS per destination, tables walked hop by hop) and must give the same
tables, and the prover's shortest-distance sums must equal plain BFS sums.
"""

import io
from collections import defaultdict, deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import SETTINGS, custom_topologies, dump, mesh_dims

from beonet.cli import progress
from beonet.compiler import address, load, normalise, pipeline, prove, route
from beonet.compiler.errors import Problems
from beonet.compiler.model import ON_LINK, Graph, Route, RouteTable


def addressed(text):
    """The graph of a topology, addressed, before any route."""
    source, problems = load.load_text(text, "scale.yml")
    assert not problems, problems.items
    graph, problems = normalise.normalise(source)
    assert not problems, problems.items
    assert not address.assign(graph, source)
    return graph


def mesh_text(dims):
    return "name: m\nfamily: mesh\nmesh: {dims: [%s]}\n" % ", ".join(map(str, dims))


def clique(graph):
    """node index -> [(neighbour, segment)], every LAN a clique of its members."""
    adj = [[] for _node in graph.nodes]
    for seg in graph.routed_segments():
        idx = [m[0].index for m in seg.members]
        for a in idx:
            adj[a].extend((b, seg) for b in idx if b != a)
    return adj


def bfs(adj, sources):
    dist = [-1] * len(adj)
    queue = deque(sources)
    for s in sources:
        dist[s] = 0
    while queue:
        a = queue.popleft()
        for b, _seg in adj[a]:
            if dist[b] < 0:
                dist[b] = dist[a] + 1
                queue.append(b)
    return dist


def reference_routes(graph: Graph) -> None:
    """Per home segment: every other node's next hops one hop nearer, sources
    sharing the same next hops dealt round-robin by index (with failover, the
    route has all of them, the dealt one first); then, per destination and
    nearest sources first, a host route wherever walking the tables (any
    branch, with failover) takes longer than the shortest path, through the
    neighbours one hop nearer the destination (with failover, all of them,
    the segment route's first next hop first when it is one)."""
    nodes, adj = graph.nodes, clique(graph)
    on = {(node.index, seg.name): i for seg in graph.routed_segments()
          for node, i, _host in seg.members}
    homes = {id(n.home.segment): n.home.segment for n in nodes}
    chosen = {}
    for seg in sorted(homes.values(), key=graph.segments.index):
        members = {m[0].index for m in seg.members}
        dist = bfs(adj, members)
        shared = defaultdict(list)
        for x in nodes:
            if x.index not in members:
                want = dist[x.index] - 1
                cands = tuple(sorted({(n, s.name) for n, s in adj[x.index] if dist[n] == want}))
                shared[cands].append(x.index)
        for cands, xs in shared.items():
            for rank, xi in enumerate(sorted(xs)):
                first = cands[rank % len(cands)]
                chosen[xi, id(seg)] = first
                nodes[xi].routes.append(ref_route(graph, on, xi, seg.net, seg.plen, first, cands))
    owner = route.owners(graph)
    problems = Problems()
    tables = prove.checked_tables(graph, owner, problems)
    assert not problems
    for dest in nodes:
        dist = bfs(adj, [dest.index])
        for x in sorted(nodes, key=lambda n: dist[n.index]):
            d = dist[x.index]
            if d < 1 or walk(tables, x.index, dest.address, dest.index) <= d:
                continue
            cands = sorted({(n, s.name) for n, s in adj[x.index] if dist[n] == d - 1})
            first = chosen.get((x.index, id(dest.home.segment)))
            if first not in cands or not graph.failover:
                first = cands[x.index % len(cands)]
            r = ref_route(graph, on, x.index, dest.address, 32, first, cands)
            x.routes.append(r)
            tables[x.index].add(dest.address, 32, (owner[r.via], x.address,
                                                   tuple(owner[v] for v in r.alt_via)))
    # the failover host routes for pairs with more next hops than their route (their
    # branches are checked against plain BFS by the proof and test_properties' walker)
    route._host_failover(graph)
    route._finish(graph)


def ref_route(graph, on, xi, net, plen, first, cands):
    """A route from node xi through first and, with failover, the other cands."""
    n, seg = first
    r = Route(net, plen, on[n, seg].addresses[0], on[xi, seg].name, graph.nodes[xi].address)
    rest = [c for c in cands if c != first] if graph.failover else []
    r.alt_via = tuple(on[m, s].addresses[0] for m, s in rest)
    r.alt_dev = tuple(on[xi, s].name for _m, s in rest)
    return r


def walk(tables: list[RouteTable], start: int, addr: int, target: int) -> int:
    """The most hops any branch takes from start to addr (node target)."""
    if start == target:
        return 0
    entry = tables[start].lookup(addr)
    assert entry is not None
    if entry[0] == ON_LINK:
        return 1
    return 1 + max(walk(tables, j, addr, target) for j in (entry[0], *entry[2]))


def tables_of(graph: Graph):
    return ({n.name: sorted((r.net, r.plen, r.nexthops(), r.src) for r in n.routes)
             for n in graph.nodes},
            [n.name for n in graph.nodes if n.forwarding])


def plain_sums(graph):
    adj = clique(graph)
    return [sum(bfs(adj, [n.index])) for n in graph.nodes]


@settings(**SETTINGS)
@given(custom_topologies(), st.booleans())
def test_custom_routes_equal_the_per_pair_rule(topo, failover):
    text = dump({**topo, "routing": {"failover": failover}})
    fast, slow = addressed(text), addressed(text)
    route.route(fast)
    reference_routes(slow)
    assert tables_of(fast) == tables_of(slow)
    assert prove.shortest_sums(fast) == plain_sums(fast)


@settings(**SETTINGS)
@given(mesh_dims, st.booleans())
def test_mesh_routes_equal_the_generic_and_per_pair_rules(dims, failover):
    text = mesh_text(dims) + "routing: {failover: %s}\n" % str(failover).lower()
    fast, generic, slow = addressed(text), addressed(text), addressed(text)
    route.route(fast)
    route.generic(generic)
    reference_routes(slow)
    assert tables_of(fast) == tables_of(generic) == tables_of(slow)
    assert prove.shortest_sums(fast) == plain_sums(fast)


@pytest.mark.parametrize("failover", [True, False])
@pytest.mark.parametrize("dims", [[4, 4, 4], [2, 3, 4, 2], [7, 5], [3, 2, 2, 2, 2]])
def test_larger_meshes_route_like_the_generic_rule(dims, failover):
    text = mesh_text(dims) + "routing: {failover: %s}\n" % str(failover).lower()
    fast, generic = addressed(text), addressed(text)
    route.route(fast)
    route.generic(generic)
    assert tables_of(fast) == tables_of(generic)
    assert prove.shortest_sums(fast) == plain_sums(fast)


@pytest.mark.parametrize("L,P,C", [(4, 3, 1), (5, 4, 2), (7, 2, 3)])
def test_metagraph_sums_equal_plain_bfs(L, P, C):
    graph = addressed("name: g\nfamily: metagraph\nmetagraph: {groups: %d, nodes_per_group: %d,"
                      " p2p_per_node: %d}\n" % (L, P, C))
    assert prove.shortest_sums(graph) == plain_sums(graph)


@settings(**SETTINGS)
@given(custom_topologies(), st.data())
def test_lan_vertex_distances_equal_clique_bfs(topo, data):
    graph = addressed(dump(topo))
    sources = data.draw(st.lists(st.integers(0, len(graph.nodes) - 1), min_size=1,
                                 max_size=3, unique=True))
    reach = graph.links().towards(sources)
    assert reach.dist == bfs(clique(graph), sources)
    assert sorted(reach.order) == list(range(len(graph.nodes)))
    assert [reach.dist[x] for x in reach.order] == sorted(reach.dist)


@settings(**SETTINGS)
@given(mesh_dims)
def test_mesh_metrics_equal_plain_bfs(dims):
    compiled = pipeline.compile_text(mesh_text(dims), "m.yml")
    adj = clique(compiled.graph)
    hist = defaultdict(int)
    for node in compiled.graph.nodes:
        for d in bfs(adj, [node.index]):
            if d:
                hist[str(d)] += 1
    assert compiled.metrics["hops"] == dict(sorted(hist.items()))
    assert compiled.metrics["diameter"] == max(map(int, hist), default=0)


def test_a_route_that_leaves_the_shortest_path_is_refused():
    # single-path routes: with failover, host routes would take node-2-2 past the detour
    graph = addressed(mesh_text([3, 3]) + "routing: {failover: false}\n")
    route.route(graph)
    x = graph.by_name["node-0-0"]
    far = graph.by_name["node-2-2"].home.segment
    detour = graph.by_name["node-1-0"]
    for r in x.routes:
        if (r.net, r.plen) == (far.net, far.plen):
            r.via, r.dev = detour.home.addresses[0], x.home.name
    detour.forwarding = True
    proof, problems = prove.prove(graph)
    assert proof is None
    assert any("not shortest" in p.message for p in problems.items), problems.items


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_compile_passes_each_stage_to_the_progress_callback():
    seen = []
    with pipeline.progress(seen.append):
        pipeline.compile_text(mesh_text([3, 3]), "m.yml")
    assert seen[0] == "loading the topology" and seen[-1] == "compiled; writing the outputs"
    assert any(stage.startswith("proving the routes of 9 nodes, ") for stage in seen)
    pipeline.compile_text(mesh_text([2, 2]), "m.yml")         # outside the block: not called
    assert seen[-1] == "compiled; writing the outputs" and seen.count("loading the topology") == 1


def test_a_long_compile_names_its_stages_on_a_terminal():
    err = Terminal()
    with progress.shown(err, after=0.0):
        pipeline.compile_text(mesh_text([6, 6]), "m.yml")
    lines = err.getvalue().splitlines()
    assert lines, "no progress on a terminal"
    assert all(line.startswith("beonet: ") and line.endswith(" s)") for line in lines)
    assert any("proving the routes of 36 nodes" in line for line in lines)
    assert "compiled; writing the outputs" in lines[-1]


def test_a_compile_says_nothing_when_stderr_is_not_a_terminal():
    err = io.StringIO()
    with progress.shown(err, after=0.0):
        pipeline.compile_text(mesh_text([6, 6]), "m.yml")
    assert err.getvalue() == ""


def test_a_short_compile_says_nothing_on_a_terminal():
    err = Terminal()
    with progress.shown(err, after=60.0):
        pipeline.compile_text(mesh_text([3, 3]), "m.yml")
    assert err.getvalue() == ""


def _route_to(node, seg):
    return next(r for r in node.routes if (r.net, r.plen) == (seg.net, seg.plen))


def test_a_longer_branch_of_a_multipath_route_is_refused():
    """node-0-0-0's route to node-0-1-1's LAN has two branches of 2 hops; a
    third through node-1-0-0 would take 3."""
    graph = addressed(mesh_text([2, 2, 2]))
    route.route(graph)
    x = graph.by_name["node-0-0-0"]
    r = _route_to(x, graph.by_name["node-0-1-1"].home.segment)
    assert len(r.alt_via) == 1
    proof, problems = prove.prove(graph)
    assert proof is not None, problems.items
    detour = graph.by_name["node-1-0-0"]
    r.alt_via += (detour.home.addresses[0],)
    r.alt_dev += (x.home.name,)
    proof, problems = prove.prove(graph)
    assert proof is None
    assert any("the branch through node-1-0-0" in p.message and "takes 3 hops" in p.message
               for p in problems.items), problems.items


SQUARE = ("name: sq\nfamily: custom\ncustom:\n  nodes: [a, b, c, d, e]\n"
          "  segments: [{name: dl, members: [d, e]}]\n"
          "  links: [{ends: [a, b]}, {ends: [a, c]}, {ends: [b, d]}, {ends: [c, d]}]\n")


def test_a_branch_through_a_node_with_forwarding_off_is_refused():
    """a reaches d and e over b (preferred) or c; c forwards on that branch only."""
    graph = addressed(SQUARE)
    route.route(graph)
    proof, problems = prove.prove(graph)
    assert proof is not None, problems.items
    c = graph.by_name["c"]
    assert c.forwarding and not proof.forwarded[c.index] and c.index in proof.branching
    c.forwarding = False
    proof, problems = prove.prove(graph)
    assert proof is None
    assert [(p.path, p.message) for p in problems.items] == [
        ("nodes.c.forwarding", "off, but a branch of some pair passes through the node")]


def test_branches_ending_at_different_members_need_host_routes():
    """Without its host routes, a non-linked node of a meta-graph group would
    reach a remote node linked to its group in 2 hops over one gateway and 3
    over another: refused."""
    graph = addressed("name: g\nfamily: metagraph\nmetagraph: {groups: 3, nodes_per_group: 5,"
                      " p2p_per_node: 1}\n")
    route.route(graph)
    proof, problems = prove.prove(graph)
    assert proof is not None, problems.items
    multi = [(x, r) for x in graph.nodes for r in x.routes if r.alt_via and r.plen < 32]
    x, group_route = multi[0]
    hosts = [r for r in x.routes if r.plen == 32 and group_route.net <= r.net
             < group_route.net + (1 << (32 - group_route.plen))]
    assert hosts
    x.routes.remove(hosts[0])
    proof, problems = prove.prove(graph)
    assert proof is None
    assert any("differ in length" in p.message or "not shortest" in p.message
               for p in problems.items), problems.items


@settings(**SETTINGS)
@given(custom_topologies())
def test_failover_off_is_the_preferred_branch_of_failover_on(topo):
    """Every pair's single path with failover off is the preferred branch with
    failover on, and the metrics agree but for routes per node and the nodes
    that forward (gateways of other branches)."""
    on = pipeline.compile_text(dump(topo), "p.yml")
    off = pipeline.compile_text(dump({**topo, "routing": {"failover": False}}), "p.yml")
    names = [n.name for n in on.graph.nodes]
    for a in names:
        for b in names:
            if a != b:
                single = off.path(a, b)
                assert len(single) == 1 and single[0] == on.path(a, b)[0]
    assert all(not r.alt_via for n in off.graph.nodes for r in n.routes)
    skip = {"routes_per_node", "resilience", "forwarding_nodes", "failures"}
    assert {k: v for k, v in on.metrics.items() if k not in skip} == \
        {k: v for k, v in off.metrics.items() if k not in skip}
    # the same nodes, but a failover host route's first next hop may be another NIC of
    # the same neighbour: what static routes lose with a cable or a LAN may differ
    assert on.metrics["failures"]["routed"] == off.metrics["failures"]["routed"]
