"""A node's plan as its node would report it (agent/collect.py's state) once
beonet_node has applied it to a healthy machine: every planned NIC up, the
addresses with their connected routes, the planned routes (with routing.engine
frr: the loopback on lo and the routes OSPF learns), forwarding and the
failover sysctls as planned, beonet's forward filter on forwarding nodes, every
neighbour answering; with IPv6 its IPv6 part too (``addrs6``, ``routes6`` with the
connected /64s and /127s as the kernel lists them, without a source, ``sysctl6``;
the filter's IPv6 rule and set; under FRR each NIC's link-local address and OSPFv3's
routes through the neighbours' link-local addresses: ``link_local``). The proof
builds the plan's tables from it with the code that builds the live ones; the tests
and the timing use it as live state."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..agent.collect import STATE_FORMAT
from ..agent.nodeplan import NodePlan
from ..agent.routes import next_hops
from .family import V6, family_of
from .nft import CHAIN, RULE, RULE6, SET, SET6, TABLE

NO_FILTER: dict[str, Any] = {"chains": [], "sets": {}, "legacy": []}


def connected(address: str) -> str:
    """The network of an interface address ("10.0.1.7/24" -> "10.0.1.0/24", IPv6 alike)."""
    fam = family_of(address)
    text, _slash, plen = address.partition("/")
    addr = fam.parse(text)
    if addr is None:
        raise ValueError("not an %s address: %r" % (fam.name, address))
    return fam.net_text(addr & fam.mask(int(plen)), int(plen))


def forward_filter(prefixes: Iterable[str]) -> dict[str, Any]:
    """beonet's forward filter as collect.reduce_nft reports it: the IPv4 prefixes in
    set cluster, and the IPv6 ones (if any) in set cluster6 with their own rule."""
    nets = list(prefixes)
    four = [p for p in nets if ":" not in p]
    six = [p for p in nets if ":" in p]
    rules, sets = [RULE], {SET: four}
    if six:
        rules.append(RULE6)
        sets[SET6] = six
    return {"chains": [{"table": TABLE, "chain": CHAIN, "prio": 0, "policy": "drop", "rules": rules,
                        "count": len(rules)}],
            "sets": sets, "legacy": []}


def plan_state(n: NodePlan, prefixes: Iterable[str]) -> dict[str, Any]:
    """The state a node applying plan n reports (see the module docstring)."""
    links: dict[str, dict[str, str]] = {"lo": {"state": "up"}}
    four, six = _addresses(n)
    routes = _connected(n, four, 4)
    if "routing" in n and "loopback" in n["routing"]:     # routing.engine frr: zebra's loopback
        four["lo"].append(n["routing"]["loopback"])
    for iface in n["interfaces"]:
        links[iface["name"]] = {"state": "up"}
        for member in iface.get("members", []):
            links[member] = {"state": "up", "master": iface["name"]}
    routes6 = _connected(n, six, 6)
    for r in n["routes"] + n.get("learned", []):          # OSPF's routes under FRR
        ospf6 = "routing" in n and ":" in r["to"]
        (routes6 if ":" in r["to"] else routes).append(
            {"dst": r["to"], "type": "unicast", **({"src": r["src"]} if "src" in r else {}),
             "proto": "250" if "routing" not in n else "ospf",
             "hops": [{"via": link_local(via) if ospf6 else via, "dev": dev} for via, dev in next_hops(r)]})
    fwd = 1 if n["forwarding"] else 0
    skip = 1 if n.get("failover") else 0
    nics = ["all"] + [name for name in four if name != "lo"]
    out = {"format": STATE_FORMAT, "links": links, "addrs": four, "routes": routes, "neigh": [],
           "sysctl": {"forwarding": dict.fromkeys(nics, fwd), "linkdown": dict.fromkeys(nics, skip),
                      "use_neigh": skip},
           "rules": [],
           "filter": forward_filter(prefixes) if n["forwarding"] else NO_FILTER,
           "errors": []}
    if "address6" in n:
        nics6 = ["all"] + [name for name in six if name != "lo"]
        out.update(addrs6=six, routes6=routes6, neigh6=[],
                   sysctl6={"forwarding": dict.fromkeys(nics6, fwd), "linkdown": dict.fromkeys(nics6, skip)})
    return out


def _addresses(n: NodePlan) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """{NIC: its IPv4 addresses}, {NIC: its IPv6 addresses} (lo's, the loopback under FRR)."""
    four: dict[str, list[str]] = {"lo": ["127.0.0.1/8"]}
    six: dict[str, list[str]] = {"lo": ["::1/128"]}
    for iface in n["interfaces"]:
        for a in iface["addresses"]:
            (six if ":" in a else four).setdefault(iface["name"], []).append(a)
    if "loopback6" in n.get("routing", {}):
        six["lo"].append(n["routing"]["loopback6"])
        for nic, addrs in list(six.items()):
            if nic != "lo":
                six[nic] = addrs + ["%s/64" % link_local(addrs[0].split("/")[0])]
    return four, six


def link_local(address: str) -> str:
    """The link-local address a synthetic node has on the NIC holding the global IPv6
    address: fe80:: with the address's last 64 bits plus one (distinct on every link: the
    plan's host numbers are), as OSPFv3 names a neighbour."""
    value = V6.parse(address)
    if value is None:
        raise ValueError("not an IPv6 address: %r" % address)
    return V6.text((0xFE80 << 112) | ((value + 1) & ((1 << 64) - 1)))


def _connected(n: NodePlan, addrs: dict[str, list[str]], version: int) -> list[dict[str, Any]]:
    """The connected routes the kernel adds for the planned addresses of one version (an
    IPv4 one with its source, an IPv6 one without, as ``ip -j`` lists them)."""
    routes: list[dict[str, Any]] = []
    for iface in n["interfaces"]:
        seen = set()
        for a in addrs.get(iface["name"], []):
            net = connected(a)
            if net not in seen and not net.endswith(("/32", "/128")):
                seen.add(net)
                route = {"dst": net, "type": "unicast", "proto": "kernel", "hops": [{"dev": iface["name"]}]}
                routes.append(dict(route, src=a.split("/")[0]) if version == 4 else route)
    return routes
