"""Match the wiring the nodes discovered to the plan.

Each host's discovery report lists its NICs and, per NIC, the NICs of other
nodes it hears. NICs that hear each other form one layer-2 domain (a switch,
a bond channel's switch or a point-to-point cable). A domain is identified
with the planned network that has exactly its node set; several planned
networks with one node set (the channels of a bond, parallel links) are
interchangeable, so each such domain is matched to one of them the same way
on every node. The result is each host's ``beonet_interfaces`` (logical ->
physical NIC name), given only when every node matches, or the cabling
faults, each named in the cabling sheet's terms (switch, port, cable label)
with both ends and the fix. A moved cable is one fault, not its symptoms.
NICs the plan does not use are spare.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..agent.files import atomic_write, output_problem, read_text
from ..agent.names import escaped, ifname_problem, inside, node_name_problem, shown
from .sheet import NicEnd, PortEnd, Sheet, sheet

if TYPE_CHECKING:
    from ..compiler.pipeline import Compiled

NicId = tuple[str, str]                   # (node, physical NIC name)
Interfaces = dict[str, dict[str, str]]    # host -> {logical: physical}
REPORT_FORMAT = 1


@dataclass(slots=True, eq=False)
class Network:
    """A planned layer-2 network: a LAN's switch, a bond channel's switch or a p2p cable."""

    name: str
    kind: str                             # "lan", "channel" or "p2p"
    ends: dict[str, str]                  # node -> logical NIC name
    order: int


@dataclass(slots=True)
class Fault:
    """One cabling fault: its kind, the sentence, the fix and the ends involved."""

    kind: str
    text: str
    fix: str
    ends: list[dict[str, Any]] = field(default_factory=list)
    cable: str | None = None

    def __str__(self) -> str:
        return "%s: %s" % (self.text, self.fix) if self.fix else self.text

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "fix": self.fix, "ends": self.ends,
                "cable": self.cable, "message": str(self)}


@dataclass(slots=True)
class Result:
    """``mapping`` is every host's beonet_interfaces when there is no fault, else empty."""

    mapping: Interfaces
    faults: list[Fault]
    spare: dict[str, list[str]]

    @property
    def ok(self) -> bool:
        return not self.faults


# --- the plan side -----------------------------------------------------------

def networks(source: Compiled | Mapping[str, Any]) -> list[Network]:
    """The planned layer-2 networks of a compiled topology or of a plan dict."""
    if isinstance(source, Mapping):
        return _plan_networks(source)
    out: list[Network] = []
    for seg in source.graph.segments:
        ends = {node.name: iface.name for node, iface, _host in seg.members
                if iface.kind == "ethernet"}
        if ends:
            out.append(Network(seg.name, seg.kind, ends, len(out)))
    return out


def _plan_networks(plan: Mapping[str, Any]) -> list[Network]:
    segments: Mapping[str, Any] = plan.get("segments", {})
    carried = {s.get("carries") for s in segments.values()}
    out: list[Network] = []
    for name, seg in segments.items():
        if name not in carried:
            ends = {m["node"]: m["interface"] for m in seg.get("members", [])}
            out.append(Network(name, seg.get("kind", "lan"), ends, len(out)))
    return out


