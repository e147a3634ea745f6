"""A node's plan as its node would report it (agent/collect.py's state) once
beonet_node has applied it to a healthy machine: every planned NIC up, the
addresses with their connected routes, the planned routes (with routing.engine
frr: the loopback on lo and the routes OSPF learns), forwarding and the
failover sysctls as planned, beonet's forward filter on forwarding nodes, every
neighbour answering. The proof builds the plan's tables from it with the code
that builds the live ones; the tests and the timing use it as live state."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..agent.collect import STATE_FORMAT
from ..agent.nodeplan import NodePlan
from ..agent.routes import next_hops
from ..compiler.model import ip_text, mask, parse_net
from .nft import CHAIN, RULE, SET, TABLE

NO_FILTER: dict[str, Any] = {"chains": [], "sets": {}, "legacy": []}


def connected(address: str) -> str:
    """The network of an interface address ("10.0.1.7/24" -> "10.0.1.0/24")."""
    addr, plen = parse_net(address)
    return "%s/%d" % (ip_text(addr & mask(plen)), plen)


def forward_filter(prefixes: Iterable[str]) -> dict[str, Any]:
    """beonet's forward filter as collect.reduce_nft reports it."""
    return {"chains": [{"table": TABLE, "chain": CHAIN, "prio": 0, "policy": "drop", "rules": [RULE],
                        "count": 1}],
            "sets": {SET: list(prefixes)}, "legacy": []}


def plan_state(n: NodePlan, prefixes: Iterable[str]) -> dict[str, Any]:
    """The state a node applying plan n reports (see the module docstring)."""
    links: dict[str, dict[str, str]] = {"lo": {"state": "up"}}
    addrs: dict[str, list[str]] = {"lo": ["127.0.0.1/8"]}
    routes: list[dict[str, Any]] = []
    for iface in n["interfaces"]:
        links[iface["name"]] = {"state": "up"}
        for member in iface.get("members", []):
            links[member] = {"state": "up", "master": iface["name"]}
        if iface["addresses"]:
            addrs[iface["name"]] = list(iface["addresses"])
        seen = set()
        for a in iface["addresses"]:
            net = connected(a)
            if net not in seen and not net.endswith("/32"):
                seen.add(net)
                routes.append({"dst": net, "type": "unicast", "src": a.split("/")[0], "proto": "kernel",
                               "hops": [{"dev": iface["name"]}]})
    if "routing" in n:                  # routing.engine frr: zebra's loopback, OSPF's routes
        addrs["lo"].append(n["routing"]["loopback"])
    for r in n["routes"] + n.get("learned", []):
        routes.append({"dst": r["to"], "type": "unicast", "src": r["src"],
                       "proto": "250" if "routing" not in n else "ospf",
                       "hops": [{"via": via, "dev": dev} for via, dev in next_hops(r)]})
    fwd = 1 if n["forwarding"] else 0
    skip = 1 if n.get("failover") else 0
    nics = ["all"] + [name for name in addrs if name != "lo"]
    return {"format": STATE_FORMAT, "links": links, "addrs": addrs, "routes": routes, "neigh": [],
            "sysctl": {"forwarding": dict.fromkeys(nics, fwd), "linkdown": dict.fromkeys(nics, skip),
                       "use_neigh": skip},
            "rules": [],
            "filter": forward_filter(prefixes) if n["forwarding"] else NO_FILTER,
            "errors": []}
