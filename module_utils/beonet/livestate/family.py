"""The address family a walk is in: IPv4 (32-bit addresses) or IPv6 (128-bit).

Each family is walked on its own, from its own tables and addresses: a node's
IPv4 routes carry IPv4 packets only, its IPv6 routes IPv6 ones. ``Family`` holds
what differs between the two (the width of an address, its text, the networks
no node owns, the routes the kernel adds that are no one's plan), ``table``
makes a route table of the family (the compiler's RouteTable, whose masks are
32-bit, or ``Table6``), and ``classes``, ``host_holders`` and ``paths`` are the
compiler's ``destination_classes``, ``host_route_holders`` and
``expected_paths`` for tables of either width.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..compiler.model import ON_LINK, Hop, RouteTable, ip6_int, ip6_text, ip_int, ip_text
from ..compiler.prove import PATHS_CAP

Signature = tuple[tuple[int, int], ...]


_QUAD = re.compile(r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}")


@lru_cache(maxsize=1 << 16)
def quad(text: str) -> int | None:
    """A dotted quad as an integer (None: not one). Cached: nodes repeat addresses."""
    return ip_int(text) if len(text) <= 15 and _QUAD.fullmatch(text) else None


@lru_cache(maxsize=1 << 16)
def six(text: str) -> int | None:
    """An IPv6 address as an integer (None: not one; a zone id such as fe80::1%eth0, an
    IPv4 address or anything else is none)."""
    if not 2 <= len(text) <= 45 or "%" in text or ":" not in text:
        return None
    try:
        return ip6_int(text)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True, eq=False)
class Family:
    """What a walk needs to know of its address family (see the module docstring); one
    object a family (compared and hashed as itself: a key of the parsers' caches)."""

    name: str                                   # "IPv4" or "IPv6"
    bits: int
    parse: Callable[[str], int | None]        # address text -> integer (None: not one)
    text: Callable[[int], str]                  # integer -> address text
    local: tuple[tuple[int, int], ...]          # (network, length): addresses no node owns
    kernel: tuple[tuple[int, int], ...]         # (network, length): routes the kernel adds, not walked
    masks: tuple[int, ...] = field(init=False)  # prefix length -> its netmask

    def __post_init__(self) -> None:
        full = (1 << self.bits) - 1
        object.__setattr__(self, "masks", tuple(full ^ (full >> plen) for plen in range(self.bits + 1)))

    def mask(self, plen: int) -> int:
        return self.masks[plen]

    def within(self, addr: int, nets: tuple[tuple[int, int], ...]) -> bool:
        return any(addr & self.mask(plen) == net for net, plen in nets)

    def table(self) -> RouteTable:
        return RouteTable() if self.bits == 32 else Table6()

    def net_text(self, net: int, plen: int) -> str:
        return "%s/%d" % (self.text(net), plen)


V4 = Family("IPv4", 32, quad, ip_text, ((127 << 24, 8),), ())
V6 = Family("IPv6", 128, six, ip6_text,
            ((1, 128), (0xFE80 << 112, 10)),                     # ::1, link-local
            ((0xFE80 << 112, 10), (0xFF << 120, 8)))             # link-local, multicast


def family_of(text: str) -> Family:
    """The family of an address or prefix text (':' in it: IPv6)."""
    return V6 if ":" in text else V4


class Table6(RouteTable):
    """The compiler's route table with 128-bit masks."""

    __slots__ = ()

    def add(self, net: int, plen: int, entry: Hop) -> None:
        bucket = self.by_len.get(plen)
        if bucket is None:
            bucket = self.by_len[plen] = {}
            self.order = [(p, V6.mask(p), self.by_len[p]) for p in sorted(self.by_len, reverse=True)]
        bucket.setdefault(net, entry)

    def lookup(self, addr: int, below: int = 129) -> Hop | None:
        return super().lookup(addr, below)


def classes(fam: Family, addresses: list[int], tables: list[RouteTable]) -> list[tuple[Signature, list[int]]]:
    """prove.destination_classes for tables of the family: destinations grouped by the
    prefixes shorter than a host route that hold their address in some table."""
    host = fam.bits
    prefixes: defaultdict[int, set[int]] = defaultdict(set)
    for t in tables:
        for plen, bucket in t.by_len.items():
            if plen < host:
                prefixes[plen].update(bucket)
    lens = [(plen, fam.mask(plen)) for plen in sorted(prefixes, reverse=True)]
    out: defaultdict[Signature, list[int]] = defaultdict(list)
    for index, a in enumerate(addresses):
        sig = tuple((plen, a & m) for plen, m in lens if (a & m) in prefixes[plen])
        out[sig or ((host, a),)].append(index)
    return sorted(out.items())


def host_holders(fam: Family, tables: list[RouteTable]) -> dict[int, list[int]]:
    """Address -> the nodes holding a host route (/32, /128) for it."""
    hosts: defaultdict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(tables):
        for a in t.by_len.get(fam.bits, ()):
            hosts[a].append(i)
    return hosts


def paths(fam: Family, names: list[str], address: list[int], tables: list[RouteTable], src: int,
          dst: int) -> list[list[dict[str, Any]]] | None:
    """prove.expected_paths for tables of the family: the hops of `traceroute -n` from
    node src to dst's address over each branch (the preferred one first, at most
    PATHS_CAP), each hop's address the source of its route back to the sender; None
    when a walk finds no route, a loop or a next hop that carries nothing."""
    target = address[dst]
    first = tables[src].lookup(target)
    if first is None:
        return None
    sender = first[1]
    out: list[list[dict[str, Any]]] = []
    todo: list[tuple[int, list[dict[str, Any]]]] = [(src, [])]
    arrive = {"node": names[dst], "address": fam.text(target)}
    while todo and len(out) < PATHS_CAP:
        cur, hops = todo.pop()
        entry = tables[cur].lookup(target) if cur != dst else None
        if cur == dst or (entry is not None and entry[0] == ON_LINK):
            if hops + [arrive] not in out:
                out.append(hops + [arrive])
            continue
        if entry is None or len(hops) > len(names):
            return None
        for nxt in reversed((entry[0], *entry[2])):
            if nxt < 0:
                return None
            if nxt == dst:
                todo.append((dst, hops))
                continue
            back = tables[nxt].lookup(sender)
            todo.append((nxt, hops + [{"node": names[nxt], "address": fam.text(back[1]) if back else "*"}]))
    return out
