"""The plan: the compiled graph as a dict, the contract every later part consumes.

Dumped as JSON or YAML; the dry run lives in ``dryrun.py``, exports for other
tools in ``export.py`` and drawings in ``drawing.py``. Its shape, key for key, is
the TypedDicts of ``planshape.py`` (given here as ``plan.Plan``, ``plan.SegmentPlan``
...); a node's part is the one the node agent reads (``agent/nodeplan.py``, which
travels to the nodes without the compiler).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from ipaddress import IPv6Interface, IPv6Network

from ..agent.routes import aggregate
from ..compiler.model import (
    UNASSIGNED,
    Graph,
    Interface,
    Node,
    Route,
    Segment,
    Switch,
    ip6_text,
    ip_text,
    net6_text,
    net_text,
    parse_net,
)
from ..compiler.pipeline import Compiled
from ..compiler.records import cast, shape_types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..agent.nodeplan import Bfd, NodePlan, Routing
    from ..agent.nodeplan import Interface as InterfacePlan
    from ..agent.nodeplan import Peer as PeerPlan
    from ..agent.nodeplan import Route as RoutePlan
    from .planshape import (
        FailoverPlan,
        ManagementPlan,
        MemberPlan,
        NextHopPlan,
        Plan,
        SegmentPlan,
        SwitchPlan,
        TopologyPlan,
        _Logical,
        _Prefix,
    )

PLAN_FORMAT = 3

Physical = dict[str, dict[str, str]]    # node -> {logical NIC name: physical NIC name}

__all__ = ["PLAN_FORMAT", "InterfacePlan", "ManagementPlan", "MemberPlan", "NodePlan", "PeerPlan",
           "Plan", "RoutePlan", "SegmentPlan", "SwitchPlan", "TopologyPlan", "aggregate", "dumps",
           "node_plan", "plan", "prefixes", "segment_plan"]
# The plan's types (planshape, with the node plan's): imported when first asked for
__getattr__ = shape_types(__name__, "beonet.outputs.planshape")


HASH_POLICY = 0     # L3 (source and destination address): one pair keeps to one branch


def _iface(iface: Interface, physical: dict[str, str], everyone: Physical,
           families: _Families = (True, False)) -> InterfacePlan:
    seg = iface.segment
    name = physical.get(iface.name, iface.name)
    renamed: _Logical = {"logical": iface.name} if name != iface.name else {}
    out: InterfacePlan = {"name": name, "kind": iface.kind, "segment": seg.name,
                          "addresses": _cidrs(iface, families),
                          **renamed, "rate_mbit": iface.rate_mbit, "mtu": iface.mtu}
    if iface.kind == "bond":
        out["members"] = [physical.get(m, m) for m in iface.members]
        if iface.mac is not None:
            out["mac"] = iface.mac
        if iface.mode is not None:
            out["mode"] = iface.mode
        if iface.miimon is not None:
            out["miimon"] = iface.miimon
        if iface.tso is not None:
            out["tso"] = iface.tso
    if iface.bond:
        out["bond"] = iface.bond
    if iface.peer:
        node, nic = iface.peer
        out["peer"] = {"node": node, "interface": everyone.get(node, {}).get(nic, nic)}
    return out


# Which families a plan shows: set by node_plans for the graph at hand. An interface's
# IPv4 addresses are internal labels on an IPv6-only cluster, never written.
_Families = tuple[bool, bool]


def _cidrs(iface: Interface, families: _Families = (True, False)) -> list[str]:
    seg = iface.segment
    four = ["%s/%d" % (ip_text(a), seg.plen) for a in iface.addresses] if families[0] else []
    return four + ["%s/%d" % (ip6_text(a), seg.plen6) for a in iface.addresses6]


def node_plan(node: Node, everyone: Physical | None = None, routes: bool = True,
              failover: FailoverPlan | None = None, bfd: Bfd | None = None,
              v4: bool = True) -> NodePlan:
    """One node's plan; everyone: {node: {logical: physical NIC name}}.
    routes=False leaves its routes out (an empty list); failover: the
    node's failover object, when the topology's failover is on; bfd: the
    BFD timers with routing.engine frr (the node's routing object); v4:
    False on an IPv6-only cluster (no IPv4 address or route is written)."""
    everyone = everyone or {}
    physical = everyone.get(node.name, {})
    six = node.home.addresses6 != []
    out = cast("NodePlan", {"index": node.index, **({"address": ip_text(node.address)} if v4 else {}),
                            **({"address6": ip6_text(node.address6)} if six else {})})
    out.update({"forwarding": node.forwarding,
                "interfaces": [_iface(i, physical, everyone, (v4, six)) for i in node.interfaces],
                "routes": _both(node, physical, v4) if routes and node.loopback is None else []})
    if node.loopback is not None:       # what FRR's OSPF will install, for the live proof
        out["learned"] = _both(node, physical, v4) if routes else []
    if node.group is not None:
        out["group"] = node.group
    if node.coords is not None:
        out["coords"] = list(node.coords)
    if node.switch is not None:
        out["switch"] = node.switch
    if failover is not None:
        cast("dict[str, Any]", out)["failover"] = failover
    if bfd is not None and node.loopback is not None:
        out["routing"] = cast("Routing", {
            "engine": "frr", **({"loopback": net_text(node.loopback, 32)} if v4 else {}),
            "bfd": bfd, "home": physical.get(node.home.name, node.home.name)})
        if node.loopback6 is not None:
            out["routing"]["loopback6"] = net6_text(node.loopback6, 128)
    return out


def _both(node: Node, physical: dict[str, str], v4: bool) -> list[RoutePlan]:
    """A node's routes in the families its plan shows: the IPv4 ones, then the IPv6 ones."""
    four = _routes(node.routes, physical, ip_text, net_text) if v4 else []
    return four + _routes(node.routes6, physical, ip6_text, net6_text) if node.routes6 else four


def bfd_plan(graph: Graph) -> Bfd | None:
    """The BFD timers of routing.engine frr (None with static routes)."""
    if graph.engine != "frr":
        return None
    return {"interval_ms": graph.bfd["interval_ms"], "multiplier": graph.bfd["multiplier"]}


def _routes(routes: list[Route], physical: dict[str, str], ip: Callable[[int], str],
            net: Callable[[int, int], str]) -> list[RoutePlan]:
    """A node's routes; nexthops (the preferred first) only on those with two or
    more. Equal nexthops lists of one node are one object: a node has few
    distinct ones, and a million routes would otherwise hold a million lists;
    so are its equal next hops (the YAML dump writes them out in full, see
    ``dumps``)."""
    out: list[RoutePlan] = []
    lists: dict[tuple[int, str, tuple[int, ...], tuple[str, ...]], list[NextHopPlan]] = {}
    each: dict[tuple[int, str], NextHopPlan] = {}
    texts: dict[int, str] = {}          # the node's few gateways and sources, written once each
    for r in routes:
        via = texts.get(r.via)
        route: RoutePlan = {"to": net(r.net, r.plen),
                            "via": via or texts.setdefault(r.via, ip(r.via)),
                            "dev": physical.get(r.dev, r.dev)}
        if r.src is not None:
            route["src"] = texts.get(r.src) or texts.setdefault(r.src, ip(r.src))
        if r.alt_via:
            key = (r.via, r.dev, r.alt_via, r.alt_dev)
            hops = lists.get(key)
            if hops is None:
                hops = lists[key] = [each.get(h) or each.setdefault(h, _hop(h, physical, ip))
                                     for h in zip((r.via, *r.alt_via), (r.dev, *r.alt_dev))]
            cast("dict[str, Any]", route)["nexthops"] = hops
        out.append(route)
    return out


def _hop(hop: tuple[int, str], physical: dict[str, str], ip: Callable[[int], str]) -> NextHopPlan:
    via, dev = hop
    return {"via": ip(via), "dev": physical.get(dev, dev)}


def failover_plan(graph: Graph) -> FailoverPlan | None:
    """Every node's failover object, or None when the topology's failover is off
    or no node has a route (one LAN, bonded nets, trees: nothing to fail over)."""
    if not graph.failover or not any(x.routes for x in graph.nodes):
        return None
    n = graph.neighbour
    return {"hash_policy": HASH_POLICY,
            "neigh": {"base_reachable_time_ms": n["base_reachable_time_ms"],
                      "delay_first_probe_time": n["delay_first_probe_time"],
                      "ucast_solicit": n["ucast_solicit"], "retrans_time_ms": n["retrans_time_ms"]}}


def segment_plan(seg: Segment, everyone: Physical, v4: bool = True) -> SegmentPlan:
    """One segment's part of the plan; v4: False on an IPv6-only cluster."""
    members: list[MemberPlan] = []
    for n, i, _host in seg.members:
        member: MemberPlan = {"node": n.name, "interface": everyone.get(n.name, {}).get(i.name, i.name)}
        if i.addresses and seg.routed and v4:
            member["address"] = ip_text(i.addresses[0])
        if i.addresses6:
            member["address6"] = ip6_text(i.addresses6[0])
        members.append(member)
    prefix: _Prefix = {"prefix": seg.prefix_text()} if seg.routed and v4 else {}
    if seg.routed and seg.net6 != UNASSIGNED:
        prefix["prefix6"] = net6_text(seg.net6, seg.plen6)
    out: SegmentPlan = {"kind": seg.kind, **prefix, "rate_mbit": seg.rate_mbit, "mtu": seg.mtu,
                        "members": members}
    if seg.channel_of is not None:
        out["carries"] = seg.channel_of.name
    if seg.groups is not None:
        out["groups"] = list(seg.groups)
    if seg.medium != "switched":
        out["medium"] = seg.medium
    if seg.delay_us:
        out["delay_us"] = seg.delay_us
    return out


def _switch_plan(sw: Switch) -> SwitchPlan:
    return {"level": sw.level, "parent": sw.parent.name if sw.parent else None,
            "uplink_mbit": sw.uplink_mbit, "children": [c.name for c in sw.children],
            "nodes": sw.nodes}


def plan(compiled: Compiled, physical: Physical | None = None, routes: bool = True) -> Plan:
    """The whole plan as a dict. physical: {node: {logical: physical NIC}};
    routes=False leaves the nodes' routes out."""
    graph = compiled.graph
    physical = physical or {}
    out: Plan = {
        "beonet": {"plan_format": PLAN_FORMAT},
        "topology": {"name": graph.name, "family": graph.family,
                     "source": compiled.source_file},
        "management": {"interface": graph.management},
        "nodes": node_plans(graph, physical, routes),
        "segments": {s.name: segment_plan(s, physical, graph.v4) for s in graph.segments},
        "metrics": compiled.metrics,
    }
    if graph.switches:
        out["switches"] = {s.name: _switch_plan(s) for s in graph.switches}
    lat = graph.latency
    if lat is not None:
        out["latency"] = {"forward_us": {n.name: lat.node_us(n.name) for n in graph.nodes
                                         if n.forwarding and lat.node_us(n.name)}}
    if compiled.down:
        out["down"] = list(compiled.down)
    if len(compiled.components) > 1:
        out["partition"] = compiled.partition()
        out["components"] = [list(c) for c in compiled.components]
    return out


def node_plans(graph: Graph, physical: Physical | None = None,
               routes: bool = True, nodes: list[Node] | None = None) -> dict[str, NodePlan]:
    """Every node's part of the plan (it needs the routes, not the proof), or
    that of the given nodes only."""
    physical = physical or {}
    failover, bfd = failover_plan(graph), bfd_plan(graph)
    out = {n.name: node_plan(n, physical, routes, failover, bfd, graph.v4)
           for n in (graph.nodes if nodes is None else nodes)}
    if not graph.ipv6:       # the node agent leaves IPv6 link-local as the OS has it otherwise
        for node in out.values():
            node["ipv6"] = False
    return out


def prefixes(plan_: Mapping[str, Any]) -> list[str]:
    """The topology's address space as the fewest prefixes: what forwarding nodes
    forward between. Exactly the union of the segments' prefixes and the nodes'
    loopbacks (adjacent and nested ones merged), so its length follows the pools,
    not the number of links: the IPv4 ones, then the IPv6 ones (the plan's families)."""
    spans: list[tuple[int, int]] = []
    spans6: list[tuple[int, int]] = []
    for seg in plan_["segments"].values():
        if seg.get("prefix"):
            net, plen = parse_net(seg["prefix"])
            spans.append((net, net + (1 << (32 - plen))))
        if seg.get("prefix6"):
            net6 = IPv6Network(seg["prefix6"])
            spans6.append((int(net6.network_address), int(net6.broadcast_address) + 1))
    for node in plan_["nodes"].values():     # routing.engine frr: the nodes' loopbacks
        routing = node.get("routing", {})
        if "loopback" in routing:
            net, _plen = parse_net(routing["loopback"])
            spans.append((net, net + 1))
        if "loopback6" in routing:
            net = int(IPv6Interface(routing["loopback6"]).ip)
            spans6.append((net, net + 1))
    return _texts(spans, spans6)


def graph_prefixes(graph: Graph) -> list[str]:
    """``prefixes`` of the plan of graph, read from the graph itself."""
    spans: list[tuple[int, int]] = []
    if graph.v4:            # an IPv6-only graph's IPv4 addresses are labels, never shown
        spans = [(s.net, s.net + (1 << (32 - s.plen))) for s in graph.segments if s.prefix_text()]
        spans += [(n.loopback, n.loopback + 1) for n in graph.nodes if n.loopback is not None]
    spans6 = [(s.net6, s.net6 + (1 << (128 - s.plen6))) for s in graph.segments if s.prefix6_text()]
    spans6 += [(n.loopback6, n.loopback6 + 1) for n in graph.nodes if n.loopback6 is not None]
    return _texts(spans, spans6)


def _texts(spans: list[tuple[int, int]], spans6: list[tuple[int, int]]) -> list[str]:
    return [net_text(net, plen) for net, plen in aggregate(spans)] + \
        [net6_text(net, plen) for net, plen in aggregate(spans6, 128)]


def compact(nodes: int) -> bool:
    """Whether a plan of this many nodes is written as compact JSON (no indentation)."""
    return nodes > 500


def nodes_json(nodes: Mapping[str, NodePlan], compact_: bool) -> str:
    """The JSON text of a plan's nodes as ``dumps`` writes it inside the plan."""
    if compact_:
        return json.dumps(nodes, separators=(",", ":"), check_circular=False)
    return json.dumps(nodes, indent=2).replace("\n", "\n  ")     # one level down


def compact_nodes_json(graph: Graph, physical: Physical | None = None) -> str:
    """``nodes_json(node_plans(graph, physical), True)``, written straight from the
    graph: a route is one formatted string, not a dict to build and encode (a
    third of the time for a million routes)."""
    return "{%s}" % compact_nodes_items(graph, physical, graph.nodes)


def compact_nodes_items(graph: Graph, physical: Physical | None, nodes: list[Node]) -> str:
    """The '"name":{...}' items of ``compact_nodes_json`` for the given nodes,
    comma-separated: the text between its braces, part by part."""
    physical = physical or {}
    ipv6 = {} if graph.ipv6 else {"ipv6": False}
    failover, bfd = failover_plan(graph), bfd_plan(graph)
    texts: dict[int, str] = {}
    lists = ([("routes", ip_text, net_text)] if graph.v4 else []) + \
        ([("routes6", ip6_text, net6_text)] if graph.v6 else [])
    out = []
    for n in nodes:
        names = physical.get(n.name, {})
        devs: dict[str, str] = {}
        hops: dict[tuple[int, str], str] = {}
        head = json.dumps({**node_plan(n, physical, routes=False, failover=failover, bfd=bfd, v4=graph.v4),
                           **ipv6}, separators=(",", ":"))
        routes = ",".join(
            '{"to":"%s","via":"%s","dev":%s%s%s}' % (
                net(r.net, r.plen),
                texts.get(r.via) or texts.setdefault(r.via, ip(r.via)),
                devs.get(r.dev) or devs.setdefault(r.dev, json.dumps(names.get(r.dev, r.dev))),
                "" if r.src is None
                else ',"src":"%s"' % (texts.get(r.src) or texts.setdefault(r.src, ip(r.src))),
                _nexthops_json(r, hops, names, ip) if r.alt_via else "")
            for attr, ip, net in lists for r in getattr(n, attr))
        key = '"routes":[]' if n.loopback is None else '"learned":[]'
        out.append("%s:%s" % (json.dumps(n.name), head.replace(key, key[:-1] + routes + "]", 1)))
    return ",".join(out)


def _nexthops_json(r: Route, hops: dict[tuple[int, str], str], names: dict[str, str],
                   ip: Callable[[int], str]) -> str:
    """',"nexthops":[...]' of a multipath route; hops: a node's next hops already encoded."""
    parts = []
    for hop in zip((r.via, *r.alt_via), (r.dev, *r.alt_dev)):
        text = hops.get(hop)
        if text is None:
            text = hops[hop] = '{"via":"%s","dev":%s}' % (ip(hop[0]),
                                                          json.dumps(names.get(hop[1], hop[1])))
        parts.append(text)
    return ',"nexthops":[%s]' % ",".join(parts)


def dumps(data: Mapping[str, Any], fmt: str = "json", nodes: str | None = None) -> str:
    """The plan as JSON (compact beyond 500 nodes) or YAML. nodes: the text of
    its nodes from ``nodes_json``, to be written in place of data's nodes."""
    if fmt == "yaml":
        import yaml

        class Dumper(yaml.SafeDumper):
            def ignore_aliases(self, data: Any) -> bool:
                return True             # shared lists written in full, never as anchor and alias
        text: str = yaml.dump(data, Dumper=Dumper, sort_keys=False, default_flow_style=False,
                              width=100)
        return text
    if nodes is None:
        return _json(data, _compact_plan(data))
    before, after = around_nodes(data)
    return before + nodes + after


def _compact_plan(data: Mapping[str, Any]) -> bool:
    plan_nodes = data.get("nodes")
    return isinstance(plan_nodes, dict) and compact(len(plan_nodes))


def _json(data: Mapping[str, Any], compact_: bool) -> str:
    if compact_:
        return json.dumps(data, separators=(",", ":"), check_circular=False) + "\n"
    return indented(data) + "\n"


class _Other(Exception):
    """A value indented() leaves to json.dumps."""


_CONSTANTS = {True: "true", False: "false", None: "null"}
_NOT_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _key(key: Any) -> str:
    """A dict key as json.dumps writes it (quoted text)."""
    # pylint: disable=unidiomatic-typecheck  # exact types: a subclass is json.dumps's to write
    if type(key) is str:
        return json.encoder.encode_basestring_ascii(key)
    if type(key) is float:
        return '"%s"' % _NOT_FINITE.get(repr(key), repr(key))
    if key is True or key is False or key is None:
        return '"%s"' % _CONSTANTS[key]
    if type(key) is int:
        return '"%d"' % key
    raise _Other


def _indented(value: Any, pad: str) -> str:
    """value as json.dumps(value, indent=2) writes it at the indentation pad ("\n" and
    the spaces of its line)."""
    # pylint: disable=unidiomatic-typecheck  # exact types: a subclass is json.dumps's to write
    kind = type(value)
    if kind is str:
        return json.encoder.encode_basestring_ascii(value)
    if kind is dict or kind is list or kind is tuple:
        inner = pad + "  "
        text = json.encoder.encode_basestring_ascii         # the commonest leaf: inline
        if kind is dict:
            items = [(text(k) if type(k) is str else _key(k)) + ": "
                     + (text(v) if type(v) is str else _indented(v, inner))
                     for k, v in value.items()]
            return "{%s%s%s}" % (inner, ("," + inner).join(items), pad) if items else "{}"
        items = [text(v) if type(v) is str else _indented(v, inner) for v in value]
        return "[%s%s%s]" % (inner, ("," + inner).join(items), pad) if items else "[]"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        number = float.__repr__(value)
        return _NOT_FINITE.get(number, number)
    if value is True or value is False or value is None:
        return _CONSTANTS[value]
    raise _Other


def indented(data: object) -> str:
    """json.dumps(data, indent=2), byte for byte, in about half its time: one join per
    collection instead of a generator per value (json's C encoder takes no indent).
    Types other than dict, list, tuple, str, int, float, bool and None, and nesting
    too deep for Python's stack, are left to json.dumps (which also says why)."""
    try:
        return _indented(data, "\n")
    except (_Other, RecursionError):
        return json.dumps(data, indent=2)


def around_nodes(data: Mapping[str, Any]) -> tuple[str, str]:
    """The JSON plan's text before and after its nodes' value (``nodes_json``):
    the plan is written in pieces, the nodes' text straight from where
    the writer left it."""
    text = _json({**data, "nodes": None}, _compact_plan(data))
    # No string holds '"nodes":null' unescaped, and the key comes before any other.
    marker = '"nodes":null' if '"nodes":null' in text else '"nodes": null'
    at = text.index(marker)
    return text[:at + len(marker) - 4], text[at + len(marker):]
