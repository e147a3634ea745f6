"""The compiler: load + validate -> normalise -> address -> route -> prove -> metrics.

Each stage reports all of its problems; the pipeline stops after the first
stage that has any and raises CompileError with them.

Inside ``progress(stream)`` a compile that runs for more than two seconds
names its stages on the stream as it goes, when the stream is a terminal;
on anything else (a pipe, a CI log) it says nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO, TypeVar

from . import address, heal, latency, load, normalise, prove, route
from . import metrics as metrics_stage
from .errors import CompileError, Problems
from .metrics import Metrics
from .model import Graph
from .prove import PathHop, Proof

T = TypeVar("T")


@dataclass(slots=True, eq=False)
class Compiled:
    """A compiled topology: the graph, the proof of its tables and its metrics.
    Compiled with nodes down: the graph of the live nodes, the down nodes'
    names and the live nodes by connected component (more than one: a partition)."""

    graph: Graph
    source_file: str | None
    proof: Proof
    metrics: Metrics
    down: list[str] = field(default_factory=list)
    components: list[list[str]] = field(default_factory=list)
    _part_of: dict[str, int] = field(default_factory=dict)     # node name -> its component

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


class Progress:
    """Names the stage a compile is in, on a terminal, once it has run for
    `after` seconds: the stage it is in then, and each later one as it starts."""

    def __init__(self, stream: TextIO, after: float = 2.0) -> None:
        self.stream = stream
        self.start = time.monotonic()
        self.current = "loading the topology"
        self.live = False
        self.lock = threading.Lock()
        self.timer = threading.Timer(after, self._wake)
        self.timer.daemon = True

    def stage(self, what: str) -> None:
        with self.lock:
            self.current = what
            if self.live:
                self._show()

    def _wake(self) -> None:
        with self.lock:
            self.live = True
            self._show()

    def _show(self) -> None:
        self.stream.write("beonet: %s (%.1f s)\n" % (self.current, time.monotonic() - self.start))
        self.stream.flush()


_progress: list[Progress] = []      # the reporter of the innermost progress() block, if any


@contextmanager
def progress(stream: TextIO, after: float = 2.0) -> Iterator[None]:
    """Within the block, compiles report their stages on stream when it is a
    terminal and they run for more than `after` seconds."""
    if not stream.isatty():
        yield
        return
    reporter = Progress(stream, after)
    _progress.append(reporter)
    reporter.timer.start()
    try:
        yield
    finally:
        reporter.timer.cancel()
        _progress.remove(reporter)


def _stage(what: str) -> None:
    if _progress:
        _progress[-1].stage(what)


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
