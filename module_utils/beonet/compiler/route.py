"""Stage 4: static routing tables.

Two policies, one contract (shortest IP-hop paths, one prefix per remote
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

Every route carries ``src`` = the node's address, so replies and ICMP errors
always come back to an address the whole cluster routes.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass

from .model import ON_LINK, Adjacency, Graph, Interface, Node, Route, RouteTable, mask

Candidate = tuple[int, str]                     # (neighbour index, segment name)
Request = tuple[str, tuple[Candidate, ...]]     # (segment to reach, the candidates towards it)


def _iface_on(graph: Graph) -> dict[tuple[int, str], Interface]:
    """(node index, segment name) -> Interface."""
    out = {}
    for seg in graph.segments:
        if seg.routed:
            for node, iface, _host in seg.members:
                out[node.index, seg.name] = iface
    return out


def _spread(requests: dict[Request, list[tuple[int, list[Candidate]]]]
            ) -> dict[tuple[int, Request], Candidate]:
    """requests: {key: [(source index, candidates)]} -> {(source, key): candidate}.

    Sources that share a choice are ranked and dealt round-robin over the
    candidates, so each gateway carries an equal share of the sources."""
    out = {}
    for key, items in requests.items():
        items.sort(key=lambda t: t[0])
        for rank, (src, cands) in enumerate(items):
            out[src, key] = cands[rank % len(cands)]
    return out


def generic(graph: Graph) -> None:
    """Segment routes by multi-source BFS, then host routes where those are longer than shortest."""
    nodes = graph.nodes
    adj = graph.neighbours()
    on = _iface_on(graph)
    # Route to the segments that hold some node's address (what names resolve
    # to); other interface addresses are reachable from their own segment only.
    homes = {node.home.segment.name for node in nodes}
    segs = [s for s in graph.routed_segments() if s.name in homes]
    requests: dict[Request, list[tuple[int, list[Candidate]]]] = defaultdict(list)
    for seg in segs:
        members = {m[0].index for m in seg.members}
        dist = graph.distances(members, adj)
        for x in nodes:
            if x.index in members:
                continue
            want = dist[x.index] - 1
            cands = sorted({(n, s.name) for n, s in adj[x.index] if dist[n] == want})
            requests[seg.name, tuple(cands)].append((x.index, cands))
    chosen = _spread(requests)
    seg_by_name = {s.name: s for s in segs}
    for (xi, key), (n, via_seg) in sorted(chosen.items(), key=lambda kv: kv[0][0]):
        seg = seg_by_name[key[0]]
        x = nodes[xi]
        x.routes.append(Route(seg.net, seg.plen, on[n, via_seg].addresses[0],
                              on[xi, via_seg].name, x.address))
    _host_routes(graph, adj, on)
    _finish(graph)


def tables_for(graph: Graph, owner: dict[int, int] | None = None) -> list[RouteTable]:
    """RouteTable per node: connected networks first, then its static routes.
    owner: interface address -> node index (computed when not given)."""
    owner = owner if owner is not None else owners(graph)
    tables = []
    for node in graph.nodes:
        t = RouteTable.connected(node)
        for r in node.routes:
            t.add(r.net, r.plen, (owner[r.via], r.src))
        tables.append(t)
    return tables


def owners(graph: Graph) -> dict[int, int]:
    """Interface address -> index of the node that holds it."""
    return {a: node.index for a, node in graph.owners().items()}


def _host_routes(graph: Graph, adj: Adjacency, on: dict[tuple[int, str], Interface]) -> None:
    """Host routes for the destinations a node's segment routes reach in more
    hops than the shortest path (nearest sources first, so each walk sees the
    host routes the nodes behind it already got)."""
    nodes = graph.nodes
    owner = owners(graph)
    tables = tables_for(graph, owner)

    def walk(start: int, addr: int, target: int, limit: int) -> int:
        hops, cur = 0, start
        while cur != target and hops <= limit:
            entry = tables[cur].lookup(addr)
            if entry is None:
                return limit + 1
            hops += 1
            cur = target if entry[0] == ON_LINK else entry[0]
        return hops

    for dest in nodes:
        addr = dest.address
        dist = graph.distances([dest.index], adj)
        for x in sorted(nodes, key=lambda n: dist[n.index]):
            d = dist[x.index]
            if d < 1 or walk(x.index, addr, dest.index, d) <= d:
                continue
            cands = sorted({(n, s.name) for n, s in adj[x.index] if dist[n] == d - 1})
            n, seg = cands[x.index % len(cands)]
            via = on[n, seg].addresses[0]
            x.routes.append(Route(addr, 32, via, on[x.index, seg].name, x.address))
            tables[x.index].add(addr, 32, (n, x.address))


def _finish(graph: Graph) -> None:
    """Sort each table; turn forwarding on at every node that some route uses
    as next hop for a node address other than the next hop's own (and that no
    more specific route or connected network of the same table takes)."""
    owner = graph.owners()
    addresses = sorted(n.address for n in graph.nodes)
    for node in graph.nodes:
        node.routes.sort(key=lambda r: (r.net, r.plen))
        table = None
        for r in node.routes:
            via = owner[r.via]
            if via.forwarding:
                continue
            if table is None:
                table = {(x.net, x.plen) for x in node.routes}
                table.update((i.segment.net, i.segment.plen) for i in node.interfaces
                             if i.addresses)
                plens = sorted({p for _net, p in table}, reverse=True)
            lo = bisect_left(addresses, r.net)
            hi = bisect_right(addresses, r.net + (1 << (32 - r.plen)) - 1)
            for a in addresses[lo:hi]:
                if a == via.address or any((a & mask(p), p) in table
                                           for p in plens if p > r.plen):
                    continue
                via.forwarding = True
                break


Peer = tuple[Node, Interface, Interface]     # (peer node, own NIC, peer's NIC)


@dataclass(slots=True)
class _MetaGraph:
    """What the meta-graph routing rule reads of the graph."""

    groups: list[list[Node]]                            # group -> its nodes
    group_net: dict[int, tuple[int, int]]               # group -> (net, plen) of its LAN
    peers: list[dict[int, list[Peer]]]                  # node -> {remote group: peers}, in link order
    linked: dict[tuple[int, int], list[tuple[Node, Node]]]  # (g, h) -> [(node of g, node of h)]
    lan_dev: list[str]                                  # node -> its NIC on the group's LAN
    routes: list[list[Route]]                           # node -> routes, as they are made
    gate_of: list[list[int | None]]                     # [source][h] -> gateway node, when used
    covered: dict[tuple[int, int, int], set[int]]       # (g, h, gateway) -> nodes of h within 2 hops


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
    return _MetaGraph(groups, group_net, peers, linked, lan_dev, [[] for _node in range(n)],
                      [[None] * L for _node in range(n)], {})


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
        out.append((gw, gw.address, hosts))
    return out


def _group_routes(mg: _MetaGraph, g: int, h: int) -> None:
    """Routes of every node of g to group h: through its own peer in h when it
    has one (host routes for further peers in h), else through a gateway of its
    group, gateways dealt round-robin by source."""
    net, plen = mg.group_net[h]
    gateways = _gateways(mg, g, h)
    rank = 0
    for x in mg.groups[g]:
        xi, src = x.index, x.address
        out = mg.routes[xi]
        own = mg.peers[xi].get(h)
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
        out.append(Route(net, plen, gw_addr, dev, src))
        for z_addr, w_addr in hosts:
            out.append(Route(z_addr, 32, w_addr, dev, src))


def _peer_shortcuts(graph: Graph, mg: _MetaGraph) -> None:
    """Nodes of a group this node is not linked to but one of its peers is:
    2 hops through that peer instead of 3 through the gateway."""
    for x in graph.nodes:
        xi, g = x.index, x.group
        added = set()
        for lst in mg.peers[xi].values():
            for k, xif, kif in lst:
                for h, zs in mg.peers[k.index].items():
                    gw = mg.gate_of[xi][h]
                    if h == g or gw is None:
                        continue
                    done = mg.covered[_group(x), h, gw]
                    for z, _own, _theirs in zs:
                        if z.index not in done and z.index not in added:
                            added.add(z.index)
                            mg.routes[xi].append(Route(z.address, 32, kif.addresses[0],
                                                       xif.name, x.address))


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


def route(graph: Graph) -> None:
    if graph.family == "metagraph":
        metagraph(graph)
    else:
        generic(graph)
