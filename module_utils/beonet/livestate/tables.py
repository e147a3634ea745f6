"""The compiler's route tables (model.RouteTable) made from the nodes' states.

A table entry is what the proof walks (model.Hop: next node, source address,
further next hops), so the plan and the kernels are walked by one code. A next
hop is the index of the node holding its gateway address, ON_LINK for a route
without gateway, or, when it cannot carry a packet, a code below ON_LINK
(``Net.reasons`` says why: a NIC without carrier, a neighbour that does not
answer, a gateway no node holds, a blackhole). Next hops the kernel skips are
left out: a NIC without carrier where ``ignore_routes_with_linkdown`` is on,
and with ``fib_multipath_use_neigh`` a multipath branch whose neighbour failed;
a route all of whose next hops are skipped is left out too (the kernel falls
back to a shorter prefix), and recorded in ``Net.gone``. A Net is of one address
family (``Net.fam``): the states' IPv4 or IPv6 part, walked apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

from ..compiler.model import ON_LINK, Graph, Hop, Interface, Node, RouteTable, Segment
from . import linklocal
from .family import V4, Family
from .nft import Verdict, judge
from .state import DROPPING, UNICAST, LiveHop, LiveRoute, NodeState

NextHop = tuple[int, "int | None", "str | None"]     # (code, gateway, device)


@dataclass(slots=True, eq=False)
class Net:
    """The cluster as its states describe it: one table per node (plan order)."""

    names: list[str]
    address: list[int]                       # node -> its address (the plan's)
    states: list[NodeState | None]           # None: no state (dead, or it sent none usable)
    tables: list[RouteTable] = field(default_factory=list)
    via: list[dict[tuple[int, int], tuple[NextHop, ...]]] = field(default_factory=list)
    reasons: list[list[str]] = field(default_factory=list)   # node -> code ON_LINK-1-k -> why
    gone: list[list[tuple[int, int, str]]] = field(default_factory=list)   # (net, plen, why)
    owner: dict[int, int] = field(default_factory=dict)      # address -> node holding it
    nic_of: list[dict[int, str]] = field(default_factory=list)   # node -> address -> its NIC
    verdicts: list[Verdict] = field(default_factory=list)
    held: linklocal.Holders = field(default_factory=dict)   # IPv6 link-local -> its holders
    problems: list[str] = field(default_factory=list)        # duplicate addresses
    fam: Family = V4

    def up(self, i: int, nic: str | None) -> bool:
        st = self.states[i]
        return st is not None and nic is not None and st.links.get(nic) == "up"

    def why(self, i: int, code: int) -> str:
        return self.reasons[i][ON_LINK - 1 - code]


def build(names: list[str], address: list[int], states: list[NodeState | None],
          fallback: list[list[int]], fam: Family = V4) -> Net:
    """The tables of every node (states of the family); fallback: node -> its planned
    addresses, which name the gateways of nodes without state."""
    net = Net(names, address, states, fam=fam)
    _owners(net, fallback)
    if fam is not V4:
        net.held = linklocal.holders(states)
    for i, st in enumerate(states):
        net.reasons.append([])
        net.gone.append([])
        net.via.append({})
        net.verdicts.append(judge(st.filter, fam.bits) if st is not None else Verdict())
        net.tables.append(_table(net, i, st) if st is not None else fam.table())
    return net


def _owners(net: Net, fallback: list[list[int]]) -> None:
    """Who holds each address: the node whose live state has it (where two have a
    planned address, the one the plan gives it to, and a problem); a node without
    state holds its planned addresses. Loopback addresses are no one's."""
    planned = {a: i for i, addrs in enumerate(fallback) for a in addrs}
    for i, st in enumerate(net.states):
        mine: dict[int, str] = {}
        for nic, addrs in st.addrs.items() if st is not None else ():
            for a, _plen in addrs:
                if net.fam.within(a, net.fam.local):
                    continue
                mine.setdefault(a, nic)
                holder = net.owner.setdefault(a, i)
                if holder != i and a in planned:
                    net.problems.append("%s and %s both hold %s"
                                        % (net.names[holder], net.names[i], net.fam.text(a)))
                    if planned[a] == i:
                        net.owner[a] = i
        net.nic_of.append(mine)
    for i, st in enumerate(net.states):
        if st is None:
            for a in fallback[i]:
                net.owner.setdefault(a, i)


def _table(net: Net, i: int, st: NodeState) -> RouteTable:
    t = net.fam.table()
    for r in sorted(st.routes, key=attrgetter("metric")):
        if r.tos or (r.kind != UNICAST and r.kind not in DROPPING and r.kind != "throw"):
            continue
        hops = _hops(net, i, st, r)
        if not hops:
            continue
        src = r.src if r.src is not None else _source(net.fam, st, r.hops[0].dev if r.hops else None)
        t.add(r.net, r.plen, (hops[0][0], src, tuple(h[0] for h in hops[1:])))
        net.via[i].setdefault((r.plen, r.net), hops)
    return t


def _source(fam: Family, st: NodeState, dev: str | None) -> int:
    """The address the kernel sends from without a preferred source: the device's first
    (of IPv6, its first global one: a global destination is sent from a global source)."""
    mine = {nic: [a for a, _p in addrs if fam is V4 or not fam.within(a, fam.local)]
            for nic, addrs in st.addrs.items()}
    addrs = mine.get(dev or "") or [a for nic in sorted(mine) for a in mine[nic]]
    return addrs[0] if addrs else 0


def _dead(net: Net, i: int, why: str) -> int:
    reasons = net.reasons[i]
    if why not in reasons:
        reasons.append(why)
    return ON_LINK - 1 - reasons.index(why)


