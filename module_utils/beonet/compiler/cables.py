"""Every cable of a topology, with both ends, and the switches they plug into; the
switch port counts a topology needs (``check_ports``, a rule of the normalise stage).

Switches:
- a LAN segment is one switch, ``sw-SEGMENT`` (``sw-rack-b``, ``sw-d0-1``, ``sw-group3``);
- a bonded LAN is one switch per bond channel, ``sw-SEGMENT-chK`` (channel K from 0);
- a tree keeps its own switch names (``root``, ``agg1-0``, ``leaf2``).
Switches are numbered 1, 2, ... in plan order (the sheet's order).

Ports are 1-based and never shift when a node is added:
- on a LAN or a bond channel, a node's port is its host number on the segment
  (the last part of its address there; ``id`` of a custom node);
- on a tree, port 1 of every leaf and aggregation switch is its uplink; a
  switch's children (switches or nodes) follow in order from port 2 (from
  port 1 on the root).

Cable labels: ``SWITCH:PP`` (the switch end's port, at least two digits) for a
node's cable; the lower switch's port 1 (``leaf0:01``) for a tree uplink; the
link's name (``a3--b1``) for a point-to-point link.
"""

from __future__ import annotations

from .errors import Problems
from .model import Graph, Segment, Switch
from .records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class NicEnd(NamedTuple):
    """A node's NIC: the plan's logical NIC name (``eth1``)."""

    node: str
    nic: str


class PortEnd(NamedTuple):
    """A switch port, numbered from 1."""

    switch: str
    port: int


if TYPE_CHECKING:
    from typing import TypeAlias

    End: TypeAlias = "NicEnd | PortEnd"   # a string: ansible-test lints for Python 3.8


class Cable(NamedTuple):
    """One cable. ``a`` is the node's NIC for node cables (both ends are
    switch ports for tree uplinks: ``a`` the lower switch); ``network`` the
    plan's segment or link name; ``channel`` the bond channel on bonded LANs."""

    label: str
    a: End
    b: End
    network: str
    channel: int | None


class SwitchInfo(NamedTuple):
    """A switch: ``number`` from 1 in sheet order; ``ports`` its port count
    when the topology gives one (``switch.ports``, a custom segment's ``ports``)."""

    name: str
    number: int
    network: str
    channel: int | None
    ports: int | None


def asdict(record: SwitchInfo) -> dict[str, Any]:
    """A switch's fields by name, in their order."""
    return record._asdict()


class Sheet:
    """The switches and every cable, switch by switch, then point-to-point links;
    two sheets are equal when their switches and cables are."""

    __slots__ = ("switches", "cables", "_at", "_at_cables")

    def __init__(self, switches: list[SwitchInfo] | None = None,
                 cables: list[Cable] | None = None) -> None:
        self.switches = [] if switches is None else switches
        self.cables = [] if cables is None else cables
        self._at: dict[NicEnd, Cable] = {}
        self._at_cables = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sheet):
            return NotImplemented
        return (self.switches, self.cables) == (other.switches, other.cables)

    __hash__ = None  # type: ignore[assignment]     # a sheet changes as it is built

    def __repr__(self) -> str:
        return "Sheet(switches=%r, cables=%r)" % (self.switches, self.cables)

    def cable_at(self, end: NicEnd) -> Cable | None:
        """The cable plugged into a node's NIC, or None (a bond, an unused NIC).
        The index behind it is rebuilt when cables were added since."""
        if self._at_cables != len(self.cables):
            self._at = {e: c for c in self.cables for e in (c.a, c.b) if isinstance(e, NicEnd)}
            self._at_cables = len(self.cables)
        return self._at.get(end)


MAX_PORT_ERRORS = 8             # port-count errors listed one by one


def label(switch: str, port: int) -> str:
    """The label of the cable in a switch port."""
    return "%s:%02d" % (switch, port)


class _Needs(NamedTuple):
    """The highest port a switch uses and what uses it (for the port-count check)."""

    port: int
    what: str
    ports: int | None
    key: str


def sheet(graph: Graph) -> Sheet:
    """Every switch and cable of a graph."""
    return _build(graph)[0]


