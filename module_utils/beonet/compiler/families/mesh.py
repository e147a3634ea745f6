"""Routed mesh: nodes on a grid of any number of dimensions, one LAN per row
of each dimension, the nodes forwarding between their LANs (the 1996 paper's
routed mesh)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator

from .. import route
from ..family import Bound, Family, Params, register
from ..schema import MAX_LAN, MAX_NODES, medium, obj, rate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..model import Graph
    from ..normalise import Builder

NAME = "mesh"

SCHEMA = obj({
    "dims": {"type": "array", "minItems": 1, "maxItems": 8,
             "items": {"type": "integer", "minimum": 2, "maximum": MAX_LAN}},
    "rate_mbit": rate,
    "medium": medium,
}, required=["dims"], description="routed mesh with gateway nodes")


def size(p: Params) -> Bound:
    return Bound(math.prod(p["dims"]), MAX_NODES, "the mesh has %d nodes")


def build(b: Builder, p: Params) -> None:
    dims = p["dims"]
    rate_mbit = p.get("rate_mbit", b.rate)
    coords = list(itertools.product(*[range(d) for d in dims]))
    nodes = {}
    for i, c in enumerate(coords):
        node = b.new_node(b.node_name(i, coords="-".join(map(str, c))), i + 1)
        node.coords = c
        nodes[c] = node
    # One segment per dimension and per value of the other coordinates;
    # its pool slot depends only on those coordinates (Morton order inside
    # the dimension's block), its host numbers on the coordinate along it.
    for d in range(len(dims)):
        others = [range(n) for j, n in enumerate(dims) if j != d]
        for rest in itertools.product(*others):
            name = "d%d-%s" % (d, "-".join(map(str, rest)) if rest else "0")
            seg = b.segment(name, "lan", rate_mbit, slot=morton(rest), dim=d)
            seg.medium = p.get("medium", seg.medium)
            for v in range(dims[d]):
                c = rest[:d] + (v,) + rest[d:]
                b.attach(seg, nodes[c], v + 1)
    b.graph.params = {"dims": list(dims), "rate_mbit": rate_mbit}


def morton(values: Iterable[int]) -> int:
    """Interleave the bits of the coordinates: a slot that does not depend on sizes."""
    vals = list(values)
    out = 0
    for bit in range(max(vals, default=0).bit_length()):
        for j, v in enumerate(vals):
            out |= ((v >> bit) & 1) << (bit * len(vals) + j)
    return out


def shortest_sums(graph: Graph) -> list[int]:
    """In a mesh two nodes are as many hops apart as they have coordinates that
    differ, so every node has the same sum: over each dimension, the nodes
    that differ from it there."""
    n = len(graph.nodes)
    total = sum(n - n // size for size in graph.params["dims"])
    return [total] * n


def cuts(graph: Graph) -> Iterator[list[int]]:
    """The halves of each dimension."""
    for d, size in enumerate(graph.params["dims"]):
        yield [1 if node.coords is not None and node.coords[d] < size // 2 else 0
               for node in graph.nodes]


def pool_dims(graph: Graph) -> int:
    """The LAN pool is split in one block per dimension."""
    return len(graph.params.get("dims", []))


FAMILY = register(Family(name=NAME, drawing="grid", schema=SCHEMA, size=size, build=build,
                         default_pattern="node-{coords}", route=route.mesh,
                         shortest_sums=shortest_sums, cuts=cuts, pool_dims=pool_dims))