class Places:
    """Where the cabling sheet puts each node's NIC, in the sheet's words."""

    def __init__(self, nets: list[Network], the_sheet: Sheet | None) -> None:
        self.cables: dict[NicEnd, Any] = {}
        for cable in the_sheet.cables if the_sheet is not None else []:
            for end in (cable.a, cable.b):
                if isinstance(end, NicEnd):
                    self.cables[end] = cable
        self.nets = nets

    def cable(self, net: Network, node: str) -> Any:
        return self.cables.get(NicEnd(node, net.ends[node]))

    def label(self, net: Network, node: str) -> str | None:
        cable = self.cable(net, node)
        return None if cable is None else str(cable.label)

    def port(self, net: Network, node: str) -> PortEnd | None:
        cable = self.cable(net, node)
        if cable is None:
            return None
        return next((e for e in (cable.a, cable.b) if isinstance(e, PortEnd)), None)

    def switch(self, net: Network) -> str:
        """'switch sw-group3', or the network's name when the sheet names no one switch."""
        names = {p.switch for p in (self.port(net, n) for n in net.ends) if p is not None}
        if len(names) == 1:
            return "switch %s" % names.pop()
        return "the switches of network %s" % net.name if names else "network %s" % net.name

    def place(self, net: Network, node: str) -> str:
        """Where the sheet plugs node's NIC of net: 'sw-group2 port 7' or 'cable a--b to b'."""
        port = self.port(net, node)
        if port is not None:
            return "%s port %d (cable %s)" % (port.switch, port.port, self.label(net, node))
        if net.kind == "p2p":
            return "cable %s to %s" % (self.label(net, node) or net.name, _other(net, node))
        return "network %s" % net.name


def _other(net: Network, node: str) -> str:
    return next((n for n in net.ends if n != node), node)


# --- the discovered side -----------------------------------------------------

@dataclass(slots=True)
class Seen:
    """What the reports say: each NIC's carrier, the heard edges, report faults."""

    carrier: dict[NicId, bool] = field(default_factory=dict)
    macs: dict[NicId, str] = field(default_factory=dict)
    edges: list[tuple[NicId, NicId]] = field(default_factory=list)
    ignored: set[NicId] = field(default_factory=set)
    faults: list[Fault] = field(default_factory=list)


def _bad(seen: Seen, host: str, what: str) -> None:
    seen.faults.append(Fault("report", "the discovery report of %s %s" % (host, what),
                             "run playbooks/discover.yml again", [{"node": host}]))


def _listed(seen: Seen, host: str, body: Mapping[str, Any], key: str, where: str = "") -> list[Any]:
    """body[key] when it is a list; [] when absent; a fault when it is anything else."""
    value = body.get(key)
    if value is None or isinstance(value, list):
        return value or []
    _bad(seen, host, "has %s%s that is not a list" % (where, key))
    return []


def read_reports(reports: Mapping[str, Any], nodes: Iterable[str]) -> Seen:
    """The NICs and heard edges of every report; a fault for each missing or malformed one."""
    seen = Seen()
    known = set(nodes)
    for host in known:
        if host not in reports:
            seen.faults.append(Fault("report", "no discovery report for %s" % host,
                                     "run playbooks/discover.yml (is %s up?)" % host,
                                     [{"node": host}]))
    for host, report in reports.items():
        if host in known:
            _read_report(seen, host, report, known)
    return seen


def _read_report(seen: Seen, host: str, report: Any, known: set[str]) -> None:
    if not isinstance(report, Mapping) or not isinstance(report.get("nics"), list):
        _bad(seen, host, "has no list of nics")
        return
    if report.get("format") != REPORT_FORMAT or report.get("node", host) != host:
        _bad(seen, host, "is of format %r for node %r (expected format %d for %s)"
             % (report.get("format"), report.get("node"), REPORT_FORMAT, host))
        return
    skipped = [s.get("name") for s in _listed(seen, host, report, "skipped")
               if isinstance(s, Mapping)]
    for name in _listed(seen, host, report, "management") + skipped:
        seen.ignored.add((host, str(name)))
    for k, nic in enumerate(report["nics"]):
        if not isinstance(nic, Mapping) or not isinstance(nic.get("name"), str):
            _bad(seen, host, "has no name in nics[%d]" % k)
            continue
        me = (host, nic["name"])
        seen.carrier[me] = bool(nic.get("carrier"))
        if isinstance(nic.get("mac"), str) and nic["mac"]:
            seen.macs[me] = nic["mac"].lower()
        for heard in _listed(seen, host, nic, "neighbours", "nics[%d]." % k):
            if isinstance(heard, Mapping) and isinstance(heard.get("node"), str) \
                    and heard["node"] in known and isinstance(heard.get("nic"), str):
                seen.edges.append((me, (heard["node"], heard["nic"])))


