"""What the page shows, computed here and embedded as data: the drawing (places
from `layout`), each node's interfaces and dry run, each node's proven route
table (which the page walks for the two nodes picked, as `Compiled.path` walks
it for `beonet paths`), what each single failure cuts (`compiler.failures`, as
`beonet metrics`) and the overlays.

Vertices: nodes first (plan order), then hubs. Edges refer to vertex indices and
carry the failure element they stand for (an index into `elements`, or -1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cabling.sheet import Sheet
from ..compiler import failures, prove
from ..compiler.ipv6 import HOST_PLEN, counterparts
from ..compiler.model import ip6_text, net6_text
from ..compiler.pipeline import Compiled
from ..outputs import dryrun
from ..outputs.ipfamily import node_addresses
from .layout import Layout, Plan, family_style, layout

WALK_STEPS = 20000        # the page's walk of one pair stops after this many steps
DETAIL_NODES = 2500       # above: the group-level view only
FOLD_NODES = 300          # above: a meta-graph opens with its groups folded
INFO_NODES = 2500         # node details embedded up to this many nodes


@dataclass
class Model:
    """The page's data; `data` is what goes into the page as JSON."""
    data: dict[str, Any]
    lay: Layout | None = None
    index: dict[str, int] = field(default_factory=dict)         # vertex ident -> index


def _round(v: float) -> float:
    return round(v, 1)


def _elements(compiled: Compiled) -> tuple[failures.Elements, dict[tuple[str, str], int], dict[str, int]]:
    """The failure elements; (node, segment) -> cable id; segment -> LAN id."""
    el = failures.Elements(compiled.graph)
    cable: dict[tuple[str, str], int] = {}
    lan: dict[str, int] = {}
    for k, seg in enumerate(el.segments):
        for node, _iface, _host in seg.members:
            cable[node.name, seg.name] = el.cable_of[node.index, k]
        if k in el.lan_of:
            lan[seg.name] = el.lan_of[k]
    return el, cable, lan


def _failure_data(compiled: Compiled, el: failures.Elements) -> dict[str, Any]:
    """Pairs each element's failure cuts: routed (a routing daemon), static (the
    plan's routes, preferred branch) where the compile's budget allows."""
    graph, proof = compiled.graph, compiled.proof
    static: list[int] | None = None
    if graph.engine != "frr" and failures.static_steps(graph, proof) <= failures.STATIC_STEPS:
        static = failures.static_counts(graph, proof, el)[0]
    return {"names": el.names, "routed": failures.routed_counts(el), "static": static,
            "engine": graph.engine or "static"}


def _segment_of(ident: str) -> str:
    return ident[4:] if ident.startswith("seg:") else ""


def _edge_element(e: Any, cable: dict[tuple[str, str], int], seg_of_p2p: dict[frozenset[str], str],
                  tree_lan: str) -> int:
    """The failure element a drawn edge stands for, or -1 (a switch uplink)."""
    if e.kind in ("member", "bond"):
        return cable.get((e.a, _segment_of(e.b)), -1)
    if e.kind == "p2p":
        return cable.get((e.a, seg_of_p2p.get(frozenset((e.a, e.b)), "")), -1)
    if e.kind == "port":
        return cable.get((e.b, tree_lan), -1)
    return -1


def _drawing(m: Model, plan: Plan, compiled: Compiled) -> None:
    """Vertices and edges with places and failure elements."""
    lay = m.lay
    assert lay is not None
    el, cable, lan = _elements(compiled)
    names = list(plan["nodes"])
    m.index = {n: k for k, n in enumerate(names)}
    for h in lay.parts.hubs:
        m.index[h.ident] = len(m.index)
    p2p = {frozenset(m_["node"] for m_ in s["members"]): seg for seg, s in plan["segments"].items()
           if s["kind"] == "p2p"}
    tree_lan = next((seg for seg, s in plan["segments"].items() if s["kind"] == "lan"), "")
    groups = lay.groups
    m.data["nodes"] = [[n, " ".join(node_addresses(plan["nodes"][n])), bool(plan["nodes"][n]["forwarding"]),
                        _round(lay.at[n][0]), _round(lay.at[n][1]), groups.get(n, -1),
                        el.names.index(n) if n in el.names[:el.n] else -1] for n in names]
    m.data["hubs"] = [[h.ident, h.kind, h.lines, _round(lay.at[h.ident][0]), _round(lay.at[h.ident][1]),
                       [_round(v) for v in lay.bars[h.ident]] if h.ident in lay.bars else None,
                       lay.buses.get(h.ident, 1), lan.get(_segment_of(h.ident), -1)]
                      for h in lay.parts.hubs]
    edges: list[list[Any]] = []
    for e in lay.parts.edges:
        a, b = m.index[e.a], m.index[e.b]
        (x1, y1), (x2, y2) = lay.end(e.a, e.b), lay.end(e.b, e.a)
        edges.append([e.kind, a, b, _round(x1), _round(y1), _round(x2), _round(y2),
                      " ".join(x for x in (e.a_nic, e.b_nic, e.label, *e.cables) if x), e.lines,
                      _edge_element(e, cable, p2p, tree_lan)])
    m.data["edges"] = edges
    m.data["box"] = [_round(v) for v in lay.box()]
    m.data["failures"] = _failure_data(compiled, el)


