"""Metrics: what every single failure cuts, for a routing daemon and for the static routes.

Three kinds of element fail: a node; a cable (a point-to-point link, or one node's
NIC on a LAN: each attachment of a LAN); a LAN segment (its switch: all its
attachments at once). For each element, unordered pairs of live nodes:

- routed: the pairs the failure disconnects in the graph, what a routing daemon
  (OSPF, say) gives once converged. The graph is bipartite: node vertices, segment
  vertices (a point-to-point link is a 2-member segment, a bond one attachment of its
  segment) and an edge per attachment. A node's failure removes its vertex (pairs of
  the other nodes), a cable's its edge (a link's: its segment vertex), a LAN's its
  segment vertex. One depth-first search finds the articulation points and bridges
  with the sizes of the pieces they separate, counting node vertices only: linear time.
- static: the pairs {s, t} whose preferred branch (failover off) s -> t or t -> s
  crosses the element, plus, for a cable or LAN, every pair of a node whose home NIC
  (the one holding its address) it cuts. They stay cut until the plan is healed. A
  node's figure is resilience's single_path; cables and LANs walk the proof's tables
  for every pair, O(nodes^2 x hops): computed up to STATIC_STEPS steps unless forced
  (beonet metrics --resilience).
"""

from __future__ import annotations

from collections import Counter

from .model import ON_LINK, Graph, Hop, RouteTable
from .prove import Proof
from .records import shape_types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .metricshape import Failures, KindFigures, Static

__getattr__ = shape_types(__name__, "beonet.compiler.metricshape")

# Steps (a few microseconds each) the static figures of cables and LANs may take in a
# compile: a table lookup for each node towards each destination, and each hop of each
# ordered pair's preferred branch (n^2 + the sum of hops over ordered pairs); each step
# carries bit masks of the elements on every branch, as wide as the elements, so the
# cost grows a little faster than the steps. 60,000: the 128-node meta-graph (57,392
# steps, about 0.15 s); above, they are left out, said why, unless forced (beonet
# metrics --resilience): the 380-node meta-graph takes 550,000 steps (about 3 s, more
# than its whole compile); the masks of every pair are held at once (n^2 x 3 integers of
# n + cables + LANs bits: at 1,000 nodes several GB).
STATIC_STEPS = 60_000


class Elements:
    """The graph's routed segments, cables and LANs, by index.

    Element ids share one space: nodes [0, n), cables [n, n + cables), LANs after."""

    def __init__(self, graph: Graph) -> None:
        self.n = len(graph.nodes)
        self.segments = graph.routed_segments()
        self.names = [node.name for node in graph.nodes]
        self.cable_of: dict[tuple[int, int], int] = {}     # (node, segment) -> cable id
        self.lan_of: dict[int, int] = {}                    # segment -> LAN id
        self.edges: list[tuple[int, int]] = []              # (node, segment): attachments
        self.edge_cable: list[int] = []
        cables: list[str] = []
        lans: list[str] = []
        for k, seg in enumerate(self.segments):
            if seg.kind == "p2p":
                cables.append(" <-> ".join("%s:%s" % (m[0].name, m[1].name) for m in seg.members))
            else:
                self.lan_of[k] = 0                                  # its id below
                lans.append(seg.name)
            for node, iface, _host in seg.members:
                if seg.kind != "p2p":
                    cables.append("%s:%s" % (node.name, iface.name))
                self.cable_of[node.index, k] = self.n + len(cables) - 1
                self.edges.append((node.index, k))
                self.edge_cable.append(self.n + len(cables) - 1)
        self.cables = len(cables)
        self.lans = len(lans)
        self.lan_of = {k: self.n + self.cables + i for i, k in enumerate(self.lan_of)}
        self.names += cables + lans
        # one hop x -> y over segment k crosses leave[x, k] | enter[y, k] (and y itself)
        self.leave = {(x, k): 1 << c | (1 << self.lan_of[k] if k in self.lan_of else 0)
                      for (x, k), c in self.cable_of.items()}
        self.enter = {(y, k): 1 << c if k in self.lan_of else 0 for (y, k), c in self.cable_of.items()}
        home = {id(node.primary): node.index for node in graph.nodes}
        self.home = [0] * self.n        # node -> bit mask of its home cable (and LAN) by element id
        for k, seg in enumerate(self.segments):
            for node, iface, _host in seg.members:
                if home.get(id(iface)) == node.index:
                    lan = 1 << self.lan_of[k] if k in self.lan_of else 0
                    self.home[node.index] = 1 << self.cable_of[node.index, k] | lan


