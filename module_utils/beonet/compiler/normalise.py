"""Stage 2: turn any family into the one graph model.

Every family ends as nodes, segments (LANs, point-to-point links, layer-2
channels under bonds) and, for trees, a switch hierarchy. Host numbers and
pool slots are chosen here so that growing a bonded net, a mesh row or a
custom graph never renumbers what already exists.
"""

from __future__ import annotations

from . import cables, family, latency
from .errors import Problems
from .load import Source
from .model import Graph, Interface, Node, Segment
from .schema import BFD_DEFAULTS, NEIGHBOUR_DEFAULTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

DEFAULTS: dict[str, Any] = {"rate_mbit": 1000, "mtu": 1500, "management": "eth0",
                            "mode": "balance-rr", "miimon": 100, "channels": 2}


class _Names:
    """Logical NIC names per node: eth0, eth1, ... skipping the management NIC."""

    def __init__(self, management: str) -> None:
        self.management = management
        self.next: dict[str, int] = {}

    def ethernet(self, node: Node) -> str:
        k = self.next.get(node.name, 0)
        while "eth%d" % k == self.management:
            k += 1
        self.next[node.name] = k + 1
        return "eth%d" % k

    @staticmethod
    def bond(node: Node) -> str:
        return "bond%d" % sum(1 for i in node.interfaces if i.kind == "bond")


class Builder:
    """What a family's ``build`` works with: the topology's common settings, the
    graph being built, and the helpers that add nodes, segments and links."""

    defaults = DEFAULTS

    def __init__(self, source: Source) -> None:
        self.src = source
        self.data: dict[str, Any] = source.data
        self.problems: Problems = source.problems()
        self.problems.stage = "normalise"
        link = self.data.get("link", {})
        self.rate = link.get("rate_mbit", DEFAULTS["rate_mbit"])
        self.mtu = link.get("mtu", DEFAULTS["mtu"])
        mgmt = self.data.get("management", {}).get("interface", DEFAULTS["management"])
        self.family = family.of(self.data["family"])
        self.graph = Graph(self.data["name"], self.family.name)
        self.graph.management = mgmt
        self.graph.ipv6 = self.data.get("ipv6", True)
        pools = self.data.get("addressing", {})
        self.graph.v4 = pools.get("ipv4", True)
        self.graph.v6 = pools.get("ipv6", False) is not False
        routing = self.data.get("routing", {})
        self.graph.failover = routing.get("failover", True)
        self.graph.neighbour = {**NEIGHBOUR_DEFAULTS, **routing.get("neighbour", {})}
        self.graph.engine = routing.get("engine", "static")
        self.graph.bfd = {**BFD_DEFAULTS, **routing.get("bfd", {})}
        if "latency" in self.data:
            self.graph.latency = latency.settings(self.data["latency"])
        self.ports: int | None = self.data.get("switch", {}).get("ports")
        self.names = _Names(mgmt)

    # -- helpers shared by the families ------------------------------------
    def node_name(self, index: int, **fields: Any) -> str:
        naming = self.data.get("nodes", {})
        pattern = naming.get("pattern", self.family.default_pattern)
        first = naming.get("first_index", 1)
        try:
            name: str = pattern.format(index=index + first, **fields)
            return name
        except (KeyError, IndexError, ValueError) as exc:
            self.problems.add("nodes.pattern", "cannot expand %r (%s); fields here: %s"
                              % (pattern, exc, ", ".join(["index"] + sorted(fields))))
            raise _Stop() from exc

    def new_node(self, name: str, hostid: int) -> Node:
        node = Node(name, len(self.graph.nodes), hostid)
        if name in self.graph.by_name:
            self.problems.add("nodes.pattern", "the pattern gives the name '%s' twice" % name)
            raise _Stop()
        self.graph.add_node(node)
        return node

    def segment(self, name: str, kind: str, rate: int, mtu: int | None = None, slot: int = 0,
                dim: int = 0) -> Segment:
        seg = Segment(name, kind, rate, mtu or self.mtu, pool_slot=slot, pool_dim=dim,
                      ports=self.ports)
        self.graph.segments.append(seg)
        return seg

    def attach(self, seg: Segment, node: Node, hostnum: int, channels: int = 1,
               bond_opts: dict[str, Any] | None = None,
               channel_segs: list[Segment] | None = None) -> Interface:
        """Put a node on an IP segment, through a bond of K channels when K > 1.

        bond_opts: the topology's mode, miimon and tso for the bond (absent: defaults)."""
        if channels > 1 and channel_segs:
            iface = self._bond(seg, node, hostnum, channels, bond_opts or {}, channel_segs)
        else:
            iface = Interface(self.names.ethernet(node), "ethernet", seg,
                              rate_mbit=seg.rate_mbit, mtu=seg.mtu)
            node.interfaces.append(iface)
        seg.members.append((node, iface, hostnum))
        if node.primary is None:
            node.primary = iface
        return iface

    def _bond(self, seg: Segment, node: Node, hostnum: int, channels: int,
              opts: dict[str, Any], channel_segs: list[Segment]) -> Interface:
        """A bond on seg over one NIC per channel segment, its NICs first in the node."""
        mode = opts.get("mode") or DEFAULTS["mode"]
        bond = Interface(self.names.bond(node), "bond", seg, mode=mode,
                         miimon=DEFAULTS["miimon"] if opts.get("miimon") is None else opts["miimon"],
                         rate_mbit=seg.rate_mbit * channels, mtu=seg.mtu)
        # balance-rr stripes what the bond is handed: with TSO on, GSO
        # super-packets of varying size, whose uneven per-member queues
        # reorder the stream; with TSO off, single frames (kernel commit
        # b0ce3508 made TSO on a bond optional for this reason).
        bond.tso = opts.get("tso", mode != "balance-rr")
        for ch in channel_segs:
            nic = Interface(self.names.ethernet(node), "ethernet", ch, rate_mbit=ch.rate_mbit,
                            mtu=ch.mtu, bond=bond.name)
            node.interfaces.append(nic)
            bond.members.append(nic.name)
            ch.members.append((node, nic, hostnum))
        node.interfaces.append(bond)
        return bond

    def channels_for(self, seg: Segment, count: int) -> list[Segment]:
        out = []
        for k in range(count):
            ch = self.segment("%s-ch%d" % (seg.name, k), "channel", seg.rate_mbit, seg.mtu)
            ch.channel_of = seg
            ch.ports, ch.ports_key = seg.ports, seg.ports_key
            ch.medium = seg.medium
            out.append(ch)
        return out

    def p2p(self, name: str, a: Node, b: Node, rate: int, mtu: int | None = None, slot: int = 0,
            prefix: str | None = None) -> Segment:
        seg = self.segment(name, "p2p", rate, mtu, slot)
        seg.prefix_fixed = prefix
        ia = self.attach(seg, a, 0)
        ib = self.attach(seg, b, 1)
        ia.peer, ib.peer = (b.name, ib.name), (a.name, ia.name)
        return seg

    def link_name(self, a: Node, b: Node, taken: set[str]) -> str:
        """a--b, or a--b-2, a--b-3, ... when parallel links join the same nodes; taken grows."""
        name = "%s--%s" % (a.name, b.name)
        k = 2
        while name in taken:
            name = "%s--%s-%d" % (a.name, b.name, k)
            k += 1
        taken.add(name)
        return name

    @staticmethod
    def stop() -> NoReturn:
        """End the building: the problems found so far are the stage's result."""
        raise _Stop()


