"""Per-hop latency: the topology's `latency` settings and the pairs by path class.

A path class is named as in SC98's Table 1: ``e`` an end point, ``S`` a
switch (``H`` a hub or coaxial segment), ``L`` a Linux node forwarding; a
point-to-point cable adds no letter. ``e-S-L-e`` is a LAN crossing to a
gateway, then a cable to the destination.

The one-way delay of a path is the sum of its crossings' delays and its
forwarding nodes' delays: what the labs add with netem, and the increment
over the end points' own latency that the SC98 rules predict (UDP round trip
= 118 us + 19 us per switch + about 60 us per Linux router; one way, half).
"""

from __future__ import annotations

from typing import Any, TypedDict

from .errors import Problems
from .model import Graph, Latency, Node, Segment, Switch
from .prove import Proof, Walker

# SC98 Table 1 fit, one way (half the measured round trips): the end points'
# own latency is not emulated, the labs' kernels bring theirs.
MODELS: dict[str, dict[str, float]] = {
    "sc98": {"switch_us": 9.5, "wire_us": 0.0, "forward_us": 30.0},
}

# SC98 Table 1 (lmbench, 200 MHz Pentium Pro, 100 Mbit/s): connection ->
# (TCP, UDP) round-trip latency in us. B: a Bay Networks 350T switch.
SC98_TABLE: dict[str, tuple[int, int]] = {
    "e-e": (154, 118), "e-L-e": (214, 176), "e-L-L-e": (287, 240), "e-B-e": (173, 137),
    "e-L-B-e": (232, 197), "e-B-L-L-B-e": (324, 281), "e-B-B-e": (192, 156),
    "e-B-B-B-e": (210, 175),
}
SC98_UDP_BASE_US = 118

LATENCY_UP_TO = 512         # path classes are walked pair by pair up to this many nodes


class PathClass(TypedDict):
    pairs: int
    one_way_us: float               # the smallest over the class's pairs
    one_way_max_us: float           # the largest (per-link delays can differ)
    switches: int
    routers: int


class LatencyMetrics(TypedDict, total=False):
    model: str | None
    switch_us: float
    wire_us: float
    forward_us: float
    classes: dict[str, PathClass]   # absent above LATENCY_UP_TO nodes


def settings(data: dict[str, Any]) -> Latency:
    """The topology's `latency` section, the model's values under the ones given."""
    model = data.get("model")
    base = MODELS.get(model, {}) if model else {}
    keys = ("switch_us", "wire_us", "forward_us")
    vals = {k: float(data.get(k, base.get(k, 0.0))) for k in keys}
    forwarders = {name: float(us) for name, us in data.get("forwarders", {}).items()}
    return Latency(model, vals["switch_us"], vals["wire_us"], vals["forward_us"], forwarders)


def check_names(graph: Graph, problems: Problems) -> None:
    """Every node latency.forwarders names exists."""
    if graph.latency is None:
        return
    for name in graph.latency.forwarders:
        if name not in graph.by_name:
            problems.add("latency.forwarders.%s" % name, "no node is named '%s'" % name)


def check_forwarding(graph: Graph, problems: Problems) -> Problems:
    """Every node latency.forwarders names forwards packets in this plan."""
    problems.stage = "latency"
    if graph.latency is None:
        return problems
    for name in graph.latency.forwarders:
        node = graph.by_name.get(name)
        if node is not None and not node.forwarding:
            problems.add("latency.forwarders.%s" % name,
                         "'%s' forwards no packet in this plan: only forwarding nodes add "
                         "a forwarding delay" % name)
    return problems


def _leaf_path(graph: Graph) -> dict[str, list[Switch]]:
    """Tree: leaf switch name -> its switches from the leaf up to the root."""
    out: dict[str, list[Switch]] = {}
    for sw in graph.switches:
        if not sw.children:
            up: list[Switch] = []
            cur: Switch | None = sw
            while cur is not None:
                up.append(cur)
                cur = cur.parent
            out[sw.name] = up
    return out


def _switches(a: Node, b: Node, leaves: dict[str, list[Switch]]) -> int:
    """Switches a frame from a to b crosses on one LAN (trees: up and down the tree)."""
    if not leaves or a.switch is None or b.switch is None:
        return 1
    up_a, up_b = leaves[a.switch], leaves[b.switch]
    common = next(i for i, sw in enumerate(up_a) if sw in up_b)
    return 2 * common + 1


def _shared(a: Node, b: Node) -> Segment:
    """An IP segment nodes a and b are both on."""
    mine = {i.segment.name: i.segment for i in a.interfaces if i.segment.routed}
    return next(i.segment for i in b.interfaces if i.segment.name in mine)


def _one_path(graph: Graph, lat: Latency, hops: list[Node],
              leaves: dict[str, list[Switch]]) -> tuple[str, float, int]:
    """(class name, one-way us, switches) of the path through the nodes `hops`."""
    letters: list[str] = []
    total, switches = 0.0, 0
    for k, (a, b) in enumerate(zip(hops, hops[1:])):
        if k:
            letters.append("L")
            total += lat.node_us(a.name)
        seg = _shared(a, b)
        if seg.kind != "p2p":
            count = _switches(a, b, leaves)
            letters.extend(["H" if seg.medium == "shared" else "S"] * count)
            switches += count
            total += lat.segment_us(seg, count)
        else:
            total += lat.segment_us(seg)
    return "-".join(["e", *letters, "e"]), round(total, 3), switches


def classes(graph: Graph, proof: Proof) -> dict[str, PathClass]:
    """Every ordered pair's preferred path, by class."""
    lat = graph.latency or Latency()
    walker = Walker(graph.nodes, proof.tables, Problems())
    leaves = _leaf_path(graph) if graph.switches else {}
    out: dict[str, PathClass] = {}
    for s in graph.nodes:
        for d in graph.nodes:
            if s is d:
                continue
            mids = walker.path(s.index, d.address, d.index) or []
            name, us, switches = _one_path(graph, lat, [s, *(graph.nodes[m] for m in mids), d],
                                           leaves)
            c = out.get(name)
            if c is None:
                out[name] = {"pairs": 1, "one_way_us": us, "one_way_max_us": us,
                             "switches": switches, "routers": len(mids)}
            else:
                c["pairs"] += 1
                c["one_way_us"] = min(c["one_way_us"], us)
                c["one_way_max_us"] = max(c["one_way_max_us"], us)
    return dict(sorted(out.items(), key=lambda kv: (kv[1]["one_way_us"], kv[0])))


def metrics(graph: Graph, proof: Proof) -> LatencyMetrics:
    """The settings and, up to LATENCY_UP_TO nodes, the pairs by path class."""
    lat = graph.latency or Latency()
    out: LatencyMetrics = {"model": lat.model, "switch_us": lat.switch_us,
                           "wire_us": lat.wire_us, "forward_us": lat.forward_us}
    if len(graph.nodes) <= LATENCY_UP_TO:
        out["classes"] = classes(graph, proof)
    else:
        graph.notes.append("latency: path classes not walked above %d nodes (%d here)"
                           % (LATENCY_UP_TO, len(graph.nodes)))
    return out


__all__ = ["MODELS", "SC98_TABLE", "SC98_UDP_BASE_US", "LATENCY_UP_TO", "LatencyMetrics",
           "PathClass", "settings", "check_names", "check_forwarding", "classes", "metrics"]
