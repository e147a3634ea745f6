"""Routes in one form for the plan and the kernel: single-path and multipath.

Standard library only (runs on the nodes). A route is compared as
(destination, next hops, source), the next hops a tuple of (via, dev): one
for a single-path route, two or more for a multipath route (``nexthops`` in
the plan; ``nexthops`` of ``ip -j route`` in the kernel). A correct multipath
route is in place whatever the order of its next hops (the kernel picks one
by hash, not by position, and NetworkManager restores them sorted); a
single-path route where a multipath one is planned (or the other way round),
or another set of next hops, differs. Commands keep the plan's order.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from .nodeplan import Route

    # strings: the agent runs on Python 3.8, where `str | None` is no expression
    Hops: TypeAlias = "tuple[tuple[str | None, str | None], ...]"
    RouteKey: TypeAlias = "tuple[str, Hops, str | None]"

PROTO = 250                     # the route protocol that marks beonet's routes
_PROTO = str(PROTO)


def next_hops(r: Route) -> list[tuple[str, str]]:
    """The (via, dev) next hops of a planned route, the preferred first."""
    hops = r.get("nexthops")
    if not hops:
        return [(r["via"], r["dev"])]
    return [(h["via"], h["dev"]) for h in hops]


def live_dst(r: dict[str, Any]) -> str:
    """The destination of an ``ip -j route`` entry as the plan writes it (a host as /32,
    an IPv6 host as /128)."""
    dst = str(r["dst"])
    if "/" in dst or dst == "default":
        return dst
    return dst + ("/128" if ":" in dst else "/32")


def ip_route(to: str) -> list[str]:
    """``ip route`` or, for an IPv6 destination, ``ip -6 route``."""
    return ["ip", "-6", "route"] if ":" in to else ["ip", "route"]


def live_hops(r: dict[str, Any]) -> Hops:
    """The next hops of an ``ip -j route`` entry (``nexthops`` for a multipath route)."""
    if r.get("nexthops"):
        return tuple((h.get("gateway"), h.get("dev")) for h in r["nexthops"])
    return ((r.get("gateway"), r.get("dev")),)


@functools.lru_cache(maxsize=1 << 16)      # a build asks for the same few thousand texts again and again
def canonical(text: str) -> str:
    """An IPv6 address, ADDR/LEN or network as the kernel prints it (RFC 5952: lower
    case, the longest run of zeros shortened); IPv4 text as it is."""
    try:
        if ":" not in text:
            return text
        if "/" not in text:
            return str(ipaddress.IPv6Address(text))
        return str(ipaddress.IPv6Interface(text))
    except ValueError:
        return text


def planned_key(r: Route) -> RouteKey:
    hops = r.get("nexthops")
    pairs = [(r["via"], r["dev"])] if not hops else [(h["via"], h["dev"]) for h in hops]
    if ":" not in r["to"]:          # an IPv4 route: its text is the kernel's already
        return (r["to"], tuple(pairs), r["src"])
    src = r.get("src")              # none: the kernel sends from the one address of dev
    return (canonical(r["to"]), tuple((canonical(via), dev) for via, dev in pairs),
            None if src is None else canonical(src))


def live_key(r: dict[str, Any]) -> RouteKey:
    return (live_dst(r), live_hops(r), r.get("prefsrc"))


def same_key(key: RouteKey) -> RouteKey:
    """The key two routes are compared by: the next hops as a set."""
    to, hops, src = key
    if len(hops) == 1:
        return key
    return (to, tuple(sorted(hops, key=repr)), src)


def in_order(keys: Iterable[RouteKey]) -> list[RouteKey]:
    """Route keys in one stable order: by their text (``repr``). Where no two
    share a destination this is the order of the destinations (a quote sorts
    before every character of an address), found without writing each key out."""
    keys = list(keys)
    if distinct_destinations(keys):
        return sorted(keys, key=_destination)
    return sorted(keys, key=repr)


def distinct_destinations(keys: list[RouteKey]) -> bool:
    """Whether no two of keys go to the same destination (a compiled plan's routes)."""
    return len({k[0] for k in keys}) == len(keys)


def _destination(key: RouteKey) -> str:
    return key[0]


def _hop_words(hop: tuple[str | None, str | None]) -> list[str]:
    via, dev = hop
    return (["via", via] if via else []) + (["dev", dev] if dev else [])


def route_text(key: RouteKey) -> str:
    """One line per route: ``TO via V dev D src S``, or for a multipath route
    ``TO src S nexthop via A dev X nexthop via B dev Y``."""
    to, hops, src = key
    source = "" if src is None else " src %s" % src        # a live route may have none
    if len(hops) == 1:
        return "%s via %s dev %s%s" % (to, hops[0][0], hops[0][1], source)
    return "%s%s %s" % (to, source, " ".join("nexthop " + " ".join(_hop_words(h)) for h in hops))


def replace_command(key: RouteKey) -> list[str]:
    """``ip route replace`` (``ip -6 route replace`` for IPv6) installing the route with
    protocol 250 (equal weights)."""
    to, hops, src = key
    ip = ip_route(to)
    source = [] if src is None else ["src", str(src)]
    if len(hops) == 1:
        via, dev = hops[0]
        if via and dev:
            return ip + ["replace", to, "via", via, "dev", dev] + source + ["proto", _PROTO]
        return ip + ["replace", to] + _hop_words(hops[0]) + source + ["proto", _PROTO]
    cmd = ip + ["replace", to] + source + ["proto", _PROTO]
    for hop in hops:
        cmd += ["nexthop"] + _hop_words(hop)
    return cmd


def delete_command(key: RouteKey) -> list[str]:
    """``ip route del`` (``ip -6 route del``) of one of beonet's routes."""
    to, hops, _src = key
    if len(hops) == 1:
        return ip_route(to) + ["del", to] + _hop_words(hops[0]) + ["proto", str(PROTO)]
    cmd = ip_route(to) + ["del", to, "proto", str(PROTO)]
    for hop in hops:
        cmd += ["nexthop"] + _hop_words(hop)
    return cmd


def shell_line(key: RouteKey) -> str:
    """The route as the text after ``ip route replace`` in a shell script (ifupdown,
    dispatcher): ``ip`` tells the family from the destination."""
    cmd = replace_command(key)
    return " ".join(cmd[cmd.index("replace") + 1:])


def aggregate(spans: list[tuple[int, int]], bits: int = 32) -> list[tuple[int, int]]:
    """(network, prefix length) of the fewest CIDR blocks whose union is that of
    the half-open address ranges [start, end), in address order (addresses of
    bits bits: 32 IPv4, 128 IPv6)."""
    out: list[tuple[int, int]] = []
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in merged:
        while start < end:      # the largest block aligned at start that ends by end
            size = min((start & -start).bit_length() - 1 if start else bits, (end - start).bit_length() - 1)
            out.append((start, bits - size))
            start += 1 << size
    return out
