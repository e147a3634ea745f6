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

from bisect import bisect_left, bisect_right
from collections import defaultdict

from .model import Route, RouteTable, mask


def _iface_on(graph):
    """(node index, segment name) -> Interface."""
    out = {}
    for seg in graph.segments:
        if seg.routed:
            for node, iface, _ in seg.members:
                out[node.index, seg.name] = iface
    return out


def _spread(requests):
    """requests: {key: [(source index, candidates)]} -> {(source, key): candidate}.

    Sources that share a choice are ranked and dealt round-robin over the
    candidates, so each gateway carries an equal share of the sources."""
    out = {}
    for key, items in requests.items():
        items.sort(key=lambda t: t[0])
        for rank, (src, cands) in enumerate(items):
            out[src, key] = cands[rank % len(cands)]
    return out


def generic(graph):
    nodes = graph.nodes
    adj = graph.neighbours()
    on = _iface_on(graph)
    # Route to the segments that hold some node's address (what names resolve
    # to); other interface addresses are reachable from their own segment only.
    homes = {node.primary.segment.name for node in nodes}
    segs = [s for s in graph.routed_segments() if s.name in homes]
    requests = defaultdict(list)
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


def tables_for(graph):
    """RouteTable per node: connected networks first, then its static routes.

    An entry is (kind, target, source address): ("link", segment name, the
    node's address on it) or ("via", next-hop address, the route's src)."""
    tables = []
    for node in graph.nodes:
        t = RouteTable()
        for iface in node.interfaces:
            if iface.addresses:
                seg = iface.segment
                t.add(seg.net, seg.plen, ("link", seg.name, iface.addresses[0]))
        for r in node.routes:
            t.add(r.net, r.plen, ("via", r.via, r.src))
        tables.append(t)
    return tables


def _host_routes(graph, adj, on):
    nodes = graph.nodes
    owner = {a: node.index for a, node in graph.owners().items()}
    tables = tables_for(graph)

    def walk(start, addr, target, limit):
        hops, cur = 0, start
        while cur != target and hops <= limit:
            entry = tables[cur].lookup(addr)
            if entry is None:
                return limit + 1
            hops += 1
            cur = target if entry[0] == "link" else owner[entry[1]]
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
            tables[x.index].add(addr, 32, ("via", via, x.address))


def _finish(graph):
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
                plens = sorted({p for _, p in table}, reverse=True)
            lo = bisect_left(addresses, r.net)
            hi = bisect_right(addresses, r.net + (1 << (32 - r.plen)) - 1)
            for a in addresses[lo:hi]:
                if a == via.address or any((a & mask(p), p) in table
                                           for p in plens if p > r.plen):
                    continue
                via.forwarding = True
                break


def metagraph(graph):
    L = graph.params["groups"]
    groups = [[] for _ in range(L)]
    for n in graph.nodes:
        groups[n.group].append(n)
    group_net = {}
    for seg in graph.segments:
        if seg.kind == "lan":
            group_net[int(seg.name[5:])] = (seg.net, seg.plen)
    # peers[x] = {h: [(peer node, x iface, peer iface)]}, in link order
    peers = [defaultdict(list) for _ in graph.nodes]
    linked = defaultdict(list)  # (g, h) -> [(local node, remote node)]
    for seg in graph.segments:
        if seg.kind != "p2p":
            continue
        (a, ia, _), (b, ib, _) = seg.members
        peers[a.index][b.group].append((b, ia, ib))
        peers[b.index][a.group].append((a, ib, ia))
        linked[a.group, b.group].append((a, b))
        linked[b.group, a.group].append((b, a))
    n = len(graph.nodes)
    routes = [[] for _ in range(n)]
    lan_dev = [x.primary.name for x in graph.nodes]
    src = [x.address for x in graph.nodes]
    gate_of = [[None] * L for _ in range(n)]    # [source][h] -> gateway node, when used
    covered = {}                                # (g, h, gateway) -> nodes of h within 2 hops
    for g in range(L):
        for h in range(L):
            if h == g:
                continue
            net, plen = group_net[h]
            gates = []
            for w, _ in linked[g, h]:
                if w not in gates:
                    gates.append(w)
            # Per gateway: the group route through it, and host routes to the
            # nodes of h linked to this group that its route would take 3 hops
            # to reach (its own peers are 2 hops either way).
            extra = []
            for gw in gates:
                done = {p.index for p, _, _ in peers[gw.index][h]}
                hosts = []
                for w, z in linked[g, h]:
                    if z.index not in done:
                        done.add(z.index)
                        hosts.append((z.address, w.primary.addresses[0]))
                covered[g, h, gw.index] = done
                extra.append((gw, gw.primary.addresses[0], hosts))
            rank = 0
            for x in groups[g]:
                xi = x.index
                own = peers[xi].get(h)
                if own:
                    first, xif, pif = own[0]
                    routes[xi].append(Route(net, plen, pif.addresses[0], xif.name, src[xi]))
                    seen = {first.index}
                    for p, xif, pif in own[1:]:
                        if p.index not in seen:     # a second direct peer in h: 1 hop, not 2
                            seen.add(p.index)
                            routes[xi].append(Route(p.address, 32, pif.addresses[0], xif.name,
                                                    src[xi]))
                    continue
                gw, gw_addr, hosts = extra[rank % len(extra)]   # spread by source
                rank += 1
                gate_of[xi][h] = gw.index
                dev, s = lan_dev[xi], src[xi]
                out = routes[xi]
                out.append(Route(net, plen, gw_addr, dev, s))
                for z_addr, w_addr in hosts:
                    out.append(Route(z_addr, 32, w_addr, dev, s))
    # Nodes of a group this node is not linked to but one of its peers is:
    # 2 hops through that peer instead of 3 through the gateway.
    for x in graph.nodes:
        xi, g = x.index, x.group
        added = set()
        for lst in peers[xi].values():
            for k, xif, kif in lst:
                for h, zs in peers[k.index].items():
                    gw = gate_of[xi][h]
                    if h == g or gw is None:
                        continue
                    done = covered[g, h, gw]
                    for z, _, _ in zs:
                        if z.index not in done and z.index not in added:
                            added.add(z.index)
                            routes[xi].append(Route(z.address, 32, kif.addresses[0],
                                                    xif.name, src[xi]))
    for x in graph.nodes:
        x.routes = routes[x.index]
    _finish(graph)


def route(graph):
    if graph.family == "metagraph":
        metagraph(graph)
    else:
        generic(graph)


