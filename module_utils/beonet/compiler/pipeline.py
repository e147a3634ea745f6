"""The compiler: load + validate -> normalise -> address -> route -> prove -> metrics.

Each stage reports all of its problems; the pipeline stops after the first
stage that has any and raises CompileError with them.
"""

from . import address, load, normalise, prove, route
from . import metrics as metrics_stage
from .errors import CompileError, Problems


class Compiled:
    def __init__(self, graph, source_file, proof, metrics):
        self.graph = graph
        self.source_file = source_file
        self.proof = proof
        self.metrics = metrics
        self._tables = None
        self._owner = None

    def tables(self):
        if self._tables is None:
            self._owner = prove.owners(self.graph)
            self._tables = prove.checked_tables(self.graph, self._owner, Problems())
        return self._tables, self._owner

    def path(self, src, dst):
        """Expected `traceroute -n` hop list from node name src to node name dst."""
        tables, owner = self.tables()
        g = self.graph
        return prove.expected_path(g, tables, owner, g.by_name[src].index, g.by_name[dst].index)


def _check(problems):
    if problems:
        raise CompileError(problems.items)


def compile_source(source):
    graph, problems = normalise.normalise(source)
    _check(problems)
    _check(address.assign(graph, source))
    route.route(graph)
    proof, problems = prove.prove(graph)
    for p in problems.items:
        p.file = source.file
    _check(problems)
    return Compiled(graph, source.file, proof, metrics_stage.metrics(graph, proof))


def compile_text(text, file="<topology>"):
    source, problems = load.load_text(text, file)
    _check(problems)
    return compile_source(source)


def compile_file(path):
    source, problems = load.load_file(path)
    _check(problems)
    return compile_source(source)
