"""One node's plan as the node agent reads it, and the plan format it understands.

The agent travels to the nodes without the compiler, so it describes the part
of the plan it consumes here: ``nodes[NAME]`` of the plan, with physical NIC
names (docs/plan.md). Standard library only.
"""

from __future__ import annotations

from typing import TypedDict

PLAN_FORMAT = 2          # the plan's beonet.plan_format this agent understands


class NextHop(TypedDict):
    via: str
    dev: str


class _RouteKeys(TypedDict):
    to: str
    via: str                     # with nexthops: nexthops[0]
    dev: str
    src: str


class Route(_RouteKeys, total=False):
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
    addresses: list[str]         # "ADDR/LEN"


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
    address: str
    forwarding: bool
    interfaces: list[Interface]
    routes: list[Route]


class NodePlan(_NodePlanKeys, total=False):
    index: int
    group: int
    coords: list[int]
    switch: str
    ipv6: bool                   # present (false) only when the topology turns IPv6 off
    failover: Failover           # present only when the topology's failover is on


def plan_format_problem(node: str, plan_format: int) -> str | None:
    """Why this agent refuses a plan of this format (None: it understands it)."""
    if plan_format == PLAN_FORMAT:
        return None
    if plan_format > PLAN_FORMAT:
        return ("%s: plan_format %d is newer than this beonet_node understands (%d); "
                "update the collection" % (node, plan_format, PLAN_FORMAT))
    return ("%s: plan_format %d is older than this beonet_node understands (%d); "
            "compile the plan again with this collection" % (node, plan_format, PLAN_FORMAT))
