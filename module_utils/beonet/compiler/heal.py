"""Heal around dead nodes: the plan of the nodes that survive.

Addresses are assigned on the whole graph first, so every live node and
segment keeps the address it has in the full plan. Then the down nodes leave
the graph: out of the node list and out of every segment's members (a
point-to-point link with one dead end keeps its live end, with its address
and NIC; a segment with no live member goes). The live nodes are routed by
the generic rule (the structural rules of meshes and meta-graphs assume
every node is there) and proved, one connected component at a time: pairs
in different components cannot reach each other (a partition), which is
reported, not an error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from . import prove, route
from .errors import CompileError, Problem, Problems
from .model import Graph, Node
from .prove import Proof

GENERIC = "custom"          # a family the route and prove stages treat by the generic rule


class DownError(CompileError):
    """The down list names a node the topology does not have, or every node."""


def parse(down: str | Iterable[str] | None) -> list[str]:
    """Node names from 'a,b' text or a list of names (each may hold commas):
    blanks dropped, duplicates once, in the order given."""
    if down is None:
        return []
    items = [down] if isinstance(down, str) else list(down)
    out: list[str] = []
    for item in items:
        for name in str(item).split(","):
            name = name.strip()
            if name and name not in out:
                out.append(name)
    return out


def check(graph: Graph, down: list[str], file: str | None) -> None:
    """DownError naming every name that is no node, or saying that no node is left."""
    unknown = [name for name in down if name not in graph.by_name]
    if unknown:
        raise DownError([Problem("no node%s named %s in the topology" % (
            "s" if len(unknown) > 1 else "", ", ".join("'%s'" % name for name in unknown)),
            "down", file=file, stage="down")])
    if len(down) >= len(graph.nodes):
        raise DownError([Problem("every node of the topology is down: no plan to make",
                                 "down", file=file, stage="down")])


def survivors(graph: Graph, down: list[str]) -> Graph:
    """The addressed graph without the down nodes (the graph's own segments and
    switches are trimmed in place; the live nodes are renumbered in order)."""
    dead = set(down)
    live = [n for n in graph.nodes if n.name not in dead]
    for i, node in enumerate(live):
        node.index = i
    segments = []
    for seg in graph.segments:
        seg.members = [m for m in seg.members if m[0].name not in dead]
        if seg.members:
            segments.append(seg)
    for sw in graph.switches:
        sw.nodes = [name for name in sw.nodes if name not in dead]
    return graph.replace(nodes=live, by_name={n.name: n for n in live}, segments=segments)


def components(graph: Graph) -> list[list[Node]]:
    """The live nodes by connected component (each in index order), the
    component of the first node first."""
    links = graph.links()
    seen = bytearray(len(graph.nodes))
    out = []
    for node in graph.nodes:
        if seen[node.index]:
            continue
        found = links.towards([node.index]).order
        for i in found:
            seen[i] = 1
        out.append([graph.nodes[i] for i in sorted(found)])
    return out


def part(graph: Graph, nodes: list[Node]) -> Graph:
    """One component as a graph of its own for the generic route and prove
    stages: its nodes renumbered from 0, the segments they are on."""
    for i, node in enumerate(nodes):
        node.index = i
    inside = {id(n) for n in nodes}
    segments = [s for s in graph.segments if id(s.members[0][0]) in inside]
    return graph.replace(family=GENERIC, nodes=nodes, by_name={n.name: n for n in nodes},
                         segments=segments)


def renumber(graph: Graph) -> None:
    """Give the live nodes back their positions in the live graph."""
    for i, node in enumerate(graph.nodes):
        node.index = i


def route_and_prove(graph: Graph, parts: list[list[Node]]) -> tuple[Proof | None, Problems]:
    """Route every component by the generic rule and prove it; the proofs
    merged over the live graph (None, with the problems, when one failed).
    The nodes keep their live positions whatever the outcome."""
    for nodes in parts:
        route.route(part(graph, nodes))
    proofs = []
    try:
        for nodes in parts:
            proof, problems = prove.prove(part(graph, nodes))
            if proof is None:
                return None, problems
            proofs.append((nodes, proof))
    finally:
        renumber(graph)
    if len(proofs) == 1:
        return proofs[0][1], Problems()
    return merge(graph, proofs), Problems()


def merge(graph: Graph, proofs: list[tuple[list[Node], Proof]]) -> Proof:
    """One proof of the live graph from those of its components (whose nodes
    are back at their live positions): pair counts added up, the tables made
    again with live node numbers."""
    hops: Counter[int] = Counter()
    forwarded: Counter[int] = Counter()
    pairs = 0
    branching: set[int] = set()
    for nodes, proof in proofs:
        hops.update(proof.hops)
        pairs += proof.pairs
        for i, count in proof.forwarded.items():
            forwarded[nodes[i].index] += count
        branching.update(nodes[i].index for i in proof.branching)
    owner = route.owners(graph)
    problems = Problems()
    tables = prove.checked_tables(graph, owner, problems)
    if problems:
        raise AssertionError("tables proved by component fail on the live graph: %s"
                             % problems.texts())
    return Proof(hops, forwarded, pairs, tables, owner, branching)


def partition(parts: list[list[str]]) -> list[list[str]]:
    """Unordered pairs of live nodes in different components, by name: each
    pair once, the earlier component's node first."""
    out: list[list[str]] = []
    for k, first in enumerate(parts):
        for second in parts[k + 1:]:
            out.extend([a, b] for a in first for b in second)
    return out


def warning(down: list[str], parts: list[list[str]], shown: int = 8) -> str:
    """The words for a partition: which live nodes cannot reach which."""
    def names(part_: list[str]) -> str:
        more = len(part_) - shown
        return ", ".join(part_[:shown]) + (" and %d more" % more if more > 0 else "")
    return ("with %s down the live nodes fall into %d parts that cannot reach each "
            "other: %s" % (", ".join(down), len(parts),
                           "; ".join("[%s]" % names(p) for p in parts)))
