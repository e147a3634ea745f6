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

from collections.abc import Iterable, Iterator

from .errors import Problems
from .model import Graph, Latency, Node, Segment, Switch
from .prove import Proof, Walker
from .records import shape_types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .metricshape import LatencyMetrics, PathClass

__getattr__ = shape_types(__name__, "beonet.compiler.metricshape")

# SC98 Table 1, one way: half the round trips of the per-hop model fitted to
# the table (benchmarks.planner.fit_model: UDP 19.8 us per switch, 61.8 us per
# router, rounded). The end points' own latency is not emulated: the labs'
# kernels bring theirs.
MODELS: dict[str, dict[str, float]] = {
    "sc98": {"switch_us": 9.5, "wire_us": 0.0, "forward_us": 30.0},
}

LATENCY_UP_TO = 512         # path classes are walked pair by pair up to this many nodes


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


def _pairs(graph: Graph, proof: Proof,
           pairs: Iterable[tuple[Node, Node]]) -> Iterator[tuple[str, float, int, int]]:
    """(class name, one-way us, switches, routers) of each pair's preferred
    path; a pair without one (nodes down: another component) is left out."""
    lat = graph.latency or Latency()
    walker = Walker(graph.nodes, proof.tables, Problems())
    leaves = _leaf_path(graph) if graph.switches else {}
    for s, d in pairs:
        mids = walker.path(s.index, d.address, d.index)
        if mids is None:
            continue
        hops = [s, *(graph.nodes[m] for m in mids), d]
        name, us, switches = _one_path(graph, lat, hops, leaves)
        yield name, us, switches, len(mids)


def pair_path(graph: Graph, proof: Proof, a: str, b: str) -> tuple[str, float]:
    """(class name, one-way us) of the path from node a to node b."""
    ends = [(graph.by_name[a], graph.by_name[b])]
    for name, us, _switches, _routers in _pairs(graph, proof, ends):
        return name, us
    raise ValueError("no path from %s to %s" % (a, b))


def classes(graph: Graph, proof: Proof) -> dict[str, PathClass]:
    """Every ordered pair's preferred path, by class."""
    out: dict[str, PathClass] = {}
    every = ((s, d) for s in graph.nodes for d in graph.nodes if s is not d)
    for name, us, switches, routers in _pairs(graph, proof, every):
        c = out.get(name)
        if c is None:
            out[name] = {"pairs": 1, "one_way_us": us, "one_way_max_us": us,
                         "switches": switches, "routers": routers}
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


__all__ = ["MODELS", "LATENCY_UP_TO", "LatencyMetrics", "PathClass", "settings", "check_names",
           "check_forwarding", "classes", "pair_path", "metrics"]