def domains(seen: Seen) -> list[list[NicId]]:
    """The layer-2 domains: NICs joined by heard edges (union-find), each sorted."""
    parent: dict[NicId, NicId] = {}

    def root(x: NicId) -> NicId:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in seen.edges:
        if a in seen.ignored or b in seen.ignored:
            continue
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[ra] = rb
    groups: dict[NicId, list[NicId]] = {}
    for x in parent:
        groups.setdefault(root(x), []).append(x)
    return sorted(sorted(g) for g in groups.values())


def duplicate_macs(seen: Seen, doms: list[list[NicId]]) -> list[Fault]:
    """A fault for each MAC address two nodes' NICs hold on one layer-2 segment (a
    domain): cloned VMs keep their template's MAC, and a switch then delivers each
    frame to one of them."""
    faults = []
    for dom in doms:
        holders: dict[str, list[NicId]] = {}
        for nic in dom:
            if nic in seen.macs:
                holders.setdefault(seen.macs[nic], []).append(nic)
        for mac, nics in sorted(holders.items()):
            if len({host for host, _nic in nics}) > 1:
                named = " and ".join("%s %s" % (escaped(host), escaped(nic)) for host, nic in nics)
                faults.append(Fault("duplicate-mac",
                                    "%s hold one MAC address, %s, on one segment" % (named, escaped(mac)),
                                    "give each NIC a MAC address of its own (a cloned VM keeps its "
                                    "template's) and run playbooks/discover.yml again",
                                    [_end(host, nic) for host, nic in nics]))
    return faults


# --- matching ------------------------------------------------------------------

@dataclass(slots=True)
class _Work:
    """One matching run: the planned networks, what was seen, and what is found."""

    nets: list[Network]
    places: Places
    seen: Seen
    existing: Mapping[str, Mapping[str, str]]
    matched: list[tuple[list[NicId], Network]] = field(default_factory=list)
    open: list[Network] = field(default_factory=list)
    loose: list[list[NicId]] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)


def _agreement(dom: list[NicId], net: Network, existing: Mapping[str, Mapping[str, str]]) -> int:
    """How many nodes the inventory's mapping already puts on net through this domain."""
    return sum(1 for host, nic in dom
               if (existing.get(host) or {}).get(net.ends.get(host, "")) == nic)


def _assign(doms: list[list[NicId]], nets: list[Network],
            existing: Mapping[str, Mapping[str, str]]) -> list[tuple[list[NicId], Network]]:
    """Domains to interchangeable networks (one node set): the inventory's mapping
    where it tells, else in order; channel k is the same switch on every node."""
    if len(doms) == 1 and len(nets) == 1:
        return [(doms[0], nets[0])]
    ranked = sorted((-_agreement(d, n, existing), i, n.order, n)
                    for i, d in enumerate(doms) for n in nets)
    out: list[tuple[list[NicId], Network]] = []
    taken_d: set[int] = set()
    taken_n: set[int] = set()
    for _score, i, order, net in ranked:
        if i not in taken_d and order not in taken_n:
            taken_d.add(i)
            taken_n.add(order)
            out.append((doms[i], net))
    return out


def _exact(work: _Work, doms: list[list[NicId]]) -> None:
    """Match every domain whose node set is exactly a planned network's."""
    by_key: dict[frozenset[str], list[Network]] = {}
    for net in work.nets:
        by_key.setdefault(frozenset(net.ends), []).append(net)
    found: dict[frozenset[str], list[list[NicId]]] = {}
    for dom in doms:
        hosts = frozenset(h for h, _nic in dom)
        if len(hosts) == len(dom) and hosts in by_key:
            found.setdefault(hosts, []).append(dom)
        else:
            work.loose.append(dom)
    for key, nets in by_key.items():
        pairs = _assign(found.get(key, []), nets, work.existing) if key in found else []
        work.matched.extend(pairs)
        done_d = {id(d) for d, _n in pairs}
        done_n = {id(n) for _d, n in pairs}
        work.open.extend(n for n in nets if id(n) not in done_n)
        work.loose.extend(d for d in found.get(key, []) if id(d) not in done_d)
    work.open.sort(key=lambda n: n.order)


