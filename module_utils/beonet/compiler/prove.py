"""Stage 5: prove the routing tables by walking them.

For every ordered pair (source node, destination node's address) the walk
does a longest-prefix match hop by hop and fails on a missing route, a
gateway that is not on a connected network, a loop, a node that would have
to forward with forwarding off, or a path longer than the shortest one. It
also fails when a node has forwarding on but forwards for no pair. A
multipath route is walked on every branch: each must be as long as the
preferred one (the first next hop), so every branch is a shortest path.

Scaling: destinations whose address matches the same prefix at every node
form one class (a remote group, or one host route), and one walk per class
settles all sources at once, memoising each node's distance to the exit.
The cost is O(nodes x classes) lookups, not O(nodes^2 x hops): the 4,656-node
meta-graph has 97 classes. Shortest-path lengths come from a BFS per source
for generic graphs and from the meta-graph's structure (distance 1, 2 or 3)
for meta-graphs; per-source sums are compared, and since no walk can be
shorter than the shortest path, equal sums mean every path is shortest.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import repeat
from operator import itemgetter

from . import family
from .errors import Problems
from .model import ON_LINK, Graph, Hop, Node, Route, RouteTable, ends_of_shortest, ip_text, mask, net_text
from .records import cast
from .route import owners

TYPE_CHECKING = False

Signature = tuple[tuple[int, int], ...]     # the (plen, net) prefixes matching a class's addresses

if TYPE_CHECKING:
    from typing import TypedDict

    class PathHop(TypedDict):
        """One line of `traceroute -n`: the node answering and the address it answers from."""

        node: str
        address: str


class Proof:
    """What the walk of every ordered pair found, and the tables it walked."""

    __slots__ = ("hops", "forwarded", "pairs", "tables", "owner", "branching")

    hops: Counter[int]              # hop count -> ordered pairs
    forwarded: Counter[int]         # node index -> pairs forwarded
    pairs: int
    tables: list[RouteTable]        # node index -> its checked table
    owner: dict[int, int]           # interface address -> node index
    branching: set[int]             # nodes forwarding on some branch

    def __init__(self, hops: Counter[int] | None = None, forwarded: Counter[int] | None = None,
                 pairs: int = 0, tables: list[RouteTable] | None = None,
                 owner: dict[int, int] | None = None, branching: set[int] | None = None) -> None:
        self.hops = Counter() if hops is None else hops
        self.forwarded = Counter() if forwarded is None else forwarded
        self.pairs = pairs
        self.tables = [] if tables is None else tables
        self.owner = {} if owner is None else owner
        self.branching = set() if branching is None else branching


class _Tally:
    """Running totals over the ordered pairs walked so far."""

    __slots__ = ("sums", "forwarded", "hops", "pairs", "branching")

    sums: list[int]                 # node -> hops to all other nodes
    forwarded: list[int]            # node -> pairs passing through it
    hops: defaultdict[int, int]
    pairs: int
    branching: set[int]             # nodes some pair's branch passes through

    def __init__(self, sums: list[int], forwarded: list[int], hops: defaultdict[int, int] | None = None,
                 pairs: int = 0, branching: set[int] | None = None) -> None:
        self.sums = sums
        self.forwarded = forwarded
        self.hops = defaultdict(int) if hops is None else hops
        self.pairs = pairs
        self.branching = set() if branching is None else branching


class _Class:
    """The walk towards one class of destinations."""

    __slots__ = ("dests", "nxt", "steps", "exit_", "rev", "alt", "mixed")

    dests: list[int]                # node indexes of the class
    nxt: list[int]                  # node -> next node towards the class, ON_LINK at an exit
    steps: list[int]                # node -> hops to its exit
    exit_: list[int]                # node -> the node where the class is on-link
    rev: dict[int, list[int]]       # node -> nodes whose next hop it is (made when needed)
    alt: list[tuple[int, ...]]      # node -> its further next hops
    mixed: dict[int, list[int]]     # dest -> sources whose branches
    #   end at it and elsewhere: unequal, unless host routes settle them

    def __init__(self, dests: list[int], nxt: list[int], steps: list[int], exit_: list[int],
                 rev: dict[int, list[int]], alt: list[tuple[int, ...]] | None = None,
                 mixed: dict[int, list[int]] | None = None) -> None:
        self.dests = dests
        self.nxt = nxt
        self.steps = steps
        self.exit_ = exit_
        self.rev = rev
        self.alt = [] if alt is None else alt
        self.mixed = {} if mixed is None else mixed


def _classes(graph: Graph, tables: list[RouteTable]) -> list[tuple[Signature, list[int]]]:
    """destination_classes of the graph's nodes."""
    return destination_classes([node.address for node in graph.nodes], tables)