def _figures(names: list[str], pairs: list[int]) -> KindFigures:
    worst = max(range(len(pairs)), key=pairs.__getitem__, default=None)
    return {"elements": len(pairs), "cutting": sum(1 for p in pairs if p),
            "worst": None if worst is None else {"name": names[worst], "pairs": pairs[worst]},
            "histogram": {str(k): v for k, v in sorted(Counter(pairs).items())}}


def _kinds(el: Elements, counts: list[int]) -> dict[str, KindFigures]:
    """counts by element id -> figures of nodes, cables and LANs."""
    n, c = el.n, el.n + el.cables
    return {"node": _figures(el.names[:n], counts[:n]), "cable": _figures(el.names[n:c], counts[n:c]),
            "lan": _figures(el.names[c:], counts[c:])}


# --- routed: articulation points and bridges of the bipartite graph ------------------------------

class _Search:
    """An iterative depth-first search over node and segment vertices."""

    def __init__(self, el: Elements) -> None:
        self.size = el.n + len(el.segments)
        self.adj: list[list[tuple[int, int]]] = [[] for _v in range(self.size)]   # (vertex, edge)
        for e, (a, k) in enumerate(el.edges):
            self.adj[a].append((el.n + k, e))
            self.adj[el.n + k].append((a, e))
        self.weight = [1] * el.n + [0] * len(el.segments)
        self.disc = [-1] * self.size
        self.low = [0] * self.size
        self.sub = [0] * self.size                      # node vertices in the DFS subtree
        self.pieces: list[list[int]] = [[] for _v in range(self.size)]   # subtrees cut off
        self.bridge: dict[int, int] = {}                # edge -> node vertices below it
        self.comp = [0] * self.size                     # node vertices of the vertex's component

    def run(self) -> None:
        clock = 0
        for root in range(self.size):
            if self.disc[root] >= 0:
                continue
            seen: list[int] = []
            stack = [(root, -1, 0)]
            self.disc[root] = self.low[root] = clock
            clock += 1
            self.sub[root] = self.weight[root]
            while stack:
                v, via, i = stack[-1]
                if i < len(self.adj[v]):
                    stack[-1] = (v, via, i + 1)
                    w, e = self.adj[v][i]
                    if e == via:
                        continue
                    if self.disc[w] < 0:
                        self.disc[w] = self.low[w] = clock
                        clock += 1
                        self.sub[w] = self.weight[w]
                        stack.append((w, e, 0))
                    elif self.disc[w] < self.low[v]:
                        self.low[v] = self.disc[w]
                    continue
                stack.pop()
                seen.append(v)
                if stack:
                    self._finish(stack[-1][0], v, via)
            for v in seen:
                self.comp[v] = self.sub[root]

    def _finish(self, parent: int, child: int, edge: int) -> None:
        self.sub[parent] += self.sub[child]
        self.low[parent] = min(self.low[parent], self.low[child])
        if self.low[child] >= self.disc[parent]:
            self.pieces[parent].append(self.sub[child])
        if self.low[child] > self.disc[parent]:
            self.bridge[edge] = self.sub[child]

    def cut(self, v: int) -> int:
        """Pairs of the other node vertices that removing vertex v disconnects."""
        left = self.comp[v] - self.weight[v]
        rest = left - sum(self.pieces[v])
        return (left * left - rest * rest - sum(p * p for p in self.pieces[v])) // 2


def routed_counts(el: Elements) -> list[int]:
    """Pairs each element's failure disconnects in the graph, by element id."""
    dfs = _Search(el)
    dfs.run()
    counts = [dfs.cut(v) for v in range(el.n)] + [0] * (el.cables + el.lans)
    for k, seg in enumerate(el.segments):
        if seg.kind == "p2p":
            counts[el.cable_of[seg.members[0][0].index, k]] = dfs.cut(el.n + k)
        else:
            counts[el.lan_of[k]] = dfs.cut(el.n + k)
    for e, (a, k) in enumerate(el.edges):
        if el.segments[k].kind != "p2p" and e in dfs.bridge:
            below = dfs.bridge[e]
            counts[el.edge_cable[e]] = below * (dfs.comp[a] - below)
    return counts


