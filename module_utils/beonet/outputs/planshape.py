"""The plan's shape, key for key: TypedDicts for the type checker and the tests.

A compile never builds them: ``outputs.plan`` imports this module for type checking
only and gives its names when asked (``plan.Plan``), so that the time of creating
some twenty TypedDict classes is not spent on every start. A node's part is the one
the node agent reads (``agent/nodeplan.py``)."""

from __future__ import annotations

from typing import TypedDict

from ..agent.nodeplan import Interface as InterfacePlan
from ..agent.nodeplan import NodePlan
from ..agent.nodeplan import Peer as PeerPlan
from ..agent.nodeplan import Route as RoutePlan
from ..compiler.metricshape import Metrics

__all__ = ["InterfacePlan", "Metrics", "NodePlan", "PeerPlan", "RoutePlan"]


class NextHopPlan(TypedDict):
    via: str
    dev: str


class NeighbourPlan(TypedDict):
    base_reachable_time_ms: int
    delay_first_probe_time: int
    ucast_solicit: int
    retrans_time_ms: int


class FailoverPlan(TypedDict):
    """A node's failover settings (present when the topology's failover is on)."""

    hash_policy: int                    # net.ipv4.fib_multipath_hash_policy: 0, L3
    neigh: NeighbourPlan


class _Logical(TypedDict, total=False):
    logical: str


class _Address(TypedDict, total=False):
    address: str                        # IP segments (IPv4)
    address6: str                       # addressing.ipv6


class MemberPlan(_Address):
    node: str
    interface: str


class _Prefix(TypedDict, total=False):
    prefix: str | None                  # IP segments (IPv4)
    prefix6: str                        # addressing.ipv6


class _SegmentExtras(_Prefix, total=False):
    carries: str                        # channel: the IP segment its bonds carry
    groups: list[int]                   # meta-graph link: the two groups
    medium: str                         # "shared" (a hub or coax); absent: switched
    delay_us: float                     # one-way delay per crossing (a tree's: per switch); absent: 0


class SegmentPlan(_SegmentExtras):
    kind: str                           # "lan", "p2p" or "channel"
    rate_mbit: int
    mtu: int
    members: list[MemberPlan]


class SwitchPlan(TypedDict):
    level: int
    parent: str | None
    uplink_mbit: int | None
    children: list[str]
    nodes: list[str]


class FormatPlan(TypedDict):
    plan_format: int


class TopologyPlan(TypedDict):
    name: str
    family: str
    source: str | None


class ManagementPlan(TypedDict):
    interface: str


class _Healed(TypedDict, total=False):
    down: list[str]                     # compiled with nodes down: their names
    partition: list[list[str]]          # live pairs that cannot reach each other
    components: list[list[str]]         # with a partition: the live nodes by component


class LatencyPlan(TypedDict):
    forward_us: dict[str, float]        # forwarding node -> one-way delay it adds (absent: 0)


class _Switches(_Healed, total=False):
    switches: dict[str, SwitchPlan]     # tree
    latency: LatencyPlan                # the topology has `latency`: what the labs emulate


class Plan(_Switches):
    beonet: FormatPlan
    topology: TopologyPlan
    management: ManagementPlan
    nodes: dict[str, NodePlan]
    segments: dict[str, SegmentPlan]
    metrics: Metrics
