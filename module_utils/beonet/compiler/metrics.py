"""Stage 6: metrics of the compiled network.

Bisection follows the papers' convention: the capacity across the worst
bisection of the nodes divided by the number of nodes (SC98: a fully
connected meta-graph gives (C/4)(L/(L-1)) of one link for even L). Capacity
across a cut: a switched LAN or channel split a/b carries min(a, b) links, a
point-to-point link carries one; a tree's switches carry what their uplinks
allow. The worst bisection is searched exhaustively up to 16 nodes and over
structure-aligned cuts (groups, mesh dimensions, leaves) above that.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Iterator
from math import comb
from typing import NamedTuple, TypedDict

from . import latency
from .model import ON_LINK, Graph, Switch
from .prove import Proof

EXHAUSTIVE_UP_TO = 16

Link = tuple[str, int, list[int]]   # (segment kind, rate, member node indexes)


class _FamilyBisection(TypedDict, total=False):
    paper_closed_form: float            # meta-graph: (C/4)(L/(L-1))
    uplink_per_node_mbit: float         # tree
    oversubscription: float             # tree: the worst level's


class LevelLoad(TypedDict):
    """Oversubscription of the uplinks from one level of a tree to the level above."""

    level: int
    switches: int
    nodes_below: int
    offered_mbit: int
    uplink_mbit: int
    ratio: float


class Bisection(_FamilyBisection):
    crossing_mbit: int
    per_node_mbit: float
    link_mbit: int
    fraction_of_link: float
    method: str


class RoutesPerNode(TypedDict):
    max: int
    mean: float
    total: int


class GatewayLoad(TypedDict):
    max: int
    mean: float


class MetagraphMetrics(TypedDict):
    links_per_group_pair: float
    uneven_pairs: list[str]
    unused_ports: list[str]
    weights: dict[str, int]


class _FamilyMetrics(TypedDict, total=False):
    metagraph: MetagraphMetrics
    oversubscription: list[LevelLoad]   # tree: per level, from the root down
    notes: list[str]                    # what the compiler chose not to do, and why
    latency: latency.LatencyMetrics     # the topology has `latency`: pairs by path class


class Metrics(_FamilyMetrics):
    nodes: int
    segments: int
    links: int
    channels: int
    pairs: int
    diameter: int
    hops: dict[str, int]                        # hop count -> ordered pairs
    routes_per_node: RoutesPerNode
    forwarding_nodes: int
    gateway_load: GatewayLoad
    bisection: Bisection
    resilience: Resilience


def _links(graph: Graph) -> list[Link]:
    """(kind, rate, member node indexes) that a cut may split; the kind of a
    shared segment (a hub or coax, one medium) is "shared"."""
    out = []
    for seg in graph.segments:
        if seg.kind == "lan" and any(i.kind == "bond" for _node, i, _host in seg.members):
            continue                    # counted through its channels
        kind = "shared" if seg.medium == "shared" else seg.kind
        out.append((kind, seg.rate_mbit, [m[0].index for m in seg.members]))
    return out


def _crossing(side: list[int], links: list[Link]) -> int:
    total = 0
    for kind, rate, members in links:
        a = sum(side[m] for m in members)
        b = len(members) - a
        total += _cost(kind, rate, a, b)
    return total


def _cost(kind: str, rate: int, a: int, b: int) -> int:
    if kind in ("p2p", "shared"):     # one wire or one medium: its rate, however split
        return rate if a and b else 0
    return min(a, b) * rate


def _balance(side: list[int], links: list[Link]) -> int:
    """Move nodes from the larger side until the sides differ by at most one,
    each time the node whose move costs least; then return the crossing."""
    n = len(side)
    member_of: list[list[int]] = [[] for _node in range(n)]
    count = []
    for k, (_kind, _rate, members) in enumerate(links):
        a = sum(side[m] for m in members)
        count.append([len(members) - a, a])
        for m in members:
            member_of[m].append(k)
    while abs(2 * sum(side) - n) > 1:
        big = 1 if 2 * sum(side) > n else 0
        best = None
        for i in range(n):
            if side[i] != big:
                continue
            delta = 0
            for k in member_of[i]:
                kind, rate, _members = links[k]
                c = count[k]
                moved = [c[0] + (1 if big else -1), c[1] + (-1 if big else 1)]
                delta += _cost(kind, rate, *moved) - _cost(kind, rate, *c)
            if best is None or delta < best[0]:
                best = (delta, i)
        if best is None:
            raise AssertionError("the larger side of a cut has no node")
        i = best[1]
        side[i] = 1 - big
        for k in member_of[i]:
            count[k][big] -= 1
            count[k][1 - big] += 1
    return _crossing(side, links)


def _candidates(graph: Graph) -> Iterator[list[int]]:
    nodes = graph.nodes
    n = len(nodes)
    if graph.family == "mesh":
        for d, size in enumerate(graph.params["dims"]):
            yield [1 if node.coords is not None and node.coords[d] < size // 2 else 0
                   for node in nodes]
    elif graph.family == "metagraph":
        # Whole groups on each side (group 0 fixed on side 1); with odd L the
        # last group is split and its nodes placed by _balance.
        L = graph.params["groups"]
        pool = range(1, L) if L % 2 == 0 else range(1, L - 1)
        take = L // 2 - 1
        combos: Iterable[tuple[int, ...]]
        if comb(len(pool), take) > 5000:
            combos = [tuple(pool)[:take]]
        else:
            combos = itertools.combinations(pool, take)
        for combo in combos:
            chosen = {0, *combo}
            yield [1 if node.group in chosen else 0 for node in nodes]
    yield [1 if i < n // 2 else 0 for i in range(n)]


Tables = tuple[list[int], list[int]]


def _minplus(a: list[int], b: list[int]) -> list[int]:
    """out[k] = min over i + j = k of a[i] + b[j]."""
    m = len(b)
    out = [a[0] + x for x in b] + [x + b[-1] for x in a[1:]]
    for i in range(1, len(a)):
        ai = a[i]
        out[i:i + m] = map(min, out[i:i + m], [ai + x for x in b])
    return out


def _cut_tables(sw: Switch, memo: dict[tuple[object, ...], tuple[int, Tables]]
                ) -> tuple[int, Tables]:
    """Least capacity a cut severs inside the subtree of sw (the downlinks of its
    nodes and the uplinks of the switches below it) to put exactly k of its nodes
    on side S: tables[s][k] with sw itself on side s (0: T, 1: S). Subtrees of
    the same shape are computed once; returns (shape id, tables)."""
    kids = [(_cut_tables(c, memo), c.uplink_mbit or 0) for c in sw.children]
    n, down = len(sw.nodes), sw.downlink_mbit or 0
    key = (n, down, tuple((shape, up) for (shape, _t), up in kids))
    if key in memo:
        return memo[key]
    on_t = [k * down for k in range(n + 1)]          # its nodes in S cross to sw on T
    on_s = [(n - k) * down for k in range(n + 1)]
    for (_shape, (c_t, c_s)), up in kids:
        # a child on the other side of sw than itself severs its uplink
        on_t = _minplus(on_t, [min(t, s + up) for t, s in zip(c_t, c_s)])
        on_s = _minplus(on_s, [min(s, t + up) for t, s in zip(c_t, c_s)])
    memo[key] = (len(memo), (on_t, on_s))
    return memo[key]


def tree_crossing(root: Switch) -> int:
    """Exact worst bisection of a tree of switches: the least capacity whose
    removal separates floor(N/2) of its N nodes from the others, each switch
    on whichever side costs less (dynamic programming over the tree)."""
    _shape, (t0, t1) = _cut_tables(root, {})
    half = _below(root) // 2
    return min(t0[half], t1[half])


def _below(sw: Switch) -> int:
    return len(sw.nodes) + sum(_below(c) for c in sw.children)


def level_loads(graph: Graph) -> list[LevelLoad]:
    """Oversubscription of each level's uplinks: what the nodes below one uplink
    can offer at their downlink rate over what the uplink carries (the worst
    switch of the level)."""
    out: list[LevelLoad] = []
    down = graph.params["downlink_mbit"]
    for level in range(1, graph.params["levels"]):
        tier = [sw for sw in graph.switches if sw.level == level]
        loads = [(_below(sw) * down / (sw.uplink_mbit or 1), _below(sw), sw) for sw in tier]
        ratio, below, sw = max(loads, key=lambda t: t[0])
        out.append({"level": level, "switches": len(tier), "nodes_below": below,
                    "offered_mbit": below * down, "uplink_mbit": sw.uplink_mbit or 0,
                    "ratio": round(ratio, 3)})
    return out


def bisection(graph: Graph) -> Bisection:
    n = len(graph.nodes)
    links = _links(graph)
    p = graph.params
    if graph.family == "metagraph":
        link = p["p2p_rate_mbit"]           # the paper counts bisection in p2p links
    elif graph.family == "tree":
        link = p["downlink_mbit"]
    else:
        rates = sorted(i.rate_mbit for node in graph.nodes for i in node.interfaces
                       if i.kind == "ethernet")
        link = rates[len(rates) // 2]
    method = "exhaustive"
    if graph.family == "tree":
        crossing = tree_crossing(graph.switches[0])
        method = "exact over the switch tree"
    elif n <= EXHAUSTIVE_UP_TO:
        # node 0 on side 1 with every choice of n // 2 - 1 others
        crossing = min(_crossing([1 if i == 0 or i in combo else 0 for i in range(n)], links)
                       for combo in itertools.combinations(range(1, n), max(n // 2 - 1, 0)))
    else:
        method = "structure-aligned cuts"
        crossing = min(_balance(list(s), links) for s in _candidates(graph))
    out: Bisection = {"crossing_mbit": crossing, "per_node_mbit": round(crossing / n, 3),
                      "link_mbit": link, "fraction_of_link": round(crossing / n / link, 4),
                      "method": method}
    if graph.family == "metagraph":
        L, C = p["groups"], p["p2p_per_node"]
        out["paper_closed_form"] = round((C / 4) * (L / (L - 1)), 4)
    if graph.family == "tree":
        # SC98's u/P: what one node gets through the top switch when every node
        # under a root port talks across it (a root port with no live node below
        # it, all of them down, carries nothing).
        out["uplink_per_node_mbit"] = round(min(((c.uplink_mbit or 0) / _below(c)
                                                 for c in graph.switches[0].children if _below(c)),
                                                default=0.0), 3)
        out["oversubscription"] = max(load["ratio"] for load in level_loads(graph))
    return out


RESILIENCE_UP_TO = 1024


class Resilience(TypedDict, total=False):
    """How many unordered pairs of other nodes each node's death cuts (s -> t or t -> s)."""

    computed: bool
    reason: str                         # not computed: why
    single_path: dict[str, int]         # node -> pairs cut over the preferred branch alone
    failover: dict[str, int]            # node -> pairs cut whichever branch a flow takes
    failover_at_risk: dict[str, int]    # node -> pairs cut on some branch (the flow hash decides)
    max: dict[str, int]                 # {"single_path": .., "failover": .., "failover_at_risk": ..}
    mean: dict[str, float]


