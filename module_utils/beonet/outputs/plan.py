"""The plan: the compiled graph as a dict, the contract every later part consumes.

Dumped as JSON or YAML; the dry run lives in ``dryrun.py``, exports for other
tools in ``export.py`` and drawings in ``drawing.py``. The TypedDicts below are
its shape, key for key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from ..compiler.metrics import Metrics
from ..compiler.model import Interface, Node, Segment, Switch, ip_text, net_text
from ..compiler.pipeline import Compiled

PLAN_FORMAT = 1

Physical = dict[str, dict[str, str]]    # node -> {logical NIC name: physical NIC name}


class PeerPlan(TypedDict):
    node: str
    interface: str


class InterfacePlan(TypedDict):
    name: str                           # the physical NIC name
    kind: str                           # "ethernet" or "bond"
    segment: str
    addresses: list[str]                # "address/plen"
    logical: NotRequired[str]           # the topology's name, when the NIC is renamed
    rate_mbit: int
    mtu: int
    members: NotRequired[list[str]]     # bond
    mac: NotRequired[str]               # bond
    mode: NotRequired[str]              # bond
    miimon: NotRequired[int]            # bond
    tso: NotRequired[bool]              # bond
    bond: NotRequired[str]              # ethernet under a bond
    peer: NotRequired[PeerPlan]         # point-to-point


class _Logical(TypedDict, total=False):
    logical: str


class RoutePlan(TypedDict):
    to: str
    via: str
    dev: str
    src: str


class NodePlan(TypedDict):
    index: int
    address: str
    forwarding: bool
    interfaces: list[InterfacePlan]
    routes: list[RoutePlan]
    group: NotRequired[int]             # meta-graph
    coords: NotRequired[list[int]]      # mesh
    switch: NotRequired[str]            # tree: its leaf switch


class MemberPlan(TypedDict):
    node: str
    interface: str
    address: NotRequired[str]           # IP segments


class SegmentPlan(TypedDict):
    kind: str                           # "lan", "p2p" or "channel"
    prefix: NotRequired[str | None]     # IP segments
    rate_mbit: int
    mtu: int
    members: list[MemberPlan]
    carries: NotRequired[str]           # channel: the IP segment its bonds carry
    groups: NotRequired[list[int]]      # meta-graph link: the two groups


class _Prefix(TypedDict, total=False):
    prefix: str | None


class SwitchPlan(TypedDict):
    level: int
    parent: str | None
    uplink_mbit: int | None
    children: list[str]
    nodes: list[str]


class FormatPlan(TypedDict):
    plan_format: int


class TopologyPlan(TypedDict):
    name: str
    family: str
    source: str | None


class ManagementPlan(TypedDict):
    interface: str


class Plan(TypedDict):
    beonet: FormatPlan
    topology: TopologyPlan
    management: ManagementPlan
    nodes: dict[str, NodePlan]
    segments: dict[str, SegmentPlan]
    metrics: Metrics
    switches: NotRequired[dict[str, SwitchPlan]]   # tree


def _iface(iface: Interface, physical: dict[str, str], everyone: Physical) -> InterfacePlan:
    seg = iface.segment
    name = physical.get(iface.name, iface.name)
    renamed: _Logical = {"logical": iface.name} if name != iface.name else {}
    out: InterfacePlan = {"name": name, "kind": iface.kind, "segment": seg.name,
                          "addresses": ["%s/%d" % (ip_text(a), seg.plen) for a in iface.addresses],
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


def node_plan(node: Node, everyone: Physical | None = None) -> NodePlan:
    """One node's plan; everyone: {node: {logical: physical NIC name}}."""
    everyone = everyone or {}
    physical = everyone.get(node.name, {})
    out: NodePlan = {
        "index": node.index, "address": ip_text(node.address), "forwarding": node.forwarding,
        "interfaces": [_iface(i, physical, everyone) for i in node.interfaces],
        "routes": [{"to": net_text(r.net, r.plen), "via": ip_text(r.via),
                    "dev": physical.get(r.dev, r.dev), "src": ip_text(r.src)}
                   for r in node.routes]}
    if node.group is not None:
        out["group"] = node.group
    if node.coords is not None:
        out["coords"] = list(node.coords)
    if node.switch is not None:
        out["switch"] = node.switch
    return out


def segment_plan(seg: Segment, everyone: Physical) -> SegmentPlan:
    members: list[MemberPlan] = []
    for n, i, _ in seg.members:
        member: MemberPlan = {"node": n.name, "interface": everyone.get(n.name, {}).get(i.name, i.name)}
        if i.addresses and seg.routed:
            member["address"] = ip_text(i.addresses[0])
        members.append(member)
    prefix: _Prefix = {"prefix": seg.prefix_text()} if seg.routed else {}
    out: SegmentPlan = {"kind": seg.kind, **prefix, "rate_mbit": seg.rate_mbit, "mtu": seg.mtu,
                        "members": members}
    if seg.channel_of is not None:
        out["carries"] = seg.channel_of.name
    if seg.groups is not None:
        out["groups"] = list(seg.groups)
    return out


def _switch_plan(sw: Switch) -> SwitchPlan:
    return {"level": sw.level, "parent": sw.parent.name if sw.parent else None,
            "uplink_mbit": sw.uplink_mbit, "children": [c.name for c in sw.children],
            "nodes": sw.nodes}


def plan(compiled: Compiled, physical: Physical | None = None) -> Plan:
    """The whole plan as a dict. physical: {node: {logical: physical NIC}}."""
    graph = compiled.graph
    physical = physical or {}
    out: Plan = {
        "beonet": {"plan_format": PLAN_FORMAT},
        "topology": {"name": graph.name, "family": graph.family,
                     "source": compiled.source_file},
        "management": {"interface": graph.management},
        "nodes": {n.name: node_plan(n, physical) for n in graph.nodes},
        "segments": {s.name: segment_plan(s, physical) for s in graph.segments},
        "metrics": compiled.metrics,
    }
    if graph.switches:
        out["switches"] = {s.name: _switch_plan(s) for s in graph.switches}
    return out


def prefixes(plan_: Mapping[str, Any]) -> list[str]:
    """Every network prefix of the topology: what forwarding nodes forward between."""
    return sorted({s["prefix"] for s in plan_["segments"].values() if s.get("prefix")})


def dumps(data: Mapping[str, Any], fmt: str = "json") -> str:
    if fmt == "yaml":
        import yaml
        text: str = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100)
        return text
    nodes = data.get("nodes")
    if isinstance(nodes, dict) and len(nodes) > 500:
        return json.dumps(data, separators=(",", ":"), check_circular=False) + "\n"
    return json.dumps(data, indent=2) + "\n"
