"""The one graph model every family is normalised into.

Nodes carry interfaces; segments are IP networks (a LAN or a point-to-point
link) or layer-2 channels under a bond. Addresses are kept as integers inside
the compiler (the hot loops of large graphs) and rendered as text at the end.

The classes are plain classes with __slots__ compared by identity: a node is
itself, not its field values, wherever it is looked up or collected (and a
compile that creates no dataclass starts faster).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from .records import replaced

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

UNASSIGNED = -1                     # Segment.net before the address stage (and of channels)


@cache
def ip_text(value: int) -> str:
    """An IPv4 address (a 32-bit number) in dotted-quad text."""
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError("not an IPv4 address: %r" % value)
    return "%d.%d.%d.%d" % (value >> 24, value >> 16 & 255, value >> 8 & 255, value & 255)


def ip_int(text: str) -> int:
    """The address as a number, read as inet_aton(3) reads it; ValueError for text that
    is none (never OSError, which the command line reads as a file it could not write)."""
    parts = text.split(".")
    if len(parts) == 4 and all(p in _DECIMAL_OCTET for p in parts):
        a, b, c, d = map(_DECIMAL_OCTET.__getitem__, parts)
        return a << 24 | b << 16 | c << 8 | d
    # other spellings (octal, hexadecimal, fewer parts): the C library's reading
    import socket
    try:
        packed = socket.inet_aton(text)
    except OSError:
        raise ValueError("not an IPv4 address: %r" % text) from None
    return int.from_bytes(packed, "big")


# "0" to "255" in plain decimal (no sign, no leading zero: inet_aton reads 010 as octal)
_DECIMAL_OCTET = {str(k): k for k in range(256)}


def mask(plen: int) -> int:
    return (0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF


@cache
def ip6_text(value: int) -> str:
    """An IPv6 address (a 128-bit number) in its RFC 5952 text."""
    import socket
    return socket.inet_ntop(socket.AF_INET6, value.to_bytes(16, "big"))


def ip6_int(text: str) -> int:
    """The IPv6 address as a number; ValueError for text that is none."""
    import socket
    try:
        return int.from_bytes(socket.inet_pton(socket.AF_INET6, text), "big")
    except OSError:
        raise ValueError("not an IPv6 address: %r" % text) from None


@cache
def net6_text(net: int, plen: int) -> str:
    return "%s/%d" % (ip6_text(net), plen)


@cache
def net_text(net: int, plen: int) -> str:
    return "%s/%d" % (ip_text(net), plen)


def parse_net(text: str) -> tuple[int, int]:
    addr, _slash, plen = text.partition("/")
    return ip_int(addr), int(plen)


class Interface:
    """A NIC or a bond of one node."""

    __slots__ = ("name", "kind", "segment", "addresses", "rate_mbit", "mtu", "members", "bond", "mode",
                 "miimon", "tso", "peer", "mac", "addresses6")

    name: str
    kind: str                       # "ethernet" or "bond"
    segment: Segment                # Segment this NIC or bond sits on
    addresses: list[int]            # host addresses; prefix from segment
    rate_mbit: int
    mtu: int
    members: list[str]              # bond: member interface names
    bond: str | None                # ethernet under a bond: the bond's name
    mode: str | None                # bond: the kernel bonding mode
    miimon: int | None              # bond: link monitoring interval (ms)
    tso: bool | None                # bond: False = TCP segmentation offload off
    peer: tuple[str, str] | None    # p2p: (node name, interface name) at the other end
    mac: str | None                 # bond: the MAC address the address stage gives it
    addresses6: list[int]           # IPv6 host addresses; prefix from segment

    def __init__(self, name: str, kind: str, segment: Segment, addresses: list[int] | None = None,
                 rate_mbit: int = 0, mtu: int = 0, members: list[str] | None = None,
                 bond: str | None = None, mode: str | None = None, miimon: int | None = None,
                 tso: bool | None = None, peer: tuple[str, str] | None = None, mac: str | None = None,
                 addresses6: list[int] | None = None) -> None:
        self.name = name
        self.kind = kind
        self.segment = segment
        self.addresses = [] if addresses is None else addresses
        self.rate_mbit = rate_mbit
        self.mtu = mtu
        self.members = [] if members is None else members
        self.bond = bond
        self.mode = mode
        self.miimon = miimon
        self.tso = tso
        self.peer = peer
        self.mac = mac
        self.addresses6 = [] if addresses6 is None else addresses6


class Node:
    """A cluster node: its interfaces, static routes and whether it forwards."""

    __slots__ = ("name", "index", "hostid", "group", "member", "coords", "switch", "interfaces",
                 "primary", "routes", "forwarding", "loopback", "loopback6", "routes6")

    name: str
    index: int                      # 0-based position in the plan
    hostid: int                     # stable host number used in addresses
    group: int | None               # metagraph group
    member: int | None              # metagraph member within the group
    coords: tuple[int, ...] | None  # mesh coordinates
    switch: str | None              # tree: leaf switch name
    interfaces: list[Interface]
    primary: Interface | None       # Interface carrying the node's address
    routes: list[Route]
    forwarding: bool
    loopback: int | None            # routing.engine frr: the node's /32 on lo, its address
    loopback6: int | None           # routing.engine frr with IPv6: the node's /128 on lo
    routes6: list[Route]            # IPv6: the routes, relabelled (ipv6.py)

    def __init__(self, name: str, index: int, hostid: int, group: int | None = None,
                 member: int | None = None, coords: tuple[int, ...] | None = None,
                 switch: str | None = None, interfaces: list[Interface] | None = None,
                 primary: Interface | None = None, routes: list[Route] | None = None,
                 forwarding: bool = False, loopback: int | None = None, loopback6: int | None = None,
                 routes6: list[Route] | None = None) -> None:
        self.name = name
        self.index = index
        self.hostid = hostid
        self.group = group
        self.member = member
        self.coords = coords
        self.switch = switch
        self.interfaces = [] if interfaces is None else interfaces
        self.primary = primary
        self.routes = [] if routes is None else routes
        self.forwarding = forwarding
        self.loopback = loopback
        self.loopback6 = loopback6
        self.routes6 = [] if routes6 is None else routes6

    def iface(self, name: str) -> Interface | None:
        for i in self.interfaces:
            if i.name == name:
                return i
        return None

    @property
    def home(self) -> Interface:
        """The interface carrying the node's address."""
        if self.primary is None:
            raise AssertionError("node %s is on no segment" % self.name)
        return self.primary

    @property
    def address(self) -> int:
        """The node's address: its loopback with routing.engine frr, else its home NIC's."""
        if self.loopback is not None:
            return self.loopback
        primary = self.primary          # self.home, without a second property call
        if primary is None:
            raise AssertionError("node %s is on no segment" % self.name)
        return primary.addresses[0]

    @property
    def address6(self) -> int:
        """The node's IPv6 address: its IPv6 loopback with routing.engine frr, else its home NIC's."""
        if self.loopback6 is not None:
            return self.loopback6
        return self.home.addresses6[0]


