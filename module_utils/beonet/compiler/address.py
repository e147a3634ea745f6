"""Stage 3: address assignment.

Each IP segment takes a subnet from its pool at its stable slot (or the
prefix the topology gives it); each member takes the host number the family
chose. Pools are read with the standard ipaddress module; everything after this
stage uses ints.
"""

from __future__ import annotations

from ipaddress import IPv4Network

from . import family
from .errors import Problems
from .load import Source
from .model import Graph, Interface, Node, Segment, net_text, parse_net

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_POOLS: dict[str, Any] = {"lan": "10.0.0.0/16", "p2p": "10.255.0.0/16", "p2p_prefix": 31,
                                 "loopback": "10.254.0.0/16"}


def _needed_prefix(seg_hosts: int) -> int:
    """Longest prefix whose subnet holds host numbers up to seg_hosts."""
    plen = 30
    while plen > 8 and (1 << (32 - plen)) - 2 < seg_hosts:
        plen -= 1
    return plen


def _pools(graph: Graph, source: Source) -> dict[str, Any]:
    """The IPv4 pools: the topology's, or on an IPv6-only cluster those of its internal labels."""
    if graph.v4:
        return dict(DEFAULT_POOLS, **source.data.get("addressing", {}))
    from .ipv6 import LABEL_POOLS
    return dict(LABEL_POOLS)


def assign(graph: Graph, source: Source) -> Problems:
    """Give every IP segment its prefix, every member its address and every bond its MAC."""
    problems: Problems = source.problems()
    problems.stage = "address"
    cfg = _pools(graph, source)
    lan_pool = IPv4Network(cfg["lan"], strict=False)
    p2p_pool = IPv4Network(cfg["p2p"], strict=False)
    if lan_pool.overlaps(p2p_pool):
        problems.add("addressing.p2p", "pool %s overlaps the LAN pool %s" % (p2p_pool, lan_pool))
        return problems
    if not (_carve_lans(graph, cfg, lan_pool, problems)
            and _carve_p2ps(graph, cfg["p2p_prefix"], p2p_pool, problems)):
        return problems
    for seg in graph.segments:
        if seg.prefix_fixed is not None:
            seg.net, seg.plen = parse_net(seg.prefix_fixed)
    _place_hosts(graph, source, problems)
    _give_loopbacks(graph, source, IPv4Network(cfg["loopback"], strict=False), problems)
    if not problems:
        _check_overlap(graph, source, problems)
    if not problems:
        _give_bond_macs(graph)
        if graph.v6:                # imported where IPv6 is on: it needs hashlib (its prefix)
            from . import ipv6
            ipv6.assign(graph, source, problems)
    return problems


def _carve_lans(graph: Graph, cfg: dict[str, Any], pool: IPv4Network, problems: Problems) -> bool:
    """Prefix of every pooled LAN at its slot (a mesh: in its dimension's block
    of the pool). Slots are spaced by one prefix length for all; a custom LAN's
    own prefix is the smallest that holds its own host numbers. False, with the
    problem added, when the pool is too small."""
    lans = [s for s in graph.segments if s.kind == "lan" and s.prefix_fixed is None]
    if not lans:
        return True
    top = max((m[2] for s in lans for m in s.members), default=1)
    wanted: int = cfg.get("lan_prefix", min(24, _needed_prefix(top)))
    if wanted < pool.prefixlen:
        problems.add("addressing.lan", "pool %s is smaller than one /%d segment: use %s or larger"
                     % (pool, wanted, _fitting(pool, wanted)))
        return False
    if (1 << (32 - wanted)) - 2 < top:
        problems.add("addressing.lan_prefix", "a /%d holds %d hosts; a segment here "
                     "needs host number %d" % (wanted, (1 << (32 - wanted)) - 2, top))
        return False
    fam = family.of(graph.family)
    dims = fam.pool_dims(graph) if fam.pool_dims is not None else 0
    block = (1 << (wanted - pool.prefixlen)) // max(dims, 1)
    own = fam.lans_sized_by_members and "lan_prefix" not in cfg
    for seg in lans:
        seg.net = int(pool.network_address) + ((seg.pool_dim * block + seg.pool_slot) << (32 - wanted))
        seg.plen = _needed_prefix(max(m[2] for m in seg.members)) if own else wanted
    worst = max(s.pool_slot for s in lans) + 1
    if worst > block:
        what = "segments per dimension" if dims else "segments"
        need = worst * max(dims, 1) << (32 - wanted)
        problems.add("addressing.lan", "pool %s holds %s addresses, %d /%d %s; the topology "
                     "needs %s addresses: use %s or larger"
                     % (pool, _count(pool.num_addresses), block, wanted, what, _count(need),
                        _fitting(pool, 32 - (need - 1).bit_length())))
        return False
    return True