def _hops(net: Net, i: int, st: NodeState, r: LiveRoute) -> tuple[NextHop, ...]:
    """The next hops of a route as the kernel uses them (see the module docstring);
    () when every one is skipped (the route is recorded in net.gone)."""
    name = net.names[i]
    if r.kind != UNICAST:
        return ((_dead(net, i, "route type %s on node %s" % (r.kind, name)), None, None),)
    multipath = len(r.hops) > 1
    kept: list[NextHop] = []
    skipped: list[tuple[LiveHop, str, bool]] = []        # (hop, why, skipped for its neighbour)
    for h in r.hops:
        code, why, neighbour = _hop(net, i, st, h, multipath)
        if code is None:
            skipped.append((h, why, neighbour))
        else:
            kept.append((code, h.via, h.dev))
    if not kept:
        unanswered = [(h, why) for h, why, neighbour in skipped if neighbour]
        if unanswered:        # no next hop answers: the kernel picks one of them anyway
            return tuple((_dead(net, i, why), h.via, h.dev) for h, why in unanswered)
        net.gone[i].append((r.net, r.plen, skipped[0][1]))
    return tuple(kept)


def _hop(net: Net, i: int, st: NodeState, h: LiveHop, multipath: bool) -> tuple[int | None, str, bool]:
    """(code, why, skipped for an unanswered neighbour) of one next hop; code None: skipped."""
    name, dev = net.names[i], h.dev or ""
    link = st.links.get(dev)
    if link is None:
        return _dead(net, i, "node %s has no NIC %s" % (name, dev)), "", False
    if link == "down":
        return _dead(net, i, link_down(name, dev)), "", False
    if link == "no-carrier" or h.linkdown:
        why = link_down(name, dev)
        if _ignores_linkdown(st, dev):
            return None, why, False
        return _dead(net, i, why), why, False
    if h.via is None:
        return ON_LINK, "", False
    return _gateway(net, i, st, h, multipath)


def link_down(node: str, nic: str | None) -> str:
    """The cause of the pairs a NIC without link breaks (down, or without carrier)."""
    return "link down on node %s NIC %s" % (node, nic)


def unanswered(addr: str, node: str, nic: str | None, state: str) -> str:
    """The cause of the pairs a neighbour that does not answer (FAILED, INCOMPLETE) breaks."""
    return "neighbour %s on node %s NIC %s is %s" % (addr, node, nic, state)


def _ignores_linkdown(st: NodeState, dev: str) -> bool:
    return bool(st.linkdown.get("all")) or bool(st.linkdown.get(dev))


def _gateway(net: Net, i: int, st: NodeState, h: LiveHop, multipath: bool) -> tuple[int | None, str, bool]:
    name, dev, via = net.names[i], h.dev or "", h.via or 0
    gw, masks = net.fam.text(via), net.fam.masks
    if not h.onlink and not any((via ^ a) & masks[p] == 0 for a, p in st.addrs.get(dev, [])):
        why = "next hop %s of node %s is on no network of NIC %s" % (gw, name, dev)
        return _dead(net, i, why), "", False
    state = st.unresolved.get((via, dev))
    if state:
        why = unanswered(gw, name, dev, state)
        if multipath and st.use_neigh:
            return None, why, True
        return _dead(net, i, why), why, False
    if net.fam is not V4 and linklocal.is_link_local(via):
        return _link_local(net, i, dev, via)
    j = net.owner.get(via)
    if j is None:
        return _dead(net, i, "next hop %s of node %s: no node holds that address" % (gw, name)), "", False
    if j == i:
        return _dead(net, i, "next hop %s of node %s is its own address" % (gw, name)), "", False
    if net.states[j] is not None and not net.up(j, net.nic_of[j].get(via)):
        return _dead(net, i, link_down(net.names[j], net.nic_of[j].get(via))), "", False
    return j, "", False


def _link_local(net: Net, i: int, dev: str, via: int) -> tuple[int | None, str, bool]:
    """A next hop named by its link-local address (OSPFv3's): the node holding it on the link."""
    found = linklocal.resolve(net.states, net.held, i, dev, via)
    if isinstance(found, str):
        why = "next hop %s of node %s: %s" % (net.fam.text(via), net.names[i], found)
        return _dead(net, i, why), "", False
    j, nic, _address = found
    if not net.up(j, nic):
        return _dead(net, i, link_down(net.names[j], nic)), "", False
    return j, "", False


def lookup(net: Net, i: int, addr: int) -> tuple[int, int, Hop] | None:
    """(plen, network, entry) of the longest match for addr in node i's table."""
    for plen, netmask, bucket in net.tables[i].order:
        entry = bucket.get(addr & netmask)
        if entry is not None:
            return plen, addr & netmask, entry
    return None


def gone_why(net: Net, i: int, addr: int, below: int) -> str | None:
    """Why a route of node i more specific than prefix length `below` towards addr
    is not used (every next hop skipped), if one is."""
    found = [(plen, why) for n, plen, why in net.gone[i] if plen > below and (addr & net.fam.mask(plen)) == n]
    return max(found)[1] if found else None


def codes(entry: Hop) -> tuple[int, ...]:
    """Every next hop of an entry, the first first."""
    return (entry[0], *entry[2]) if entry[2] else (entry[0],)


def skeleton(names: list[str], address: list[int]) -> Graph:
    """A graph of bare nodes (name, index, address): what the proof's walks read of a
    graph when the tables come from elsewhere."""
    seg = Segment("live", "lan", 0, 0)
    graph = Graph("live", "custom")
    for k, (name, addr) in enumerate(zip(names, address)):
        iface = Interface("live", "ethernet", seg, [addr])
        graph.add_node(Node(name, k, k, interfaces=[iface], primary=iface))
    return graph