# --- static: the branches of the proof's tables ----------------------------------------------------

def _segment_keys(graph: Graph, el: Elements) -> list[dict[tuple[int, int], tuple[int, ...]]]:
    """Per node: (plen, net) of each table entry -> the segments of its next hops, the
    preferred one first."""
    seg_index = {id(seg): k for k, seg in enumerate(el.segments)}
    of_addr = {a: seg_index[id(seg)] for seg in el.segments for _node, iface, _host in seg.members
               for a in iface.addresses}
    out = []
    for node in graph.nodes:
        keys: dict[tuple[int, int], tuple[int, ...]] = {}
        for iface in node.interfaces:
            if iface.addresses and id(iface.segment) in seg_index:
                keys.setdefault((iface.segment.plen, iface.segment.net), (seg_index[id(iface.segment)],))
        for r in node.routes:
            if r.via in of_addr and (r.plen, r.net) not in keys:
                keys[r.plen, r.net] = tuple(of_addr.get(via, -1) for via, _dev in r.nexthops())
        out.append(keys)
    return out


def _towards(table: RouteTable, addr: int) -> tuple[int, int, Hop] | None:
    """(plen, net, entry) of the longest match for addr."""
    for plen, netmask, bucket in table.order:
        entry = bucket.get(addr & netmask)
        if entry is not None:
            return plen, addr & netmask, entry
    return None


class _Masks:
    """Towards one node t, for every node x: bit masks of the elements (by element id)
    that the branches x -> t cross, t and x themselves left out: the preferred branch
    (`one`), some branch (`some`) and every branch (`every`); -1 where x has no way."""

    def __init__(self, el: Elements, proof: Proof, keys: list[dict[tuple[int, int], tuple[int, ...]]],
                 addr: int, t: int) -> None:
        self.el, self.t = el, t
        self.hops: list[list[tuple[int, int]]] = [self._hops(proof.tables[x], keys[x], addr)
                                                  if x != t else [] for x in range(el.n)]
        self.one, self.some, self.every = [-1] * el.n, [-1] * el.n, [-1] * el.n
        self.one[t] = self.some[t] = self.every[t] = 0
        one, hops = self.one, self.hops
        for x in range(el.n):
            if one[x] != -1 or not hops[x]:
                continue
            if all(k < 0 or one[y] != -1 or not hops[y] for y, k in hops[x]):
                self._set(x)                    # no next hop waits: what _fill would do
            else:
                self._fill(x)

    def _hops(self, table: RouteTable, keys: dict[tuple[int, int], tuple[int, ...]],
              addr: int) -> list[tuple[int, int]]:
        """(next node, segment) of every next hop towards t, the preferred first."""
        found = _towards(table, addr)
        if found is None:
            return []
        plen, net, (hop, _src, alts) = found
        nodes = (self.t if hop == ON_LINK else hop, *alts)
        return list(zip(nodes, keys.get((plen, net), ())))

    def _bits(self, x: int, y: int, k: int) -> int:
        """The elements of one hop x -> y over segment k (y itself unless it is t)."""
        el = self.el
        return el.leave[x, k] | el.enter[y, k] | (1 << y if y != self.t else 0)

    def _fill(self, start: int) -> None:
        """Masks of start and of the nodes its branches pass, nearest t first."""
        stack, state = [start], {start: 0}
        while stack:
            x = stack[-1]
            if self.one[x] != -1 or not self.hops[x]:
                stack.pop()
                continue
            todo = [y for y, k in self.hops[x] if k >= 0 and self.one[y] == -1 and self.hops[y]]
            if todo and state[x] == 0:
                state[x] = 1
                for y in todo:
                    if state.get(y) == 1:       # a loop: the proof has said so; no way here
                        self.hops[y] = []
                    else:
                        state[y] = 0
                        stack.append(y)
                continue
            stack.pop()
            self._set(x)

    def _set(self, x: int) -> None:
        hops = self.hops[x]
        y, k = hops[0]
        if k < 0 or self.one[y] == -1:
            return                              # the preferred branch has no way: cut
        if len(hops) == 1:                      # one next hop: its masks and the hop's
            bits = self._bits(x, y, k)
            self.one[x], self.some[x], self.every[x] = (bits | self.one[y], bits | self.some[y],
                                                        bits | self.every[y])
            return
        ways = [(self._bits(x, y, k), y) for y, k in hops if k >= 0 and self.one[y] != -1]
        self.one[x] = ways[0][0] | self.one[y]
        some, every = 0, -1
        for bits, y in ways:
            some |= bits | self.some[y]
            every &= bits | self.every[y]
        self.some[x], self.every[x] = some, every


