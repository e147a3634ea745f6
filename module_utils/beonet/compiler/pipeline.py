"""The compiler: load + validate -> normalise -> address -> route -> prove -> metrics.

Each stage reports all of its problems; the pipeline stops after the first
stage that has any and raises CompileError with them.

Inside ``progress(report)`` a compile calls report with the name of each stage
as it starts; the command line shows them on a terminal (beonet.cli.progress).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from . import address, heal, latency, load, normalise, prove, route
from . import metrics as metrics_stage
from .errors import CompileError, Problems
from .model import Graph
from .prove import Proof

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    from .metricshape import Metrics
    from .prove import PathHop

    T = TypeVar("T")


class Compiled:
    """A compiled topology: the graph, the proof of its tables and its metrics.
    Compiled with nodes down: the graph of the live nodes, the down nodes'
    names and the live nodes by connected component (more than one: a partition)."""

    __slots__ = ("graph", "source_file", "proof", "metrics", "down", "components", "_part_of")

    graph: Graph
    source_file: str | None
    proof: Proof
    metrics: Metrics
    down: list[str]
    components: list[list[str]]
    _part_of: dict[str, int]        # node name -> its component

    def __init__(self, graph: Graph, source_file: str | None, proof: Proof, metrics: Metrics,
                 down: list[str] | None = None, components: list[list[str]] | None = None,
                 _part_of: dict[str, int] | None = None) -> None:
        self.graph = graph
        self.source_file = source_file
        self.proof = proof
        self.metrics = metrics
        self.down = [] if down is None else down
        self.components = [] if components is None else components
        self._part_of = {} if _part_of is None else _part_of

    def partition(self) -> list[list[str]]:
        """Unordered pairs of live nodes that cannot reach each other, by name."""
        return heal.partition(self.components) if len(self.components) > 1 else []

    def reachable(self, src: str, dst: str) -> bool:
        """Whether node src can reach node dst (both in the graph)."""
        if len(self.components) < 2:
            return True
        if not self._part_of:
            self._part_of.update((name, k) for k, part in enumerate(self.components)
                                 for name in part)
        return self._part_of[src] == self._part_of[dst]

    def path(self, src: str, dst: str) -> list[list[PathHop]] | None:
        """The allowed `traceroute -n` hop lists from node name src to node name
        dst: one per branch of the routes, the preferred one first, at most
        prove.PATHS_CAP of them."""
        g = self.graph
        return prove.expected_paths(g, self.proof.tables, g.by_name[src].index,
                                    g.by_name[dst].index)


def _check(problems: Problems) -> None:
    if problems:
        raise CompileError(problems.items)


def _passed(result: T | None, problems: Problems) -> T:
    """A stage's result; CompileError when the stage reported problems."""
    _check(problems)
    if result is None:
        raise AssertionError("a stage returned no result and reported no problem")
    return result


_listeners: list[Callable[[str], None]] = []     # progress() callbacks, the innermost last


def progress(report: Callable[[str], None]) -> _Progress:
    """Within ``with progress(report):``, report(stage) is called as each stage of a
    compile starts (the caller decides whether and where to show it: the compiler
    prints nothing)."""
    return _Progress(report)


class _Progress:
    """progress's block (a class, not contextlib.contextmanager: importing contextlib
    costs a compile's start-up about half a millisecond)."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self.report = report

    def __enter__(self) -> None:
        _listeners.append(self.report)

    def __exit__(self, *_exc: object) -> None:
        _listeners.remove(self.report)


def _stage(what: str) -> None:
    if _listeners:
        _listeners[-1](what)


def compile_source(source: load.Source, routed: Callable[[Graph], None] | None = None,
                   down: str | Iterable[str] | None = None, resilience: bool = False,
                   bisection_budget: int | None = None) -> Compiled:
    """routed(graph), when given, runs once the routes are in place, before the
    proof: work that needs the routes only (writing each node's files) can
    start there, to be thrown away when the proof fails. down: names of dead
    nodes ('a,b' or a list): the plan of the others (see heal.py). resilience:
    compute the resilience metrics whatever the size (metrics.RESILIENCE_UP_TO).
    bisection_budget: gain evaluations of the bisection's local search (default
    metrics.BISECTION_EVALUATIONS; 0: until no pass gains)."""
    effort = metrics_stage.Effort(resilience, bisection_budget)
    _stage("building the graph")
    graph = _passed(*normalise.normalise(source))
    dead = heal.parse(down)
    if dead:
        heal.check(graph, dead, source.file)
    size = "%d nodes, %d segments" % (len(graph.nodes), len(graph.segments))
    _stage("addressing %s" % size)
    _check(address.assign(graph, source))
    if dead:
        return _compile_live(source, heal.survivors(graph, dead), dead, routed, effort)
    _stage("routing %s" % size)
    route.route(graph)
    if routed is not None:
        routed(graph)
    _stage("proving the routes of %s" % size)
    proof, problems = prove.prove(graph)
    for p in problems.items:
        p.file = source.file
    proof = _passed(proof, problems)
    _check(latency.check_forwarding(graph, source.problems()))
    _stage("metrics")
    compiled = Compiled(graph, source.file, proof, metrics_stage.metrics(graph, proof, effort))
    _stage("compiled; writing the outputs")
    return compiled


def _compile_live(source: load.Source, graph: Graph, down: list[str],
                  routed: Callable[[Graph], None] | None, effort: metrics_stage.Effort) -> Compiled:
    """The rest of compile_source for the live graph of a compile with nodes
    down: routed and proved by component (heal.route_and_prove)."""
    size = "%d live nodes, %d segments" % (len(graph.nodes), len(graph.segments))
    _stage("routing and proving %s" % size)
    parts = heal.components(graph)
    proof, problems = heal.route_and_prove(graph, parts)
    for p in problems.items:
        p.file = source.file
    proof = _passed(proof, problems)
    if routed is not None:
        routed(graph)
    _stage("metrics")
    compiled = Compiled(graph, source.file, proof, metrics_stage.metrics(graph, proof, effort),
                        down, [[n.name for n in nodes] for nodes in parts])
    _stage("compiled; writing the outputs")
    return compiled


def compile_text(text: str, file: str = "<topology>",
                 down: str | Iterable[str] | None = None) -> Compiled:
    _stage("loading the topology")
    return compile_source(_passed(*load.load_text(text, file)), down=down)


def compile_file(path: str, routed: Callable[[Graph], None] | None = None,
                 down: str | Iterable[str] | None = None, resilience: bool = False,
                 bisection_budget: int | None = None) -> Compiled:
    _stage("loading %s" % path)
    return compile_source(_passed(*load.load_file(path)), routed, down, resilience, bisection_budget)
