"""Channel-bonded: K networks each reaching every node, bonded per node (the
papers' dual-net Beowulf)."""

from __future__ import annotations

from ..family import Bound, Family, Params, register
from ..schema import MAX_LAN, MAX_NICS, bond_settings, medium, obj, rate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..normalise import Builder

NAME = "bonded"

SCHEMA = obj({
    "nodes": {"type": "integer", "minimum": 2, "maximum": MAX_LAN},
    "channels": {"type": "integer", "minimum": 1, "maximum": MAX_NICS},
    "rate_mbit": rate,
    "medium": medium,
    **bond_settings,
}, required=["nodes"], description="K networks each reaching every node, bonded per node")


def size(p: Params) -> Bound:
    return Bound(p["nodes"], MAX_LAN, "the bonded net has %d nodes")


def build(b: Builder, p: Params) -> None:
    k = p.get("channels", b.defaults["channels"])
    rate = p.get("rate_mbit", b.rate)
    nodes = [b.new_node(b.node_name(i), i + 1) for i in range(p["nodes"])]
    net = b.segment("net0", "lan", rate, slot=0)
    net.medium = p.get("medium", net.medium)
    chans = b.channels_for(net, k) if k > 1 else None
    for n in nodes:
        b.attach(net, n, n.hostid, k, p, chans)
    b.graph.params = {"nodes": len(nodes), "channels": k, "rate_mbit": rate,
                      "mode": p.get("mode", b.defaults["mode"]) if k > 1 else None}


FAMILY = register(Family(name=NAME, drawing="buses", schema=SCHEMA, size=size, build=build,
                         default_pattern="node{index:02d}"))
