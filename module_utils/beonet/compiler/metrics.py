"""Stage 6: metrics of the compiled network.

Bisection follows the papers' convention: the capacity across the worst
bisection of the nodes divided by the number of nodes. Capacity across a cut
(partition.py): a switched LAN or channel split a/b carries min(a, b) links, a
point-to-point link carries one; a tree's switches carry what their uplinks
allow. The worst bisection is exact for trees and up to 16 nodes; above, it is
the least of the structure-aligned cuts (whole groups, mesh halves: the papers'
cuts; SC98's closed form (C/4)(L/(L-1)) of one link for a meta-graph with even
L counts whole groups) and of a Fiduccia-Mattheyses local search, each reported
with its label. Splitting groups is often cheaper than the papers' cut: a
group's switch split a/b carries only min(a, b).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter, itemgetter

from . import failures as failures_
from . import family, latency
from .model import ON_LINK, Graph, Hop, RouteTable, Switch
from .partition import Link, balance, crossing, search
from .prove import Proof, Signature, class_entries, destination_classes, host_route_holders, upstream
from .records import NamedTuple, cast, shape_types
from .schema import MAX_NODES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .metricshape import Bisection, LevelLoad, Metrics, Resilience, _Cut

__getattr__ = shape_types(__name__, "beonet.compiler.metricshape")


def _mean(values: Sequence[float]) -> float:
    """statistics.fmean of a non-empty sequence, without importing statistics."""
    return math.fsum(values) / len(values)


EXHAUSTIVE_UP_TO = 16
# Gain evaluations (about 7 microseconds each) the bisection's local search may take in a
# compile: every start up to some hundreds of nodes, a pass or two of the largest (0.3 s).
BISECTION_EVALUATIONS = 40_000


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


def _candidates(graph: Graph) -> Iterator[list[int]]:
    """The family's structure-aligned cuts (whole groups, mesh halves), then the
    first half of the nodes against the rest."""
    cuts = family.of(graph.family).cuts
    if cuts is not None:
        yield from cuts(graph)
    n = len(graph.nodes)
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
    half = nodes_below(root) // 2
    return min(t0[half], t1[half])


def nodes_below(sw: Switch) -> int:
    return len(sw.nodes) + sum(nodes_below(c) for c in sw.children)


def level_loads(graph: Graph) -> list[LevelLoad]:
    """Oversubscription of each level's uplinks: what the nodes below one uplink
    can offer at their downlink rate over what the uplink carries (the worst
    switch of the level)."""
    out: list[LevelLoad] = []
    down = graph.params["downlink_mbit"]
    for level in range(1, graph.params["levels"]):
        tier = [sw for sw in graph.switches if sw.level == level]
        loads = [(nodes_below(sw) * down / (sw.uplink_mbit or 1), nodes_below(sw), sw) for sw in tier]
        ratio, below, sw = max(loads, key=lambda t: t[0])
        out.append({"level": level, "switches": len(tier), "nodes_below": below,
                    "offered_mbit": below * down, "uplink_mbit": sw.uplink_mbit or 0,
                    "ratio": round(ratio, 3)})
    return out


def _worst_cut(graph: Graph, links: list[Link], budget: int) -> _Cut:
    """The least crossing of a balanced cut: exact for a tree of switches (dynamic
    programming) and up to EXHAUSTIVE_UP_TO nodes (every cut); above, the least of the
    structure-aligned cuts (the papers' family: whole groups, mesh halves) and of local
    search from them and from random cuts (partition.search): a cut found, so an upper
    bound of the true figure."""
    n = len(graph.nodes)
    exact = family.of(graph.family).exact_cut
    if exact is not None:
        crossing_mbit, method = exact(graph)
        return {"crossing_mbit": crossing_mbit, "method": method}
    if n <= EXHAUSTIVE_UP_TO:
        # node 0 on side 1 with every choice of n // 2 - 1 others
        least = min(crossing([1 if i == 0 or i in combo else 0 for i in range(n)], links)
                    for combo in itertools.combinations(range(1, n), max(n // 2 - 1, 0)))
        return {"crossing_mbit": least, "method": "exhaustive"}
    starts = [list(s) for s in _candidates(graph)]
    aligned = min(balance(s, links) for s in starts)
    found = search(starts, links, n, budget)
    return {"crossing_mbit": min(aligned, found.crossing),
            "method": "structure-aligned cuts and local search: an upper bound",
            "structure_aligned_mbit": aligned,
            "search": {"crossing_mbit": found.crossing, "method": "Fiduccia-Mattheyses",
                       "starts": found.starts, "passes": found.passes, "evaluations": found.evaluations,
                       "budget_spent": found.budget_spent}}


def bisection(graph: Graph, budget: int = BISECTION_EVALUATIONS) -> Bisection:
    n = len(graph.nodes)
    links = _links(graph)
    fam = family.of(graph.family)
    if fam.bisection_link is not None:
        link = fam.bisection_link(graph)
    else:
        rates = sorted(i.rate_mbit for node in graph.nodes for i in node.interfaces
                       if i.kind == "ethernet")
        link = rates[len(rates) // 2]
    found = _worst_cut(graph, links, budget)
    least = found["crossing_mbit"]
    out: Bisection = {"crossing_mbit": least, "per_node_mbit": round(least / n, 3),
                      "link_mbit": link, "fraction_of_link": round(least / n / link, 4),
                      "method": found["method"]}
    if "search" in found:
        out["structure_aligned_mbit"] = found["structure_aligned_mbit"]
        out["search"] = found["search"]
    if fam.bisection_extras is not None:
        out.update(cast("Bisection", fam.bisection_extras(graph)))
    return out


# Every size the compiler accepts: the figures cost about O(nodes x classes), like the
# proof; what bounds them is RESILIENCE_STEPS.
RESILIENCE_UP_TO = MAX_NODES
# Steps (one to three microseconds each) the figures may take in a compile: four nodes'
# lookups towards a class, a key (two with multipath routes), a node on a key's way, a
# source whose way a host route changes. 600,000 for a 10x10x10 mesh with failover
# routes (1 s), 410,000 for the 8,256-node meta-graph (0.9 s). Where the routes towards
# a class differ from node to node they grow as nodes x classes x hops: a 16x16x16 mesh
# with failover routes takes 6.4 million (14 s), and the figures are left out, said why,
# unless forced (beonet metrics --resilience).
RESILIENCE_STEPS = 1_000_000
# Host routes per pair of nodes above which every pair is walked (_pairwise): corrections
# would cost more (failover host routes on clusters of up to route.HOST_FAILOVER_MAX nodes).
PAIRWISE_HOST_ROUTES = 0.5


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
    """The nodes strictly between s and t following up from s (those before it
    loops: only in tables no proof passes, for a pair without a way back)."""
    out = set()
    x = up[s]
    for _hop in range(len(up)):
        if x == t:
            break
        out.add(x)
        x = up[x]
    return out


# -- resilience by classes of destinations ------------------------------------------
#
# Towards the destinations of one class (prove.destination_classes: the same
# prefixes match their addresses everywhere) every node takes the same entry,
# host routes aside. So each class gets one template: the branch DAG towards a
# virtual destination R that every on-link entry reaches, and where each
# distinct entry (a key: next hop and further next hops) leads: the nodes on
# the way over the first next hops, the nodes on every branch (dominators) and
# the nodes v whose death puts some branch at risk. A member t of the class is
# on-link to itself, so it is R's last hop: towards t a node's ways are the
# template's with t dropped. For every node v and pair of classes (G, G1), the
# counts n[v, G, G1] = how many nodes of G1 have v on their way towards G give
# per v the ordered pairs through v (times the members of G that reach G1
# back) and the pairs through v both ways (n[v, G, G1] x n[v, G1, G]): the
# unordered pairs cut are the first minus half the second. That costs
# O(nodes x classes) lookups, like the proof, and a few steps per distinct
# (key, class of the source) and node on its way: few in a meta-graph, one
# per node and class where every node has a next hop of its own (a mesh). A
# destination t with host routes differs only for the sources upstream of
# their holders: those pairs are corrected (by t and class of the source, the
# way back being the same), walking t's own tables there; where host routes
# are everywhere every pair is walked instead (_pairwise). A destination where
# the template cannot be trusted (branches of unequal length, which a proved
# table never has) is walked whole (_towards).

Key = tuple[int, tuple[int, ...]]           # of a route entry: (next node or ON_LINK, further next hops)
Sources = Counter[tuple[int, tuple[int, ...], int]]     # (next hop, further ones, class) -> nodes
_KEY: Callable[[Hop], Key] = itemgetter(0, 2)
_NEXT: Callable[[Hop], int] = itemgetter(0)
_ALT: Callable[[Hop], tuple[int, ...]] = itemgetter(2)
_ROUTES, _ALT_VIA = attrgetter("routes"), attrgetter("alt_via")
_NO_ROUTE: Hop = (_CUT, 0, ())               # the entry of a table with no route to a class


class _Way(NamedTuple):
    """Where a node's next hops lead towards a destination (the node itself not listed)."""

    length: int                         # hops over the first next hops; -1: no way there
    first: tuple[int, ...]              # the nodes on the way over the first next hops, nearest first
    dom: tuple[int, ...]                # the nodes on every branch, nearest first
    risk: frozenset[int]                # v: some branch reaches a node whose only next hop is v


_NOWHERE = _Way(-1, (), (), frozenset())
_THERE = _Way(1, (), (), frozenset())        # on-link: the destination is the next hop


class _TooCostly(Exception):
    """The steps the figures take, as projected so far, pass RESILIENCE_STEPS."""

    def __init__(self, steps: int) -> None:
        super().__init__(steps)
        self.steps = steps


class _Budget:
    """Steps spent so far against RESILIENCE_STEPS (no limit when forced)."""

    def __init__(self, force: bool) -> None:
        self.limit = None if force else RESILIENCE_STEPS
        self.spent = 0

    def spend(self, steps: int, done: int = 1, parts: int = 1) -> None:
        """Add steps; _TooCostly when the steps so far, times parts / done (the
        parts of the work done so far), pass the limit."""
        self.spent += steps
        if self.limit is not None and self.spent * parts > self.limit * done:
            raise _TooCostly(self.spent * parts // done)


def _step(hops: tuple[int, ...], root: int, way: Callable[[int], _Way], multipath: bool) -> _Way:
    """A node's way from its next hops' (root: the destination, or R), as
    _towards and _at_risk find it: the nearest common node of the branches;
    at risk from its only next hop when it has one, and from what its next hops are."""
    h0 = hops[0]
    single = len(hops) == 1 or len(set(hops)) == 1
    if h0 == root and single:
        return _THERE
    w0 = _THERE if h0 == root else way(h0)
    if w0.length < 0:
        return _NOWHERE
    first = () if h0 == root else (h0, *w0.first)
    if not multipath:
        return _Way(w0.length + 1, first, first, w0.risk)
    if single:
        return _Way(w0.length + 1, first, (h0, *w0.dom), w0.risk | {h0})
    ways = [_THERE if h == root else way(h) for h in hops]
    dom = () if h0 == root else (h0, *w0.dom)
    for h, w in zip(hops[1:], ways[1:]):
        tail = () if h == root else (h, *w.dom)
        k = 0
        while k < len(dom) and k < len(tail) and dom[-1 - k] == tail[-1 - k]:
            k += 1
        dom = dom[len(dom) - k:]
    return _Way(w0.length + 1, first, dom, frozenset().union(*(w.risk for w in ways)))


class _Template:
    """Every node's entry towards one class of destinations, and where it leads."""

    __slots__ = ("members", "entries", "multipath", "passed", "exit_", "mixed", "sources", "rev",
                 "trusted")

    members: list[int]
    entries: list[Hop]                  # node -> its entry towards the class (_NO_ROUTE: none)
    multipath: bool
    passed: dict[int, _Way]         # the nodes on some branch of some key
    exit_: dict[int, int]           # node of passed -> its first hops' exit
    mixed: dict[int, list[Key]]     # exit -> keys whose branches end
    #   there and at another exit (towards that exit they differ in length: host routes settle it)
    sources: Counter[Key]           # mixed key -> nodes that take it
    rev: dict[int, list[int]]       # node -> nodes with it as a next hop
    trusted: bool                   # every branch of every key as long as its first one

    def __init__(self, members: list[int], entries: list[Hop], multipath: bool,
                 passed: dict[int, _Way] | None = None, exit_: dict[int, int] | None = None,
                 mixed: dict[int, list[Key]] | None = None, sources: Counter[Key] | None = None,
                 rev: dict[int, list[int]] | None = None, trusted: bool = True) -> None:
        self.members = members
        self.entries = entries
        self.multipath = multipath
        self.passed = {} if passed is None else passed
        self.exit_ = {} if exit_ is None else exit_
        self.mixed = {} if mixed is None else mixed
        self.sources = Counter() if sources is None else sources
        self.rev = {} if rev is None else rev
        self.trusted = trusted

    def way(self, x: int) -> _Way:
        w = self.passed.get(x)
        return w if w is not None else self.key_way(self.entries[x][0], self.entries[x][2])

    def key_way(self, h: int, alt: tuple[int, ...]) -> _Way:
        if h == ON_LINK:
            return _THERE
        if h < 0 or not self.trusted:
            return _NOWHERE
        return _step((h, *alt), ON_LINK, self.passed.__getitem__, self.multipath)

    def reaches(self, x: int) -> bool:
        h = self.entries[x][0]
        return h == ON_LINK or h >= 0 and self.trusted and self.passed[h].length >= 0


def _template(tables: list[RouteTable], sig: Signature, members: list[int], class_of: list[int],
              cache: dict[int, list[dict[int, Hop]]], multipath: bool) -> tuple[_Template, Sources]:
    """The template of one class, and how many nodes of each class take each key."""
    found = class_entries(tables, sig, cache)
    entries = cast("list[Hop]", found) if None not in found else \
        [_NO_ROUTE if e is None else e for e in found]
    by: Sources = Counter(zip(map(_NEXT, entries), map(_ALT, entries), class_of))
    keys = {(h, alt) for h, alt, _g in by}
    tm = _Template(members, entries, multipath)
    length = _passed_lengths(_passed(keys, entries), entries)
    if any(alt and length.get(h, -1) >= 0 and any(length.get(a, -1) != length[h] for a in alt)
           for h, alt in keys):
        tm.trusted = False
        return tm, by
    for x in sorted(length, key=length.__getitem__):
        e = entries[x]
        tm.passed[x] = _NOWHERE if length[x] < 0 else \
            _step((e[0], *e[2]), ON_LINK, tm.passed.__getitem__, multipath)
        if length[x] > 0:
            tm.exit_[x] = x if e[0] == ON_LINK else tm.exit_[e[0]]
    for h, alt in keys if multipath else ():
        ends = {tm.exit_[x] for x in (h, *alt)} if alt and length.get(h, -1) >= 0 else ()
        for end in ends if len(ends) > 1 else ():
            tm.mixed.setdefault(end, []).append((h, alt))
    return tm, by


def _passed(keys: set[Key], entries: list[Hop]) -> set[int]:
    """The nodes on some branch of some of keys."""
    todo = [h for k in keys for h in (k[0], *k[1]) if h >= 0]
    seen = set(todo)
    while todo:
        e = entries[todo.pop()]
        for h in (e[0], *e[2]):
            if h >= 0 and h not in seen:
                seen.add(h)
                todo.append(h)
    return seen


def _passed_lengths(nodes: set[int], entries: list[Hop]) -> dict[int, int]:
    """Hops to R over the first next hops from each of nodes (whose next hops
    are all in nodes); -1 where they end without a route or loop."""
    length: dict[int, int] = {}
    for x in nodes:
        chain: list[int] = []
        on: set[int] = set()
        cur = x
        while cur >= 0 and cur not in length and cur not in on:
            chain.append(cur)
            on.add(cur)
            cur = entries[cur][0]
        known = 0 if cur == ON_LINK else length.get(cur, -1)
        for c in reversed(chain):
            known = known + 1 if known >= 0 else -1
            length[c] = known
    return length


def _tally(tm: _Template, by: Sources, g: int, size: int, counts: list[dict[int, int]],
           reach: dict[int, int]) -> int:
    """Add the sources of template g to counts (single path, and with multipath
    routes failover and at risk), keyed (v, g, class of the source) as
    (v * size + g) * size + class; reach[class * size + g]: the nodes of the
    class with a way to g. Returns the steps (see RESILIENCE_STEPS)."""
    square, base = size * size, g * size
    mixed = {k for keys in tm.mixed.values() for k in keys}
    ways: dict[Key, _Way] = {}
    steps = len(tm.entries) // 4 + len(by) * (2 if tm.multipath else 1)
    for (h, alt, g1), c in by.items():
        w = ways.get((h, alt))
        if w is None:
            w = ways[h, alt] = tm.key_way(h, alt)
        if w.length < 0:
            continue
        at = g1 * size + g
        reach[at] = reach.get(at, 0) + c
        if mixed and (h, alt) in mixed:
            tm.sources[h, alt] += c
        at = base + g1
        for out, on in zip(counts, w[1:]):
            steps += len(on)
            get = out.get
            for v in on:
                key = v * square + at
                out[key] = get(key, 0) + c
    return steps


def _union(counts: dict[int, int], reach: dict[int, int], templates: list[_Template],
           class_of: list[int], n: int) -> list[int]:
    """Per node v: unordered pairs {s, t} of others with v on the way s -> t or
    t -> s, both ways having a route, from counts (see above)."""
    size = len(templates)
    square = size * size
    members = [len(tm.members) for tm in templates]
    ordered, both = [0] * n, [0] * n
    get = counts.get
    for key, c in counts.items():
        v, at = divmod(key, square)
        g, g1 = divmod(at, size)
        back = reach.get(at, 0)                 # members t of g with a way to s (of g1)
        if class_of[v] == g and (back == members[g] or templates[g1].reaches(v)):
            back -= 1                           # t = v
        if g == g1:
            back -= 1                           # t = s
            both[v] -= c
        ordered[v] += c * back
        other = get(key - at + g1 * size + g)
        if other:
            both[v] += c * other
    return [o - b // 2 for o, b in zip(ordered, both)]


def _local(tm: _Template, t: int, ups: set[int], host: dict[int, Hop],
           multipath: bool) -> dict[int, _Way] | None:
    """The ways of the nodes of ups towards member t over their own tables (host
    routes too, from host); the other nodes lead where the template does. None
    when some branch is longer or shorter than the first (not from a proof)."""
    local: dict[int, _Way] = {t: _Way(0, (), (), frozenset())}
    cut: dict[int, _Way] = {}

    def way(h: int) -> _Way:
        if h in local:
            return local[h]
        if h not in cut:
            w = tm.way(h)
            ends = w.length >= 0 and w.first[-1:] == (t,)
            cut[h] = w if not ends else _Way(w.length - 1, w.first[:-1],
                                             w.dom[:-1] if w.dom[-1:] == (t,) else w.dom, w.risk)
        return cut[h]

    hops = {x: _hops(host.get(x, tm.entries[x]), t) for x in ups if x != t}
    length = _local_lengths(hops, way)
    for x in sorted((x for x in hops if length[x] > 0), key=length.__getitem__):
        up = hops[x]
        for h in up[1:] if len(up) > 1 else ():     # the first is one hop nearer by its length
            if (length[h] if h in hops else way(h).length) != length[x] - 1:
                return None
        local[x] = _step(up, t, way, multipath)
    del local[t]
    return {x: local.get(x, _NOWHERE) for x in hops}


def _hops(entry: Hop, t: int) -> tuple[int, ...]:
    return (t,) if entry[0] == ON_LINK else () if entry[0] == _CUT else (entry[0], *entry[2])


def _local_lengths(hops: dict[int, tuple[int, ...]], way: Callable[[int], _Way]) -> dict[int, int]:
    """Hops to the destination over the first next hops from each node of hops;
    the others' from way (the destination's own is 0)."""
    length: dict[int, int] = {}
    for x in hops:
        chain: list[int] = []
        on: set[int] = set()
        cur = x
        while cur in hops and cur not in length and cur not in on:
            chain.append(cur)
            on.add(cur)
            cur = hops[cur][0] if hops[cur] else _CUT
        known = length[cur] if cur in length else -1 if cur in on or cur < 0 else way(cur).length
        for c in reversed(chain):
            known = known + 1 if known >= 0 else -1
            length[c] = known
    return length


def _whole(proof: Proof, addr: int, t: int, n: int, multipath: bool) -> dict[int, _Way]:
    """The ways of every node towards t, walking t's tables whole (_towards)."""
    tree = _towards(proof, addr, t, n, multipath)
    risk: dict[int, set[int]] = {}
    for v, mask in tree.at_risk.items():
        mask &= ~(1 << v)
        while mask:
            low = mask & -mask
            mask ^= low
            risk.setdefault(low.bit_length() - 1, set()).add(v)
    out = {}
    for s in range(n):
        if s != t:
            first = tuple(_on_way(tree.first, s, t)) if tree.first[s] != _CUT else ()
            out[s] = _NOWHERE if tree.first[s] == _CUT else _Way(
                1, first, tuple(_on_way(tree.dom, s, t)) if multipath else first,
                frozenset(risk.get(s, ())))
    return out


def _exceptions(graph: Graph, proof: Proof, templates: list[_Template], hosts: dict[int, list[int]],
                multipath: bool, budget: _Budget) -> dict[int, dict[int, _Way]]:
    """t -> {s: way s -> t} where that differs from the template of t's class:
    the sources upstream of t's host routes (hosts: address -> holders), or
    every source where the template cannot be trusted for t."""
    n = len(graph.nodes)
    out: dict[int, dict[int, _Way]] = {}
    for tm in templates:
        for t in tm.members:
            addr = graph.nodes[t].address
            holders = hosts.get(addr, [])
            if not holders and _trusted(tm, t, set()):
                continue
            ups = _upstream(tm, holders)
            budget.spend(4 * len(ups))
            local = _local(tm, t, ups, {x: proof.tables[x].by_len[32][addr] for x in holders},
                           multipath) if _trusted(tm, t, ups) else None
            if local is None:
                budget.spend(4 * n)
            out[t] = _whole(proof, addr, t, n, multipath) if local is None else local
    return out


def _upstream(tm: _Template, holders: list[int]) -> set[int]:
    """The holders and the nodes whose branches pass one of them."""
    if not any(h in tm.passed for h in holders):
        return set(holders)
    if not tm.rev:
        for x, e in enumerate(tm.entries):
            for h in (e[0], *e[2]):
                if h >= 0:
                    tm.rev.setdefault(h, []).append(x)
    return upstream(tm.rev, holders)


def _trusted(tm: _Template, t: int, ups: set[int]) -> bool:
    """Whether towards member t the template holds outside ups: its branches are
    all as long as the first, t is on-link to itself (R's last hop) or passed
    by none, and the keys whose branches end at t and elsewhere are all in ups."""
    if not tm.trusted or (tm.entries[t][0] != ON_LINK and t in tm.passed):
        return False
    mixed = set(tm.mixed.get(t, ()))
    return sum(tm.sources[k] for k in mixed) == sum(1 for x in ups if _KEY(tm.entries[x]) in mixed)


def _correct(pair_counts: list[list[int]], templates: list[_Template], class_of: list[int],
             exceptions: dict[int, dict[int, _Way]]) -> None:
    """Replace, in the counts, the template's ways of the pairs with an exception
    by their real ways: by destination t and class of the sources (the way
    back from t is then the same for all) when only s -> t differs, pair by
    pair when both ways do."""
    known: dict[tuple[int, int], _Way] = {}

    def template(src: int, dst: int) -> _Way:
        """The template's way from src to dst's class."""
        key = (class_of[dst], src)
        if key not in known:
            known[key] = templates[key[0]].way(src)
        return known[key]

    for t, ways in exceptions.items():
        by_class: dict[int, list[int]] = {}
        for s in ways:
            if t not in exceptions.get(s, ()):
                by_class.setdefault(class_of[s], []).append(s)
        for sources in by_class.values():
            back = template(t, sources[0])
            now = _cut(t, back, {s: ways[s] for s in sources}, len(pair_counts))
            was = _cut(t, back, {s: template(s, t) for s in sources}, len(pair_counts))
            _add(pair_counts, now, was)
    for s, t in {(min(s, t), max(s, t)) for t, ways in exceptions.items() for s in ways
                 if t in exceptions.get(s, ())}:
        _swap(pair_counts, s, t, (template(s, t), template(t, s)),
              (exceptions[t][s], exceptions[s][t]))


def _swap(pair_counts: list[list[int]], s: int, t: int, was: tuple[_Way, _Way],
          now: tuple[_Way, _Way]) -> None:
    """One pair {s, t} whose ways (s -> t, t -> s) were was and are now."""
    if was == now:
        return
    for sign, (a, b) in ((-1, was), (1, now)):
        if a.length >= 0 and b.length >= 0:
            for out, x, y in zip(pair_counts, (a.first, a.dom, a.risk), (b.first, b.dom, b.risk)):
                for v in {*x, *y}:
                    out[v] += sign
                if s in x or s in y:
                    out[s] -= sign
                if t in x or t in y:
                    out[t] -= sign


def _cut(t: int, back: _Way, ways: dict[int, _Way], measures: int) -> list[Counter[int]]:
    """Per measure, per node v: the pairs {s, t} for s in ways (its way to t)
    that v lies on one way or the other (back: t's way to every s), of
    those with a way both ways."""
    if back.length < 0:
        return [Counter() for _measure in range(measures)]
    there = {s: w for s, w in ways.items() if w.length >= 0}
    out = []
    for field_ in range(1, measures + 1):
        pick = itemgetter(field_)
        on = Counter(itertools.chain.from_iterable(map(pick, there.values())))
        on.pop(t, None)
        for v in set(pick(back)):
            on[v] = len(there) - (v in there)
        out.append(on)
    return out


def _add(pair_counts: list[list[int]], now: list[Counter[int]], was: list[Counter[int]]) -> None:
    for out, gained, lost in zip(pair_counts, now, was):
        for v, k in gained.items():
            out[v] += k
        for v, k in lost.items():
            out[v] -= k


def _pair_counts(graph: Graph, proof: Proof, multipath: bool, budget: _Budget) -> list[list[int]]:
    """Per node: pairs cut on the single path, and with multipath routes on
    every branch and on some branch (only the first without multipath)."""
    n = len(graph.nodes)
    hosts = host_route_holders(proof.tables)
    if sum(map(len, hosts.values())) > PAIRWISE_HOST_ROUTES * n * (n - 1) / 2:
        budget.spend(2 * n * n)
        return _pairwise(proof, graph, multipath)
    classes = destination_classes([node.address for node in graph.nodes], proof.tables)
    class_of = [0] * n
    for g, (_sig, members) in enumerate(classes):
        for t in members:
            class_of[t] = g
    cache: dict[int, list[dict[int, Hop]]] = {}
    counts: list[dict[int, int]] = [{} for _measure in range(3 if multipath else 1)]
    reach: dict[int, int] = {}
    templates = []
    for g, (sig, members) in enumerate(classes):
        tm, by = _template(proof.tables, sig, members, class_of, cache, multipath)
        budget.spend(_tally(tm, by, g, len(classes), counts, reach), g + 1, len(classes))
        templates.append(tm)
    exceptions = _exceptions(graph, proof, templates, hosts, multipath, budget)
    out = [_union(c, reach, templates, class_of, n) for c in counts]
    _correct(out, templates, class_of, exceptions)
    return out


def _pairwise(proof: Proof, graph: Graph, multipath: bool) -> list[list[int]]:
    """Every destination's tables walked whole and every pair counted: cheaper
    than templates where host routes are everywhere (failover on small clusters)."""
    n = len(graph.nodes)
    ways = [_whole(proof, node.address, node.index, n, multipath) for node in graph.nodes]
    out = [[0] * n for _measure in range(3 if multipath else 1)]
    for t in range(n):
        for s in range(t):
            _swap(out, s, t, (_NOWHERE, _NOWHERE), (ways[t][s], ways[s][t]))
    return out


def resilience(graph: Graph, proof: Proof, force: bool = False) -> Resilience:
    """For every node v, the unordered pairs {s, t} of other nodes that v's
    death cuts: single_path when v lies on the preferred branch s -> t or
    t -> s (the routes of failover off); failover when v lies on every branch
    of one direction (cut whichever branch the flow takes); failover_at_risk
    when a branch of one direction reaches a node whose only next hop is v (cut
    if the flow's hash picks that branch). Pairs without a route both ways
    (compiled with nodes down) count for no node. Computed by classes of
    destinations (see above), unless forced only up to RESILIENCE_UP_TO nodes
    (every size the compiler accepts) and RESILIENCE_STEPS steps (projected
    after each class: the cost stays bounded where routes differ from node to
    node, as in large 3D meshes)."""
    n = len(graph.nodes)
    if graph.engine == "frr":
        return {"computed": False,
                "reason": "routing.engine frr: OSPF routes around a dead node; the single failures "
                          "say which pairs one cuts"}
    if n > RESILIENCE_UP_TO and not force:
        return {"computed": False,
                "reason": "%d nodes, more than %d: `beonet metrics --resilience` computes it"
                          % (n, RESILIENCE_UP_TO)}
    # any route with further next hops (a C loop: a million routes at 8,256 nodes)
    multipath = any(map(_ALT_VIA, itertools.chain.from_iterable(map(_ROUTES, graph.nodes))))
    try:
        counts = _pair_counts(graph, proof, multipath, _Budget(force))
    except _TooCostly as too:
        return {"computed": False,
                "reason": "about %d steps, more than %d: `beonet metrics --resilience` computes it"
                          % (too.steps, RESILIENCE_STEPS)}
    single = counts[0]
    failover, risk = (counts[1], counts[2]) if multipath else (single, single)
    names = [node.name for node in graph.nodes]
    by = {"single_path": single, "failover": failover, "failover_at_risk": risk}
    out: Resilience = {"computed": True, "single_path": dict(zip(names, single)),
                       "failover": dict(zip(names, failover)), "failover_at_risk": dict(zip(names, risk)),
                       "max": {k: max(v, default=0) for k, v in by.items()},
                       "mean": {k: round(_mean(v), 3) if n else 0.0 for k, v in by.items()}}
    if multipath and graph.v6:
        out["ipv6"] = IPV6_FAILOVER
    return out


# What the failover counts mean for IPv6 (measured: docs/failover.md)
IPV6_FAILOVER = ("IPv6: the failover counts hold where the node choosing among next hops does not "
                 "forward IPv6; a node that forwards IPv6 keeps a dead next hop (Linux), so there an "
                 "IPv6 pair is cut as on a single path")


class Effort(NamedTuple):
    """What the metrics may cost beyond their budgets: the resilience table whatever its
    steps; the bisection's local search's gain evaluations (None: the compile's
    BISECTION_EVALUATIONS; 0: until no pass gains)."""

    resilience: bool = False
    bisection_budget: int | None = None

    def evaluations(self) -> int:
        if self.bisection_budget is None:
            return BISECTION_EVALUATIONS
        return self.bisection_budget or UNLIMITED


UNLIMITED = 1 << 62


def metrics(graph: Graph, proof: Proof, effort: Effort | None = None) -> Metrics:
    effort = effort or Effort()
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
        "routes_per_node": {"max": max(routes), "mean": round(_mean(routes), 3),
                            "total": sum(routes)},
        "forwarding_nodes": sum(1 for n in graph.nodes if n.forwarding),
        "gateway_load": {"max": max(fwd) if fwd else 0,
                         "mean": round(_mean(fwd), 3) if fwd else 0.0},
        "bisection": bisection(graph, effort.evaluations()),
        "resilience": resilience(graph, proof, effort.resilience),
    }
    single = out["resilience"].get("single_path")
    out["failures"] = failures_.failures(graph, proof, single, effort.resilience)
    extras = family.of(graph.family).metrics_extras
    if extras is not None:
        out.update(cast("Metrics", extras(graph)))
    if graph.latency is not None:
        out["latency"] = latency.metrics(graph, proof)
    if graph.notes:
        out["notes"] = list(graph.notes)
    return out
