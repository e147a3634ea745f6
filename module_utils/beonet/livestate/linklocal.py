"""IPv6 next hops named by a link-local address, as OSPFv3 installs its routes (RFC 5340:
a router's next hop is its neighbour's link-local address).

A link-local address (fe80::/10) is unique only on its link, so it names a node only
together with the link: the holder of ``via fe80::x dev D`` on node N is the other node
that holds fe80::x on a NIC sharing a global network with N's NIC D (the plan gives every
cluster NIC one). The walk follows such a hop to that node; verify compares the route
with the plan through the holder's global address on the link, the next hop the plan
names.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from .family import V6
from .state import NodeState

LINK_LOCAL = ((0xFE80 << 112, 10),)
Holders = dict[int, list[tuple[int, str]]]   # link-local address -> [(node, NIC)]


def is_link_local(addr: int) -> bool:
    return V6.within(addr, LINK_LOCAL)


def holders(states: Sequence[NodeState | None]) -> Holders:
    """Who holds each link-local address: (node, NIC) pairs, from the IPv6 states."""
    out: defaultdict[int, list[tuple[int, str]]] = defaultdict(list)
    for i, st in enumerate(states):
        for nic, addrs in st.addrs.items() if st is not None else ():
            for a, _plen in addrs:
                if is_link_local(a):
                    out[a].append((i, nic))
    return dict(out)


def _networks(st: NodeState, nic: str) -> dict[tuple[int, int], int]:
    """(network, length) -> the NIC's global address in it."""
    return {(a & V6.mask(plen), plen): a for a, plen in st.addrs.get(nic, ())
            if not V6.within(a, V6.local)}


def resolve(states: Sequence[NodeState | None], held: Holders, i: int, dev: str,
            via: int) -> tuple[int, str, int] | str:
    """(node, its NIC, its global address on the link) holding the link-local ``via``
    that node i reaches through its NIC dev; or why there is none (text)."""
    mine = states[i]
    shared = _networks(mine, dev) if mine is not None else {}
    found = []
    for j, nic in held.get(via, ()):
        st = states[j]
        if j == i or st is None:
            continue
        on_link = [a for net, a in sorted(_networks(st, nic).items()) if net in shared]
        if on_link:
            found.append((j, nic, on_link[0]))
    if len(found) == 1:
        return found[0]
    if not found:
        return "no node on the network of its NIC %s holds that link-local address" % dev
    return "%d nodes on the network of its NIC %s hold that link-local address" % (len(found), dev)