Member = tuple[Node, Interface, int]     # (node, its interface, host number)


class Segment:
    """An IP network (a LAN or a point-to-point link) or a layer-2 channel under bonds."""

    __slots__ = ("name", "kind", "rate_mbit", "mtu", "members", "net", "plen", "prefix_fixed",
                 "pool_slot", "pool_dim", "channel_of", "groups", "ports", "ports_key", "medium",
                 "delay_us", "net6", "plen6")

    name: str
    kind: str                       # "lan", "p2p" or "channel" (layer 2 under bonds)
    rate_mbit: int
    mtu: int
    members: list[Member]
    net: int                        # network address; channels keep UNASSIGNED
    plen: int
    prefix_fixed: str | None        # prefix given in the topology ("10.1.0.0/24")
    pool_slot: int                  # stable slot in its pool (mesh: within its dimension's block)
    pool_dim: int                   # mesh: the dimension whose block of the pool holds the slot
    channel_of: Segment | None      # channel: the IP segment its bonds carry
    groups: tuple[int, int] | None  # metagraph p2p: (g, h)
    ports: int | None               # port count of its switches (None: not given)
    ports_key: str                  # the topology key that gives `ports`
    medium: str                     # "switched", or "shared": a hub or coax, one medium for all frames
    delay_us: float | None          # one-way delay of a crossing (None: latency's default for the kind)
    net6: int                       # IPv6: the segment's network (a LAN's /64, a link's /127)
    plen6: int

    def __init__(self, name: str, kind: str, rate_mbit: int, mtu: int,
                 members: list[Member] | None = None, net: int = -1, plen: int = 0,
                 prefix_fixed: str | None = None, pool_slot: int = 0, pool_dim: int = 0,
                 channel_of: Segment | None = None, groups: tuple[int, int] | None = None,
                 ports: int | None = None, ports_key: str = 'switch.ports', medium: str = 'switched',
                 delay_us: float | None = None, net6: int = -1, plen6: int = 0) -> None:
        self.name = name
        self.kind = kind
        self.rate_mbit = rate_mbit
        self.mtu = mtu
        self.members = [] if members is None else members
        self.net = net
        self.plen = plen
        self.prefix_fixed = prefix_fixed
        self.pool_slot = pool_slot
        self.pool_dim = pool_dim
        self.channel_of = channel_of
        self.groups = groups
        self.ports = ports
        self.ports_key = ports_key
        self.medium = medium
        self.delay_us = delay_us
        self.net6 = net6
        self.plen6 = plen6

    @property
    def routed(self) -> bool:
        return self.kind != "channel"

    def prefix_text(self) -> str | None:
        return net_text(self.net, self.plen) if self.net != UNASSIGNED else None

    def prefix6_text(self) -> str | None:
        return net6_text(self.net6, self.plen6) if self.net6 != UNASSIGNED else None