def destination_classes(addresses: list[int], tables: list[RouteTable]) -> list[tuple[Signature, list[int]]]:
    """Group destination nodes (by index; addresses[i] is node i's) by the prefixes
    (shorter than /32) that match their address anywhere; host routes are applied
    afterwards as corrections. An address no shorter prefix holds (a loopback)
    is a class of its own, of its /32. Also what the live-state proof groups by."""
    prefixes: defaultdict[int, set[int]] = defaultdict(set)
    for t in tables:
        for plen, bucket in t.by_len.items():
            if plen < 32:
                prefixes[plen].update(bucket)
    lens = sorted(prefixes, reverse=True)
    classes: defaultdict[Signature, list[int]] = defaultdict(list)
    for index, a in enumerate(addresses):
        sig = tuple((plen, a & mask(plen)) for plen in lens if (a & mask(plen)) in prefixes[plen])
        classes[sig or ((32, a),)].append(index)      # a loopback: only /32 routes take it
    return sorted(classes.items())


def checked_tables(graph: Graph, owner: dict[int, int], problems: Problems) -> list[RouteTable]:
    """Route tables with every gateway resolved to its node, checking on the way
    that each gateway (of every branch) sits on the network of its device and
    that the source address is the node's own."""
    tables = []
    for node in graph.nodes:
        t = RouteTable.connected(node)
        dev_net = {i.name: (i.segment.net, mask(i.segment.plen)) for i in node.interfaces
                   if i.addresses}
        mine = {a for i in node.interfaces for a in i.addresses} | {node.address}
        by_len, holder = t.by_len, owner.get
        alts: dict[tuple[tuple[int, ...], tuple[str, ...]], tuple[int, ...]] = {}  # checked ones
        for r in node.routes:
            net = dev_net.get(r.dev)
            via = r.via
            hop = holder(via)
            if net is None or (via & net[1]) != net[0] or hop is None or r.src not in mine:
                _route_problem(node, r, net, owner, problems)
                continue
            alt: tuple[int, ...] = ()
            if r.alt_via:
                key = (r.alt_via, r.alt_dev)
                known = alts.get(key)
                if known is None:
                    before = len(problems.items)
                    known = _alt_hops(node, r, dev_net, owner, problems)
                    if len(problems.items) == before:   # a bad one is reported for every route
                        alts[key] = known
                alt = known
            bucket = by_len.get(r.plen)
            if bucket is None:
                t.add(r.net, r.plen, (hop, r.src, alt))
            else:                               # what t.add does, without the call
                bucket.setdefault(r.net, (hop, r.src, alt))
        tables.append(t)
    return tables


def _alt_hops(node: Node, r: Route, dev_net: dict[str, tuple[int, int]], owner: dict[int, int],
              problems: Problems) -> tuple[int, ...]:
    """The nodes of a route's further next hops, each checked like the first."""
    out = []
    for via, dev in zip(r.alt_via, r.alt_dev):
        net = dev_net.get(dev)
        if net is None or (via & net[1]) != net[0] or via not in owner:
            _route_problem(node, Route(r.net, r.plen, via, dev, r.src), net, owner, problems)
            continue
        out.append(owner[via])
    return tuple(out)


