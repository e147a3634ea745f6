"""What a rolling, confirmed push needs from the plan: the order nodes change in, and
each node's neighbours to ask before its change is confirmed.

Order: the nodes that forward nothing first, then the gateways, each in the plan's
order. A leaf's change touches only the pairs to and from that leaf, a gateway's
every pair routed through it: the first batches are the cheapest to get wrong, and
a bad change is caught (and rolled back) on leaves before it reaches the nodes the
rest of the cluster depends on. When a change adds nodes, the pairs that worked
before keep working at every batch boundary; the new pairs work once the gateways
they cross have changed too.

Neighbours: on each cluster NIC, the gateways the node's routes use through it
first, then the other members of its segment in the plan's order, at most
PER_NIC of them (a LAN of a thousand nodes is asked through a few, not all);
dead nodes (the plan's ``down``) are never asked. A neighbour is asked at its IPv4
address, on an IPv6-only plan at its IPv6 one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PER_NIC = 8


def order(plan: Mapping[str, Any]) -> list[str]:
    """The nodes in the order a rolling push changes them: leaves, then gateways."""
    nodes = plan["nodes"]
    return ([name for name, n in nodes.items() if not n["forwarding"]]
            + [name for name, n in nodes.items() if n["forwarding"]])


def _gateways(n: Mapping[str, Any]) -> dict[str, list[str]]:
    """{NIC: the next hops the node's routes use through it, in route order}."""
    out: dict[str, list[str]] = {}
    for r in n["routes"]:
        for hop in r.get("nexthops") or [{"via": r.get("via"), "dev": r.get("dev")}]:
            if hop.get("via") and hop["via"] not in out.setdefault(hop["dev"], []):
                out[hop["dev"]].append(hop["via"])
    return out


def node_neighbours(plan: Mapping[str, Any], name: str) -> list[dict[str, str]]:
    """[{nic, address, node}] the node asks before its change is confirmed."""
    n, down = plan["nodes"][name], set(plan.get("down") or [])
    segments = plan.get("segments") or {}
    gateways = _gateways(n)
    out = []
    for iface in n["interfaces"]:
        if not iface["addresses"] or iface.get("segment") not in segments:
            continue
        # a member's IPv4 address; on an IPv6-only plan its IPv6 one
        members = [(m.get("address") or m["address6"], m) for m in segments[iface["segment"]]["members"]
                   if m["node"] != name and m["node"] not in down and (m.get("address") or m.get("address6"))]
        first = gateways.get(iface["name"], [])
        members.sort(key=lambda am: first.index(am[0]) if am[0] in first else len(first))
        out += [{"nic": iface["name"], "address": a, "node": m["node"]} for a, m in members[:PER_NIC]]
    return out


def neighbours(plan: Mapping[str, Any]) -> dict[str, list[dict[str, str]]]:
    return {name: node_neighbours(plan, name) for name in plan["nodes"]}
