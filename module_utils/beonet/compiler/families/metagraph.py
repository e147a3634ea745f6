"""Meta-node graph: L groups of P nodes, each group on its own LAN, every pair
of groups joined by point-to-point links between their nodes (C per node): the
SC98 testbed."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator
from math import comb

from .. import route
from ..family import Bound, Family, Params, register
from ..schema import MAX_LAN, MAX_NICS, MAX_NODES, obj, rate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..model import Graph, Node
    from ..normalise import Builder

NAME = "metagraph"
CUT_COMBINATIONS = 5000     # above, one structure-aligned cut only

SCHEMA = obj({
    "groups": {"type": "integer", "minimum": 2, "maximum": MAX_NODES // 2,
               "description": "L: number of switch groups"},
    "nodes_per_group": {"type": "integer", "minimum": 2, "maximum": MAX_LAN,
                        "description": "P: nodes per group"},
    "p2p_per_node": {"type": "integer", "minimum": 1, "maximum": MAX_NICS,
                     "description": "C: point-to-point NICs per node"},
    "lan_rate_mbit": rate,
    "p2p_rate_mbit": rate,
}, required=["groups", "nodes_per_group", "p2p_per_node"],
    description="fully connected meta-node graph")


def size(p: Params) -> Bound:
    return Bound(p["groups"] * p["nodes_per_group"], MAX_NODES,
                 "the meta-node graph has %d nodes")


def build(b: Builder, p: Params) -> None:
    L, P, C = p["groups"], p["nodes_per_group"], p["p2p_per_node"]
    lan_rate = p.get("lan_rate_mbit", b.rate)
    p2p_rate = p.get("p2p_rate_mbit", b.rate)
    if L > P * C + 1:
        b.problems.add("metagraph.groups",
                       "infeasible: a fully connected meta-node graph needs "
                       "L <= P*C+1 = %d (each of the %d groups needs a link to "
                       "%d others but has only P*C = %d point-to-point NICs)"
                       % (P * C + 1, L, L - 1, P * C))
        b.stop()
    groups = _groups(b, L, P, lan_rate)
    weights, unused = _weights(L, P * C)
    _links(b, groups, _ports(L, weights), p2p_rate)
    ideal = P * C / (L - 1)
    uneven = sorted(["group%d-group%d" % k for k, w in weights.items() if w > P * C // (L - 1)])
    b.graph.params = {"groups": L, "nodes_per_group": P, "p2p_per_node": C,
                      "lan_rate_mbit": lan_rate, "p2p_rate_mbit": p2p_rate,
                      "links_per_group_pair": round(ideal, 4),
                      "weights": {"group%d-group%d" % k: w for k, w in sorted(weights.items())},
                      "uneven_pairs": uneven, "unused_ports": unused}


def _groups(b: Builder, L: int, P: int, lan_rate: int) -> list[list[Node]]:
    """L groups of P nodes, each group on its own LAN."""
    groups = []
    for g in range(L):
        seg = b.segment("group%d" % g, "lan", lan_rate, slot=g)
        members = []
        for m in range(P):
            index = g * P + m
            node = b.new_node(b.node_name(index, group=g, member=m), m + 1)
            node.group, node.member = g, m
            b.attach(seg, node, m + 1)
            members.append(node)
        groups.append(members)
    return groups


def _links(b: Builder, groups: list[list[Node]], ports: dict[tuple[int, int], list[int]],
           p2p_rate: int) -> None:
    """One point-to-point link per pair of facing ports of two groups."""
    L, P = len(groups), len(groups[0])
    slot = 0
    names: set[str] = set()
    for g in range(L):
        for h in range(g + 1, L):
            for qa, qb in zip(ports[g, h], ports[h, g]):
                a, b_node = groups[g][qa % P], groups[h][qb % P]
                seg = b.p2p(b.link_name(a, b_node, names), a, b_node, p2p_rate, slot=slot)
                seg.groups = (g, h)
                slot += 1


def _ports(L: int, weights: dict[tuple[int, int], int]) -> dict[tuple[int, int], list[int]]:
    """Ports of group g facing group h. Ports of a group in order: port q is NIC
    q // P of member q % P, so consecutive ports sit on different nodes and links
    spread over members."""
    cursor = [0] * L
    ports = {}
    for g in range(L):
        for h in range(L):
            if h == g:
                continue
            start = cursor[g]
            cursor[g] += weights[min(g, h), max(g, h)]
            ports[g, h] = [start + j for j in range(weights[min(g, h), max(g, h)])]
    return ports


def _weights(L: int, ports: int) -> tuple[dict[tuple[int, int], int], list[str]]:
    """Links per group pair: P*C/(L-1) each, the remainder spread as evenly as
    possible (a circulant graph of the extra links, plus a matching when the
    remainder is odd). Returns ({(g, h): links}, unused ports)."""
    base, extra = divmod(ports, L - 1)
    w = {(g, h): base for g in range(L) for h in range(g + 1, L)}
    unused = []
    for off in range(1, extra // 2 + 1):
        for g in range(L):
            h = (g + off) % L
            w[min(g, h), max(g, h)] += 1
    if extra % 2:
        free = list(range(L))
        taken: set[int] = set()
        for g in free:
            if g in taken:
                continue
            partner = next((h for h in free if h > g and h not in taken
                            and w[g, h] == base), None)
            if partner is None:
                unused.append("group%d" % g)
                continue
            w[g, partner] += 1
            taken.update((g, partner))
    return w, unused


def shortest_sums(graph: Graph) -> list[int]:
    """Distances in a meta-graph are 1 (same group, or a direct peer), 2 (a
    peer in the destination's group, a peer of the destination in the source's
    group, or a common peer), or 3 (gateway, link, remote LAN)."""
    P = graph.params["nodes_per_group"]
    peers = defaultdict(set)
    for seg in graph.segments:
        if seg.kind == "p2p":
            (a, _ia, _ha), (b, _ib, _hb) = seg.members
            peers[a.index].add(b.index)
            peers[b.index].add(a.index)
    group = [node.group for node in graph.nodes]
    into = defaultdict(set)             # group -> remote nodes linked to it
    for node in graph.nodes:
        for p in peers[node.index]:
            into[node.group].add(p)
    n = len(graph.nodes)
    out = []
    for node in graph.nodes:
        x, g = node.index, node.group
        one = {p for p in peers[x] if group[p] != g}
        covered = {group[p] for p in one}
        two_extra = set()
        for z in into[g]:
            if group[z] not in covered:
                two_extra.add(z)
        for k in one:
            for z in peers[k]:
                if group[z] != g and group[z] not in covered:
                    two_extra.add(z)
        two = len(covered) * P - len(one) + len(two_extra)
        remote = n - P
        three = remote - len(one) - two
        out.append((P - 1) + len(one) + 2 * two + 3 * three)
    return out


def cuts(graph: Graph) -> Iterator[list[int]]:
    """Whole groups on each side (group 0 fixed on side 1); with odd L the
    last group is split and its nodes placed by the balancing."""
    L = graph.params["groups"]
    pool = range(1, L) if L % 2 == 0 else range(1, L - 1)
    take = L // 2 - 1
    combos: Iterable[tuple[int, ...]]
    if comb(len(pool), take) > CUT_COMBINATIONS:
        combos = [tuple(pool)[:take]]
    else:
        combos = itertools.combinations(pool, take)
    for combo in combos:
        chosen = {0, *combo}
        yield [1 if node.group in chosen else 0 for node in graph.nodes]


def bisection_link(graph: Graph) -> int:
    """The paper counts the bisection in point-to-point links."""
    p2p: int = graph.params["p2p_rate_mbit"]
    return p2p


def bisection_extras(graph: Graph) -> dict[str, Any]:
    L, C = graph.params["groups"], graph.params["p2p_per_node"]
    return {"paper_closed_form": round((C / 4) * (L / (L - 1)), 4)}


def metrics_extras(graph: Graph) -> dict[str, Any]:
    p = graph.params
    return {"metagraph": {"links_per_group_pair": p["links_per_group_pair"],
                          "uneven_pairs": p["uneven_pairs"], "unused_ports": p["unused_ports"],
                          "weights": p["weights"]}}


FAMILY = register(Family(name=NAME, drawing="groups", schema=SCHEMA, size=size, build=build,
                         default_pattern="node{index:02d}", route=route.metagraph,
                         shortest_sums=shortest_sums, cuts=cuts, bisection_link=bisection_link,
                         bisection_extras=bisection_extras, metrics_extras=metrics_extras))