def _route_problem(node: Node, r: Route, net: tuple[int, int] | None, owner: dict[int, int],
                   problems: Problems) -> None:
    where = "nodes.%s.routes" % node.name
    if net is None:
        problems.add(where, "route to %s uses %s, which has no address"
                     % (net_text(r.net, r.plen), r.dev))
    elif (r.via & net[1]) != net[0] or r.via not in owner:
        problems.add(where, "gateway %s for %s is not a neighbour on %s"
                     % (ip_text(r.via), net_text(r.net, r.plen), r.dev))
    else:
        problems.add(where, "src %s of the route to %s is not the node's own"
                     % (ip_text(r.src), net_text(r.net, r.plen)))


class Walker:
    """Hop-by-hop walks through the tables (longest-prefix match at every hop)."""

    def __init__(self, nodes: list[Node], tables: list[RouteTable], problems: Problems) -> None:
        self.nodes = nodes
        self.tables = tables
        self.problems = problems

    def step(self, i: int, addr: int) -> int | None:
        """Next node index from node i towards addr; ON_LINK when addr is on-link."""
        entry = self.tables[i].lookup(addr)
        if entry is None:
            self.problems.add("nodes.%s.routes" % self.nodes[i].name,
                              "no route to %s" % ip_text(addr))
            return None
        return entry[0]

    def path(self, i: int, addr: int, dest: int) -> list[int] | None:
        """Intermediate nodes from i to node dest's address (host routes applied)."""
        out: list[int] = []
        cur = i
        while True:
            nxt = self.step(cur, addr)
            if nxt is None:
                return None
            if nxt == ON_LINK or nxt == dest:
                if cur != i:
                    out.append(cur)
                return out
            if cur != i:
                out.append(cur)
            cur = nxt
            if len(out) > len(self.nodes):
                self.problems.add("nodes.%s.routes" % self.nodes[i].name,
                                  "routing loop towards %s" % ip_text(addr))
                return None


def prove(graph: Graph) -> tuple[Proof | None, Problems]:
    """Walk every ordered pair; the Proof (None when anything failed) and the problems."""
    problems = Problems()
    problems.stage = "prove"
    n = len(graph.nodes)
    owner = owners(graph)
    tables = checked_tables(graph, owner, problems)
    if problems:
        return None, problems
    walker = Walker(graph.nodes, tables, problems)
    hosts = host_route_holders(tables)
    tally = _Tally([0] * n, [0] * n)
    buckets: dict[int, list[dict[int, Hop]]] = {}
    for sig, dests in _classes(graph, tables):
        cls = _walk_class(graph.nodes, tables, sig, dests, problems, buckets)
        if cls is None:
            return None, problems
        if not _branches(graph.nodes, tables, cls, tally, problems):
            return None, problems
        _count_class(cls, tally)
        if sig[0][0] < 32 and not _correct_host_routes(graph.nodes, cls, hosts, walker, tally):
            return None, problems
    proof = Proof(Counter({k: v for k, v in tally.hops.items() if v}),
                  Counter({i: f for i, f in enumerate(tally.forwarded) if f}),
                  tally.pairs, tables, owner, tally.branching)
    _check_forwarding(graph.nodes, proof, problems)
    _check_shortest(graph, tally.sums, problems)
    if graph.v6:
        from . import ipv6
        ipv6.check(graph, problems)
    return (None if problems else proof), problems


def host_route_holders(tables: list[RouteTable]) -> dict[int, list[int]]:
    """Address -> nodes holding a /32 route for it."""
    hosts: defaultdict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(tables):
        for a in t.by_len.get(32, ()):
            hosts[a].append(i)
    return hosts


