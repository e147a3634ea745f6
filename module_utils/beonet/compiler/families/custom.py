"""Custom: nodes, LAN segments (bonded or not) and point-to-point links listed
one by one."""

from __future__ import annotations

from ..family import Bound, Family, Params, register
from ..schema import (
    MAX_HOST_NUMBER,
    MAX_LAN,
    MAX_NICS,
    MAX_NODES,
    bond_settings,
    cidr,
    delay,
    medium,
    mtu,
    node_name,
    obj,
    ports,
    rate,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..errors import Problems
    from ..load import Source
    from ..model import Segment
    from ..normalise import Builder

NAME = "custom"

SCHEMA = obj({
    "nodes": {"type": "array", "minItems": 2, "maxItems": MAX_NODES, "items": {"oneOf": [
        node_name,
        obj({"name": node_name,
             "id": {"type": "integer", "minimum": 1, "maximum": MAX_HOST_NUMBER}},
            required=["name"]),
    ]}},
    "segments": {"type": "array", "items": obj({
        "name": node_name,
        "members": {"type": "array", "maxItems": MAX_LAN, "items": node_name},
        "channels": {"type": "integer", "minimum": 1, "maximum": MAX_NICS},
        "prefix": cidr,
        "rate_mbit": rate,
        "mtu": mtu,
        "ports": ports,
        "medium": medium,
        "delay_us": {**delay, "description": "one-way delay of a crossing of this "
                                             "segment (default: latency.switch_us)"},
        **bond_settings,
    }, required=["name", "members"])},
    "links": {"type": "array", "items": obj({
        "ends": {"type": "array", "minItems": 2, "maxItems": 2,
                 "items": node_name},
        "prefix": cidr,
        "rate_mbit": rate,
        "mtu": mtu,
        "delay_us": {**delay, "description": "one-way delay of a crossing of this "
                                             "link (default: latency.wire_us)"},
    }, required=["ends"])},
}, required=["nodes"], description="explicit nodes, segments and links")


def size(p: Params) -> Bound:
    return Bound(len(p["nodes"]), MAX_NODES, "the custom topology has %d nodes")


def build(b: Builder, p: Params) -> None:
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
        nodes.append(b.new_node(name, hostid))
    _segments(b, p, fixed)
    names = {s.name for s in b.graph.segments}
    for i, link in enumerate(p.get("links", [])):
        a, z = (b.graph.by_name[e] for e in link["ends"])
        seg = b.p2p(b.link_name(a, z, names), a, z, link.get("rate_mbit", b.rate),
                    link.get("mtu"), slot=i, prefix=link.get("prefix"))
        seg.delay_us = _us(link.get("delay_us"))
    for i, node in enumerate(b.graph.nodes):
        if node.primary is None:
            b.problems.add("custom.nodes[%d]" % i,
                           "node '%s' is on no segment and no link" % node.name)
    if not b.problems:
        _check_connected(b)
    b.graph.params = {"nodes": len(nodes)}


def _segments(b: Builder, p: Params, fixed: dict[str, int]) -> None:
    for i, s in enumerate(p.get("segments", [])):
        seg = b.segment(s["name"], "lan", s.get("rate_mbit", b.rate), s.get("mtu"), slot=i)
        seg.prefix_fixed = s.get("prefix")
        seg.medium = s.get("medium", seg.medium)
        seg.delay_us = _us(s.get("delay_us"))
        if "ports" in s:
            seg.ports, seg.ports_key = s["ports"], "custom.segments[%d].ports" % i
        k = s.get("channels", 1)
        chans = b.channels_for(seg, k) if k > 1 else None
        for m, host in zip(s["members"], lan_numbers(s["members"], fixed)):
            b.attach(seg, b.graph.by_name[m], host, k, s, chans)


def _check_connected(b: Builder) -> None:
    dist = b.graph.distances([0])
    cut = [n.name for n in b.graph.nodes if dist[n.index] < 0]
    if cut:
        b.problems.add("custom", "the graph is disconnected: %s cannot reach %s"
                       % (b.graph.nodes[0].name, ", ".join(cut[:8])
                          + (" and %d more" % (len(cut) - 8) if len(cut) > 8 else "")))


def _us(value: float | None) -> float | None:
    return None if value is None else float(value)


def lan_numbers(members: list[str], fixed: dict[str, int]) -> list[int]:
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


def _unique(values: list[tuple[int, Any]], base: str, problems: Problems, what: str) -> None:
    seen: dict[Any, int] = {}
    for i, v in values:
        if v in seen:
            problems.add(_join(base, i), "duplicate %s '%s' (first at %s)"
                         % (what, v, _join(base, seen[v])))
        else:
            seen[v] = i


def _join(base: str, i: int) -> str:
    return "%s[%d]" % (base, i)


def check(data: dict[str, Any], problems: Problems) -> None:
    """Rules the schema cannot state: unique names and ids, references to known nodes."""
    custom = data[NAME]
    if "nodes" in data:
        problems.add("nodes", "naming applies to generated families; a custom topology "
                     "names its nodes in custom.nodes")
    names = [(i, n if isinstance(n, str) else n.get("name")) for i, n in enumerate(custom["nodes"])]
    _unique(names, "custom.nodes", problems, "node name")
    ids = [(i, n.get("id")) for i, n in enumerate(custom["nodes"])
           if isinstance(n, dict) and "id" in n]
    _unique(ids, "custom.nodes", problems, "node id")
    known = {v for _index, v in names}
    segs = custom.get("segments", [])
    _unique([(i, s["name"]) for i, s in enumerate(segs)], "custom.segments",
            problems, "segment name")
    for i, seg in enumerate(segs):
        _check_segment(seg, "custom.segments[%d]" % i, known, problems)
    for i, link in enumerate(custom.get("links", [])):
        ends = link.get("ends", [])
        for j, m in enumerate(ends):
            if m not in known:
                problems.add("custom.links[%d].ends[%d]" % (i, j), "unknown node '%s'" % m)
        if len(ends) == 2 and ends[0] == ends[1]:
            problems.add("custom.links[%d].ends" % i, "a link needs two different nodes")
    if (data.get("addressing") or {}).get("ipv4", True) is False:
        for key, items in (("segments", segs), ("links", custom.get("links", []))):
            for i, item in enumerate(items):
                if "prefix" in item:
                    problems.add("custom.%s[%d].prefix" % (key, i),
                                 "an IPv4 prefix; addressing.ipv4 is false")


def _check_segment(seg: dict[str, Any], base: str, known: set[Any], problems: Problems) -> None:
    members = seg.get("members", [])
    for j, m in enumerate(members):
        if m not in known:
            problems.add("%s.members[%d]" % (base, j), "unknown node '%s'" % m)
    _unique(list(enumerate(members)), base + ".members", problems, "member")
    if len(set(members)) < 2:
        problems.add(base + ".members",
                     "a segment needs at least 2 members (has %d)" % len(set(members)))
    bond_keys = [k for k in ("mode", "miimon", "tso") if k in seg]
    if bond_keys and seg.get("channels", 1) < 2:
        problems.add("%s.%s" % (base, bond_keys[0]), "bond settings need channels >= 2")


def prefix_path(source: Source, seg: Segment) -> str:
    """The key of the segment's or link's own prefix."""
    key = "segments" if seg.kind == "lan" else "links"
    for i, item in enumerate(source.data[NAME].get(key, [])):
        if key == "segments" and item["name"] == seg.name:
            return "custom.segments[%d].prefix" % i
        if key == "links" and seg.pool_slot == i:
            return "custom.links[%d].prefix" % i
    return NAME


FAMILY = register(Family(name=NAME, schema=SCHEMA, size=size, build=build, default_pattern=None,
                         check=check, lans_sized_by_members=True, prefix_path=prefix_path))