class Reach:
    """A BFS from a set of nodes over Links."""

    __slots__ = ("dist", "order", "near", "nearest")

    dist: list[int]                 # node index -> IP hops from the sources, -1: unreachable
    order: list[int]                # the reached nodes, sources first, by distance
    near: list[int]                 # segment number -> hops to its nearest members, -1: unreached
    nearest: dict[int, list[int]]   # segment number -> those members

    def __init__(self, dist: list[int], order: list[int], near: list[int],
                 nearest: dict[int, list[int]] | None = None) -> None:
        self.dist = dist
        self.order = order
        self.near = near
        self.nearest = {} if nearest is None else nearest


class Links:
    """The IP graph with every segment as one vertex: a LAN of k members costs
    k entries, not a clique of k*(k-1) node pairs. Segments are numbered in
    graph order among the routed ones."""

    __slots__ = ("segments", "members", "of_node")

    segments: list[Segment]         # segment number -> routed Segment
    members: list[list[int]]        # segment number -> member node indexes
    of_node: list[tuple[int, ...]]  # node index -> its segment numbers, in graph order

    def __init__(self, segments: list[Segment], members: list[list[int]],
                 of_node: list[tuple[int, ...]]) -> None:
        self.segments = segments
        self.members = members
        self.of_node = of_node

    def towards(self, sources: Iterable[int]) -> Reach:
        """BFS from the sources; each segment is expanded once, from its nearest member."""
        members, of_node = self.members, self.of_node
        dist = [-1] * len(of_node)
        near = [-1] * len(members)
        order = list(sources)
        for s in order:
            dist[s] = 0
        start, d = 0, 0
        while start < len(order):
            end, d = len(order), d + 1
            for a in order[start:end]:
                for k in of_node[a]:
                    if near[k] < 0:
                        near[k] = d - 1
                        for b in members[k]:
                            if dist[b] < 0:
                                dist[b] = d
                                order.append(b)
            start = end
        return Reach(dist, order, near)

    def nearest(self, k: int, bfs: Reach) -> list[int]:
        """The members of segment k nearest the BFS sources."""
        at = bfs.nearest.get(k)
        if at is None:
            dist, want = bfs.dist, bfs.near[k]
            at = bfs.nearest[k] = [b for b in self.members[k] if dist[b] == want]
        return at


Ways = tuple[int, ...]          # the segments through which a node has next hops towards a BFS's sources


def ends_of_shortest(links: Links, bfs: Reach, dests: list[int]
                     ) -> tuple[list[int], dict[Ways, list[int]]]:
    """For a BFS from one segment's members: (node -> bit mask of the dests,
    by position in dests, that end some shortest path from the node to the
    segment; the nodes off the segment grouped by the segments that hold
    their next hops, in BFS order). A dest on the segment is dist hops from a
    node when its bit is set, else dist + 1. The nodes of one group have the
    same next hops (Links.nearest of each of its segments) and the same mask."""
    reach = [0] * len(bfs.dist)
    for bit, d in enumerate(dests):
        reach[d] = 1 << bit
    groups: dict[Ways, list[int]] = {}
    masks: dict[Ways, int] = {}
    dist, near, of_node = bfs.dist, bfs.near, links.of_node
    for x in bfs.order:
        dx = dist[x]
        if not dx:
            continue
        segs = of_node[x]
        ways = segs if len(segs) == 1 else tuple(k for k in segs if near[k] == dx - 1)
        group = groups.get(ways)
        if group is None:
            group = groups[ways] = []
            r = 0
            for k in ways:
                for n in links.nearest(k, bfs):
                    r |= reach[n]
            masks[ways] = r
        group.append(x)
        reach[x] = masks[ways]
    return reach, groups