def _walk_class(nodes: list[Node], tables: list[RouteTable], sig: Signature, dests: list[int],
                problems: Problems, cache: dict[int, list[dict[int, Hop]]]) -> _Class | None:
    """Next hop and distance to the exit of every node towards one class (no
    host routes); None, with the problems added, on a missing route or a loop."""
    rep = nodes[dests[0]]
    entries = class_entries(tables, sig, cache)
    if None in entries:
        for i, entry in enumerate(entries):
            if entry is None:
                problems.add("nodes.%s.routes" % nodes[i].name, "no route to %s (%s)"
                             % (ip_text(rep.address), rep.name))
        return None
    found = cast("list[Hop]", entries)
    cls = exits(nodes, list(map(_NEXT, found)), rep.address, dests, problems)
    if cls is not None:
        cls.alt = list(map(_ALT, found))
    return cls


_NEXT, _ALT = itemgetter(0), itemgetter(2)      # of a Hop: the next node, the further ones


_NONE: dict[int, Hop] = {}


def class_entries(tables: list[RouteTable], sig: Signature,
                  cache: dict[int, list[dict[int, Hop]]]) -> list[Hop | None]:
    """Every table's entry towards one class of destinations (host routes aside):
    the longest of the class's prefixes (all of those that contain its addresses)
    that the table holds; None where it holds none. Each table is looked up in
    the longest prefix's bucket at once, the rest of sig only where that misses."""
    if not sig:
        return [None] * len(tables)
    plen, net = sig[0]
    entries: list[Hop | None] = list(map(dict.get, _buckets(tables, plen, cache), repeat(net)))
    if len(sig) > 1 and None in entries:
        rest = sig[1:]
        entries = [e if e is not None else _longest(t, rest) for e, t in zip(entries, tables)]
    return entries


def _buckets(tables: list[RouteTable], plen: int,
             cache: dict[int, list[dict[int, Hop]]]) -> list[dict[int, Hop]]:
    """Every table's routes of prefix length plen (its dict, or an empty one),
    made once per length for all classes."""
    out = cache.get(plen)
    if out is None:
        out = cache[plen] = [t.by_len.get(plen, _NONE) for t in tables]
    return out


def _longest(table: RouteTable, sig: Signature) -> Hop | None:
    """The entry of the longest of the prefixes of sig that the table holds."""
    by_len = table.by_len
    for plen, net in sig:
        bucket = by_len.get(plen)
        if bucket is not None:
            entry = bucket.get(net)
            if entry is not None:
                return entry
    return None


def exits(nodes: list[Node], nxt: list[int], addr: int, dests: list[int],
          problems: Problems) -> _Class | None:
    """Follow the next hops of every node to its exit, memoising each node's
    distance on the way; None, with the problem added, on a routing loop."""
    n = len(nodes)
    steps = [0 if j == ON_LINK else -1 for j in nxt]
    exit_ = [i if j == ON_LINK else -1 for i, j in enumerate(nxt)]
    for i in range(n):
        if steps[i] >= 0:
            continue
        chain = [i]
        cur = nxt[i]
        while steps[cur] < 0:
            chain.append(cur)
            cur = nxt[cur]
            if len(chain) > n:
                names = " -> ".join(nodes[c].name for c in chain[-6:])
                problems.add("nodes.%s.routes" % nodes[i].name,
                             "routing loop towards %s: %s" % (ip_text(addr), names))
                return None
        st, ex = steps[cur], exit_[cur]
        for c in reversed(chain):
            st += 1
            steps[c] = st
            exit_[c] = ex
    return _Class(dests, nxt, steps, exit_, {})


def _branches(nodes: list[Node], tables: list[RouteTable], cls: _Class, tally: _Tally,
              problems: Problems) -> bool:
    """Every further next hop of a class's routes is one hop nearer the exit
    than the node, so every branch is as long as the preferred one up to its
    exit. Where branches end at different exits, cls.mixed gets the pairs
    whose branches would differ in length (host routes must settle them).
    False, with the problem added, when a branch is longer or shorter."""
    steps, exit_, alt = cls.steps, cls.exit_, cls.alt
    split = []
    branching = tally.branching
    for i, more in enumerate(alt):
        if not more:
            continue
        want, ex = steps[i] - 1, exit_[i]
        for j in more:
            if steps[j] != want:
                problems.add("nodes.%s.routes" % nodes[i].name,
                             "the branch through %s towards %s takes %d hops, the one through "
                             "%s %d" % (nodes[j].name, ip_text(nodes[cls.dests[0]].address),
                                        steps[j] + 1, nodes[cls.nxt[i]].name, steps[i]))
                return False
            if exit_[j] != ex:
                split.append(i)
            if j not in branching and _class_forwards(nodes, tables[i], i, j, cls.dests):
                branching.add(j)
    if split:
        _mixed_pairs(cls, split)
    return True