def _pair_loose(work: _Work) -> dict[int, list[NicId]]:
    """Each unmatched network -> the unmatched domain that overlaps it most (greedy)."""
    by_node: dict[str, list[Network]] = {}
    for net in work.open:
        for node in net.ends:
            by_node.setdefault(node, []).append(net)
    ranked: list[tuple[int, int, int]] = []
    for i, dom in enumerate(work.loose):
        count: dict[int, int] = {}
        for host in {h for h, _nic in dom}:
            for net in by_node.get(host, []):
                count[net.order] = count.get(net.order, 0) + 1
        ranked.extend((-c, i, order) for order, c in count.items())
    paired: dict[int, list[NicId]] = {}
    used: set[int] = set()
    for _c, i, order in sorted(ranked):
        if i not in used and order not in paired:
            used.add(i)
            paired[order] = work.loose[i]
    return paired


def _nic_state(work: _Work, nic: NicId) -> str:
    """'has no carrier', 'hears no other node', ... for one physical NIC."""
    if nic not in work.seen.carrier:
        return "is not in its discovery report"
    if not work.seen.carrier[nic]:
        return "has no carrier"
    return "hears no other node"


def _end(host: str, nic: str | None) -> dict[str, Any]:
    return {"node": host, "nic": nic} if nic else {"node": host}


@dataclass(slots=True)
class _Diag:
    """Diagnosis of the unmatched networks and domains."""

    paired: dict[int, list[NicId]]
    by_order: dict[int, Network]
    explained: set[tuple[int, str]] = field(default_factory=set)

    def hosts(self, net: Network) -> set[str]:
        return {h for h, _nic in self.paired.get(net.order, [])}

    def expected(self, work: _Work, host: str, besides: Network) -> Network | None:
        """The host's unmatched network its stray NIC belongs on (missing host there)."""
        for net in work.open:
            if net is not besides and host in net.ends and host not in self.hosts(net) \
                    and (net.order, host) not in self.explained:
                return net
        return None


def _extras(dom: list[NicId], net: Network) -> tuple[list[NicId], list[NicId]]:
    """(NICs of the domain on net's nodes, one per node; the stray others)."""
    members: list[NicId] = []
    stray: list[NicId] = []
    seen: set[str] = set()
    for host, nic in dom:
        if host in net.ends and host not in seen:
            seen.add(host)
            members.append((host, nic))
        else:
            stray.append((host, nic))
    return members, stray


def _moved_p2p(work: _Work, diag: _Diag, net: Network, member: NicId, stray: NicId) -> Fault:
    (a, anic), (host, nic) = member, stray
    b = _other(net, a)
    diag.explained.update({(net.order, b), (net.order, a)})
    label = work.places.label(net, a) or net.name
    return Fault("moved-p2p", "%s %s reaches %s %s; the sheet puts cable %s between %s and %s"
                 % (a, anic, host, nic, label, a, b),
                 "move the end of cable %s from %s %s to %s" % (label, host, nic, b),
                 [_end(a, anic), _end(host, nic), _end(b, None)], label)


def _moved_switch(work: _Work, diag: _Diag, net: Network, stray: NicId) -> Fault:
    host, nic = stray
    reach = work.places.switch(net)
    want = diag.expected(work, host, net)
    if want is None:
        return Fault("extra", "%s %s reaches %s, where the sheet has no cable from %s"
                     % (host, nic, reach, host), "unplug the cable of %s %s" % (host, nic),
                     [_end(host, nic)])
    diag.explained.add((want.order, host))
    label = work.places.label(want, host)
    port = work.places.port(want, host)
    where = work.places.place(want, host)
    text = "%s %s reaches %s; the sheet puts it on %s" % (host, nic, reach, where)
    ends = [_end(host, nic)] + ([{"switch": port.switch, "port": port.port}] if port else [])
    return Fault("moved-switch", text, "move the cable of %s %s to %s" % (host, nic, where),
                 ends, label)


