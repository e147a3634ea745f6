"""The metrics' shape, key for key: TypedDicts for the type checker and the tests.

A compile never builds them: ``metrics``, ``failures`` and ``latency`` import this
module for type checking only and give its names when asked (``metrics.Metrics``),
so that the time of creating some twenty TypedDict classes is not spent on every
start (records.shape_types)."""

from __future__ import annotations

from typing import TypedDict


class PathClass(TypedDict):
    pairs: int
    one_way_us: float               # the smallest over the class's pairs
    one_way_max_us: float           # the largest (per-link delays can differ)
    switches: int
    routers: int


class LatencyMetrics(TypedDict, total=False):
    model: str | None
    switch_us: float
    wire_us: float
    forward_us: float
    classes: dict[str, PathClass]   # absent above LATENCY_UP_TO nodes


class Worst(TypedDict):
    name: str
    pairs: int


class KindFigures(TypedDict):
    """One kind of element: how many, the worst, and elements by pairs cut."""

    elements: int
    cutting: int                        # elements that cut at least one pair
    worst: Worst | None                 # None: no element of the kind
    histogram: dict[str, int]           # pairs cut -> elements


class Static(TypedDict, total=False):
    computed: bool                      # cables and LANs walked
    reason: str                         # not computed: why
    node: KindFigures                   # resilience's single_path (when it was computed)
    cable: KindFigures
    lan: KindFigures
    failover: dict[str, KindFigures]    # failover routes: every branch of one direction crosses it
    disrupted: dict[str, KindFigures]   # failover routes: some branch crosses it


class Failures(TypedDict):
    routed: dict[str, KindFigures]      # "node", "cable", "lan"
    static: Static


class _FamilyBisection(TypedDict, total=False):
    paper_closed_form: float            # meta-graph: (C/4)(L/(L-1)), whole groups on each side
    structure_aligned_mbit: int         # above EXHAUSTIVE_UP_TO: the least structure-aligned cut
    search: CutSearch                   # above EXHAUSTIVE_UP_TO: the local search's cut
    uplink_per_node_mbit: float         # tree
    oversubscription: float             # tree: the worst level's


class LevelLoad(TypedDict):
    """Oversubscription of the uplinks from one level of a tree to the level above."""

    level: int
    switches: int
    nodes_below: int
    offered_mbit: int
    uplink_mbit: int
    ratio: float


class CutSearch(TypedDict):
    """What the local search for the worst bisection found and spent."""

    crossing_mbit: int
    method: str
    starts: int
    passes: int
    evaluations: int                    # gain evaluations (BISECTION_EVALUATIONS at most, about)
    budget_spent: bool                  # stopped by the budget, not by a pass that gained nothing


class _Cut(TypedDict, total=False):
    crossing_mbit: int
    method: str
    structure_aligned_mbit: int
    search: CutSearch


class Bisection(_FamilyBisection):
    crossing_mbit: int
    per_node_mbit: float
    link_mbit: int
    fraction_of_link: float
    method: str


class RoutesPerNode(TypedDict):
    max: int
    mean: float
    total: int


class GatewayLoad(TypedDict):
    max: int
    mean: float


class MetagraphMetrics(TypedDict):
    links_per_group_pair: float
    uneven_pairs: list[str]
    unused_ports: list[str]
    weights: dict[str, int]


class _FamilyMetrics(TypedDict, total=False):
    metagraph: MetagraphMetrics
    oversubscription: list[LevelLoad]   # tree: per level, from the root down
    notes: list[str]                    # what the compiler chose not to do, and why
    latency: LatencyMetrics     # the topology has `latency`: pairs by path class


class _Metrics(_FamilyMetrics, total=False):
    failures: Failures        # filled in after resilience, whose single_path it takes


class Metrics(_Metrics):
    nodes: int
    segments: int
    links: int
    channels: int
    pairs: int
    diameter: int
    hops: dict[str, int]                        # hop count -> ordered pairs
    routes_per_node: RoutesPerNode
    forwarding_nodes: int
    gateway_load: GatewayLoad
    bisection: Bisection
    resilience: Resilience


class Resilience(TypedDict, total=False):
    """How many unordered pairs of other nodes each node's death cuts (s -> t or t -> s)."""

    computed: bool
    reason: str                         # not computed: why
    single_path: dict[str, int]         # node -> pairs cut over the preferred branch alone
    failover: dict[str, int]            # node -> pairs cut whichever branch a flow takes
    failover_at_risk: dict[str, int]    # node -> pairs cut on some branch (the flow hash decides)
    max: dict[str, int]                 # {"single_path": .., "failover": .., "failover_at_risk": ..}
    mean: dict[str, float]
    ipv6: str                           # with IPv6 and failover routes: what the counts mean for it