class _BitCounts:
    """For each bit position, how many of the masks added have it set. The counts
    are kept bit-sliced (level k holds bit k of every position's count), so adding a
    mask takes a few operations on whole integers, not one per bit it has set."""

    __slots__ = ("levels",)

    def __init__(self) -> None:
        self.levels: list[int] = []

    def add(self, mask: int) -> None:
        levels, k = self.levels, 0
        while mask:                     # a binary counter's carry, every position at once
            if k == len(levels):
                levels.append(mask)
                return
            level = levels[k]
            levels[k] = level ^ mask
            mask &= level
            k += 1

    def counts(self, size: int) -> list[int]:
        out = [0] * size
        for k, level in enumerate(self.levels):
            while level:
                low = level & -level
                out[low.bit_length() - 1] += 1 << k
                level ^= low
        return out


def static_counts(graph: Graph, proof: Proof, el: Elements) -> tuple[list[int], list[int], list[int]]:
    """Pairs each element's failure cuts with the static routes, by element id (nodes
    too: resilience's figures by another way): on the preferred branch (failover off),
    on every branch of one direction (cut for good with failover routes) and on some
    branch (disrupted: lost until the kernel skips the dead next hop, for good where a
    branch has no other way left). A pair whose preferred branch
    has no way either direction is not counted."""
    keys = _segment_keys(graph, el)
    towards = [_Masks(el, proof, keys, node.address, node.index) for node in graph.nodes]
    size = el.n + el.cables + el.lans
    c_one, c_every, c_some = _BitCounts(), _BitCounts(), _BitCounts()
    ones, somes, everys = ([getattr(m, f) for m in towards] for f in ("one", "some", "every"))
    for t in range(el.n):
        one_t, some_t, every_t = ones[t], somes[t], everys[t]
        for s in range(t):
            if one_t[s] == -1 or ones[s][t] == -1:
                continue
            home = el.home[s] | el.home[t]
            # a pair counts for each element of its masks, every within one within some
            some = some_t[s] | somes[s][t] | home
            one = (one_t[s] | ones[s][t] | home) & some
            c_some.add(some)
            c_one.add(one)
            c_every.add((every_t[s] | everys[s][t] | home) & one)
    return c_one.counts(size), c_every.counts(size), c_some.counts(size)


def static_steps(graph: Graph, proof: Proof) -> int:
    """The projected steps of static_counts: a lookup per node and destination, a step
    per hop of each ordered pair's branch."""
    n = len(graph.nodes)
    return n * n + sum(k * pairs for k, pairs in proof.hops.items())


def failures(graph: Graph, proof: Proof, single_path: dict[str, int] | None,
             force: bool = False) -> Failures:
    """The failures section of the metrics (single_path: resilience's, when computed)."""
    el = Elements(graph)
    static: Static = {"computed": False}
    if graph.engine == "frr":
        static["reason"] = "routing.engine frr: no static routes; OSPF's figures are the routed ones"
        return {"routed": _kinds(el, routed_counts(el)), "static": static}
    if single_path is not None:
        static["node"] = _figures(el.names[:el.n], [single_path[v] for v in el.names[:el.n]])
    steps = static_steps(graph, proof)
    if steps > STATIC_STEPS and not force:
        static["reason"] = ("cables and LANs: about %d steps, more than %d: "
                            "`beonet metrics --resilience` computes them" % (steps, STATIC_STEPS))
    else:
        one, every, some = static_counts(graph, proof, el)
        walked = _kinds(el, one)
        static["computed"], static["cable"], static["lan"] = True, walked["cable"], walked["lan"]
        if graph.failover:
            static["failover"], static["disrupted"] = _kinds(el, every), _kinds(el, some)
    return {"routed": _kinds(el, routed_counts(el)), "static": static}