class Route:
    """A static route: net/plen via a gateway on device dev, sourced from src
    (None: an IPv6 route whose device holds src alone, see ipv6.relabel).

    A multipath route also has alt_via and alt_dev: the further next hops
    (gateway address and device, same length), after the preferred one in
    via and dev. Routes of many nodes may share these tuples."""

    __slots__ = ("net", "plen", "via", "dev", "src", "alt_via", "alt_dev")

    net: int
    plen: int
    via: int
    dev: str
    src: int | None
    alt_via: tuple[int, ...]
    alt_dev: tuple[str, ...]

    def __init__(self, net: int, plen: int, via: int, dev: str, src: int | None,
                 alt_via: tuple[int, ...] = (), alt_dev: tuple[str, ...] = ()) -> None:
        self.net = net
        self.plen = plen
        self.via = via
        self.dev = dev
        self.src = src
        self.alt_via = alt_via
        self.alt_dev = alt_dev

    def nexthops(self) -> list[tuple[int, str]]:
        """(gateway, device) of every next hop, the preferred one first."""
        return [(self.via, self.dev), *zip(self.alt_via, self.alt_dev)]


class Switch:
    """A switch of a tree topology; nodes are the names of the nodes on a leaf."""

    __slots__ = ("name", "level", "parent", "children", "nodes", "uplink_mbit", "downlink_mbit")

    name: str
    level: int                      # 0 = root
    parent: Switch | None
    children: list[Switch]
    nodes: list[str]
    uplink_mbit: int | None
    downlink_mbit: int | None

    def __init__(self, name: str, level: int, parent: Switch | None = None,
                 children: list[Switch] | None = None, nodes: list[str] | None = None,
                 uplink_mbit: int | None = None, downlink_mbit: int | None = None) -> None:
        self.name = name
        self.level = level
        self.parent = parent
        self.children = [] if children is None else children
        self.nodes = [] if nodes is None else nodes
        self.uplink_mbit = uplink_mbit
        self.downlink_mbit = downlink_mbit


class Latency:
    """Per-hop one-way delays in microseconds (the topology's `latency`)."""

    __slots__ = ("model", "switch_us", "wire_us", "forward_us", "forwarders")

    model: str | None
    switch_us: float                # each switch a LAN crossing passes
    wire_us: float                  # each crossing of a point-to-point link
    forward_us: float               # each forwarding node
    forwarders: dict[str, float]    # forward_us of single nodes

    def __init__(self, model: str | None = None, switch_us: float = 0.0, wire_us: float = 0.0,
                 forward_us: float = 0.0, forwarders: dict[str, float] | None = None) -> None:
        self.model = model
        self.switch_us = switch_us
        self.wire_us = wire_us
        self.forward_us = forward_us
        self.forwarders = {} if forwarders is None else forwarders

    def segment_us(self, seg: Segment, switches: int = 1) -> float:
        """One-way delay of one crossing of seg (a LAN's: through `switches` switches)."""
        if seg.delay_us is not None:
            us = seg.delay_us
        else:
            us = self.wire_us if seg.kind == "p2p" else self.switch_us
        return us if seg.kind == "p2p" else us * switches

    def fill(self, segments: list[Segment]) -> None:
        """Give every segment its one-way delay per switch (a link's per crossing):
        its own, its bond's for a channel, else the default for its kind."""
        for seg in segments:
            if seg.delay_us is None:
                carried = seg.channel_of
                seg.delay_us = (carried.delay_us if carried and carried.delay_us is not None
                                else self.segment_us(seg))

    def node_us(self, name: str) -> float:
        return self.forwarders.get(name, self.forward_us)


