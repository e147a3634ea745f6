"""Stage 5: prove the routing tables by walking them.

For every ordered pair (source node, destination node's address) the walk
does a longest-prefix match hop by hop and fails on a missing route, a
gateway that is not on a connected network, a loop, a node that would have
to forward with forwarding off, or a path longer than the shortest one. It
also fails when a node has forwarding on but forwards for no pair.

Scaling: destinations whose address matches the same prefix at every node
form one class (a remote group, or one host route), and one walk per class
settles all sources at once, memoising each node's distance to the exit.
The cost is O(nodes x classes) lookups, not O(nodes^2 x hops): the 4,656-node
meta-graph has 97 classes. Shortest-path lengths come from a BFS per source
for generic graphs and from the meta-graph's structure (distance 1, 2 or 3)
for meta-graphs; per-source sums are compared, and since no walk can be
shorter than the shortest path, equal sums mean every path is shortest.
"""

from collections import Counter, defaultdict

from .errors import Problems
from .model import RouteTable, ip_text, mask, net_text


class Proof:
    def __init__(self):
        self.hops = Counter()           # hop count -> ordered pairs
        self.forwarded = Counter()      # node index -> pairs forwarded
        self.pairs = 0


def owners(graph):
    """Interface address -> node index."""
    return {a: node.index for a, node in graph.owners().items()}


def _classes(graph, tables):
    """Group destination nodes by the prefixes (shorter than /32) that match
    their address anywhere; host routes are applied afterwards as corrections."""
    prefixes = defaultdict(set)
    for t in tables:
        for plen, bucket in t.by_len.items():
            if plen < 32:
                prefixes[plen].update(bucket)
    lens = sorted(prefixes, reverse=True)
    classes = defaultdict(list)
    for node in graph.nodes:
        a = node.address
        sig = tuple((plen, a & mask(plen)) for plen in lens if (a & mask(plen)) in prefixes[plen])
        classes[sig].append(node.index)
    return sorted(classes.items())


def checked_tables(graph, owner, problems):
    """Route tables with every gateway resolved to its node, checking on the way
    that the gateway sits on the network of the route's device and that the
    source address is the node's own. Entries: ("link", segment, own address,
    -1) or ("via", gateway, src, next node index)."""
    tables = []
    for node in graph.nodes:
        t = RouteTable()
        dev_net = {}
        mine = set()
        for iface in node.interfaces:
            if iface.addresses:
                seg = iface.segment
                dev_net[iface.name] = (seg.net, mask(seg.plen))
                mine.update(iface.addresses)
                t.add(seg.net, seg.plen, ("link", seg.name, iface.addresses[0], -1))
        for r in node.routes:
            net = dev_net.get(r.dev)
            where = "nodes.%s.routes" % node.name
            if net is None:
                problems.add(where, "route to %s uses %s, which has no address"
                             % (net_text(r.net, r.plen), r.dev))
            elif (r.via & net[1]) != net[0] or r.via not in owner:
                problems.add(where, "gateway %s for %s is not a neighbour on %s"
                             % (ip_text(r.via), net_text(r.net, r.plen), r.dev))
            elif r.src not in mine:
                problems.add(where, "src %s of the route to %s is not the node's own"
                             % (ip_text(r.src), net_text(r.net, r.plen)))
            else:
                t.add(r.net, r.plen, ("via", r.via, r.src, owner[r.via]))
        tables.append(t)
    return tables


class _Walker:
    def __init__(self, graph, tables, owner, problems):
        self.nodes = graph.nodes
        self.tables = tables
        self.owner = owner
        self.problems = problems

    def step(self, i, addr, below=33):
        """Next node index from node i towards addr; -1 when addr is on-link."""
        entry = self.tables[i].lookup(addr, below)
        if entry is None:
            self.problems.add("nodes.%s.routes" % self.nodes[i].name,
                              "no route to %s" % ip_text(addr))
            return None
        return entry[3]

    def path(self, i, addr, dest):
        """Intermediate nodes from i to node dest's address (host routes applied)."""
        out = []
        cur = i
        while True:
            nxt = self.step(cur, addr)
            if nxt is None:
                return None
            if nxt == -1 or nxt == dest:
                if nxt == -1 and cur != i:
                    out.append(cur)
                if nxt == dest and cur != i:
                    out.append(cur)
                return out
            if cur != i:
                out.append(cur)
            cur = nxt
            if len(out) > len(self.nodes):
                self.problems.add("nodes.%s.routes" % self.nodes[i].name,
                                  "routing loop towards %s" % ip_text(addr))
                return None