def _strays(work: _Work, diag: _Diag) -> None:
    """A fault for each NIC that reaches a network the sheet does not put it on."""
    for order, dom in sorted(diag.paired.items()):
        net = diag.by_order[order]
        members, strays = _extras(dom, net)
        for stray in strays:
            if net.kind == "p2p" and members:
                work.faults.append(_moved_p2p(work, diag, net, members[0], stray))
            else:
                work.faults.append(_moved_switch(work, diag, net, stray))


def _mapped_nic(work: _Work, net: Network, node: str) -> str | None:
    return (work.existing.get(node) or {}).get(net.ends[node])


def _dead_nics(work: _Work, node: str) -> str:
    """' (no carrier on enp5s0, enp6s0)': the node's candidates for a missing cable."""
    dead = sorted(nic for (host, nic), up in work.seen.carrier.items() if host == node and not up)
    return " (no carrier on %s)" % ", ".join(dead) if dead else ""


def _missing_end(work: _Work, net: Network, node: str) -> Fault:
    """The node's NIC of net reaches none of net's other nodes."""
    where = work.places.place(net, node)
    label = work.places.label(net, node)
    nic = _mapped_nic(work, net, node)
    if net.kind == "p2p":
        peer = _other(net, node)
        what = "p2p NIC to %s" % peer
        text = "%s %s (its %s)" % (node, nic, what) if nic else "%s's %s" % (node, what)
        fix = "plug in or replace cable %s between %s and %s" % (label or net.name, node, peer)
    else:
        what = "NIC on %s" % work.places.switch(net)
        text = "%s %s (its %s)" % (node, nic, what) if nic else "%s's %s" % (node, what)
        fix = "plug %s into %s" % ("%s %s" % (node, nic) if nic else node, where)
    state = _nic_state(work, (node, nic)) if nic else "has no carrier" + _dead_nics(work, node)
    return Fault("no-carrier", "%s %s" % (text, state), fix, [_end(node, nic)], label)


def _missing(work: _Work, diag: _Diag) -> None:
    """A fault for each planned end no domain explains; one per cable or silent switch."""
    for net in work.open:
        gone = [n for n in net.ends if n not in diag.hosts(net)
                and (net.order, n) not in diag.explained]
        if not gone:
            continue
        if net.kind == "p2p":
            work.faults.append(_missing_end(work, net, gone[0]))
        elif len(gone) == len(net.ends) > 2:
            reach = work.places.switch(net)
            work.faults.append(Fault("silent-switch", "%s carries nothing: none of its %d "
                                     "nodes hears another there" % (reach, len(gone)),
                                     "check that %s is powered and its cables plugged in"
                                     % reach, [{"network": net.name}]))
        else:
            work.faults.extend(_missing_end(work, net, n) for n in gone)


def _wiring(work: _Work) -> None:
    """Name every disagreement between the unmatched domains and networks."""
    diag = _Diag(_pair_loose(work), {n.order: n for n in work.open})
    _strays(work, diag)
    _missing(work, diag)


# --- the inventory's mapping ---------------------------------------------------