def check_ports(graph: Graph, problems: Problems) -> None:
    """An error, naming the switch, for each switch with fewer ports than it needs
    (the first MAX_PORT_ERRORS, then one naming how many more), and for a custom
    segment named like another segment's bond channel (their switches' names)."""
    _check_names(graph, problems)
    if problems:
        return
    short = [(name, need) for name, need in _build(graph)[1].items()
             if need.port > (need.ports or need.port)]
    for name, need in short[:MAX_PORT_ERRORS]:
        problems.add(need.key, "switch %s has %s ports but needs port %d for %s"
                     % (name, need.ports, need.port, need.what))
    if len(short) > MAX_PORT_ERRORS:
        rest = short[MAX_PORT_ERRORS:]
        problems.add(rest[0][1].key, "and %d more switches with too few ports: %s"
                     % (len(rest), _names([name for name, _need in rest])))


def _check_names(graph: Graph, problems: Problems) -> None:
    """A custom segment that takes the name of a bond channel (`rack-a-ch0`) would
    share its switch, its cable labels and its name in the plan."""
    lans = [seg for seg in graph.segments if seg.kind == "lan"]
    channels = {seg.name: seg for seg in graph.segments if seg.channel_of is not None}
    for i, seg in enumerate(lans):
        ch = channels.get(seg.name)
        if ch is not None and ch.channel_of is not None:
            problems.add("custom.segments[%d].name" % i,
                         "'%s' is the name of a bond channel of segment '%s' (its switch "
                         "sw-%s); give this segment another name"
                         % (seg.name, ch.channel_of.name, seg.name))


def _names(names: list[str]) -> str:
    return ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")


def _build(graph: Graph) -> tuple[Sheet, dict[str, _Needs]]:
    out = Sheet()
    needs: dict[str, _Needs] = {}
    channel_of: dict[str, int] = {}
    bonded = {id(s.channel_of) for s in graph.segments if s.channel_of is not None}
    for seg in graph.segments:
        if seg.kind == "p2p":
            continue
        if graph.switches and seg.kind == "lan" and seg.channel_of is None:
            _tree(out, needs, graph.switches, seg)
        elif seg.kind == "channel" and seg.channel_of is not None:
            k = channel_of.get(seg.channel_of.name, 0)
            channel_of[seg.channel_of.name] = k + 1
            _lan(out, needs, seg, seg.channel_of, k)
        elif id(seg) not in bonded:     # a bonded LAN: its channels are the switches
            _lan(out, needs, seg, seg, None)
    for seg in graph.segments:
        if seg.kind == "p2p" and len(seg.members) == 2:     # (one end: the other is down)
            (na, ia, _ha), (nb, ib, _hb) = seg.members
            out.cables.append(Cable(seg.name, NicEnd(na.name, ia.name), NicEnd(nb.name, ib.name),
                                    seg.name, None))
    return out, needs


def _add_switch(out: Sheet, name: str, network: str, channel: int | None,
                ports: int | None) -> None:
    out.switches.append(SwitchInfo(name, len(out.switches) + 1, network, channel, ports))


def _need(needs: dict[str, _Needs], switch: str, port: int, what: str, seg: Segment) -> None:
    old = needs.get(switch)
    if old is None or port > old.port:
        needs[switch] = _Needs(port, what, seg.ports, seg.ports_key)


def _lan(out: Sheet, needs: dict[str, _Needs], seg: Segment, network: Segment,
         channel: int | None) -> None:
    """One switch for a LAN or a bond channel; each member's NIC on the port of its host number."""
    name = "sw-" + seg.name
    _add_switch(out, name, network.name, channel, seg.ports)
    for node, iface, host in sorted(seg.members, key=lambda m: m[2]):
        out.cables.append(Cable(label(name, host), NicEnd(node.name, iface.name),
                                PortEnd(name, host), network.name, channel))
        _need(needs, name, host, "node %s (its host number on %s)" % (node.name, network.name),
              seg)


def _tree(out: Sheet, needs: dict[str, _Needs], switches: list[Switch], seg: Segment) -> None:
    """A tree's switches: uplinks on port 1, children from port 2 (from 1 on the root)."""
    nic = {node.name: iface.name for node, iface, _host in seg.members}
    for sw in switches:
        _add_switch(out, sw.name, seg.name, None, seg.ports)
    for sw in switches:
        first = 1 if sw.parent is None else 2
        for k, child in enumerate(sw.children):
            port = first + k
            out.cables.append(Cable(label(child.name, 1), PortEnd(child.name, 1),
                                    PortEnd(sw.name, port), seg.name, None))
            _need(needs, sw.name, port, "switch %s" % child.name, seg)
        for k, node in enumerate(sw.nodes):
            port = first + k
            out.cables.append(Cable(label(sw.name, port), NicEnd(node, nic[node]),
                                    PortEnd(sw.name, port), seg.name, None))
            _need(needs, sw.name, port, "node %s" % node, seg)