def prove(graph):
    problems = Problems()
    problems.stage = "prove"
    nodes = graph.nodes
    n = len(nodes)
    owner = owners(graph)
    tables = checked_tables(graph, owner, problems)
    if problems:
        return None, problems
    walker = _Walker(graph, tables, owner, problems)
    hosts = defaultdict(list)           # address -> nodes holding a /32 route for it
    for i, t in enumerate(tables):
        for a in t.by_len.get(32, ()):
            hosts[a].append(i)
    proof = Proof()
    sums = [0] * n
    hops = defaultdict(int)
    forwarded = [0] * n
    for sig, dests in _classes(graph, tables):
        rep = nodes[dests[0]].address
        # Next hop of every node for this class: the longest of the class's
        # prefixes (all of those that contain its addresses) in the node's table.
        nxt = [None] * n
        for i in range(n):
            by_len = tables[i].by_len
            entry = None
            for plen, net in sig:
                bucket = by_len.get(plen)
                if bucket is not None:
                    entry = bucket.get(net)
                    if entry is not None:
                        break
            if entry is None:
                problems.add("nodes.%s.routes" % nodes[i].name, "no route to %s (%s)"
                             % (ip_text(rep), nodes[dests[0]].name))
            else:
                nxt[i] = entry[3]
        if problems:
            return None, problems
        steps = [-1] * n
        exit_ = [-1] * n
        for i in range(n):
            chain = []
            cur = i
            while steps[cur] < 0 and nxt[cur] != -1:
                chain.append(cur)
                cur = nxt[cur]
                if len(chain) > n:
                    names = " -> ".join(nodes[c].name for c in chain[-6:])
                    problems.add("nodes.%s.routes" % nodes[i].name,
                                 "routing loop towards %s: %s" % (ip_text(rep), names))
                    return None, problems
            if nxt[cur] == -1 and steps[cur] < 0:
                steps[cur], exit_[cur] = 0, cur
            for c in reversed(chain):
                steps[c] = steps[nxt[c]] + 1
                exit_[c] = exit_[nxt[c]]
        in_class = set(dests)
        size = len(dests)
        through = [1] * n
        rev = defaultdict(list)
        layers = defaultdict(list)
        for i in range(n):
            layers[steps[i]].append(i)
        for depth in sorted(layers, reverse=True):
            for i in layers[depth]:
                j = nxt[i]
                if j >= 0:
                    through[j] += through[i]
                    rev[j].append(i)
        for i in range(n):
            # pairs (i -> d) for every d of the class except i itself
            st = steps[i]
            if i in in_class:
                far, at_exit, mine = size - 1, 0, 1
            else:
                at_exit = 1 if exit_[i] in in_class else 0
                far, mine = size - at_exit, 0
            if far:
                hops[st + 1] += far
            if at_exit:
                hops[st] += at_exit
            sums[i] += far * (st + 1) + at_exit * st
            proof.pairs += far + at_exit
            if through[i] > 1:
                forwarded[i] += (through[i] - 1) * (size - mine)
        # Host routes: only sources upstream of a node holding one can differ.
        for d in dests:
            holders = hosts.get(nodes[d].address)
            if not holders:
                continue
            addr = nodes[d].address
            todo = list(holders)
            seen = set(todo)
            while todo:
                m = todo.pop()
                for up in rev.get(m, ()):
                    if up not in seen:
                        seen.add(up)
                        todo.append(up)
            for i in sorted(seen):
                if i == d:
                    continue
                old = []
                cur = i
                while nxt[cur] >= 0 and nxt[cur] != d:
                    cur = nxt[cur]
                    old.append(cur)
                new = walker.path(i, addr, d)
                if new is None:
                    return None, problems
                old_hops = steps[i] + (0 if exit_[i] == d else 1)
                new_hops = len(new) + 1
                hops[old_hops] -= 1
                hops[new_hops] += 1
                sums[i] += new_hops - old_hops
                for k in old:
                    if k != d:
                        forwarded[k] -= 1
                for k in new:
                    forwarded[k] += 1
    proof.hops.update(hops)
    proof.forwarded.update({i: f for i, f in enumerate(forwarded) if f})
    for i in range(n):
        if proof.forwarded[i] and not nodes[i].forwarding:
            problems.add("nodes.%s.forwarding" % nodes[i].name,
                         "off, but %d pairs pass through the node" % proof.forwarded[i])
    proof.hops = Counter({k: v for k, v in proof.hops.items() if v})
    for node in nodes:
        if node.forwarding and not proof.forwarded[node.index]:
            problems.add("nodes.%s.forwarding" % node.name, "on, but the node forwards for no pair")
    shortest = shortest_sums(graph)
    for node in nodes:
        if sums[node.index] != shortest[node.index]:
            problems.add("nodes.%s.routes" % node.name,
                         "paths are not shortest: %d hops to all others, shortest is %d"
                         % (sums[node.index], shortest[node.index]))
    return (None if problems else proof), problems


