"""A plan's two IP families apart, for a plan.json read from a file (``beonet diff``).

A node plan holds its IPv4 keys (``address``, IPv4 interface addresses and routes,
``routing.loopback``) and, with IPv6 on, its IPv6 ones (``address6``, IPv6 interface
addresses and routes, ``routing.loopback6``); an IPv6 text holds a ':'. ``split``
parts them: the IPv4 part is what the node module's checks (agent.nodeplan) and the
IPv4 route walk read, the IPv6 texts are checked here (``problems6``) as the node
module checks the IPv4 ones: the key path, the value shown, what it must be.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from typing import Any

from ..agent.names import escaped, ifname_problem, shown, type_word

# TEST-NET-1 (RFC 5737) stands in for the IPv4 address and loopback an IPv6-only node
# has not, so that the node module's checks read the rest of its IPv4 part.
ABSENT_ADDRESS, ABSENT_LOOPBACK = "192.0.2.1", "192.0.2.1/32"

Text6 = tuple[str, Any, str]        # (key path, value, kind): an IPv6 text to check
_PARSE: dict[str, Callable[[str], Any]] = {
    "address": ipaddress.IPv6Address, "interface": ipaddress.IPv6Interface,
    "network": ipaddress.IPv6Network}


def is6(value: Any) -> bool:
    """Whether a plan's value is IPv6 text (the contract: a ':' in it)."""
    return isinstance(value, str) and ":" in value


def _route6(r: Mapping[str, Any], where: str) -> list[Text6]:
    out = [(where + ".to", r.get("to"), "network"), (where + ".via", r.get("via"), "address"),
           (where + ".dev", r.get("dev"), "ifname")]
    out += [(where + ".src", r["src"], "address")] if "src" in r else []
    hops = r.get("nexthops", [])
    for k, hop in enumerate(hops if isinstance(hops, list) else [hops]):
        hop = hop if isinstance(hop, Mapping) else {}
        out += [("%s.nexthops[%d].via" % (where, k), hop.get("via"), "address"),
                ("%s.nexthops[%d].dev" % (where, k), hop.get("dev"), "ifname")]
    return out


def _interfaces(n: Mapping[str, Any], four: dict[str, Any], six: list[Text6]) -> None:
    ifaces = n.get("interfaces")
    if not isinstance(ifaces, list):
        return
    four["interfaces"] = []
    for k, i in enumerate(ifaces):
        addrs = i.get("addresses") if isinstance(i, Mapping) else None
        if not isinstance(addrs, list):
            four["interfaces"].append(i)
            continue
        six += [("interfaces[%d].addresses[%d]" % (k, j), a, "interface")
                for j, a in enumerate(addrs) if is6(a)]
        four["interfaces"].append({**i, "addresses": [a for a in addrs if not is6(a)]})


def split(n: Mapping[str, Any]) -> tuple[dict[str, Any], list[Text6]]:
    """A node plan's IPv4 part and its IPv6 texts (key path, value, kind)."""
    four = dict(n)
    six: list[Text6] = []
    if "address6" in n:
        six.append(("address6", four.pop("address6"), "address"))
        four.setdefault("address", ABSENT_ADDRESS)
    _interfaces(n, four, six)
    for key in ("routes", "learned"):
        routes = n.get(key)
        if isinstance(routes, list):
            four[key] = [r for r in routes if not (isinstance(r, Mapping) and is6(r.get("to")))]
            six += [t for k, r in enumerate(routes) if isinstance(r, Mapping) and is6(r.get("to"))
                    for t in _route6(r, "%s[%d]" % (key, k))]
    routing = n.get("routing")
    if isinstance(routing, Mapping) and "loopback6" in routing:
        four["routing"] = {k: v for k, v in routing.items() if k != "loopback6"}
        four["routing"].setdefault("loopback", ABSENT_LOOPBACK)
        six.append(("routing.loopback6", routing["loopback6"], "loopback"))
    return four, six


def problem6(value: Any, kind: str) -> str | None:
    """Why value is not an IPv6 'address', 'interface' (ADDR/LEN), 'network', 'loopback'
    (ADDR/128) or an interface name ('ifname'); None when it is one."""
    if kind == "ifname":
        return ifname_problem(value)
    what = "interface" if kind == "loopback" else kind
    if not isinstance(value, str):
        return "must be an IPv6 %s, not %s" % (what, type_word(value))
    try:
        _PARSE[what](value)
    except ValueError:
        return "%s is not an IPv6 %s" % (shown(value), what)
    if kind == "loopback" and not value.endswith("/128"):
        return "must be a /128"
    return None


def problems6(node: str, six: list[Text6]) -> list[str]:
    """The node's IPv6 texts that are not what their key says, as the node module words it."""
    return ["%s: plan.%s: %s" % (node, path, why) for path, value, kind in six
            if (why := problem6(value, kind)) is not None]


def family_problems(nodes: Mapping[str, Any]) -> list[str]:
    """A plan is IPv4 on every node or on none, and a node without an IPv4 address has
    an IPv6 one: the first node that breaks either, with the node that shows the rule."""
    plans = {name: n for name, n in nodes.items() if isinstance(n, Mapping)}
    four = [name for name, n in plans.items() if "address" in n]
    if four and len(four) < len(plans):
        lack = next(name for name in plans if name not in four)
        return ["nodes.%s.address: missing, while node %s has one: a plan has IPv4 on every "
                "node or on none" % (escaped(lack), escaped(four[0]))]
    lack6 = next((name for name, n in plans.items() if not four and "address6" not in n), None)
    return [] if lack6 is None else [
        "nodes.%s: no address nor address6: a node has an IPv4 or an IPv6 address" % escaped(lack6)]


def segment_problems6(name: str, seg: Mapping[str, Any]) -> list[str]:
    """A segment's IPv6 prefix (prefix6) and its members' IPv6 addresses (address6)."""
    out = []
    where = "segments.%s" % escaped(name)
    if "prefix6" in seg and (why := problem6(seg["prefix6"], "network")):
        out.append("%s.prefix6: %s" % (where, why))
    members = seg.get("members")
    for k, m in enumerate(members if isinstance(members, list) else []):
        if isinstance(m, Mapping) and "address6" in m and (why := problem6(m["address6"], "address")):
            out.append("%s.members[%d].address6: %s" % (where, k, why))
    return out


def ipv4_plan(plan: Mapping[str, Any]) -> dict[str, Any]:
    """The plan's IPv4 part (a dual-stack plan without its IPv6 keys), as the IPv4 walk
    reads it."""
    segments = {name: {k: v for k, v in seg.items() if k != "prefix6"}
                for name, seg in plan["segments"].items()}
    return {**plan, "segments": segments, "nodes": {name: split(n)[0] for name, n in plan["nodes"].items()}}