def _count(n: int) -> str:
    return f"{n:,}"


def _fitting(pool: IPv4Network, plen: int) -> IPv4Network:
    """The pool grown to prefix length plen (at least /0), from its own network address."""
    return IPv4Network((int(pool.network_address), max(plen, 0)), strict=False)


def _carve_p2ps(graph: Graph, plen: int, pool: IPv4Network, problems: Problems) -> bool:
    """Prefix of every pooled point-to-point link at its slot; False when the pool is too small."""
    p2ps = [s for s in graph.segments if s.kind == "p2p" and s.prefix_fixed is None]
    if not p2ps:
        return True
    size = 1 << (32 - plen)
    need = max(s.pool_slot for s in p2ps) + 1
    if need * size > pool.num_addresses:
        problems.add("addressing.p2p", "pool %s holds %s /%d links; the topology needs %s: "
                     "use %s or larger" % (pool, _count(pool.num_addresses // size), plen,
                                           _count(need), _fitting(pool, 32 - (need * size - 1).bit_length())))
        return False
    for seg in p2ps:
        seg.net = int(pool.network_address) + seg.pool_slot * size
        seg.plen = plen
    return True


def _place_hosts(graph: Graph, source: Source, problems: Problems) -> None:
    for seg in graph.segments:
        if not seg.routed:
            continue
        size = 1 << (32 - seg.plen)
        first = 0 if seg.plen == 31 else 1
        for node, iface, host in seg.members:
            number = host + first if seg.kind == "p2p" else host
            if number < first or number >= size - (0 if seg.plen == 31 else 1):
                problems.add(_seg_path(graph, source, seg),
                             "%s has no room for host number %d of node '%s'"
                             % (net_text(seg.net, seg.plen), host, node.name))
                continue
            iface.addresses = [seg.net + number]


def _give_loopbacks(graph: Graph, source: Source, pool: IPv4Network, problems: Problems) -> None:
    """routing.engine frr: node i's loopback is the pool's host number i + 1. The pool must
    hold every node and overlap no segment."""
    if graph.engine != "frr":     # a pool given under another engine is refused by load
        return
    need = len(graph.nodes)
    if pool.num_addresses - 2 < need:
        wider = _fitting(pool, 32 - (need + 1).bit_length())
        problems.add("addressing.loopback", "pool %s holds %s loopback addresses; the topology "
                     "needs %s: use %s or larger" % (pool, _count(max(pool.num_addresses - 2, 0)),
                                                     _count(need), wider))
        return
    first, last = int(pool.network_address), int(pool.broadcast_address)
    for seg in graph.segments:
        if seg.routed and seg.net <= last and first <= seg.net + (1 << (32 - seg.plen)) - 1:
            problems.add("addressing.loopback", "pool %s overlaps %s of segment '%s'"
                         % (pool, net_text(seg.net, seg.plen), seg.name))
            return
    for node in graph.nodes:
        node.loopback = first + node.index + 1


def _seg_path(graph: Graph, source: Source, seg: Segment) -> str:
    path = family.of(graph.family).prefix_path
    if path is not None:
        return path(source, seg)
    return "addressing.lan" if seg.kind == "lan" else "addressing.p2p"


def _check_overlap(graph: Graph, source: Source, problems: Problems) -> None:
    nets = sorted(((s.net, s.net + (1 << (32 - s.plen)) - 1, s) for s in graph.segments
                   if s.routed), key=lambda t: (t[0], t[1]))
    for (_a0, a1, sa), (b0, _b1, sb) in zip(nets, nets[1:]):
        if b0 <= a1:
            problems.add(_seg_path(graph, source, sb), "%s of segment '%s' overlaps %s of '%s'"
                         % (net_text(sb.net, sb.plen), sb.name, net_text(sa.net, sa.plen), sa.name))


def bond_mac(node: Node, iface: Interface) -> str:
    """A bond's MAC address: locally administered, unique in the cluster and the
    same on every run and after every reboot (02:be + the bond's IPv4 address,
    or a hash of node and bond names when it has none). Without it a bond
    created live and the one networkd creates at boot differ, and peers keep a
    stale neighbour entry for a while after a reboot."""
    if iface.addresses:
        raw = iface.addresses[0].to_bytes(4, "big")
    else:
        import hashlib
        raw = hashlib.sha256(("%s/%s" % (node.name, iface.name)).encode()).digest()[:4]
    return "02:be:" + ":".join("%02x" % b for b in raw)


def _give_bond_macs(graph: Graph) -> None:
    for node in graph.nodes:
        for iface in node.interfaces:
            if iface.kind == "bond":
                iface.mac = bond_mac(node, iface)