def _class_forwards(nodes: list[Node], table: RouteTable, i: int, j: int, dests: list[int]) -> bool:
    """Whether node i sends some node of the class through j with the class's route."""
    hosts = table.by_len.get(32, _NONE)
    return any(d != i and d != j and nodes[d].address not in hosts for d in dests)


def _reverse(cls: _Class) -> dict[int, list[int]]:
    """node -> the nodes that have it as a next hop on some branch (made once)."""
    if not cls.rev:
        for i, j in enumerate(cls.nxt):
            if j >= 0:
                cls.rev.setdefault(j, []).append(i)
        for i, more in enumerate(cls.alt):
            for j in more:
                cls.rev.setdefault(j, []).append(i)
    return cls.rev


def _mixed_pairs(cls: _Class, split: list[int]) -> None:
    """The exits of every branch of the nodes upstream of a split, and the
    (source, dest) pairs whose branches end both at the dest and elsewhere."""
    region = upstream(_reverse(cls), split)
    nxt, alt, exit_, steps = cls.nxt, cls.alt, cls.exit_, cls.steps
    ends: dict[int, frozenset[int]] = {}
    single: dict[int, frozenset[int]] = {}
    for i in sorted(region, key=steps.__getitem__):
        sets = [ends[j] if j in ends else single.setdefault(exit_[j], frozenset((exit_[j],)))
                for j in (nxt[i], *alt[i])]
        first = sets[0]
        ends[i] = first if all(e is first for e in sets) else frozenset().union(*sets)
    member = set(cls.dests)
    for i, e in ends.items():
        if len(e) > 1:
            for d in e:
                if d in member and d != i:
                    cls.mixed.setdefault(d, []).append(i)


def _count_class(cls: _Class, tally: _Tally) -> None:
    """Add the pairs (every node -> every other node of the class) to the tally,
    and the pairs each node forwards. A node i sends to the size - 1 or size
    other nodes of the class in steps + 1 hops, except to its exit when that
    is of the class (steps hops)."""
    nxt, steps, exit_ = cls.nxt, cls.steps, cls.exit_
    n = len(nxt)
    member = bytearray(n)
    for d in cls.dests:
        member[d] = 1
    size = len(cls.dests)
    through = [1] * n
    for i in sorted(range(n), key=steps.__getitem__, reverse=True):
        j = nxt[i]
        if j >= 0:
            through[j] += through[i]
    hops, sums, forwarded = tally.hops, tally.sums, tally.forwarded
    pairs = 0
    for i, (st, mine, ex, thr) in enumerate(zip(steps, member, exit_, through)):
        at_exit = 0 if mine else member[ex]
        far = size - mine - at_exit
        if far:
            hops[st + 1] += far
        if at_exit:
            hops[st] += 1
        sums[i] += far * (st + 1) + at_exit * st
        pairs += far + at_exit
        if thr > 1:
            forwarded[i] += (thr - 1) * (size - mine)
    tally.pairs += pairs