def _info(plan: Plan) -> dict[str, Any]:
    """Each node's interfaces (physical name, logical name, kind, segment,
    addresses, members) and its dry run (links, addresses, forwarding, routes)."""
    out = {}
    for name, n in plan["nodes"].items():
        ifaces = [[i["name"], i.get("logical", i["name"]), i["kind"], i.get("segment", ""),
                   " ".join(i.get("addresses", [])), " ".join(i.get("members", []))]
                  for i in n["interfaces"]]
        out[name] = {"interfaces": ifaces, "dryrun": dryrun.ip_route_text(n, name)}
    return out


def _routing(m: Model, compiled: Compiled) -> None:
    """Each node's checked route table (`Proof.tables`) for the page's walk, compact:
    every prefix once ([length, network]) and, per node, its source addresses and its
    routes, longest prefix first, as [prefix, next node or -1 on-link, source, further
    next nodes...]; node indices are the page's. The walk's bounds go with them."""
    nodes = compiled.graph.nodes
    page = [m.index[n.name] for n in nodes]
    prefixes: dict[tuple[int, int], int] = {}
    tables: list[Any] = [None] * len(nodes)
    for k, t in enumerate(compiled.proof.tables):
        srcs: dict[int, int] = {}
        rows = [[prefixes.setdefault((plen, net), len(prefixes)),
                 page[hop] if hop >= 0 else hop, srcs.setdefault(src, len(srcs)),
                 *(page[j] for j in alt)]
                for plen, _mask, bucket in t.order for net, (hop, src, alt) in bucket.items()]
        tables[page[k]] = [list(srcs), rows]
    address: list[int] = [0] * len(nodes)
    for n in nodes:
        address[page[n.index]] = n.address
    m.data["routing"] = {"prefixes": [list(p) for p in prefixes], "tables": tables,
                         "address": address, "branches": prove.PATHS_CAP, "steps": WALK_STEPS}
    m.data["routing"].update(_families(compiled, list(prefixes)))


def _families(compiled: Compiled, prefixes: list[tuple[int, int]]) -> dict[str, Any]:
    """With IPv6 on: the page's IP families, IPv4 first where the plan has it, the IPv6
    counterpart of every address the walk shows and of every prefix of the tables (an
    IPv6 route is its IPv4 one relabelled, so each IPv6 path is its IPv4 one relabelled,
    as `beonet paths` shows it; on an IPv6-only plan the IPv4 addresses are internal
    labels, never shown). An IPv4-only page carries none of them (its data as before)."""
    graph = compiled.graph
    if not graph.v6:
        return {}
    six = counterparts(graph)
    segment6 = {(s.plen, s.net): net6_text(s.net6, s.plen6) for s in graph.segments if s.routed}
    return {"families": [4, 6] if graph.v4 else [6],
            "six": {str(a): ip6_text(b) for a, b in six.items()},
            "prefixes6": [segment6[p] if p in segment6 else net6_text(six[p[1]], HOST_PLEN)
                          for p in prefixes]}


def _groups(plan: Plan, compiled: Compiled) -> dict[str, Any]:
    """The group-level drawing of a large meta-graph: each group one vertex around
    the circle, its links to each other group one edge with their count."""
    import math
    groups = sorted({int(n.get("group", 0)) for n in plan["nodes"].values()})
    radius = max(300.0, len(groups) * 40.0)
    at = {g: (radius * math.cos(2 * math.pi * k / len(groups) - math.pi / 2),
              radius * math.sin(2 * math.pi * k / len(groups) - math.pi / 2)) for k, g in enumerate(groups)}
    size = {g: 0 for g in groups}
    for n in plan["nodes"].values():
        size[int(n.get("group", 0))] += 1
    links: dict[tuple[int, int], int] = {}
    for s in plan["segments"].values():
        if s["kind"] == "p2p" and len(s["members"]) == 2:
            ga, gb = (int(plan["nodes"][x["node"]].get("group", 0)) for x in s["members"])
            key = (min(ga, gb), max(ga, gb))
            links[key] = links.get(key, 0) + 1
    return {"vertices": [[g, size[g], _round(at[g][0]), _round(at[g][1])] for g in groups],
            "links": [[a, b, c] for (a, b), c in sorted(links.items())],
            "box": [-radius - 80, -radius - 80, 2 * radius + 160, 2 * radius + 160]}


def build(plan: Plan, compiled: Compiled, sheet: Sheet | None = None) -> Model:
    """The page's data of a compiled topology and its plan."""
    topo = plan["topology"]
    m = Model({"title": "%s (%s)" % (topo["name"], topo["family"]), "family": topo["family"],
               "engine": compiled.graph.engine or "static", "count": len(plan["nodes"]),
               "overlays": {}})
    by_groups = family_style(topo["family"]) == "groups"
    if len(plan["nodes"]) > DETAIL_NODES and by_groups:
        m.data["level"] = "groups"
        m.data["groups"] = _groups(plan, compiled)
        return m
    m.data["level"] = "nodes"
    if len(plan["nodes"]) > FOLD_NODES and by_groups:
        m.data["groups"] = _groups(plan, compiled)      # shown first, folded
    m.lay = layout(plan, sheet)
    _drawing(m, plan, compiled)
    m.data["info"] = _info(plan) if len(plan["nodes"]) <= INFO_NODES else None
    _routing(m, compiled)
    return m
