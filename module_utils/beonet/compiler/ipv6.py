"""IPv6: the pools, the addresses, the routes and their proof.

The routes are computed once, by each family's rule, over the IPv4 addresses
(on an IPv6-only cluster over internal IPv4 labels that no output shows); each
segment's IPv6 prefix, each interface's IPv6 address and each node's IPv6
loopback correspond one to one to its IPv4 one, so a node's IPv6 routes are its
IPv4 routes with every address and prefix replaced by its IPv6 counterpart
(``relabel``). ``check`` proves that the replacement keeps every longest-prefix
match: in both families the segments' prefixes are disjoint, every interface
address lies in its own segment's prefix and in no other, every loopback lies
in none, and no two addresses are equal. A destination then matches the same
entries of every table in both families (its segment's prefix, and a host route
to itself), so the IPv4 proof of every pair, branch and shortest path holds for
IPv6 hop for hop.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from ipaddress import IPv6Network
from typing import TYPE_CHECKING, Any

from .errors import Problems
from .model import UNASSIGNED, Graph, Route, net6_text

if TYPE_CHECKING:
    from .load import Source

LAN_PLEN, P2P_PLEN, HOST_PLEN = 64, 127, 128
# An IPv6-only cluster's routes are computed over these IPv4 labels, never shown.
LABEL_POOLS: dict[str, Any] = {"lan": "0.0.0.0/1", "p2p": "128.0.0.0/2", "p2p_prefix": 31,
                               "loopback": "192.0.0.0/2"}


def unique_local(name: str) -> IPv6Network:
    """The topology's unique local /48 (RFC 4193): fd00::/8 and a 40-bit global ID, the
    first 40 bits of the SHA-256 of the topology's name (stable from run to run)."""
    gid = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:5], "big")
    return IPv6Network(((0xFD << 120) | (gid << 80), 48))


def default_pools(name: str) -> dict[str, IPv6Network]:
    """The pools carved from the /48: LANs in its first half (32,768 /64s), links in
    the next quarter, loopbacks in its last /64."""
    base = int(unique_local(name).network_address)
    return {"lan": IPv6Network((base, 49)), "p2p": IPv6Network((base | (0x8000 << 64), 50)),
            "loopback": IPv6Network((base | (0xFFFF << 64), 64))}


def pools(graph: Graph, source: Source) -> dict[str, IPv6Network]:
    given = (source.data.get("addressing") or {}).get("ipv6")
    out = default_pools(graph.name)
    if isinstance(given, dict):
        out.update((k, IPv6Network(v)) for k, v in given.items())
    return out


def assign(graph: Graph, source: Source, problems: Problems) -> None:
    """Give every IP segment its IPv6 prefix (a LAN its /64 at its pool slot, a link
    its /127), every member its IPv6 address (its IPv4 host number) and, under
    routing.engine frr, every node its IPv6 loopback (its index + 1)."""
    if not graph.v6:
        return
    pool = pools(graph, source)
    if not (_fits(pool, graph, problems) and _no_overlap(pool, graph, problems)):
        return
    lans = [s for s in graph.segments if s.routed and s.kind == "lan"]
    dims = max((s.pool_dim for s in lans), default=0) + 1
    block = (1 << (LAN_PLEN - pool["lan"].prefixlen)) // dims
    lan0, p2p0 = int(pool["lan"].network_address), int(pool["p2p"].network_address)
    for seg in graph.segments:
        if not seg.routed:
            continue
        if seg.kind == "lan":
            seg.net6, seg.plen6 = lan0 + ((seg.pool_dim * block + seg.pool_slot) << 64), LAN_PLEN
        else:
            seg.net6, seg.plen6 = p2p0 + 2 * seg.pool_slot, P2P_PLEN
        for _node, iface, host in seg.members:
            iface.addresses6 = [seg.net6 + host]
    if graph.engine == "frr":
        first = int(pool["loopback"].network_address)
        for node in graph.nodes:
            node.loopback6 = first + node.index + 1


def _fits(pool: dict[str, IPv6Network], graph: Graph, problems: Problems) -> bool:
    """Each pool holds what the topology needs (a LAN pool of /64s, a link pool of /127s)."""
    lans = [s for s in graph.segments if s.routed and s.kind == "lan"]
    links = [s for s in graph.segments if s.routed and s.kind == "p2p"]
    dims = max((s.pool_dim for s in lans), default=0) + 1
    need = {"lan": (LAN_PLEN, dims * (max((s.pool_slot for s in lans), default=-1) + 1) if lans else 0,
                    "/64 LANs"),
            "p2p": (P2P_PLEN, max((s.pool_slot for s in links), default=-1) + 1, "/127 links"),
            "loopback": (HOST_PLEN, len(graph.nodes) + 1 if graph.engine == "frr" else 0, "loopbacks")}
    for key, (plen, count, what) in need.items():
        net = pool[key]
        if count and (net.prefixlen > plen or count > 1 << (plen - net.prefixlen)):
            held = 0 if net.prefixlen > plen else 1 << (plen - net.prefixlen)
            wider = IPv6Network((int(net.network_address), max(plen - (count - 1).bit_length(), 0)),
                                strict=False)
            problems.add("addressing.ipv6." + key, "pool %s holds %s %s; the topology needs %s: "
                         "use %s or larger" % (net, f"{held:,}", what, f"{count:,}", wider))
    return not problems


