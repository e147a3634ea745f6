"""Path verification on a node: traceroute output against the plan's allowed hop
lists, forwarding state, bond state; and, over every node's results, the
diagnosis that tells dead nodes from broken paths (``summarise``). Standard
library only (runs on nodes)."""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .nodeplan import Interface, NodePlan, forwards_ipv4
from .routes import live_hops, live_key, planned_key, route_text, same_key

_HOP = re.compile(r"^\s*(\d+)\s+(\S+)")
_LINK_LOCAL = ipaddress.ip_network("fe80::/10")


Reader = Callable[[str], "str | None"]          # path -> text, None when unreadable
FORWARD = "/proc/sys/net/ipv4/ip_forward"
BONDING = "/proc/net/bonding/%s"
SIX = " (IPv6)"                 # after a destination's name: the pair traced over IPv6


def target_key(dest: str, six: bool) -> str:
    """The key of a traced pair's destination: its name, and SIX after it over IPv6."""
    return dest + SIX if six else dest


def target_node(key: str) -> str:
    """The destination node of a target key."""
    return key[:-len(SIX)] if key.endswith(SIX) else key


def traceroute_command(addr: str, hops_max: int | str, wait: int | str, at_once: int | str = 1) -> list[str]:
    """ICMP echo probes (-I) all hash to one branch of a multipath route; one probe
    a hop (-q 1), at_once at a time (1 by default: the last hop is not rate
    limited), wait seconds at most for each, and no deeper than hops_max. An IPv6
    address is traced over IPv6 (-6; traceroute also tells a literal's family itself,
    which a shell variable as addr leaves to it)."""
    six = ["-6"] if ":" in addr else []
    return ["traceroute", "-n", *six, "-I", "-N", str(at_once), "-q", "1", "-w", str(wait), "-m",
            str(hops_max), addr]


def parse_traceroute(text: str) -> list[str]:
    """Hop addresses of `traceroute -n -q 1` output ('*' where no reply)."""
    hops = []
    for line in text.splitlines():
        m = _HOP.match(line)
        if m and not line.startswith("traceroute"):
            hops.append(m.group(2))
    return hops


def allowed_paths(expected: Sequence[Any] | None) -> list[list[str]]:
    """The allowed hop lists of one pair: ``paths[SRC][DST]`` of plan format 2 is a list
    of hop lists, the preferred branch first (a plain hop list counts as one branch)."""
    if not expected:
        return []
    if all(isinstance(hop, str) for hop in expected):
        return [list(expected)]
    return [list(branch) for branch in expected]


def on_allowed_path(expected: Sequence[Any] | None, seen: Iterable[str]) -> bool:
    """Whether the traced hops are one of the pair's allowed hop lists."""
    return list(seen) in allowed_paths(expected)


def longest_path(expected: dict[str, Any]) -> int:
    """The most hops of any allowed hop list (0 when there is none)."""
    return max([len(b) for e in expected.values() for b in allowed_paths(e)] + [0])


def bond_state(text: str) -> tuple[str | None, dict[str, str]]:
    """Parse /proc/net/bonding/<bond>: mode and {member: MII status}."""
    mode = None
    members: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        key, _sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "Bonding Mode":
            mode = value
        elif key == "Slave Interface":
            current = value
        elif key == "MII Status" and current:
            members[current] = value
    return mode, members


def forwarding_problem(node: str, live: str, planned: bool) -> str | None:
    """live: /proc/sys/net/ipv4/ip_forward; planned: the plan's IPv4 forwarding
    (nodeplan.forwards_ipv4)."""
    on = live.strip() == "1"
    if on == planned:
        return None
    return "%s: forwarding is %s, the plan says %s" % (node, "on" if on else "off",
                                                       "on" if planned else "off")


def bond_problems(node: str, iface: Interface, proc_text: str | None) -> list[str]:
    """A planned bond against /proc/net/bonding/<bond> (None: no such file)."""
    name = iface["name"]
    if proc_text is None:
        return ["%s: bond %s does not exist" % (node, name)]
    mode, members = bond_state(proc_text)
    problems = []
    if not mode or iface["mode"] not in mode.replace("load balancing (round-robin)", "balance-rr"):
        problems.append("%s: %s mode is %s, the plan says %s" % (node, name, mode, iface["mode"]))
    for m in iface.get("members", []):
        if members.get(m) != "up":
            problems.append("%s: %s member %s is %s" % (node, name, m, members.get(m, "absent")))
    return problems


def expected_text(expected: Sequence[Any] | None) -> str:
    """The allowed hop lists of a pair on one line, branches separated by ' or '."""
    return " or ".join(" ".join(b) for b in allowed_paths(expected)) or "(none)"


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Text table of mismatches: pair, expected (allowed hop lists), seen."""
    if not rows:
        return "all paths match the plan"
    width = max(len(r["pair"]) for r in rows)
    out = ["%-*s  %s  |  %s" % (width, "pair", "expected", "seen")]
    for r in rows:
        out.append("%-*s  %s  |  %s" % (width, r["pair"], expected_text(r["expected"]),
                                        " ".join(r["seen"])))
    return "\n".join(out)


def is_link_local(address: str) -> bool:
    """Whether an address or prefix ("fe80::1", "fe80::/64") is IPv6 link-local (fe80::/10).

    The OS gives each NIC such an address and route; they are never the plan's business."""
    try:
        return ipaddress.ip_network(address, strict=False).subnet_of(_LINK_LOCAL)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


