"""Stage 2: turn any family into the one graph model.

Every family ends as nodes, segments (LANs, point-to-point links, layer-2
channels under bonds) and, for trees, a switch hierarchy. Host numbers and
pool slots are chosen here so that growing a bonded net, a mesh row or a
custom graph never renumbers what already exists.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from ..cabling import sheet as cabling
from . import latency
from .errors import Problems
from .load import Source
from .model import Graph, Interface, Node, Segment, Switch
from .schema import BFD_DEFAULTS, NEIGHBOUR_DEFAULTS, tree_fanouts

DEFAULTS: dict[str, Any] = {"rate_mbit": 1000, "mtu": 1500, "management": "eth0",
                            "mode": "balance-rr", "miimon": 100, "channels": 2}
DEFAULT_PATTERN = {"mesh": "node-{coords}", "bonded": "node{index:02d}",
                   "tree": "node{index:02d}", "metagraph": "node{index:02d}"}


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


def _lan_numbers(members: list[str], fixed: dict[str, int]) -> list[int]:
    """Host numbers on one custom LAN, in member order: a node's `id` where it
    has one, else the smallest number >= 1 no other member of this LAN holds.
    Appending a member changes no other member's number, and a LAN's numbers
    (so its prefix) follow its own size, not the cluster's."""
    taken = {fixed[m] for m in members if m in fixed}
    out, nxt = [], 1
    for m in members:
        if m in fixed:
            out.append(fixed[m])
            continue
        while nxt in taken:
            nxt += 1
        taken.add(nxt)
        out.append(nxt)
    return out