def _correct_host_routes(nodes: list[Node], cls: _Class, hosts: dict[int, list[int]],
                         walker: Walker, tally: _Tally) -> bool:
    """Re-walk, with host routes, the pairs towards a node of the class that some
    node holds a host route for: only sources upstream of such a node can differ.
    Every branch of those pairs must be as long as the others. False when a walk
    failed (its problem added)."""
    nxt = cls.nxt
    for d in cls.dests:
        addr = nodes[d].address
        holders = hosts.get(addr)
        mixed = cls.mixed.get(d, [])
        if not holders and not mixed:
            continue
        ups = upstream(_reverse(cls), holders) if holders else set()
        loose = [i for i in mixed if i not in ups]
        if loose:
            walker.problems.add("nodes.%s.routes" % nodes[loose[0]].name,
                                "the branches towards %s (%s) differ in length: some end "
                                "on its network at it, some elsewhere" % (ip_text(addr), nodes[d].name))
            return False
        lengths = _branch_lengths(walker, cls, d, ups, tally.branching)
        if lengths is None:
            return False
        for i in sorted(ups):
            if i == d:
                continue
            old = []
            cur = i
            while nxt[cur] >= 0 and nxt[cur] != d:
                cur = nxt[cur]
                old.append(cur)
            new = walker.path(i, addr, d)
            if new is None:
                return False
            old_hops = cls.steps[i] + (0 if cls.exit_[i] == d else 1)
            new_hops = lengths[i]
            tally.hops[old_hops] -= 1
            tally.hops[new_hops] += 1
            tally.sums[i] += new_hops - old_hops
            for k in old:
                if k != d:
                    tally.forwarded[k] -= 1
            for k in new:
                tally.forwarded[k] += 1
    return True


def _branch_lengths(walker: Walker, cls: _Class, d: int, ups: set[int],
                    branching: set[int]) -> dict[int, int] | None:
    """Hops from every node of ups to node d over each of its branches (host
    routes applied), which must all be equal; None, with the problem added,
    on a missing route, a loop or branches of unequal length. Nodes outside
    ups take the class's routes all the way."""
    nodes, addr = walker.nodes, walker.nodes[d].address
    steps, exit_ = cls.steps, cls.exit_
    length: dict[int, int] = {}
    hops_of: dict[int, tuple[int, ...]] = {}
    for start in ups:
        if start == d or start in length:
            continue
        stack, busy = [start], {start}
        while stack:
            x = stack[-1]
            hops = hops_of.get(x)
            if hops is None:
                entry = walker.tables[x].lookup(addr)
                if entry is None:
                    walker.step(x, addr)            # adds the problem
                    return None
                hops = hops_of[x] = (entry[0], *entry[2])
            todo = [j for j in hops if j in ups and j != d and j not in length]
            if todo:
                if any(j in busy for j in todo):
                    walker.problems.add("nodes.%s.routes" % nodes[x].name,
                                        "routing loop towards %s" % ip_text(addr))
                    return None
                stack.append(todo[0])
                busy.add(todo[0])
                continue
            ways = {1 if j == ON_LINK or j == d else
                    1 + (length[j] if j in length else steps[j] + (exit_[j] != d)) for j in hops}
            if len(ways) > 1:
                walker.problems.add("nodes.%s.routes" % nodes[x].name,
                                    "the branches towards %s (%s) differ in length: %s hops"
                                    % (ip_text(addr), nodes[d].name,
                                       ", ".join(map(str, sorted(ways)))))
                return None
            length[x] = ways.pop()
            branching.update(j for j in hops if j != ON_LINK and j != d)
            stack.pop()
            busy.discard(x)
    return length


def upstream(rev: dict[int, list[int]], holders: list[int]) -> set[int]:
    """The holders and every node whose next hops lead through one of them."""
    todo = list(holders)
    seen = set(todo)
    while todo:
        m = todo.pop()
        for up in rev.get(m, ()):
            if up not in seen:
                seen.add(up)
                todo.append(up)
    return seen