def _swaps(changed: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """Pairs of logical NICs whose physical names are exchanged."""
    out: list[tuple[str, str]] = []
    for a, (old_a, new_a) in sorted(changed.items()):
        for b, (old_b, new_b) in sorted(changed.items()):
            if a < b and old_a == new_b and old_b == new_a:
                out.append((a, b))
    return out


def _compare(host: str, found: dict[str, str], old: Mapping[str, str]) -> list[Fault]:
    """Faults where the inventory's mapping of one host disagrees with its wiring."""
    changed = {lg: (str(old.get(lg)), phys) for lg, phys in found.items() if old.get(lg) != phys}
    faults: list[Fault] = []
    want = ", ".join("%s: %s" % kv for kv in sorted(found.items()))
    done: set[str] = set()
    for a, b in _swaps(changed):
        if a in done or b in done:
            continue
        done.update((a, b))
        nic_a, nic_b = changed[a][0], changed[b][0]
        faults.append(Fault("swapped", "%s %s and %s are swapped" % (host, nic_a, nic_b),
                            "swap the cables of %s and %s on %s, or set beonet_interfaces "
                            "of %s to {%s}" % (nic_a, nic_b, host, host, want),
                            [_end(host, nic_a), _end(host, nic_b)]))
    for lg, (was, phys) in sorted(changed.items()):
        if lg not in done:
            faults.append(Fault("mapping", "%s maps %s to %s, but the cable the sheet puts on "
                                "%s reaches %s" % (host, lg, was, lg, phys),
                                "set beonet_interfaces of %s to {%s}" % (host, want),
                                [_end(host, was), _end(host, phys)]))
    return faults


def _mapping(work: _Work) -> Interfaces:
    out: Interfaces = {}
    for dom, net in work.matched:
        for host, nic in dom:
            out.setdefault(host, {})[net.ends[host]] = nic
    return out


def _spare(work: _Work, mapping: Interfaces) -> dict[str, list[str]]:
    used = {(h, nic) for h, names in mapping.items() for nic in names.values()}
    spare: dict[str, list[str]] = {}
    for nic in sorted(set(work.seen.carrier) - used):
        spare.setdefault(nic[0], []).append(nic[1])
    return spare


def match(compiled: Compiled, reports: Mapping[str, Any],
          existing: Mapping[str, Mapping[str, str]] | None = None,
          the_sheet: Sheet | None = None) -> Result:
    """Each host's beonet_interfaces from the discovery reports, or the cabling faults.

    existing: an inventory's mapping to check against the wiring (its hosts only)."""
    nets = networks(compiled)
    nodes = [n.name for n in compiled.graph.nodes]
    places = Places(nets, the_sheet if the_sheet is not None else sheet(compiled))
    work = _Work(nets, places, read_reports(reports, nodes), existing or {})
    work.faults.extend(work.seen.faults)
    doms = domains(work.seen)
    work.faults.extend(duplicate_macs(work.seen, doms))
    _exact(work, doms)
    if work.open:
        _wiring(work)
    found = _mapping(work)
    mapping = {n: found[n] for n in nodes if n in found}
    for host in nodes:
        old = work.existing.get(host)
        if host in mapping and isinstance(old, Mapping):
            work.faults.extend(_compare(host, mapping[host], old))
    spare = _spare(work, mapping)
    return Result({} if work.faults else mapping, work.faults, spare)


# --- synthesised reports -------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Move:
    """A cabling fault to build into synthesised reports. The cable of node's NIC
    on ``network`` goes: with ``to_node``, to a spare NIC of that node (a moved
    p2p cable end); with ``to_network``, to that network's switch; with neither,
    nowhere (unplugged)."""

    node: str
    network: str
    to_node: str | None = None
    to_network: str | None = None


def _mac(n: int) -> str:
    return "02:00:%02x:%02x:%02x:%02x" % (n >> 24 & 255, n >> 16 & 255, n >> 8 & 255, n & 255)


def _move(wires: dict[str, list[NicId]], free: dict[str, list[str]], mv: Move) -> None:
    wire = wires.get(mv.network, [])
    moved = next((n for h, n in wire if h == mv.node), None)
    if moved is None:
        raise ValueError("%s has no NIC on %s" % (mv.node, mv.network))
    wire.remove((mv.node, moved))
    if mv.to_node is not None:
        if not free.get(mv.to_node):
            raise ValueError("%s has no spare NIC to move a cable to" % mv.to_node)
        wire.append((mv.to_node, free[mv.to_node].pop(0)))
    elif mv.to_network is not None:
        wires[mv.to_network].append((mv.node, moved))


def _wires(nets: list[Network], mapping: Mapping[str, Mapping[str, str]], spare: int,
           moves: Iterable[Move]) -> tuple[dict[str, list[NicId]], dict[str, list[str]]]:
    """(network -> the NICs on its wire, host -> its NIC names) after the moves."""
    wires = {net.name: [(node, (mapping.get(node) or {}).get(lg, lg))
                        for node, lg in net.ends.items()] for net in nets}
    names: dict[str, list[str]] = {}
    for wire in wires.values():
        for host, nic in wire:
            names.setdefault(host, []).append(nic)
    for host in names:
        names[host].extend("spare%d" % k for k in range(spare))
    free = {h: [n for n in nics if n.startswith("spare")] for h, nics in names.items()}
    for mv in moves:
        _move(wires, free, mv)
    return wires, names


def synthesise(source: Compiled | Mapping[str, Any],
               mapping: Mapping[str, Mapping[str, str]] | None = None, spare: int = 0,
               moves: Iterable[Move] = ()) -> dict[str, dict[str, Any]]:
    """The discovery reports a cluster cabled as the plan says would give, with the
    physical names of ``mapping`` (logical names where it has none), ``spare`` unused
    NICs per node (spare0, ...) and the cabling faults of ``moves``."""
    nets = networks(source)
    if isinstance(source, Mapping):
        management = str(source.get("management", {}).get("interface", "eth0"))
    else:
        management = source.graph.management
    wires, names = _wires(nets, mapping or {}, spare, moves)
    nics: dict[NicId, dict[str, Any]] = {}
    for host, host_nics in names.items():
        for nic in host_nics:
            nics[(host, nic)] = {"name": nic, "mac": _mac(len(nics) + 1), "carrier": False,
                                 "was_up": False, "neighbours": []}
    for wire in wires.values():
        if len(wire) < 2:
            continue
        heard = [{"node": h, "nic": n, "mac": nics[(h, n)]["mac"]} for h, n in wire]
        for k, end in enumerate(wire):
            nics[end]["carrier"] = True
            nics[end]["neighbours"].extend(heard[:k] + heard[k + 1:])
    reports: dict[str, dict[str, Any]] = {}
    for (host, _nic), body in nics.items():
        reports.setdefault(host, {"format": REPORT_FORMAT, "node": host, "run": "synthesised",
                                  "management": [management], "nics": [], "skipped": []})
        reports[host]["nics"].append(body)
    return reports


# --- outputs -------------------------------------------------------------------

VAR = "beonet_interfaces"
VAR_FILE = VAR + ".yml"
_HIDDEN_BY_DIR = ("", ".yml", ".yaml", ".json")


def host_vars_text(names: Mapping[str, str]) -> str:
    """host_vars/HOST/beonet_interfaces.yml: the host's logical -> physical names."""
    lines = ["# Written by beonet cabling from the discovered wiring.", "beonet_interfaces:"]
    lines += ["  %s: %s" % (json.dumps(k), json.dumps(v)) for k, v in sorted(names.items())]
    return "\n".join(lines) + "\n"


def host_vars_clashes(folder: str, hosts: Iterable[str]) -> list[str]:
    """host_vars files a new host_vars/HOST/ folder would hide: Ansible reads the
    folder HOST/ and then no longer reads HOST.yml (it takes the first it finds)."""
    out: list[str] = []
    for host in hosts:
        base = os.path.join(folder, host)
        if not os.path.isdir(base):
            out.extend(base + ext for ext in _HIDDEN_BY_DIR[1:] if os.path.isfile(base + ext))
    return out


def _names_problems(names: Any) -> list[tuple[str, str]]:
    """(key path below beonet_interfaces, why) for each name of {logical: physical}
    that may not be written; empty when all may."""
    if not isinstance(names, Mapping):
        return [("", "must be a mapping of logical to physical NIC names, not %s" % shown(names))]
    return [(".%s" % escaped(str(logical))[:40], problem) for logical, physical in names.items()
            for problem in (ifname_problem(logical), ifname_problem(physical)) if problem]


def mapping_hint(existing: Mapping[str, Any], nodes: Iterable[str],
                 where: str) -> tuple[Interfaces, list[str]]:
    """(the inventory's {host: {logical: physical}} of the topology's nodes that can
    be used as a hint for matching, a warning for each value that cannot)."""
    hint: Interfaces = {}
    warnings: list[str] = []
    for host in nodes:
        if host not in existing:
            continue
        problems = _names_problems(existing[host])
        warnings.extend("%s: %s.%s%s: %s; %s's mapping is not used for matching"
                        % (where, host, VAR, key, why, host) for key, why in problems)
        if not problems:
            hint[host] = dict(existing[host])
    return hint, warnings


def write_host_vars(folder: str, mapping: Interfaces, check: bool = False) -> list[str]:
    """Write host_vars/HOST/beonet_interfaces.yml for every host whose file differs,
    atomically; return the paths that change (none written in check mode).

    A second wall behind the checks of the inputs: every host and NIC name is
    checked again and every path must resolve inside folder, before any is written
    (ValueError naming each one that is refused)."""
    problems: list[str] = []
    planned: list[tuple[str, str]] = []
    for host, names in sorted(mapping.items()):
        problems.extend("%s: %s" % (escaped(host)[:63], why) for why in [node_name_problem(host)] if why)
        problems.extend("%s.%s%s: %s" % (escaped(host)[:63], VAR, key, why)
                        for key, why in _names_problems(names))
        try:
            planned.append((inside(folder, os.path.join(host, VAR_FILE)), host_vars_text(names)))
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError("nothing written to %s: %s" % (escaped(folder), "; ".join(problems)))
    changed = [(path, text) for path, text in planned if read_text(path) != text]
    if not check:
        for path, text in changed:
            atomic_write(path, text)
    return [path for path, _text in changed]


def host_vars_problems(folder: str, hosts: Iterable[str]) -> list[str]:
    """Why DIR/HOST/beonet_interfaces.yml cannot be written for every host (the
    folder's own problem, or each of its entries in the way)."""
    problem = output_problem(folder, folder=True)
    if problem:
        return [problem]
    out: list[str] = []
    for host in hosts:
        base = os.path.join(folder, host)
        if os.path.lexists(base) and not os.path.isdir(base):
            out.append("%s is not a folder (it would hold %s)" % (escaped(base), VAR_FILE))
        elif os.path.isdir(os.path.join(base, VAR_FILE)):
            out.append("%s is a folder, not a file" % escaped(os.path.join(base, VAR_FILE)))
    return out


def report_text(name: str, result: Result) -> str:
    """The Markdown cabling report: the faults with their fixes, or the mapping."""
    out = ["# Cabling report: %s" % name, ""]
    if result.faults:
        out += ["%d cabling fault%s; no NIC mapping is written." % (
            len(result.faults), "" if len(result.faults) == 1 else "s"), "",
            "| # | fault | fix |", "| --- | --- | --- |"]
        out += ["| %d | %s | %s |" % (k, f.text, f.fix) for k, f in enumerate(result.faults, 1)]
    else:
        out += ["Every node is cabled as the sheet says.", "",
                "| node | logical -> physical |", "| --- | --- |"]
        out += ["| %s | %s |" % (host, ", ".join("%s -> %s" % kv for kv in sorted(names.items())))
                for host, names in result.mapping.items()]
    spare = ["%s: %s" % (host, ", ".join(nics)) for host, nics in sorted(result.spare.items())]
    if spare:
        out += ["", "Spare NICs (not in the plan): " + "; ".join(spare)]
    return "\n".join(out) + "\n"


def mapping_text(mapping: Interfaces) -> str:
    """The mapping as inventory host variables (YAML), one host per entry."""
    out = []
    for host, names in mapping.items():
        flow = ", ".join("%s: %s" % (json.dumps(k), json.dumps(v)) for k, v in sorted(names.items()))
        out.append("%s:\n  beonet_interfaces: {%s}" % (json.dumps(host), flow))
    return "\n".join(out) + "\n" if out else "{}\n"