class Builder:
    def __init__(self, source: Source) -> None:
        self.src = source
        self.data: dict[str, Any] = source.data
        self.problems: Problems = source.problems()
        self.problems.stage = "normalise"
        link = self.data.get("link", {})
        self.rate = link.get("rate_mbit", DEFAULTS["rate_mbit"])
        self.mtu = link.get("mtu", DEFAULTS["mtu"])
        mgmt = self.data.get("management", {}).get("interface", DEFAULTS["management"])
        self.graph = Graph(self.data["name"], self.data["family"])
        self.graph.management = mgmt
        self.graph.ipv6 = self.data.get("ipv6", True)
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
        pattern = naming.get("pattern", DEFAULT_PATTERN[self.graph.family])
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

    # -- families ----------------------------------------------------------
    def bonded(self, p: dict[str, Any]) -> None:
        k = p.get("channels", DEFAULTS["channels"])
        rate = p.get("rate_mbit", self.rate)
        nodes = [self.new_node(self.node_name(i), i + 1) for i in range(p["nodes"])]
        net = self.segment("net0", "lan", rate, slot=0)
        net.medium = p.get("medium", net.medium)
        chans = self.channels_for(net, k) if k > 1 else None
        for n in nodes:
            self.attach(net, n, n.hostid, k, p, chans)
        self.graph.params = {"nodes": len(nodes), "channels": k, "rate_mbit": rate,
                             "mode": p.get("mode", DEFAULTS["mode"]) if k > 1 else None}

    def mesh(self, p: dict[str, Any]) -> None:
        dims = p["dims"]
        rate = p.get("rate_mbit", self.rate)
        coords = list(itertools.product(*[range(d) for d in dims]))
        nodes = {}
        for i, c in enumerate(coords):
            node = self.new_node(self.node_name(i, coords="-".join(map(str, c))), i + 1)
            node.coords = c
            nodes[c] = node
        # One segment per dimension and per value of the other coordinates;
        # its pool slot depends only on those coordinates (Morton order inside
        # the dimension's block), its host numbers on the coordinate along it.
        for d in range(len(dims)):
            others = [range(n) for j, n in enumerate(dims) if j != d]
            for rest in itertools.product(*others):
                name = "d%d-%s" % (d, "-".join(map(str, rest)) if rest else "0")
                seg = self.segment(name, "lan", rate, slot=_morton(rest), dim=d)
                seg.medium = p.get("medium", seg.medium)
                for v in range(dims[d]):
                    c = rest[:d] + (v,) + rest[d:]
                    self.attach(seg, nodes[c], v + 1)
        self.graph.params = {"dims": list(dims), "rate_mbit": rate}

    def tree(self, p: dict[str, Any]) -> None:
        fans, ups = self._tree_levels(p)
        down = p.get("downlink_mbit", self.rate)
        root = Switch("root", 0)
        switches, tier = [root], [root]
        for level, (fan, up) in enumerate(zip(fans, ups), start=1):
            nxt: list[Switch] = []
            for parent in tier:
                for _child in range(fan):
                    name = ("leaf%d" % len(nxt) if level == len(fans)
                            else "agg%d-%d" % (level, len(nxt)))
                    sw = Switch(name, level, parent=parent, uplink_mbit=up)
                    parent.children.append(sw)
                    nxt.append(sw)
            switches.extend(nxt)
            tier = nxt
        net = self.segment("net0", "lan", down, slot=0)
        per_leaf = p["nodes_per_leaf"]
        for leaf in tier:
            leaf.downlink_mbit = down
            for _leaf_node in range(per_leaf):
                index = len(self.graph.nodes)
                node = self.new_node(self.node_name(index), index + 1)
                node.switch = leaf.name
                leaf.nodes.append(node.name)
                self.attach(net, node, node.hostid)
        self.graph.switches = switches
        self.graph.params = {"levels": len(fans) + 1, "fanout": fans, "nodes_per_leaf": per_leaf,
                             "leaves": len(tier), "downlink_mbit": down, "uplink_mbit": ups}

    def _tree_levels(self, p: dict[str, Any]) -> tuple[list[int], list[int]]:
        """Fanout and uplink rate of each level below the root, from the root down;
        a list must have one value per level."""
        fans = tree_fanouts(p)
        want = p.get("levels", len(fans) + 1) - 1
        up = p.get("uplink_mbit", p.get("downlink_mbit", self.rate))
        ups = up if isinstance(up, list) else [up] * want
        for key, values in (("fanout", fans), ("uplink_mbit", ups)):
            if len(values) != want:
                self.problems.add("tree." + key, "%d values for a tree of %d levels: give one "
                                  "per level below the root (%d), from the root down, or one "
                                  "number for every level" % (len(values), want + 1, want))
        if self.problems:
            raise _Stop()
        return fans, ups

    def metagraph(self, p: dict[str, Any]) -> None:
        L, P, C = p["groups"], p["nodes_per_group"], p["p2p_per_node"]
        lan_rate = p.get("lan_rate_mbit", self.rate)
        p2p_rate = p.get("p2p_rate_mbit", self.rate)
        if L > P * C + 1:
            self.problems.add("metagraph.groups",
                              "infeasible: a fully connected meta-node graph needs "
                              "L <= P*C+1 = %d (each of the %d groups needs a link to "
                              "%d others but has only P*C = %d point-to-point NICs)"
                              % (P * C + 1, L, L - 1, P * C))
            raise _Stop()
        groups = self._metagraph_groups(L, P, lan_rate)
        weights, unused = _metagraph_weights(L, P * C)
        self._metagraph_links(groups, _metagraph_ports(L, weights), p2p_rate)
        ideal = P * C / (L - 1)
        uneven = sorted(["group%d-group%d" % k for k, w in weights.items() if w > P * C // (L - 1)])
        self.graph.params = {"groups": L, "nodes_per_group": P, "p2p_per_node": C,
                             "lan_rate_mbit": lan_rate, "p2p_rate_mbit": p2p_rate,
                             "links_per_group_pair": round(ideal, 4),
                             "weights": {"group%d-group%d" % k: w for k, w in sorted(weights.items())},
                             "uneven_pairs": uneven, "unused_ports": unused}

    def _metagraph_groups(self, L: int, P: int, rate: int) -> list[list[Node]]:
        """L groups of P nodes, each group on its own LAN."""
        groups = []
        for g in range(L):
            seg = self.segment("group%d" % g, "lan", rate, slot=g)
            members = []
            for m in range(P):
                index = g * P + m
                node = self.new_node(self.node_name(index, group=g, member=m), m + 1)
                node.group, node.member = g, m
                self.attach(seg, node, m + 1)
                members.append(node)
            groups.append(members)
        return groups

    def _metagraph_links(self, groups: list[list[Node]], ports: dict[tuple[int, int], list[int]],
                         rate: int) -> None:
        """One point-to-point link per pair of facing ports of two groups."""
        L, P = len(groups), len(groups[0])
        slot = 0
        names: set[str] = set()
        for g in range(L):
            for h in range(g + 1, L):
                for qa, qb in zip(ports[g, h], ports[h, g]):
                    a, b = groups[g][qa % P], groups[h][qb % P]
                    seg = self.p2p(_link_name(a, b, names), a, b, rate, slot=slot)
                    seg.groups = (g, h)
                    slot += 1

    def custom(self, p: dict[str, Any]) -> None:
        raw = p["nodes"]
        fixed = {n["name"]: n["id"] for n in raw if isinstance(n, dict) and "id" in n}
        used = set(fixed.values())
        nxt = 1
        nodes = []
        for entry in raw:
            name = entry if isinstance(entry, str) else entry["name"]
            hostid = entry.get("id") if isinstance(entry, dict) else None
            if hostid is None:
                while nxt in used:
                    nxt += 1
                hostid = nxt
                used.add(nxt)
            nodes.append(self.new_node(name, hostid))
        for i, s in enumerate(p.get("segments", [])):
            rate = s.get("rate_mbit", self.rate)
            seg = self.segment(s["name"], "lan", rate, s.get("mtu"), slot=i)
            seg.prefix_fixed = s.get("prefix")
            seg.medium = s.get("medium", seg.medium)
            seg.delay_us = _us(s.get("delay_us"))
            if "ports" in s:
                seg.ports, seg.ports_key = s["ports"], "custom.segments[%d].ports" % i
            k = s.get("channels", 1)
            chans = self.channels_for(seg, k) if k > 1 else None
            for m, host in zip(s["members"], _lan_numbers(s["members"], fixed)):
                self.attach(seg, self.graph.by_name[m], host, k, s, chans)
        names = {s.name for s in self.graph.segments}
        for i, link in enumerate(p.get("links", [])):
            a, b = (self.graph.by_name[e] for e in link["ends"])
            seg = self.p2p(_link_name(a, b, names), a, b, link.get("rate_mbit", self.rate),
                           link.get("mtu"), slot=i, prefix=link.get("prefix"))
            seg.delay_us = _us(link.get("delay_us"))
        for i, node in enumerate(self.graph.nodes):
            if node.primary is None:
                self.problems.add("custom.nodes[%d]" % i,
                                  "node '%s' is on no segment and no link" % node.name)
        if not self.problems:
            dist = self.graph.distances([0])
            cut = [n.name for n in self.graph.nodes if dist[n.index] < 0]
            if cut:
                self.problems.add("custom", "the graph is disconnected: %s cannot reach %s"
                                  % (self.graph.nodes[0].name, ", ".join(cut[:8])
                                     + (" and %d more" % (len(cut) - 8) if len(cut) > 8 else "")))
        self.graph.params = {"nodes": len(nodes)}


class _Stop(Exception):
    pass


def _us(value: float | None) -> float | None:
    return None if value is None else float(value)


def _link_name(a: Node, b: Node, taken: set[str]) -> str:
    """a--b, or a--b-2, a--b-3, ... when parallel links join the same nodes; taken grows."""
    name = "%s--%s" % (a.name, b.name)
    k = 2
    while name in taken:
        name = "%s--%s-%d" % (a.name, b.name, k)
        k += 1
    taken.add(name)
    return name


def _metagraph_ports(L: int, weights: dict[tuple[int, int], int]) -> dict[tuple[int, int], list[int]]:
    """Ports of group g facing group h. Ports of a group in order: port q is NIC
    q // P of member q % P, so consecutive ports sit on different nodes and links
    spread over members."""
    cursor = [0] * L
    ports = {}
    for g in range(L):
        for h in range(L):
            if h == g:
                continue
            start = cursor[g]
            cursor[g] += weights[min(g, h), max(g, h)]
            ports[g, h] = [start + j for j in range(weights[min(g, h), max(g, h)])]
    return ports


def _morton(values: Iterable[int]) -> int:
    """Interleave the bits of the coordinates: a slot that does not depend on sizes."""
    vals = list(values)
    out = 0
    for bit in range(max(vals, default=0).bit_length()):
        for j, v in enumerate(vals):
            out |= ((v >> bit) & 1) << (bit * len(vals) + j)
    return out


def _metagraph_weights(L: int, ports: int) -> tuple[dict[tuple[int, int], int], list[str]]:
    """Links per group pair: P*C/(L-1) each, the remainder spread as evenly as
    possible (a circulant graph of the extra links, plus a matching when the
    remainder is odd). Returns ({(g, h): links}, unused ports)."""
    base, extra = divmod(ports, L - 1)
    w = {(g, h): base for g in range(L) for h in range(g + 1, L)}
    unused = []
    for off in range(1, extra // 2 + 1):
        for g in range(L):
            h = (g + off) % L
            w[min(g, h), max(g, h)] += 1
    if extra % 2:
        free = list(range(L))
        taken: set[int] = set()
        for g in free:
            if g in taken:
                continue
            partner = next((h for h in free if h > g and h not in taken
                            and w[g, h] == base), None)
            if partner is None:
                unused.append("group%d" % g)
                continue
            w[g, partner] += 1
            taken.update((g, partner))
    return w, unused


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
    family = source.data["family"]
    try:
        getattr(b, family)(source.data[family])
    except _Stop:
        pass
    if not b.problems:
        cabling.check_ports(b.graph, b.problems)
        latency.check_names(b.graph, b.problems)
        check_frr_size(b.graph, b.problems)
    if not b.problems and b.graph.latency is not None:
        b.graph.latency.fill(b.graph.segments)
    return (None if b.problems else b.graph), b.problems