class Graph:
    """Nodes, segments and, for trees, the switch hierarchy."""

    __slots__ = ("name", "family", "nodes", "by_name", "segments", "switches", "management", "ipv6",
                 "v4", "v6", "params", "notes", "failover", "neighbour", "engine", "bfd", "latency")

    name: str
    family: str
    nodes: list[Node]
    by_name: dict[str, Node]
    segments: list[Segment]
    switches: list[Switch]          # tree family only (root first)
    management: str
    ipv6: bool                      # False: cluster NICs get no IPv6 (not even link-local)
    v4: bool                        # addressing.ipv4: IPv4 addresses and routes in the plan
    v6: bool                        # addressing.ipv6: IPv6 addresses and routes in the plan
    params: dict[str, Any]          # family parameters kept for metrics
    notes: list[str]                # facts the compiler wants in the metrics
    failover: bool                  # routing.failover: multipath routes over equal next hops
    neighbour: dict[str, int]       # routing.neighbour, defaults filled in
    engine: str                     # routing.engine: static routes, or FRR's OSPF with BFD
    bfd: dict[str, int]             # routing.bfd (engine frr), defaults filled in
    latency: Latency | None         # the topology's `latency`, model defaults filled in

    def __init__(self, name: str, family: str, nodes: list[Node] | None = None,
                 by_name: dict[str, Node] | None = None, segments: list[Segment] | None = None,
                 switches: list[Switch] | None = None, management: str = 'eth0', ipv6: bool = True,
                 v4: bool = True, v6: bool = False, params: dict[str, Any] | None = None,
                 notes: list[str] | None = None, failover: bool = True,
                 neighbour: dict[str, int] | None = None, engine: str = 'static',
                 bfd: dict[str, int] | None = None, latency: Latency | None = None) -> None:
        self.name = name
        self.family = family
        self.nodes = [] if nodes is None else nodes
        self.by_name = {} if by_name is None else by_name
        self.segments = [] if segments is None else segments
        self.switches = [] if switches is None else switches
        self.management = management
        self.ipv6 = ipv6
        self.v4 = v4
        self.v6 = v6
        self.params = {} if params is None else params
        self.notes = [] if notes is None else notes
        self.failover = failover
        self.neighbour = {} if neighbour is None else neighbour
        self.engine = engine
        self.bfd = {} if bfd is None else bfd
        self.latency = latency

    def replace(self, **changes: Any) -> Graph:
        """A new graph with these fields changed and the others shared with this one."""
        return replaced(self, changes)

    def add_node(self, node: Node) -> None:
        self.nodes.append(node)
        self.by_name[node.name] = node

    def routed_segments(self) -> list[Segment]:
        return [s for s in self.segments if s.routed]

    def owners(self) -> dict[int, Node]:
        """Interface address -> Node that holds it."""
        out = {}
        for seg in self.segments:
            if seg.routed:
                for node, iface, _host in seg.members:
                    for a in iface.addresses:
                        out[a] = node
        return out

    def links(self) -> Links:
        """The IP segments as vertices (see Links)."""
        segs = self.routed_segments()
        of_node: list[list[int]] = [[] for _node in self.nodes]
        members = []
        for k, seg in enumerate(segs):
            idx = [m[0].index for m in seg.members]
            members.append(idx)
            for a in idx:
                of_node[a].append(k)
        return Links(segs, members, [tuple(ks) for ks in of_node])

    def distances(self, sources: Iterable[int], links: Links | None = None) -> list[int]:
        """IP-hop distance from a set of node indexes to every node (BFS), -1 where unreachable."""
        return (links if links is not None else self.links()).towards(sources).dist


ON_LINK = -1
# A RouteTable entry: (next node index, or ON_LINK when the destination is on a
# connected network; the source address the node uses on that way; the
# indexes of the further next hops of a multipath route, () otherwise).
Hop = tuple[int, int, tuple[int, ...]]


class RouteTable:
    """Longest-prefix-match table of one node: connected networks + static routes."""

    __slots__ = ("by_len", "order")

    def __init__(self) -> None:
        self.by_len: dict[int, dict[int, Hop]] = {}
        self.order: list[tuple[int, int, dict[int, Hop]]] = []  # (plen, netmask, bucket), longest first

    @classmethod
    def connected(cls, node: Node) -> RouteTable:
        """The table of a node's connected networks, before any static route."""
        t = cls()
        for iface in node.interfaces:
            if iface.addresses:
                seg = iface.segment
                t.add(seg.net, seg.plen, (ON_LINK, iface.addresses[0], ()))
        if node.loopback is not None:
            t.add(node.loopback, 32, (ON_LINK, node.loopback, ()))
        return t

    def add(self, net: int, plen: int, entry: Hop) -> None:
        bucket = self.by_len.get(plen)
        if bucket is None:
            bucket = self.by_len[plen] = {}
            self.order = [(p, mask(p), self.by_len[p]) for p in sorted(self.by_len, reverse=True)]
        bucket.setdefault(net, entry)

    def lookup(self, addr: int, below: int = 33) -> Hop | None:
        """Longest match for addr among prefixes shorter than `below`."""
        for plen, netmask, bucket in self.order:
            if plen < below:
                entry = bucket.get(addr & netmask)
                if entry is not None:
                    return entry
        return None
