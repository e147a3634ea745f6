"""Stage 4: routing tables.

With routing.engine frr, ``ospf`` computes the routes FRR's OSPF will install
(beonet installs none). Otherwise two policies, one contract (shortest IP-hop paths, one prefix per remote
segment or group, host routes only where they shorten a path, gateway load
spread by source, forwarding on exactly the nodes used as next hops):

* ``generic``: any graph (bonded, tree, mesh, custom). One multi-source BFS
  per segment that holds node addresses picks the next hop towards it; a BFS
  per destination adds host routes where the segment route is longer than the
  shortest path.
* ``metagraph``: the SC98 testbed rule, computed from the structure so that
  thousands of nodes compile in seconds: a node linked to a remote group goes
  through its own peer; otherwise through a linked node of its own group,
  spread by source; remote nodes linked to the group (or to the node's peers)
  are reached through their local peer with a host route.

With failover (``routing.failover``, the default) a route lists every equally
short next hop, and on clusters of up to HOST_FAILOVER_MAX nodes (generic and
mesh families) a node address with more equally short next hops than the route
that takes it gets a /32 route over all of them: in a 2D mesh a diagonal pair
has two gateways, but the segment route to the far LAN only one.

Every route carries ``src`` = the node's address, so replies and ICMP errors
always come back to an address the whole cluster routes.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from operator import attrgetter

from . import family
from .model import Graph, Interface, Links, Node, Reach, Route, ends_of_shortest, mask
from .records import cast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar
    T = TypeVar("T")


def _iface_on(graph: Graph) -> dict[tuple[int, str], Interface]:
    """(node index, segment name) -> Interface."""
    out = {}
    for seg in graph.segments:
        if seg.routed:
            for node, iface, _host in seg.members:
                out[node.index, seg.name] = iface
    return out


def generic(graph: Graph) -> None:
    """Segment routes by multi-source BFS, then host routes where those are longer than shortest."""
    links = graph.links()
    on = _iface_on(graph)
    # Route to the segments that hold some node's address (what names resolve
    # to); other interface addresses are reachable from their own segment only.
    homes: dict[int, list[Node]] = defaultdict(list)
    number = {id(seg): k for k, seg in enumerate(links.segments)}
    for node in graph.nodes:
        homes[number[id(node.home.segment)]].append(node)
    for k in sorted(homes):
        _towards_segment(graph, links, k, homes[k], on)
    _host_failover(graph)
    _finish(graph)


def _towards_segment(graph: Graph, links: Links, k: int, dests: list[Node],
                     on: dict[tuple[int, str], Interface]) -> None:
    """Every other node's route to segment k, and its host routes to the nodes
    of dests (the nodes whose address is on k) that the segment route would
    reach in one hop more than the shortest path.

    Sources with the same next hops are ranked and dealt round-robin over
    them, so each gateway carries an equal share. A node x reaches the segment
    in dist(x) hops, a dest d on it in dist(x) hops when d ends some shortest
    path from x to the segment (model.ends_of_shortest), else in one more.
    The segment route takes d in dist(x) hops exactly when d also ends one
    from the chosen next hop; where it does not, a host route goes through a
    next hop from which it does. With failover, the segment route has every
    next hop (the chosen one first), and a host route is added where any of
    them would be longer, over every next hop from which d is shortest."""
    nodes, seg = graph.nodes, links.segments[k]
    bfs = links.towards(links.members[k])
    reach, groups = ends_of_shortest(links, bfs, [d.index for d in dests])
    names = [s.name for s in links.segments]
    net, plen = seg.net, seg.plen
    for ways, xs in groups.items():
        cands = sorted((n, names[via]) for via in ways for n in links.nearest(via, bfs))
        hops = [(n, on[n, name].addresses[0], name, reach[n]) for n, name in cands]
        common = -1
        for h in hops:
            common &= h[3]
        xs.sort()
        for rank, xi in enumerate(xs):
            chosen = hops[rank % len(hops)]
            x = nodes[xi]
            if graph.failover:
                x.routes.append(_multipath(Route(net, plen, 0, "", x.address), chosen, hops, xi, on))
                missing = reach[xi] & ~common
            else:
                x.routes.append(Route(net, plen, chosen[1], on[xi, chosen[2]].name, x.address))
                missing = reach[xi] & ~chosen[3]
            while missing:
                low = missing & -missing
                missing ^= low
                way = [h for h in hops if h[3] & low]
                pick = chosen if chosen[3] & low else way[xi % len(way)]
                host = Route(dests[low.bit_length() - 1].address, 32, 0, "", x.address)
                x.routes.append(_multipath(host, pick, way if graph.failover else [pick], xi, on))


_Hop = tuple[int, int, str, int]     # (next node, its address, segment name, mask of dests it ends)


def _multipath(r: Route, chosen: _Hop, hops: list[_Hop], xi: int,
               on: dict[tuple[int, str], Interface]) -> Route:
    """r through chosen first, then the other hops in their order."""
    r.via, r.dev = chosen[1], on[xi, chosen[2]].name
    rest = [h for h in hops if h is not chosen]
    if rest:
        r.alt_via = tuple(h[1] for h in rest)
        r.alt_dev = tuple(on[xi, h[2]].name for h in rest)
    return r


def mesh(graph: Graph) -> None:
    """Dimension-order routes of a mesh, computed from the coordinates; the
    same routes the generic BFS gives. A node's address is on its dimension-0
    LAN, so each node routes to every other dimension-0 LAN. Two nodes are as
    many hops apart as they have differing coordinates, so the next hops
    towards LAN d0-c are the neighbours that set one differing coordinate j
    to c[j]; the generic rule takes the lowest-numbered one (node numbers
    run with the last coordinate fastest): the first j with c[j] below the
    node's coordinate, else the last differing j. With failover the route
    has all of them, that one first, then the others by node number. No two
    sources share a choice of more than one next hop, so no spreading
    applies, and no host route is ever shorter (every shortest path ends at
    the one LAN node with the node's own first coordinate)."""
    dims = graph.params["dims"]
    nodes = graph.nodes
    stride = [1] * len(dims)
    for j in range(len(dims) - 2, -1, -1):
        stride[j] = stride[j + 1] * dims[j + 1]
    # per dimension: node index -> its NIC's address and name on that dimension's LAN
    addr = [[x.interfaces[j].addresses[0] for x in nodes] for j in range(len(dims))]
    dev = [[x.interfaces[j].name for x in nodes] for j in range(len(dims))]
    routes = [x.routes for x in nodes]
    # the LANs to reach, and the nodes of each: the other coordinates' values
    lans = sorted((s for s in graph.segments if s.pool_dim == 0), key=lambda s: s.net)
    rests = [x.coords[1:] for x in nodes[:stride[0]] if x.coords is not None]
    along = range(0, len(nodes), stride[0])
    shared: dict[tuple[str, ...], tuple[str, ...]] = {}
    own: list[dict[tuple[int, ...], tuple[int, ...]]] = [{} for _node in nodes]
    singles: dict[int, _Singles] = {}
    for seg in lans:
        c = rests[seg.members[0][0].index % stride[0]]
        net, plen = seg.net, seg.plen
        for first, r in enumerate(rests):
            if r == c:
                continue
            j = _mesh_way(c, r)
            via, out, src = addr[j + 1], dev[j + 1], addr[0]
            delta = (c[j] - r[j]) * stride[j + 1]
            alts = sorted(((c[i] - r[i]) * stride[i + 1], i + 1) for i in range(len(c))
                          if c[i] != r[i] and i != j) if graph.failover else []
            if not alts:
                for xi in along:
                    xi += first
                    routes[xi].append(Route(net, plen, via[xi + delta], out[xi], src[xi]))
                continue
            if len(alts) == 1:
                step, d = alts[0]
                if d not in singles:
                    singles[d] = _singles(addr[d], dev[d])
                one_via, one_dev = singles[d]
                for xi in along:
                    xi += first
                    routes[xi].append(Route(net, plen, via[xi + delta], out[xi], src[xi],
                                            one_via[xi + step], one_dev[xi]))
                continue
            for xi in along:
                xi += first
                devs = tuple([dev[d][xi] for _step, d in alts])
                vias = tuple([addr[d][xi + step] for step, d in alts])
                # a node has few distinct neighbour tuples: one object each
                routes[xi].append(Route(net, plen, via[xi + delta], out[xi], src[xi],
                                        own[xi].setdefault(vias, vias),
                                        shared.setdefault(devs, devs)))
    _finish(graph, presorted=not _host_failover(graph))


_Singles = tuple[list[tuple[int]], list[tuple[str]]]


def _singles(addr: list[int], dev: list[str]) -> _Singles:
    """(address,) and (NIC name,) of every node on one dimension, one tuple
    each: the further next hop of every mesh route that has one."""
    names = {name: (name,) for name in dev}
    return [(a,) for a in addr], [names[name] for name in dev]


# With failover, clusters up to this many nodes also get a /32 multipath route to
# each node address that has more equally short next hops than the route that
# takes it (a 2D mesh's diagonal pairs); above it that costs N routes per node.
HOST_FAILOVER_MAX = 256


def _host_failover(graph: Graph) -> bool:
    """With failover, on clusters of up to HOST_FAILOVER_MAX nodes: a /32 route over
    every equally short next hop towards each node address whose route has fewer
    (the route's preferred next hop first). Returns whether any was added."""
    if not graph.failover:
        return False
    if len(graph.nodes) > HOST_FAILOVER_MAX:
        graph.notes.append("failover host routes: not made above %d nodes (segment routes "
                           "only); see the resilience table" % HOST_FAILOVER_MAX)
        return False
    links, on, owner = graph.links(), _iface_on(graph), graph.owners()
    names = [s.name for s in links.segments]
    tables = [_by_prefix(x) for x in graph.nodes]
    added = False
    for z in graph.nodes:
        bfs = links.towards([z.index])
        for x in graph.nodes:
            d = bfs.dist[x.index]
            if d < 2:
                continue
            hops = [(n, names[k]) for k in links.of_node[x.index] if bfs.near[k] == d - 1
                    for n in links.nearest(k, bfs)]
            if len(hops) < 2:
                continue
            r = _lookup(tables[x.index], z.address)
            if len(hops) == len(r.alt_via) + 1:
                continue
            first = owner[r.via].index
            if r.plen != 32:            # a host route of its own, else the one there gets them all
                r = Route(z.address, 32, 0, "", x.address)
                x.routes.append(r)
                added = True
            _over_all(r, hops, first, x.index, on)
    return added


def _over_all(r: Route, hops: list[tuple[int, str]], first: int, xi: int,
              on: dict[tuple[int, str], Interface]) -> None:
    """Route r over every (next node, segment) of hops: the first one through node
    `first` (the route's preferred next hop) first, the others in order."""
    hops = sorted(hops)
    lead = next((h for h in hops if h[0] == first), hops[0])
    rest = [h for h in hops if h != lead]
    r.via, r.dev = on[lead].addresses[0], on[xi, lead[1]].name
    r.alt_via = tuple(on[h].addresses[0] for h in rest)
    r.alt_dev = tuple(on[xi, h[1]].name for h in rest)


def _by_prefix(x: Node) -> list[tuple[int, dict[int, Route]]]:
    """A node's routes as (plen, {net: route}), longest prefix first."""
    out: dict[int, dict[int, Route]] = defaultdict(dict)
    for r in x.routes:
        out[r.plen][r.net] = r
    return sorted(out.items(), reverse=True)


def _lookup(table: list[tuple[int, dict[int, Route]]], addr: int) -> Route:
    for plen, routes in table:
        r = routes.get(addr & mask(plen))
        if r is not None:
            return r
    raise AssertionError("no route to %s" % addr)


def _mesh_way(c: tuple[int, ...], r: tuple[int, ...]) -> int:
    """The coordinate (of those after the first) a mesh node at r changes first
    towards the dimension-0 LAN at c: the first one above c's, else the last
    one that differs."""
    last = -1
    for j, (want, have) in enumerate(zip(c, r)):
        if want < have:
            return j
        if want != have:
            last = j
    return last


def owners(graph: Graph) -> dict[int, int]:
    """Interface address -> index of the node that holds it."""
    return {a: node.index for a, node in graph.owners().items()}


def _finish(graph: Graph, presorted: bool = False) -> None:
    """Sort each table (unless built in order); turn forwarding on at every node
    that some route uses as a next hop (on any of its branches) for a node
    address other than the next hop's own (and that no more specific route or
    connected network of the same table takes)."""
    owner = graph.owners()
    addresses = sorted(n.address for n in graph.nodes)
    left = sum(not n.forwarding for n in graph.nodes)     # nodes not known to forward yet
    for node in graph.nodes:
        if not presorted:
            node.routes.sort(key=attrgetter("net", "plen"))
        if left:
            left -= _mark_forwarders(node, owner, addresses)


def _mark_forwarders(node: Node, owner: dict[int, Node], addresses: list[int]) -> int:
    """Turn forwarding on at the next hops of node's routes that forward for it
    (see _finish); how many were turned on."""
    table: _Taken | None = None
    marked = 0
    for r in node.routes:
        first = owner[r.via]
        if first.forwarding and not r.alt_via:
            continue
        for via in (first, *[owner[v] for v in r.alt_via]):
            if via.forwarding:
                continue
            if table is None:
                table = _taken(node)
            if _forwards_for(r, via, addresses, table):
                via.forwarding = True
                marked += 1
    return marked


_Taken = tuple[set[tuple[int, int]], list[int]]   # a table's (net, plen) pairs, its lengths longest first


def _taken(node: Node) -> _Taken:
    table = {(x.net, x.plen) for x in node.routes}
    table.update((i.segment.net, i.segment.plen) for i in node.interfaces if i.addresses)
    return table, sorted({p for _net, p in table}, reverse=True)


def _forwards_for(r: Route, via: Node, addresses: list[int], taken: _Taken) -> bool:
    """Whether route r sends some node address (not via's own) through via."""
    table, plens = taken
    lo = bisect_left(addresses, r.net)
    hi = bisect_right(addresses, r.net + (1 << (32 - r.plen)) - 1)
    for a in addresses[lo:hi]:
        if a == via.address or any((a & mask(p), p) in table for p in plens if p > r.plen):
            continue
        return True
    return False


Peer = tuple[Node, Interface, Interface]     # (peer node, own NIC, peer's NIC)
_Ways = list[tuple[int, str]]     # (gateway address, device) of each next hop, preferred first


class _MetaGraph:
    """What the meta-graph routing rule reads of the graph."""

    __slots__ = ("groups", "group_net", "peers", "linked", "lan_dev", "address", "routes", "gate_of",
                 "covered", "failover", "shared")

    groups: list[list[Node]]                            # group -> its nodes
    group_net: dict[int, tuple[int, int]]               # group -> (net, plen) of its LAN
    peers: list[dict[int, list[Peer]]]                  # node -> {remote group: peers}, in link order
    linked: dict[tuple[int, int], list[tuple[Node, Node]]]  # (g, h) -> [(node of g, node of h)]
    lan_dev: list[str]                                  # node -> its NIC on the group's LAN
    address: list[int]                                  # node -> its address
    routes: list[list[Route]]                           # node -> routes, as they are made
    gate_of: list[list[int | None]]                     # [source][h] -> gateway node, when used
    covered: dict[tuple[int, int, int], set[int]]       # (g, h, gateway) -> nodes of h within 2 hops
    failover: bool                  # multipath over equal next hops
    shared: dict[tuple[object, ...], tuple[object, ...]]  # interned

    def __init__(self, groups: list[list[Node]], group_net: dict[int, tuple[int, int]],
                 peers: list[dict[int, list[Peer]]],
                 linked: dict[tuple[int, int], list[tuple[Node, Node]]], lan_dev: list[str],
                 address: list[int], routes: list[list[Route]], gate_of: list[list[int | None]],
                 covered: dict[tuple[int, int, int], set[int]], failover: bool = False,
                 shared: dict[tuple[object, ...], tuple[object, ...]] | None = None) -> None:
        self.groups = groups
        self.group_net = group_net
        self.peers = peers
        self.linked = linked
        self.lan_dev = lan_dev
        self.address = address
        self.routes = routes
        self.gate_of = gate_of
        self.covered = covered
        self.failover = failover
        self.shared = {} if shared is None else shared

    def share(self, t: tuple[T, ...]) -> tuple[T, ...]:
        """One tuple object for equal next-hop tuples, however many routes hold them."""
        return cast("tuple[T, ...]", self.shared.setdefault(t, t))


def _metagraph_structure(graph: Graph) -> _MetaGraph:
    """Groups, their LANs and the point-to-point links between them, before any route."""
    L = graph.params["groups"]
    n = len(graph.nodes)
    groups: list[list[Node]] = [[] for _group in range(L)]
    for x in graph.nodes:
        groups[_group(x)].append(x)
    group_net = {}
    for seg in graph.segments:
        if seg.kind == "lan":
            group_net[int(seg.name[5:])] = (seg.net, seg.plen)
    peers: list[dict[int, list[Peer]]] = [defaultdict(list) for _node in graph.nodes]
    linked: dict[tuple[int, int], list[tuple[Node, Node]]] = defaultdict(list)
    for seg in graph.segments:
        if seg.kind != "p2p":
            continue
        (a, ia, _ha), (b, ib, _hb) = seg.members
        ga, gb = _group(a), _group(b)
        peers[a.index][gb].append((b, ia, ib))
        peers[b.index][ga].append((a, ib, ia))
        linked[ga, gb].append((a, b))
        linked[gb, ga].append((b, a))
    lan_dev = [x.home.name for x in graph.nodes]
    address = [x.address for x in graph.nodes]
    return _MetaGraph(groups, group_net, peers, linked, lan_dev, address, [[] for _node in range(n)],
                      [[None] * L for _node in range(n)], {}, graph.failover)


def _group(node: Node) -> int:
    if node.group is None:
        raise AssertionError("node %s of a meta-graph has no group" % node.name)
    return node.group


def _gateways(mg: _MetaGraph, g: int, h: int) -> list[tuple[Node, int, list[tuple[int, int]]]]:
    """Nodes of g linked to h, each with its LAN address and the host routes
    (address, via) to the nodes of h linked to g that its group route would take
    3 hops to reach (its own peers are 2 hops either way); records what each covers."""
    gates: list[Node] = []
    for w, _z in mg.linked[g, h]:
        if w not in gates:
            gates.append(w)
    out = []
    for gw in gates:
        done = {p.index for p, _own, _theirs in mg.peers[gw.index][h]}
        hosts = []
        for w, z in mg.linked[g, h]:
            if z.index not in done:
                done.add(z.index)
                hosts.append((z.address, w.address))
        mg.covered[g, h, gw.index] = done
        if mg.failover:
            mg.covered[g, h, gw.index] = {z.index for _w, z in mg.linked[g, h]}
        out.append((gw, gw.address, hosts))
    return out


def _group_routes(mg: _MetaGraph, g: int, h: int) -> None:
    """Routes of every node of g to group h: through its own peer in h when it
    has one (host routes for further peers in h), else through a gateway of its
    group, gateways dealt round-robin by source. With failover the route goes
    through every own link to h, or every gateway (the one dealt first)."""
    net, plen = mg.group_net[h]
    gateways = _gateways(mg, g, h)
    ways: dict[tuple[int, str], tuple[_Ways, list[tuple[int, _Ways]]]] = {}
    rank = 0
    for x in mg.groups[g]:
        xi = x.index
        src, out, own = mg.address[xi], mg.routes[xi], mg.peers[xi].get(h)
        if own and mg.failover:
            _own_multipath(mg, x, own, net, plen)
            continue
        if own:
            first, xif, pif = own[0]
            out.append(Route(net, plen, pif.addresses[0], xif.name, src))
            seen = {first.index}
            for p, xif, pif in own[1:]:
                if p.index not in seen:     # a second direct peer in h: 1 hop, not 2
                    seen.add(p.index)
                    out.append(Route(p.address, 32, pif.addresses[0], xif.name, src))
            continue
        gw, gw_addr, hosts = gateways[rank % len(gateways)]
        rank += 1
        mg.gate_of[xi][h] = gw.index
        dev = mg.lan_dev[xi]
        if mg.failover:
            key = (gw.index, dev)
            if key not in ways:
                ways[key] = _gateway_ways(mg, gw, [w for w, _a, _hosts in gateways], g, h, dev)
            group_ways, host_ways = ways[key]
            out.append(_over(mg, Route(net, plen, 0, "", src), group_ways))
            for z_addr, zw in host_ways:
                out.append(_over(mg, Route(z_addr, 32, 0, "", src), zw))
            continue
        out.append(Route(net, plen, gw_addr, dev, src))
        for z_addr, w_addr in hosts:
            out.append(Route(z_addr, 32, w_addr, dev, src))


def _own_multipath(mg: _MetaGraph, x: Node, own: list[Peer], net: int, plen: int) -> None:
    """x's route to a group it has links to: over every such link; with peers
    that are two nodes or more, a host route to each over its own links."""
    out, src = mg.routes[x.index], x.address
    out.append(_over(mg, Route(net, plen, 0, "", src),
                     [(pif.addresses[0], xif.name) for _p, xif, pif in own]))
    to: dict[Node, list[tuple[int, str]]] = {}
    for p, xif, pif in own:
        to.setdefault(p, []).append((pif.addresses[0], xif.name))
    if len(to) > 1:
        for p, ways in to.items():
            out.append(_over(mg, Route(p.address, 32, 0, "", src), ways))


def _gateway_ways(mg: _MetaGraph, gw: Node, gates: list[Node], g: int, h: int, dev: str
                  ) -> tuple[_Ways, list[tuple[int, _Ways]]]:
    """The next hops of a route to group h over every gateway of g (gw first),
    and the host routes (address, next hops) to each node of h linked to g that
    some gateway is not linked to, over the gateways linked to it (gw first
    when it is one)."""
    order = [gw] + [w for w in gates if w is not gw]
    by: dict[Node, list[Node]] = {}
    for w, z in mg.linked[g, h]:
        ws = by.setdefault(z, [])
        if w not in ws:
            ws.append(w)
    hosts = []
    for z, ws in by.items():
        if len(ws) < len(gates):
            first = gw if gw in ws else ws[0]
            ordered = [first] + [w for w in ws if w is not first]
            hosts.append((z.address, [(w.address, dev) for w in ordered]))
    return [(w.address, dev) for w in order], hosts


def _over(mg: _MetaGraph, r: Route, ways: list[tuple[int, str]]) -> Route:
    """r through ways[0] and, as further next hops, the rest (shared tuples)."""
    r.via, r.dev = ways[0]
    if len(ways) > 1:
        r.alt_via = mg.share(tuple(v for v, _dev in ways[1:]))
        r.alt_dev = mg.share(tuple(d for _via, d in ways[1:]))
    return r


def _peer_shortcuts(graph: Graph, mg: _MetaGraph) -> None:
    """Nodes of a group this node is not linked to but one of its peers is:
    2 hops through that peer instead of 3 through the gateway (with failover,
    through every such peer)."""
    for x in graph.nodes:
        xi, g = x.index, x.group
        added: dict[int, list[tuple[int, str]]] = {}
        for lst in mg.peers[xi].values():
            for k, xif, kif in lst:
                for h, zs in mg.peers[k.index].items():
                    gw = mg.gate_of[xi][h]
                    if h == g or gw is None:
                        continue
                    done = mg.covered[_group(x), h, gw]
                    for z, _own, _theirs in zs:
                        if z.index in done:
                            continue
                        ways = added.get(z.index)
                        if ways is None:
                            added[z.index] = [(kif.addresses[0], xif.name)]
                        elif mg.failover and (kif.addresses[0], xif.name) not in ways:
                            ways.append((kif.addresses[0], xif.name))
        for z_index, ways in added.items():
            mg.routes[xi].append(_over(mg, Route(graph.nodes[z_index].address, 32, 0, "",
                                                 x.address), ways))


def metagraph(graph: Graph) -> None:
    """The SC98 testbed rule (see the module's docstring)."""
    mg = _metagraph_structure(graph)
    L = len(mg.groups)
    for g in range(L):
        for h in range(L):
            if h != g:
                _group_routes(mg, g, h)
    _peer_shortcuts(graph, mg)
    for x in graph.nodes:
        x.routes = mg.routes[x.index]
    _finish(graph)


def ospf(graph: Graph) -> None:
    """routing.engine frr: the routes OSPF will install, for the proof and the
    expected paths (beonet installs none of them). Every NIC costs the same, so
    OSPF's shortest paths are the shortest in IP hops, and FRR installs every
    equal next hop, over all the neighbours one hop nearer: each node gets a
    route to every point-to-point segment it is not on, a /32 to every other
    node's loopback and a /32 to every address another node holds on a LAN (a
    LAN runs OSPF point-to-multipoint: each member advertises its own address
    on it, not the LAN's prefix). Forwarding is on at every node on two
    segments or more: a failure may make any of them a transit node."""
    links = graph.links()
    on = _iface_on(graph)
    for k, seg in enumerate(links.segments):
        if seg.kind == "p2p":
            _learned(graph, links, on, links.towards(links.members[k]), (seg.net, seg.plen), None)
    for d in graph.nodes:
        bfs = links.towards([d.index])
        _learned(graph, links, on, bfs, (d.address, 32), None)
        for k in links.of_node[d.index]:
            if links.segments[k].kind != "p2p":
                _learned(graph, links, on, bfs, (on[d.index, links.segments[k].name].addresses[0], 32), k)
    for x in graph.nodes:
        x.forwarding = len(links.of_node[x.index]) > 1
    _finish(graph)


def _learned(graph: Graph, links: Links, on: dict[tuple[int, str], Interface], bfs: Reach,
             to: tuple[int, int], lan: int | None) -> None:
    """Every node's route to ``to`` (net, plen) over each neighbour one hop nearer
    the BFS's sources (the nodes that hold it), the gateways in address order;
    ``lan``: the LAN segment the address is on, whose members send from their own
    address on it (FRR's route map: BFD and the LAN's traffic keep the LAN's source)."""
    dist, near, names = bfs.dist, bfs.near, [s.name for s in links.segments]
    for x in graph.nodes:
        dx = dist[x.index]
        if dx <= 0:
            continue
        hops = sorted((on[b, names[k]].addresses[0], on[x.index, names[k]].name)
                      for k in links.of_node[x.index] if near[k] == dx - 1
                      for b in links.nearest(k, bfs))
        (via, dev), rest = hops[0], hops[1:]
        src = x.address if lan is None or lan not in links.of_node[x.index] else \
            on[x.index, names[lan]].addresses[0]
        x.routes.append(Route(to[0], to[1], via, dev, src, tuple(h[0] for h in rest),
                              tuple(h[1] for h in rest)))


def route(graph: Graph) -> None:
    """Every node's routes (and, with IPv6, the same routes in IPv6: ipv6.relabel)."""
    if graph.engine == "frr":
        ospf(graph)
    else:
        fast = family.of(graph.family).route
        (fast or generic)(graph)
    if graph.v6:
        from . import ipv6
        ipv6.relabel(graph)