LINK_LOCAL = "link-local"       # a next hop named by device only (by_device)


def _plan_business(r: dict[str, Any], devs: set[str], by_device: bool = False) -> bool:
    """A live route through gateways on the plan's interfaces (every next hop of a
    multipath route), other than IPv6 link-local ones (by_device: those too)."""
    if is_link_local(r["dst"]):
        return False
    return all(dev in devs and via and (by_device or not is_link_local(via)) for via, dev in live_hops(r))


def _by_device(key: Any, live: bool) -> Any:
    """A route key whose next hops are named by device only: a planned one's every next
    hop, a live one's link-local ones (OSPFv3's)."""
    to, hops, src = key
    return (to, tuple((LINK_LOCAL if not live or is_link_local(via or "") else via, dev)
                      for via, dev in hops), src)


def route_lines(plan_node: NodePlan, live_routes: list[dict[str, Any]],
                six: bool = False, by_device: bool = False) -> tuple[list[str], list[str]]:
    """(planned, live) sorted route lines of one node in one family (six: IPv6), in one
    format (a multipath route on one line, its next hops as a set: routes.same_key).
    With routing.engine frr the plan's routes are those OSPF learns. by_device: OSPFv3's
    routes seen from the node alone, whose next hops are the neighbours' link-local
    addresses (which node holds one only verify.yml's proof, reading every node, knows):
    compared by destination, source and devices.

    live_routes: parsed ``ip -j -4 route show table main`` (-6 of IPv6). Only routes
    through a gateway on one of the plan's interfaces count: the management network's
    routes, the kernel's connected routes and IPv6 link-local routes are not
    the plan's business."""
    keys = [planned_key(r) for r in plan_node["routes"] + plan_node.get("learned", [])
            if (":" in r["to"]) == six]
    devs = {i["name"] for i in plan_node["interfaces"]}
    seen = [live_key(r) for r in live_routes if _plan_business(r, devs, by_device)]
    if by_device:
        keys, seen = [_by_device(k, False) for k in keys], [_by_device(k, True) for k in seen]
    return sorted(route_text(same_key(k)) for k in keys), sorted(route_text(same_key(k)) for k in seen)


def routes_unread(name: str, errors: list[str], six: bool = False) -> str:
    """The problem of a node whose routing table (six: its IPv6 one) could not be read."""
    family = "IPv6 " if six else ""
    return "%s: could not read its %sroutes (%s); run verify again" % (name, family, "; ".join(errors))


def route_problems(node: str, plan_node: NodePlan, live_routes: list[dict[str, Any]],
                   six: bool = False, by_device: bool = False) -> tuple[list[str], list[str]]:
    """The live table of one family (six: IPv6) against the plan: (problems, unified
    diff lines); by_device: see route_lines."""
    planned, live = route_lines(plan_node, live_routes, six, by_device)
    problems = ["%s: route missing: %s" % (node, x) for x in sorted(set(planned) - set(live))]
    problems += ["%s: route not in the plan: %s" % (node, x) for x in sorted(set(live) - set(planned))]
    diff = list(difflib.unified_diff(planned, live, "%s plan" % node, "%s live" % node, lineterm=""))
    return problems, diff


def state_problems(name: str, plan: NodePlan, read: Reader, tso: dict[str, bool | None]) -> list[str]:
    """Forwarding, bonds and bond offloads against the plan (read: path -> text or None;
    tso: {bond: live TSO} of the bonds whose plan turns it off)."""
    problems = []
    fwd = forwarding_problem(name, read(FORWARD) or "", forwards_ipv4(plan))
    if fwd and plan["forwarding"] and not forwards_ipv4(plan):
        fwd = "%s: IPv4 forwarding is on, the plan has no IPv4 (IPv6 only)" % name
    problems += [fwd] if fwd else []
    for iface in plan["interfaces"]:
        if iface["kind"] == "bond":
            problems += bond_problems(name, iface, read(BONDING % iface["name"]))
    problems += ["%s: %s has TCP segmentation offload on, the plan says off" % (name, bond)
                 for bond, on in sorted(tso.items()) if on]
    return problems


def node_result(name: str, plan: NodePlan, expected: dict[str, Any], seen: dict[str, list[str]],
                silent: list[str], read: Reader, tso: dict[str, bool | None],
                routes: list[dict[str, Any]] | None, errors: list[str]) -> dict[str, Any]:
    """One node's verify result: its traces (seen, by target key) against the allowed hop
    lists, its forwarding, bonds and routes (None: unreadable, errors say why) against the
    plan. A pair traced over IPv6 is named so (``pair``, ``family``); its ``destination``
    is the node."""
    mismatches = []
    for dst in sorted(seen):
        want = expected.get(dst, [])
        if not on_allowed_path(want, seen[dst]):
            row = {"pair": "%s -> %s" % (name, dst), "source": name, "destination": target_node(dst),
                   "expected": allowed_paths(want), "seen": seen[dst]}
            mismatches.append(dict(row, family="IPv6") if dst != target_node(dst) else row)
    problems = state_problems(name, plan, read, tso)
    route_diff: list[str] = []
    if routes is None:              # failed twice, or cut short: not every planned route missing
        problems.append(routes_unread(name, errors))
    else:
        route_problems_, route_diff = route_problems(name, plan, routes)
        problems += route_problems_
    return {"mismatches": mismatches, "checked": len(seen), "targets": sorted(seen), "silent": silent,
            "forwarding": (read(FORWARD) or "").strip() == "1", "problems": problems,
            "route_diff": route_diff}