def _no_overlap(pool: dict[str, IPv6Network], graph: Graph, problems: Problems) -> bool:
    used = [k for k in ("lan", "p2p", "loopback") if k != "loopback" or graph.engine == "frr"]
    for i, a in enumerate(used):
        for b in used[i + 1:]:
            if pool[a].overlaps(pool[b]):
                problems.add("addressing.ipv6." + b, "pool %s overlaps the %s pool %s"
                             % (pool[b], a, pool[a]))
    return not problems


def relabel(graph: Graph) -> None:
    """Every node's IPv6 routes: its IPv4 routes with each prefix, gateway and
    source replaced by its IPv6 counterpart (equal tuples stay shared).

    A static route whose every next hop leaves through the one NIC holding its
    source, as that NIC's only IPv6 address, states no source: the kernel picks
    that address anyway (RFC 6724 rule 5, prefer the outgoing interface, after the
    rule that a global destination takes a global source, which rules out the
    NIC's link-local address). FRR's routes keep theirs (its route-maps set it)."""
    if not graph.v6:
        return
    addr = counterparts(graph)
    # Each IPv4 destination (a segment's prefix, a host's /32) to its IPv6 one.
    prefix = {(seg.net, seg.plen): (seg.net6, seg.plen6) for seg in graph.segments if seg.routed}
    prefix.update(((a4, 32), (a6, HOST_PLEN)) for a4, a6 in addr.items())
    shared: dict[tuple[int, ...], tuple[int, ...]] = {(): ()}
    for node in graph.nodes:
        sole = {} if graph.engine == "frr" else \
            {i.name: i.addresses6[0] for i in node.interfaces if len(i.addresses6) == 1}
        node.routes6 = _relabelled(node.routes, addr, prefix, shared, sole)


def counterparts(graph: Graph) -> dict[int, int]:
    """Each IPv4 address of an IPv6 graph (an internal label on an IPv6-only one): a
    member's address on its segment, a node's loopback, to its IPv6 counterpart."""
    addr = {iface.addresses[0]: iface.addresses6[0]
            for seg in graph.segments if seg.routed for _node, iface, _host in seg.members}
    addr.update((node.loopback, node.loopback6) for node in graph.nodes
                if node.loopback is not None and node.loopback6 is not None)
    return addr


def _relabelled(routes: list[Route], addr: dict[int, int], prefix: dict[tuple[int, int], tuple[int, int]],
                shared: dict[tuple[int, ...], tuple[int, ...]], sole: dict[str, int]) -> list[Route]:
    """routes in IPv6; shared: the gateway tuples of multipath routes already relabelled;
    sole: each NIC of the node holding one IPv6 address, to it (see ``relabel``)."""
    out = []
    for r in routes:
        net, plen = prefix[r.net, r.plen]
        alt = shared.get(r.alt_via)
        if alt is None:
            alt = shared[r.alt_via] = tuple(addr[a] for a in r.alt_via)
        src: int | None = addr[r.src] if r.src is not None else None
        if src is not None and sole.get(r.dev) == src and all(d == r.dev for d in r.alt_dev):
            src = None
        out.append(Route(net, plen, addr[r.via], r.dev, src, alt, r.alt_dev))
    return out


def check(graph: Graph, problems: Problems) -> None:
    """The conditions under which the IPv4 proof holds for IPv6 (see the module's text)."""
    if not graph.v6:
        return
    segs = sorted((s for s in graph.segments if s.routed), key=lambda s: s.net6)
    for a, b in zip(segs, segs[1:]):
        if b.net6 <= a.net6 + (1 << (HOST_PLEN - a.plen6)) - 1:
            problems.add("addressing.ipv6", "%s of segment '%s' overlaps %s of '%s'"
                         % (b.prefix6_text(), b.name, a.prefix6_text(), a.name))
    seen: set[int] = set()
    for seg in segs:
        size = 1 << (HOST_PLEN - seg.plen6)
        for node, iface, _host in seg.members:
            a6 = iface.addresses6[0] if iface.addresses6 else UNASSIGNED
            if not seg.net6 <= a6 < seg.net6 + size or a6 in seen:
                problems.add("addressing.ipv6", "%s of node '%s' is not an address of its own in %s"
                             % (iface.name, node.name, seg.prefix6_text()))
            seen.add(a6)
    starts = [s.net6 for s in segs]
    for node in graph.nodes:
        if node.loopback6 is None:
            continue
        a6 = node.loopback6
        k = bisect_right(starts, a6) - 1
        if a6 in seen or (k >= 0 and a6 < segs[k].net6 + (1 << (HOST_PLEN - segs[k].plen6))):
            problems.add("addressing.ipv6.loopback", "%s of node '%s' is not apart from every "
                         "segment and address" % (net6_text(a6, HOST_PLEN), node.name))
        seen.add(a6)
