"""The one graph model every family is normalised into.

Nodes carry interfaces; segments are IP networks (a LAN or a point-to-point
link) or layer-2 channels under a bond. Addresses are kept as integers inside
the compiler (the hot loops of large graphs) and rendered as text at the end.
"""

import socket
import struct
from collections import deque
from functools import cache

_pack = struct.Struct("!I").pack
_unpack = struct.Struct("!I").unpack


@cache
def ip_text(value):
    return socket.inet_ntoa(_pack(value))


def ip_int(text):
    return _unpack(socket.inet_aton(text))[0]


def mask(plen):
    return (0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF


@cache
def net_text(net, plen):
    return "%s/%d" % (ip_text(net), plen)


def parse_net(text):
    addr, _, plen = text.partition("/")
    return ip_int(addr), int(plen)


class Interface:
    __slots__ = ("name", "kind", "segment", "addresses", "rate_mbit", "mtu",
                 "members", "bond", "mode", "miimon", "tso", "peer")

    def __init__(self, name, kind, segment):
        self.name = name
        self.kind = kind            # "ethernet" or "bond"
        self.segment = segment      # Segment this NIC or bond sits on
        self.addresses = []         # host addresses (int); prefix from segment
        self.rate_mbit = None
        self.mtu = None
        self.members = []           # bond: member interface names
        self.bond = None            # ethernet under a bond: the bond's name
        self.mode = None
        self.miimon = None
        self.tso = None             # bond: False = TCP segmentation offload off
        self.peer = None            # p2p: (node name, interface name) at the other end


class Node:
    __slots__ = ("name", "index", "hostid", "group", "member", "coords",
                 "interfaces", "primary", "routes", "forwarding", "switch")

    def __init__(self, name, index, hostid):
        self.name = name
        self.index = index          # 0-based position in the plan
        self.hostid = hostid        # stable host number used in addresses
        self.group = None           # metagraph group
        self.member = None          # metagraph member within the group
        self.coords = None          # mesh coordinates
        self.switch = None          # tree: leaf switch name
        self.interfaces = []
        self.primary = None         # Interface carrying the node's address
        self.routes = []            # Route objects
        self.forwarding = False

    def iface(self, name):
        for i in self.interfaces:
            if i.name == name:
                return i
        return None

    @property
    def address(self):
        return self.primary.addresses[0]


class Segment:
    __slots__ = ("name", "kind", "members", "rate_mbit", "mtu", "net", "plen",
                 "prefix_fixed", "pool_slot", "channel_of", "groups")

    def __init__(self, name, kind, rate_mbit, mtu):
        self.name = name
        self.kind = kind            # "lan", "p2p" or "channel" (layer 2 under bonds)
        self.members = []           # [(Node, Interface, host number)]
        self.rate_mbit = rate_mbit
        self.mtu = mtu
        self.net = None             # network address (int), None for channels
        self.plen = None
        self.prefix_fixed = None    # (net, plen) given in the topology
        self.pool_slot = None       # stable slot number in its pool
        self.channel_of = None      # channel: the IP segment its bonds carry
        self.groups = None          # metagraph p2p: (g, h)

    @property
    def routed(self):
        return self.kind != "channel"

    def prefix_text(self):
        return net_text(self.net, self.plen) if self.net is not None else None


class Route:
    __slots__ = ("net", "plen", "via", "dev", "src")

    def __init__(self, net, plen, via, dev, src):
        self.net, self.plen, self.via, self.dev, self.src = net, plen, via, dev, src


class Switch:
    __slots__ = ("name", "level", "parent", "children", "nodes", "uplink_mbit",
                 "downlink_mbit")

    def __init__(self, name, level):
        self.name = name
        self.level = level          # 0 = root
        self.parent = None
        self.children = []
        self.nodes = []
        self.uplink_mbit = None
        self.downlink_mbit = None


class Graph:
    """Nodes, segments and, for trees, the switch hierarchy."""

    def __init__(self, name, family):
        self.name = name
        self.family = family
        self.nodes = []
        self.by_name = {}
        self.segments = []
        self.switches = []          # tree family only (root first)
        self.management = "eth0"
        self.params = {}            # family parameters kept for metrics
        self.notes = []             # facts the compiler wants in the metrics

    def add_node(self, node):
        self.nodes.append(node)
        self.by_name[node.name] = node

    def routed_segments(self):
        return [s for s in self.segments if s.routed]

    def owners(self):
        """Interface address (int) -> Node that holds it."""
        out = {}
        for seg in self.segments:
            if seg.routed:
                for node, iface, _ in seg.members:
                    for a in iface.addresses:
                        out[a] = node
        return out

    def neighbours(self):
        """node index -> list of (neighbour index, segment), over IP segments."""
        adj = [[] for _ in self.nodes]
        for seg in self.segments:
            if not seg.routed:
                continue
            idx = [m[0].index for m in seg.members]
            for a in idx:
                for b in idx:
                    if a != b:
                        adj[a].append((b, seg))
        return adj

    def distances(self, sources, adj=None):
        """IP-hop distance from a set of node indexes to every node (BFS)."""
        adj = adj if adj is not None else self.neighbours()
        dist = [-1] * len(self.nodes)
        queue = deque()
        for s in sources:
            dist[s] = 0
            queue.append(s)
        while queue:
            a = queue.popleft()
            for b, _ in adj[a]:
                if dist[b] < 0:
                    dist[b] = dist[a] + 1
                    queue.append(b)
        return dist


class RouteTable:
    """Longest-prefix-match table of one node: connected networks + static routes."""

    __slots__ = ("by_len", "order")

    def __init__(self):
        self.by_len = {}
        self.order = []             # [(plen, netmask, bucket)], longest first

    def add(self, net, plen, entry):
        bucket = self.by_len.get(plen)
        if bucket is None:
            bucket = self.by_len[plen] = {}
            self.order = [(p, mask(p), self.by_len[p]) for p in sorted(self.by_len, reverse=True)]
        bucket.setdefault(net, entry)

    def lookup(self, addr, below=33):
        """Longest match for addr among prefixes shorter than `below`."""
        for plen, netmask, bucket in self.order:
            if plen < below:
                entry = bucket.get(addr & netmask)
                if entry is not None:
                    return entry
        return None
