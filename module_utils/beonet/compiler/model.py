"""The one graph model every family is normalised into.

Nodes carry interfaces; segments are IP networks (a LAN or a point-to-point
link) or layer-2 channels under a bond. Addresses are kept as integers inside
the compiler (the hot loops of large graphs) and rendered as text at the end.

The classes are slotted dataclasses compared by identity (eq=False): a node
is itself, not its field values, wherever it is looked up or collected.
"""

from __future__ import annotations

import socket
import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

_pack = struct.Struct("!I").pack
_unpack = struct.Struct("!I").unpack

UNASSIGNED = -1                     # Segment.net before the address stage (and of channels)


@cache
def ip_text(value: int) -> str:
    return socket.inet_ntoa(_pack(value))


def ip_int(text: str) -> int:
    value: int = _unpack(socket.inet_aton(text))[0]
    return value


def mask(plen: int) -> int:
    return (0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF


@cache
def net_text(net: int, plen: int) -> str:
    return "%s/%d" % (ip_text(net), plen)


def parse_net(text: str) -> tuple[int, int]:
    addr, _slash, plen = text.partition("/")
    return ip_int(addr), int(plen)


@dataclass(slots=True, eq=False)
class Interface:
    """A NIC or a bond of one node."""

    name: str
    kind: str                       # "ethernet" or "bond"
    segment: Segment                # Segment this NIC or bond sits on
    addresses: list[int] = field(default_factory=list)  # host addresses; prefix from segment
    rate_mbit: int = 0
    mtu: int = 0
    members: list[str] = field(default_factory=list)    # bond: member interface names
    bond: str | None = None         # ethernet under a bond: the bond's name
    mode: str | None = None         # bond: the kernel bonding mode
    miimon: int | None = None       # bond: link monitoring interval (ms)
    tso: bool | None = None         # bond: False = TCP segmentation offload off
    peer: tuple[str, str] | None = None  # p2p: (node name, interface name) at the other end
    mac: str | None = None          # bond: the MAC address the address stage gives it


@dataclass(slots=True, eq=False)
class Node:
    """A cluster node: its interfaces, static routes and whether it forwards."""

    name: str
    index: int                      # 0-based position in the plan
    hostid: int                     # stable host number used in addresses
    group: int | None = None        # metagraph group
    member: int | None = None       # metagraph member within the group
    coords: tuple[int, ...] | None = None  # mesh coordinates
    switch: str | None = None       # tree: leaf switch name
    interfaces: list[Interface] = field(default_factory=list)
    primary: Interface | None = None  # Interface carrying the node's address
    routes: list[Route] = field(default_factory=list)
    forwarding: bool = False

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
        return self.home.addresses[0]


Member = tuple[Node, Interface, int]     # (node, its interface, host number)


@dataclass(slots=True, eq=False)
class Segment:
    """An IP network (a LAN or a point-to-point link) or a layer-2 channel under bonds."""

    name: str
    kind: str                       # "lan", "p2p" or "channel" (layer 2 under bonds)
    rate_mbit: int
    mtu: int
    members: list[Member] = field(default_factory=list)
    net: int = UNASSIGNED           # network address; channels keep UNASSIGNED
    plen: int = 0
    prefix_fixed: str | None = None  # prefix given in the topology ("10.1.0.0/24")
    pool_slot: int = 0              # stable slot in its pool (mesh: within its dimension's block)
    pool_dim: int = 0               # mesh: the dimension whose block of the pool holds the slot
    channel_of: Segment | None = None  # channel: the IP segment its bonds carry
    groups: tuple[int, int] | None = None  # metagraph p2p: (g, h)
    ports: int | None = None        # port count of its switches (None: not given)
    ports_key: str = "switch.ports"  # the topology key that gives `ports`

    @property
    def routed(self) -> bool:
        return self.kind != "channel"

    def prefix_text(self) -> str | None:
        return net_text(self.net, self.plen) if self.net != UNASSIGNED else None


Adjacency = list[list[tuple[int, Segment]]]  # node index -> [(neighbour index, segment)]


@dataclass(slots=True, eq=False)
class Route:
    """A static route: net/plen via a gateway on device dev, sourced from src."""

    net: int
    plen: int
    via: int
    dev: str
    src: int


@dataclass(slots=True, eq=False)
class Switch:
    """A switch of a tree topology; nodes are the names of the nodes on a leaf."""

    name: str
    level: int                      # 0 = root
    parent: Switch | None = None
    children: list[Switch] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    uplink_mbit: int | None = None
    downlink_mbit: int | None = None


@dataclass(slots=True, eq=False)
class Graph:
    """Nodes, segments and, for trees, the switch hierarchy."""

    name: str
    family: str
    nodes: list[Node] = field(default_factory=list)
    by_name: dict[str, Node] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    switches: list[Switch] = field(default_factory=list)  # tree family only (root first)
    management: str = "eth0"
    params: dict[str, Any] = field(default_factory=dict)  # family parameters kept for metrics
    notes: list[str] = field(default_factory=list)        # facts the compiler wants in the metrics

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

    def neighbours(self) -> Adjacency:
        """node index -> list of (neighbour index, segment), over IP segments."""
        adj: Adjacency = [[] for _node in self.nodes]
        for seg in self.segments:
            if not seg.routed:
                continue
            idx = [m[0].index for m in seg.members]
            for a in idx:
                for b in idx:
                    if a != b:
                        adj[a].append((b, seg))
        return adj

    def distances(self, sources: Iterable[int], adj: Adjacency | None = None) -> list[int]:
        """IP-hop distance from a set of node indexes to every node (BFS)."""
        adj = adj if adj is not None else self.neighbours()
        dist = [-1] * len(self.nodes)
        queue: deque[int] = deque()
        for s in sources:
            dist[s] = 0
            queue.append(s)
        while queue:
            a = queue.popleft()
            for b, _seg in adj[a]:
                if dist[b] < 0:
                    dist[b] = dist[a] + 1
                    queue.append(b)
        return dist


ON_LINK = -1
# A RouteTable entry: (next node index, or ON_LINK when the destination is on a
# connected network; the source address the node uses on that way).
Hop = tuple[int, int]


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
                t.add(seg.net, seg.plen, (ON_LINK, iface.addresses[0]))
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
