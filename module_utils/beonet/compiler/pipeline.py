"""The compiler: load + validate -> normalise -> address -> route -> prove -> metrics.

Each stage reports all of its problems; the pipeline stops after the first
stage that has any and raises CompileError with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

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

    def path(self, src: str, dst: str) -> list[PathHop] | None:
        """Expected `traceroute -n` hop list from node name src to node name dst."""
        g = self.graph
        return prove.expected_path(g, self.proof.tables, g.by_name[src].index, g.by_name[dst].index)


def _check(problems: Problems) -> None:
    if problems:
        raise CompileError(problems.items)


def _passed(result: T | None, problems: Problems) -> T:
    """A stage's result; CompileError when the stage reported problems."""
    _check(problems)
    if result is None:
        raise AssertionError("a stage returned no result and reported no problem")
    return result


def compile_source(source: load.Source) -> Compiled:
    graph = _passed(*normalise.normalise(source))
    _check(address.assign(graph, source))
    route.route(graph)
    proof, problems = prove.prove(graph)
    for p in problems.items:
        p.file = source.file
    proof = _passed(proof, problems)
    return Compiled(graph, source.file, proof, metrics_stage.metrics(graph, proof))


def compile_text(text: str, file: str = "<topology>") -> Compiled:
    return compile_source(_passed(*load.load_text(text, file)))


def compile_file(path: str) -> Compiled:
    return compile_source(_passed(*load.load_file(path)))