class _Towards(NamedTuple):
    """Every node's next hops towards one destination t, as trees rooted at t."""

    first: list[int]                    # node -> its preferred next hop (t itself at the end)
    dom: list[int]                      # node -> the nearest node on every branch from it
    at_risk: dict[int, int]             # v -> bit mask of the nodes a branch of which v's death cuts


_CUT = -2          # _Towards.first of a node with no route to the destination


def _towards(proof: Proof, addr: int, t: int, n: int, multipath: bool = True) -> _Towards:
    """The preferred next hops towards node t, and the immediate dominators of
    the branch DAG (every node lies on each of its branches up to t: nearest
    common node of the branches from its next hops, by depth in that tree).
    A node with no way to t (tables of separate components) gets _CUT."""
    hops: list[tuple[int, ...]] = []
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
            while d != y:
                if depth[d] >= depth[y]:
                    d = dom[d]
                else:
                    y = dom[y]
        dom[x], depth[x] = d, depth[d] + 1
    return _Towards([h[0] if length[i] >= 0 else _CUT for i, h in enumerate(hops)], dom,
                    _at_risk(hops, length, t) if multipath else {})


def _at_risk(hops: list[tuple[int, ...]], length: list[int], t: int) -> dict[int, int]:
    """{v: bit mask of the nodes from which some branch towards t is cut by v's death}.

    The kernel skips a dead next hop (its neighbour entry failed), not a dead node
    further on: a packet is lost where a node's only next hops are the dead one.
    Those nodes, and every node with a branch through one of them, are at risk
    (whether a flow is lost depends on the branch its hash picks)."""
    reach = [0] * len(hops)              # node -> mask of the nodes with a branch through it
    for x in sorted((i for i in range(len(hops)) if length[i] > 0), key=lambda i: -length[i]):
        reach[x] |= 1 << x
        for y in hops[x]:
            reach[y] |= reach[x]
    out: dict[int, int] = {}
    for x, h in enumerate(hops):
        if length[x] > 0 and h[0] != t and len(set(h)) == 1:
            out[h[0]] = out.get(h[0], 0) | reach[x]
    return out