def _check_forwarding(nodes: list[Node], proof: Proof, problems: Problems) -> None:
    """Forwarding on exactly the nodes some pair passes through (on any branch)."""
    forwarded, branching = proof.forwarded, proof.branching
    for node in nodes:
        if (forwarded[node.index] or node.index in branching) and not node.forwarding:
            problems.add("nodes.%s.forwarding" % node.name,
                         "off, but %d pairs pass through the node" % forwarded[node.index]
                         if forwarded[node.index] else
                         "off, but a branch of some pair passes through the node")
    for node in nodes:
        if node.loopback is not None:
            break          # routing.engine frr: on wherever a failure may make a transit node
        if node.forwarding and not forwarded[node.index] and node.index not in branching:
            problems.add("nodes.%s.forwarding" % node.name, "on, but the node forwards for no pair")


def _check_shortest(graph: Graph, sums: list[int], problems: Problems) -> None:
    """No walk is shorter than the shortest path, so equal sums mean every path is shortest."""
    shortest = shortest_sums(graph)
    for node in graph.nodes:
        if sums[node.index] != shortest[node.index]:
            problems.add("nodes.%s.routes" % node.name,
                         "paths are not shortest: %d hops to all others, shortest is %d"
                         % (sums[node.index], shortest[node.index]))


def shortest_sums(graph: Graph) -> list[int]:
    """Sum over destinations of the shortest IP-hop distance, per source."""
    fast = family.of(graph.family).shortest_sums
    return fast(graph) if fast is not None else _generic_sums(graph)


def _generic_sums(graph: Graph) -> list[int]:
    """One BFS per segment that holds node addresses: a node of such a segment
    is dist or dist + 1 hops from a node that is dist hops from the segment
    (see model.ends_of_shortest)."""
    links = graph.links()
    number = {id(seg): k for k, seg in enumerate(links.segments)}
    homes: defaultdict[int, list[int]] = defaultdict(list)
    for node in graph.nodes:
        homes[number[id(node.home.segment)]].append(node.index)
    out = [0] * len(graph.nodes)
    for k, dests in homes.items():
        bfs = links.towards(links.members[k])
        reach, _groups = ends_of_shortest(links, bfs, dests)
        size = len(dests)
        for x, d in enumerate(bfs.dist):
            if d > 0:
                out[x] += size * (d + 1) - reach[x].bit_count()
            else:
                out[x] += size - reach[x].bit_count()
    return out


PATHS_CAP = 16       # allowed hop lists per pair, at most (the preferred one first)


def expected_paths(graph: Graph, tables: list[RouteTable], src: int, dst: int,
                   cap: int = PATHS_CAP) -> list[list[PathHop]] | None:
    """Hops of `traceroute -n` from node src to dst's address over each branch
    of the routes, the preferred branch (first next hop everywhere) first, at
    most cap of them: one address per hop, as the hop's ICMP reply is sourced
    (the route back to the sender). None when a walk finds no route or loops."""
    nodes = graph.nodes
    target = nodes[dst].address
    first = tables[src].lookup(target)
    if first is None:
        return None
    sender = first[1]
    out: list[list[PathHop]] = []
    # depth-first over the branches: (node, hops so far), preferred next hop on top
    todo: list[tuple[int, list[PathHop]]] = [(src, [])]
    arrive: PathHop = {"node": nodes[dst].name, "address": ip_text(target)}
    while todo and len(out) < cap:
        cur, hops = todo.pop()
        entry = tables[cur].lookup(target) if cur != dst else None
        if cur == dst or (entry is not None and entry[0] == ON_LINK):
            if hops + [arrive] not in out:      # parallel links: the same hops twice
                out.append(hops + [arrive])
            continue
        if entry is None or len(hops) > len(nodes):
            return None
        for nxt in reversed((entry[0], *entry[2])):
            if nxt < 0:                         # a next hop that carries nothing (live tables)
                return None
            if nxt == dst:
                todo.append((dst, hops))
                continue
            back = tables[nxt].lookup(sender)
            todo.append((nxt, hops + [{"node": nodes[nxt].name,
                                       "address": ip_text(back[1]) if back else "*"}]))
    return out


__all__ = ["PATHS_CAP", "prove", "expected_paths", "Proof", "shortest_sums", "destination_classes",
           "class_entries", "host_route_holders", "upstream", "exits"]