class _Stop(Exception):
    pass


# Routes OSPF installs that a compile holds for the proof with routing.engine frr: every
# node a route to each point-to-point segment it is not on, a /32 to every other node's
# loopback and one to every other node's address on a LAN (OSPF point-to-multipoint);
# 3,000,000 is about 2 GB and a minute of a compile.
FRR_MAX_ROUTES = 3_000_000


def frr_routes(graph: Graph) -> int:
    """How many routes the plan holds with routing.engine frr (route.ospf)."""
    n = len(graph.nodes)
    p2p = [seg for seg in graph.segments if seg.routed and seg.kind == "p2p"]
    on_lans = sum(len(seg.members) for seg in graph.segments if seg.routed and seg.kind != "p2p")
    return n * len(p2p) - 2 * len(p2p) + (n + on_lans) * (n - 1)


def check_frr_size(graph: Graph, problems: Problems) -> None:
    """With routing.engine frr, refuse a cluster whose learned routes would not fit."""
    if graph.engine != "frr":
        return
    routes = frr_routes(graph)
    if routes > FRR_MAX_ROUTES:
        problems.add("routing.engine", "frr: %s nodes: the plan would hold %s routes (a /32 to every "
                     "other node and to every address another node holds on a LAN, a route to each "
                     "point-to-point segment, on every node), more than the %s beonet routes and "
                     "proves for FRR (about 2 GB); route a cluster this large with engine static"
                     % tuple(format(v, ",") for v in (len(graph.nodes), routes, FRR_MAX_ROUTES)))


def normalise(source: Source) -> tuple[Graph | None, Problems]:
    """Return (Graph or None, Problems)."""
    b = Builder(source)
    try:
        b.family.build(b, source.data[b.family.name])
    except _Stop:
        pass
    if not b.problems:
        cables.check_ports(b.graph, b.problems)
        latency.check_names(b.graph, b.problems)
        check_frr_size(b.graph, b.problems)
    if not b.problems and b.graph.latency is not None:
        b.graph.latency.fill(b.graph.segments)
    return (None if b.problems else b.graph), b.problems
