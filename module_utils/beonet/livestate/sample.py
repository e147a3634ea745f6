"""The pairs traceroute still checks end to end when the live state proves them all:
at least one pair of every path length (the same segment, then each number of
gateways) and one whose preferred branch passes each gateway node, chosen from
the plan's tables by the proof's classes (few pairs: one per gateway at most)."""

from __future__ import annotations

from ..compiler.errors import Problems
from ..compiler.model import ON_LINK, Graph, Hop, RouteTable
from ..compiler.prove import class_entries, exits
from .family import V4, Family, classes, host_holders, paths


def sample(skel: Graph, tables: list[RouteTable], component: list[int],
           dead: set[int], fam: Family = V4) -> dict[int, dict[int, list[list[str]]]]:
    """{source: {destination: the pair's allowed hop lists}} of the sample (in the family
    of the tables; skel's nodes hold its addresses)."""
    addresses = [node.address for node in skel.nodes]
    names = [node.name for node in skel.nodes]
    held = host_holders(fam, tables)
    lengths: set[int] = set()
    gateways: set[int] = set()
    out: dict[int, dict[int, list[list[str]]]] = {}
    cache: dict[int, list[dict[int, Hop]]] = {}
    for sig, dests in classes(fam, addresses, tables):
        entries = class_entries(tables, sig, cache)
        nxt = [e[0] if e is not None else ON_LINK for e in entries]
        cls = exits(skel.nodes, nxt, 0, dests, Problems())      # the address names a loop in problems unread
        if cls is None:
            continue
        live = [d for d in dests if d not in dead]
        for i, e in enumerate(entries):
            if e is None or i in dead:
                continue
            d = _partner(i, nxt[i], live, component, held, addresses)
            if d is None:
                continue
            if i in held.get(addresses[d], ()):
                gateway, hops = _follow(tables, i, d, addresses[d])
            else:
                gateway, hops = nxt[i], cls.steps[i] + (cls.exit_[i] != d)
            if hops in lengths and (gateway < 0 or gateway == d or gateway in gateways):
                continue
            branches = paths(fam, names, addresses, tables, i, d)
            if not branches:
                continue
            out.setdefault(i, {})[d] = [[h["address"] for h in b] for b in branches]
            lengths.add(len(branches[0]))
            gateways.update(skel.by_name[h["node"]].index for h in branches[0][:-1])
    return out


def _partner(i: int, gateway: int, dests: list[int], component: list[int],
             held: dict[int, list[int]], addresses: list[int]) -> int | None:
    """A destination of the class for source i other than itself and its gateway, in
    its component: one that i reaches by the class's route if there is one among the
    first few, else one it holds a host route for."""
    found = None
    for d in dests[:8]:
        if d != i and d != gateway and component[d] == component[i]:
            if i not in held.get(addresses[d], ()):
                return d
            found = d if found is None else found
    return found


def _follow(tables: list[RouteTable], i: int, d: int, addr: int) -> tuple[int, int]:
    """(first next hop, hops) from node i to node d's address by the preferred next hops."""
    first = tables[i].lookup(addr)
    cur, hops = i, 0
    while hops <= len(tables):
        entry = tables[cur].lookup(addr)
        hops += 1
        if entry is None or entry[0] == ON_LINK or entry[0] == d:
            break
        cur = entry[0]
    return (first[0] if first is not None else ON_LINK), hops
