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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO, TypeVar

from . import address, load, normalise, prove, route
from . import metrics as metrics_stage
from .errors import CompileError, Problems
from .metrics import Metrics
from .model import Graph
from .prove import PathHop, Proof

T = TypeVar("T")


@dataclass(slots=True, eq=False)
class Compiled:
    """A compiled topology: the graph, the proof of its tables and its metrics."""

    graph: Graph
    source_file: str | None
    proof: Proof
    metrics: Metrics

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
                   resilience: bool = False) -> Compiled:
    """routed(graph), when given, runs once the routes are in place, before the
    proof: work that needs the routes only (writing each node's files) can
    start there, to be thrown away when the proof fails. resilience: compute
    the resilience metrics whatever the size (metrics.RESILIENCE_UP_TO)."""
    _stage("building the graph")
    graph = _passed(*normalise.normalise(source))
    size = "%d nodes, %d segments" % (len(graph.nodes), len(graph.segments))
    _stage("addressing %s" % size)
    _check(address.assign(graph, source))
    _stage("routing %s" % size)
    route.route(graph)
    if routed is not None:
        routed(graph)
    _stage("proving the routes of %s" % size)
    proof, problems = prove.prove(graph)
    for p in problems.items:
        p.file = source.file
    proof = _passed(proof, problems)
    _stage("metrics")
    compiled = Compiled(graph, source.file, proof, metrics_stage.metrics(graph, proof, resilience))
    _stage("compiled; writing the outputs")
    return compiled


def compile_text(text: str, file: str = "<topology>") -> Compiled:
    _stage("loading the topology")
    return compile_source(_passed(*load.load_text(text, file)))


def compile_file(path: str, routed: Callable[[Graph], None] | None = None,
                 resilience: bool = False) -> Compiled:
    _stage("loading %s" % path)
    return compile_source(_passed(*load.load_file(path)), routed, resilience)
