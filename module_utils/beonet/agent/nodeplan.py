"""One node's plan as the node agent reads it, and the plan format it understands.

The agent travels to the nodes without the compiler, so it describes the part
of the plan it consumes here: ``nodes[NAME]`` of the plan, with physical NIC
names (docs/plan.md). Standard library only.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any, TypedDict

from .names import (
    BOND_MODES,
    control_characters,
    control_characters_in,
    ifname_problem,
    node_name_problem,
    shown,
    type_word,
)

OLDEST_FORMAT = 2        # a plan of format 2 is one of 3 without FRR (routing, learned)
PLAN_FORMAT = 3          # the plan's beonet.plan_format this agent understands


class NextHop(TypedDict):
    via: str
    dev: str


class _RouteKeys(TypedDict):
    to: str
    via: str                     # with nexthops: nexthops[0]
    dev: str


class Route(_RouteKeys, total=False):
    src: str                     # absent: an IPv6 route out of the one NIC holding its source
    nexthops: list[NextHop]      # only with 2 or more next hops, the preferred first


class Neigh(TypedDict):
    """Neighbour timers on the cluster NICs: how soon a dead next hop is skipped."""
    base_reachable_time_ms: int
    delay_first_probe_time: int  # seconds
    ucast_solicit: int
    retrans_time_ms: int


class Failover(TypedDict):
    hash_policy: int             # net.ipv4.fib_multipath_hash_policy
    neigh: Neigh


class Peer(TypedDict):
    node: str
    interface: str


class _InterfaceKeys(TypedDict):
    name: str
    kind: str                    # "ethernet" or "bond"
    segment: str
    addresses: list[str]         # "ADDR/LEN": the IPv4 ones, then the IPv6 ones


class Interface(_InterfaceKeys, total=False):
    mtu: int
    rate_mbit: int
    logical: str                 # the topology's name when the NIC is renamed
    bond: str                    # an ethernet NIC in a bond: the bond's name
    members: list[str]           # a bond: its NICs
    mac: str
    mode: str
    miimon: int
    tso: bool
    peer: Peer


class _NodePlanKeys(TypedDict):
    address: str                 # IPv4 (absent on an IPv6-only cluster)
    forwarding: bool
    interfaces: list[Interface]
    routes: list[Route]


class Bfd(TypedDict):
    interval_ms: int             # sent and expected every this many ms
    multiplier: int              # missed packets before the neighbour is down


class _RoutingKeys(TypedDict):
    engine: str                  # "frr"
    bfd: Bfd
    home: str                    # the NIC the node's address would be on with static routes


class Routing(_RoutingKeys, total=False):
    """routing.engine frr: what the node's FRR configuration is rendered from."""

    loopback: str                # "ADDR/32", put on lo by FRR's zebra (absent: IPv6-only)
    loopback6: str               # addressing.ipv6: "ADDR/128" on lo


class NodePlan(_NodePlanKeys, total=False):
    routing: Routing             # present only with routing.engine frr
    learned: list[Route]         # routing.engine frr: the routes FRR installs (never beonet)
    index: int
    group: int
    coords: list[int]
    switch: str
    ipv6: bool                   # present (false) only when the topology turns IPv6 off
    address6: str                # addressing.ipv6: the node's IPv6 address
    failover: Failover           # present only when the topology's failover is on


def forwards_ipv4(n: NodePlan) -> bool:
    """Whether the node forwards IPv4: it forwards and its plan gives it IPv4 addresses.
    An IPv6-only node keeps IPv4 forwarding off (its IPv6 forwarding:
    apply.forwarding6_sysctls)."""
    return n["forwarding"] and any(":" not in a for i in n["interfaces"] for a in i["addresses"])


def plan_format_problem(node: str, plan_format: int) -> str | None:
    """Why this agent refuses a plan of this format (None: it understands it)."""
    if OLDEST_FORMAT <= plan_format <= PLAN_FORMAT:
        return None
    if plan_format > PLAN_FORMAT:
        return ("%s: plan_format %d is newer than this beonet_node understands (%d); "
                "update the collection" % (node, plan_format, PLAN_FORMAT))
    return ("%s: plan_format %d is older than this beonet_node understands (%d to %d); "
            "compile the plan again with this collection" % (node, plan_format, OLDEST_FORMAT, PLAN_FORMAT))


# --- the node module's first wall: a plan is checked before anything is built from it

_MAC = re.compile(r"[0-9a-f]{2}(?::[0-9a-f]{2}){5}")


