"""Tree of switches: every node on one LAN, its switches a tree whose uplinks
may be slower than the downlinks (SC98's switched Beowulf)."""

from __future__ import annotations

import math

from .. import metrics
from ..family import Bound, Family, Params, register
from ..model import Switch
from ..schema import MAX_LAN, MAX_TREE_LEVELS, fanout, obj, per_level, rate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..model import Graph
    from ..normalise import Builder

NAME = "tree"

SCHEMA = obj({
    "levels": {"type": "integer", "minimum": 2, "maximum": MAX_TREE_LEVELS,
               "description": "switch levels, counting the root (default: one more "
                              "than a list of fanouts or uplink rates, else 2)"},
    "fanout": per_level(fanout, "children per switch"),
    "nodes_per_leaf": {"type": "integer", "minimum": 1, "maximum": MAX_LAN},
    "downlink_mbit": rate,
    "uplink_mbit": per_level(rate, "rate of each switch-to-parent uplink in Mbit/s"),
}, required=["fanout", "nodes_per_leaf"], description="tree of switches")


def fanouts(tree: Params) -> list[int]:
    """Children per switch, level by level from the root, as a valid tree section
    asks for them. The number of levels is `levels`, else one more than the
    longest list of fanouts or uplink rates, else 2; a single fanout repeats."""
    fans = tree["fanout"]
    lists = [v for v in (fans, tree.get("uplink_mbit")) if isinstance(v, list)]
    levels = tree.get("levels", max((len(v) + 1 for v in lists), default=2))
    return list(fans) if isinstance(fans, list) else [fans] * (levels - 1)


def size(p: Params) -> Bound:
    return Bound(math.prod(fanouts(p)) * p["nodes_per_leaf"], MAX_LAN,
                 "the tree puts %d nodes on its one LAN")


def build(b: Builder, p: Params) -> None:
    fans, ups = _levels(b, p)
    down = p.get("downlink_mbit", b.rate)
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
    net = b.segment("net0", "lan", down, slot=0)
    per_leaf = p["nodes_per_leaf"]
    for leaf in tier:
        leaf.downlink_mbit = down
        for _leaf_node in range(per_leaf):
            index = len(b.graph.nodes)
            node = b.new_node(b.node_name(index), index + 1)
            node.switch = leaf.name
            leaf.nodes.append(node.name)
            b.attach(net, node, node.hostid)
    b.graph.switches = switches
    b.graph.params = {"levels": len(fans) + 1, "fanout": fans, "nodes_per_leaf": per_leaf,
                      "leaves": len(tier), "downlink_mbit": down, "uplink_mbit": ups}


def _levels(b: Builder, p: Params) -> tuple[list[int], list[int]]:
    """Fanout and uplink rate of each level below the root, from the root down;
    a list must have one value per level."""
    fans = fanouts(p)
    want = p.get("levels", len(fans) + 1) - 1
    up = p.get("uplink_mbit", p.get("downlink_mbit", b.rate))
    ups = up if isinstance(up, list) else [up] * want
    for key, values in (("fanout", fans), ("uplink_mbit", ups)):
        if len(values) != want:
            b.problems.add("tree." + key, "%d values for a tree of %d levels: give one "
                           "per level below the root (%d), from the root down, or one "
                           "number for every level" % (len(values), want + 1, want))
    if b.problems:
        b.stop()
    return fans, ups


def exact_cut(graph: Graph) -> tuple[int, str]:
    return metrics.tree_crossing(graph.switches[0]), "exact over the switch tree"


def bisection_link(graph: Graph) -> int:
    down: int = graph.params["downlink_mbit"]
    return down


def bisection_extras(graph: Graph) -> dict[str, Any]:
    """SC98's u/P: what one node gets through the top switch when every node
    under a root port talks across it (a root port with no live node below
    it, all of them down, carries nothing); the worst level's oversubscription."""
    below = metrics.nodes_below
    per_node = min(((c.uplink_mbit or 0) / below(c)
                    for c in graph.switches[0].children if below(c)), default=0.0)
    return {"uplink_per_node_mbit": round(per_node, 3),
            "oversubscription": max(load["ratio"] for load in metrics.level_loads(graph))}


def metrics_extras(graph: Graph) -> dict[str, Any]:
    return {"oversubscription": metrics.level_loads(graph)}


FAMILY = register(Family(name=NAME, drawing="levels", schema=SCHEMA, size=size, build=build,
                         default_pattern="node{index:02d}", exact_cut=exact_cut,
                         bisection_link=bisection_link, bisection_extras=bisection_extras,
                         metrics_extras=metrics_extras))