def _lengths(hops: list[tuple[int, ...]], t: int) -> list[int]:
    """Hops from every node to t along its first next hops; -1 where there is none."""
    n = len(hops)
    length = [-2] * n          # -2: not known yet
    length[t] = 0
    for i in range(n):
        chain: list[int] = []
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


def _on_way(up: list[int], s: int, t: int) -> set[int]:
    """The nodes strictly between s and t following up from s."""
    out = set()
    x = up[s]
    while x != t:
        out.add(x)
        x = up[x]
    return out


def resilience(graph: Graph, proof: Proof, force: bool = False) -> Resilience:
    """For every node v, the unordered pairs {s, t} of other nodes that v's
    death cuts: single_path when v lies on the preferred branch s -> t or
    t -> s (the routes of failover off); failover when v lies on every branch
    of one direction (cut whichever branch the flow takes); failover_at_risk
    when a branch of one direction reaches a node whose only next hop is v (cut
    if the flow's hash picks that branch). Above RESILIENCE_UP_TO nodes only when
    forced: it looks up every node's route to every node (n^2 lookups) and walks
    every pair."""
    n = len(graph.nodes)
    if n > RESILIENCE_UP_TO and not force:
        return {"computed": False,
                "reason": "%d nodes, more than %d: `beonet metrics --resilience` computes it"
                          % (n, RESILIENCE_UP_TO)}
    multipath = any(r.alt_via for node in graph.nodes for r in node.routes)
    trees = [_towards(proof, node.address, node.index, n, multipath) for node in graph.nodes]
    single, failover = [0] * n, [0] * n
    for s in range(n):
        for t in range(s + 1, n):
            if trees[t].first[s] == _CUT or trees[s].first[t] == _CUT:
                continue                # already cut off (compiled with nodes down)
            for v in _on_way(trees[t].first, s, t) | _on_way(trees[s].first, t, s):
                single[v] += 1
            for v in _on_way(trees[t].dom, s, t) | _on_way(trees[s].dom, t, s):
                failover[v] += 1
    # one branch per pair: at risk is on the way
    risk = _pairs_at_risk(trees, n) if multipath else list(single)
    names = [node.name for node in graph.nodes]
    counts = {"single_path": single, "failover": failover, "failover_at_risk": risk}
    return {"computed": True, "single_path": dict(zip(names, single)),
            "failover": dict(zip(names, failover)), "failover_at_risk": dict(zip(names, risk)),
            "max": {k: max(v, default=0) for k, v in counts.items()},
            "mean": {k: round(statistics.fmean(v), 3) if n else 0.0 for k, v in counts.items()}}