def _is_int(value: Any, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def _address_problem(value: Any, kind: str) -> str | None:
    """Why value is not an IPv4 'address', 'interface' (ADDR/LEN) or 'network', or None."""
    parse = {"address": ipaddress.IPv4Address, "interface": ipaddress.IPv4Interface,
             "network": ipaddress.IPv4Network}[kind]
    if not isinstance(value, str):
        return "must be an IPv4 %s, not %s" % (kind, type_word(value))
    try:
        parse(value)
    except ValueError:
        return _host_bits(value, kind) or "%s is not an IPv4 %s" % (shown(value), kind)
    return None


def _host_bits(value: str, kind: str) -> str | None:
    """The message for a network written with host bits (None: it is not one)."""
    if kind != "network":
        return None
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None
    return "%s has host bits set: the network is %s" % (shown(value), net)


def _address6_problem(value: Any, kind: str) -> str | None:
    """Why value is not a cluster IPv6 'address', 'interface' or 'network', or None: a
    zone id, an IPv4-mapped, multicast, link-local, loopback or unspecified address is
    none (the plan's IPv6 addresses are global, written once, in IPv6 form)."""
    if not isinstance(value, str):
        return "must be an IPv6 %s, not %s" % (kind, type_word(value))
    if "%" in value:
        return "%s holds a zone id: a cluster address is global, never scoped to a link" % shown(value)
    parse = {"address": ipaddress.IPv6Address, "interface": ipaddress.IPv6Interface,
             "network": ipaddress.IPv6Network}[kind]
    try:
        got = parse(value)
    except ValueError:
        return _host_bits(value, kind) or "%s is not an IPv6 %s" % (shown(value), kind)
    ip = got.network_address if isinstance(got, ipaddress.IPv6Network) else \
        got.ip if isinstance(got, ipaddress.IPv6Interface) else got
    for wrong, what in ((ip.ipv4_mapped is not None, "an IPv4-mapped address (write the IPv4 one)"),
                        (ip.is_multicast, "a multicast address"),
                        (ip.is_link_local, "a link-local address (the OS's own, never the plan's)"),
                        (ip.is_loopback, "the loopback address"),
                        (ip.is_unspecified and kind != "network", "the unspecified address")):
        if wrong:
            return "%s is %s" % (shown(value), what)
    return None


def _either_problem(value: Any, kind: str) -> str | None:
    """Why value is neither an IPv4 nor an IPv6 'address', 'interface' or 'network'
    (IPv6 when it holds a ':', IPv4 otherwise), or None."""
    if not isinstance(value, str):
        return "must be an IPv4 or IPv6 %s, not %s" % (kind, type_word(value))
    return _address6_problem(value, kind) if ":" in value else _address_problem(value, kind)


def network_problem(value: Any) -> str | None:
    """Why value is neither an IPv4 nor an IPv6 network (None: it is one)."""
    return _either_problem(value, "network")


def address_problem(value: Any) -> str | None:
    """Why value is neither an IPv4 nor an IPv6 address (None: it is one)."""
    return _either_problem(value, "address")


def _family_problem(value: Any, kind: str, six: bool) -> str | None:
    """Why value is not an address of a route's family (six: the route's to is IPv6)."""
    if isinstance(value, str) and (":" in value) != six:
        route, other = ("IPv6", "IPv4") if six else ("IPv4", "IPv6")
        return "%s is %s on an %s route (its to is %s)" % (shown(value), other, route, route)
    return _address6_problem(value, kind) if six else _address_problem(value, kind)


def _own_member(member: Any, bond: Any) -> str | None:
    if member == bond:
        return "%s is the bond itself: a bond cannot be its own member" % shown(member)
    return None


def _interface_problems(i: Any, where: str) -> list[tuple[str, str | None]]:
    if not isinstance(i, dict):
        return [(where, "must be a mapping, not %s" % type_word(i))]
    out = [(where + ".name", ifname_problem(i.get("name"))),
           (where + ".kind", None if i.get("kind") in ("ethernet", "bond") else
            "must be ethernet or bond, not %s" % shown(i.get("kind")))]
    out += [("%s.addresses[%d]" % (where, k), _either_problem(a, "interface"))
            for k, a in enumerate(_listed(i.get("addresses", [])))]
    out += [("%s.members[%d]" % (where, k), ifname_problem(m) or _own_member(m, i.get("name")))
            for k, m in enumerate(_listed(i.get("members", [])))]
    if "bond" in i:
        out.append((where + ".bond", ifname_problem(i["bond"])))
    if "mtu" in i and not _is_int(i["mtu"], 68, 65535):
        out.append((where + ".mtu", "must be a whole number from 68 to 65535"))
    if "miimon" in i and not _is_int(i["miimon"], 0, 60000):
        out.append((where + ".miimon", "must be a whole number from 0 to 60000"))
    if "mode" in i and i["mode"] not in BOND_MODES:
        out.append((where + ".mode", "%s is not a bonding mode" % shown(i["mode"])))
    if "mac" in i and not (isinstance(i["mac"], str) and _MAC.fullmatch(i["mac"])):
        out.append((where + ".mac", "%s is not a MAC address" % shown(i["mac"])))
    return out


def _route_problems(r: Any, where: str) -> list[tuple[str, str | None]]:
    if not isinstance(r, dict):
        return [(where, "must be a mapping, not %s" % type_word(r))]
    six = isinstance(r.get("to"), str) and ":" in r["to"]
    out = [(where + ".to", _either_problem(r.get("to"), "network")),
           (where + ".via", _family_problem(r.get("via"), "address", six)),
           (where + ".src", None if six and "src" not in r    # optional on IPv6 routes
            else _family_problem(r.get("src"), "address", six)),
           (where + ".dev", ifname_problem(r.get("dev")))]
    for k, hop in enumerate(_listed(r.get("nexthops", []))):
        here = "%s.nexthops[%d]" % (where, k)
        hop = hop if isinstance(hop, dict) else {}
        out += [(here + ".via", _family_problem(hop.get("via"), "address", six)),
                (here + ".dev", ifname_problem(hop.get("dev")))]
    return out


def _routing_problems(r: Any) -> list[tuple[str, str | None]]:
    """The routing object of an frr plan: the engine, a /32 loopback, BFD timers in range."""
    if not isinstance(r, dict):
        return [("routing", "must be a mapping, not %s" % type_word(r))]
    bfd = r.get("bfd")
    found: list[tuple[str, str | None]] = [
        ("routing.engine", None if r.get("engine") == "frr" else "must be frr"),
        ("routing.home", ifname_problem(r.get("home")) if isinstance(r.get("home"), str)
         else "must be an interface name")]
    if "loopback" in r or "loopback6" not in r:      # IPv6-only: loopback6 alone
        found.append(("routing.loopback", _loopback_problem(r.get("loopback"), _address_problem, "/32")))
    if "loopback6" in r:
        found.append(("routing.loopback6", _loopback_problem(r["loopback6"], _address6_problem, "/128")))
    if not isinstance(bfd, dict):
        return found + [("routing.bfd", "must be a mapping, not %s" % type_word(bfd))]
    found += [("routing.bfd.interval_ms", None if _is_int(bfd.get("interval_ms"), 10, 60000)
               else "must be a whole number from 10 to 60000"),
              ("routing.bfd.multiplier", None if _is_int(bfd.get("multiplier"), 2, 255)
               else "must be a whole number from 2 to 255")]
    return found


def _loopback_problem(loop: Any, problem: Callable[[Any, str], str | None], length: str) -> str | None:
    """Why loop is not the node's loopback: an address of the family with this length."""
    return problem(loop, "interface") or (None if loop.endswith(length) else "must be a %s" % length)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def plan_problems(node: Any, n: Any) -> list[str]:
    """Every reason this node plan must not be applied (the node module's parameters):
    names that are not interface names, addresses that are not addresses, numbers out
    of range, control characters anywhere. Empty: every value is safe to write."""
    why = node_name_problem(node)
    if why is not None:
        return ["node: %s" % why]
    if not isinstance(n, dict):
        return ["%s: the plan must be a mapping, not %s" % (node, type_word(n))]
    found: list[tuple[str, str | None]] = []
    if "address" in n or "address6" not in n:        # IPv6-only: address6 alone
        found.append(("address", _address_problem(n.get("address"), "address")))
    if "address6" in n:
        found.append(("address6", _address6_problem(n["address6"], "address")))
    if not isinstance(n.get("forwarding"), bool):
        found.append(("forwarding", "must be true or false"))
    for k, i in enumerate(_listed(n.get("interfaces"))):
        found += _interface_problems(i, "interfaces[%d]" % k)
    for key in ("routes", "learned"):
        for k, r in enumerate(_listed(n.get(key, []))):
            found += _route_problems(r, "%s[%d]" % (key, k))
    if "routing" in n:
        found += _routing_problems(n["routing"])
    found += [(path, "holds a control character: %s" % shown(text))
              for path, text in control_characters(n)]
    return ["%s: plan.%s: %s" % (node, path, msg) for path, msg in found if msg is not None]


def whole_plan_problems(plan: Any, most: int = 5) -> list[str]:
    """Why a compiled plan given to a controller module (Slurm, MPI) must not be used
    (empty: it can): a mapping with the topology's name and its nodes, every node
    plan as plan_problems checks it. At most `most` problems, then how many more."""
    if not isinstance(plan, dict) or not isinstance(plan.get("nodes"), dict) or not plan["nodes"]:
        return ["plan: must be a compiled plan with its nodes"]
    topo = plan.get("topology")
    name = topo.get("name") if isinstance(topo, dict) else None
    found = [] if isinstance(name, str) and name.isprintable() else [
        "plan.topology.name: must be one line of text, not %s" % shown(name)]
    for node, n in plan["nodes"].items():
        found += plan_problems(node, n)
        if len(found) > most:
            break
    return found[:most] + (["and more"] if len(found) > most else [])


def unsafe_text(value: Any) -> str | None:
    """The key path of a string in value holding a control character or line break
    (None: none does)."""
    found = control_characters_in(value)
    return (found[0][0] or "(the value)") if found else None
