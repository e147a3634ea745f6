"""The compiler: load + validate -> normalise -> address -> route -> prove -> metrics.

Each stage reports all of its problems; the pipeline stops after the first
stage that has any and raises CompileError with them.
"""

from dataclasses import dataclass

from . import address, load, normalise, prove, route
from . import metrics as metrics_stage
from .errors import CompileError, Problems
from .metrics import Metrics
from .model import Graph
from .prove import PathHop, Proof


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


def compile_source(source: load.Source) -> Compiled:
    graph, problems = normalise.normalise(source)
    _check(problems)
    assert graph is not None        # normalise returns a graph whenever it has no problem
    _check(address.assign(graph, source))
    route.route(graph)
    proof, problems = prove.prove(graph)
    for p in problems.items:
        p.file = source.file
    _check(problems)
    assert proof is not None        # prove returns a proof whenever it has no problem
    return Compiled(graph, source.file, proof, metrics_stage.metrics(graph, proof))


def compile_text(text: str, file: str = "<topology>") -> Compiled:
    source, problems = load.load_text(text, file)
    _check(problems)
    assert source is not None       # load returns a source whenever it has no problem
    return compile_source(source)


def compile_file(path: str) -> Compiled:
    source, problems = load.load_file(path)
    _check(problems)
    assert source is not None       # load returns a source whenever it has no problem
    return compile_source(source)