def _pairs_at_risk(trees: list[_Towards], n: int) -> list[int]:
    """Per node v: unordered pairs {s, t} of other nodes with s -> t or t -> s at risk."""
    pairs: list[set[tuple[int, int]]] = [set() for _node in range(n)]
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


def metrics(graph: Graph, proof: Proof, force_resilience: bool = False) -> Metrics:
    routes = [len(n.routes) for n in graph.nodes]
    # load over the preferred branches (those of failover off): gateways of
    # other branches only add nodes with no load
    fwd = [proof.forwarded[n.index] for n in graph.nodes if proof.forwarded[n.index]]
    out: Metrics = {
        "nodes": len(graph.nodes),
        "segments": sum(1 for s in graph.segments if s.kind == "lan"),
        "links": sum(1 for s in graph.segments if s.kind == "p2p"),
        "channels": sum(1 for s in graph.segments if s.kind == "channel"),
        "pairs": proof.pairs,
        "diameter": max(proof.hops) if proof.hops else 0,
        "hops": {str(k): proof.hops[k] for k in sorted(proof.hops)},
        "routes_per_node": {"max": max(routes), "mean": round(statistics.fmean(routes), 3),
                            "total": sum(routes)},
        "forwarding_nodes": sum(1 for n in graph.nodes if n.forwarding),
        "gateway_load": {"max": max(fwd) if fwd else 0,
                         "mean": round(statistics.fmean(fwd), 3) if fwd else 0.0},
        "bisection": bisection(graph),
        "resilience": resilience(graph, proof, force_resilience),
    }
    if graph.family == "tree":
        out["oversubscription"] = level_loads(graph)
    if graph.family == "metagraph":
        p = graph.params
        out["metagraph"] = {"links_per_group_pair": p["links_per_group_pair"],
                            "uneven_pairs": p["uneven_pairs"], "unused_ports": p["unused_ports"],
                            "weights": p["weights"]}
    if graph.latency is not None:
        out["latency"] = latency.metrics(graph, proof)
    if graph.notes:
        out["notes"] = list(graph.notes)
    return out