def shortest_sums(graph):
    """Sum over destinations of the shortest IP-hop distance, per source."""
    if graph.family == "metagraph":
        return _metagraph_sums(graph)
    adj = graph.neighbours()
    out = []
    for node in graph.nodes:
        out.append(sum(graph.distances([node.index], adj)))
    return out


def _metagraph_sums(graph):
    """Distances in a meta-graph are 1 (same group, or a direct peer), 2 (a
    peer in the destination's group, a peer of the destination in the source's
    group, or a common peer), or 3 (gateway, link, remote LAN)."""
    P = graph.params["nodes_per_group"]
    peers = defaultdict(set)
    for seg in graph.segments:
        if seg.kind == "p2p":
            (a, _, _), (b, _, _) = seg.members
            peers[a.index].add(b.index)
            peers[b.index].add(a.index)
    group = [node.group for node in graph.nodes]
    into = defaultdict(set)             # group -> remote nodes linked to it
    for node in graph.nodes:
        for p in peers[node.index]:
            into[node.group].add(p)
    n = len(graph.nodes)
    out = []
    for node in graph.nodes:
        x, g = node.index, node.group
        one = {p for p in peers[x] if group[p] != g}
        covered = {group[p] for p in one}
        two_extra = set()
        for z in into[g]:
            if group[z] not in covered:
                two_extra.add(z)
        for k in one:
            for z in peers[k]:
                if group[z] != g and group[z] not in covered:
                    two_extra.add(z)
        two = len(covered) * P - len(one) + len(two_extra)
        remote = n - P
        three = remote - len(one) - two
        out.append((P - 1) + len(one) + 2 * two + 3 * three)
    return out


def expected_path(graph, tables, owner, src, dst):
    """Hops of `traceroute -n` from node src to dst's address: one address per
    hop, as the hop's ICMP reply is sourced (the route back to the sender)."""
    nodes = graph.nodes
    target = nodes[dst].address
    first = tables[src].lookup(target)
    if first is None:
        return None
    sender = first[2]
    hops = []
    cur = src
    for _ in range(len(nodes) + 1):
        entry = tables[cur].lookup(target)
        if entry is None:
            return None
        if entry[0] == "link":
            hops.append({"node": nodes[dst].name, "address": ip_text(target)})
            return hops
        cur = owner[entry[1]]
        if cur == dst:
            hops.append({"node": nodes[dst].name, "address": ip_text(target)})
            return hops
        back = tables[cur].lookup(sender)
        hops.append({"node": nodes[cur].name,
                     "address": ip_text(back[2]) if back else "*"})
    return None


__all__ = ["prove", "expected_path", "Proof", "shortest_sums"]
