"""``beonet build``: every artefact of a topology into one folder.

plan.json, routes.txt (the dry run of every node), the exports (hosts,
Slurm's topology.conf, topology.yaml and node lines, the MPI hostfiles and
network settings), the cabling sheets, and under nodes/ each node's
persistent files as the beonet_node role would write them. Nothing is written
unless the topology compiles and its routes are proved.

Two processes share the work. Once the routes are in place (before the proof)
a forked writer renders the nodes' plans, files, dry run and (for a compact
plan) share of plan.json's nodes into a new nodes/ folder beside the old one,
part after part, while this process proves the routes, computes the metrics
and renders the exports and sheets; then this process takes the parts the
writer has not started (and the indented nodes' JSON of a small plan). Then
the new nodes/ folder replaces the old one as a whole; a failed proof throws
it away.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, cast

from ..agent import apply as node
from ..agent.files import atomic_write, output_problem
from ..agent.names import control_characters_in
from ..cabling import sheet as cabling_sheet
from ..compiler import pipeline
from ..compiler.model import Graph
from . import cabling, dryrun, export, tree
from . import plan as render
from .mpi import MpiError

if TYPE_CHECKING:
    Plan = dict[str, Any]
    PhysicalOf = Callable[[Graph], "render.Physical | None"]   # the -i INVENTORY NIC names of a graph

EXPORT_FILES = {"hosts": "hosts", "topology.conf": "slurm", "topology.yaml": "slurm-topology-yaml",
                "slurm-nodes.conf": "slurm-nodes", "hostfile": "hostfile", "mpich.hosts": "mpich-hosts",
                "mpich.env": "mpich-env", "openmpi-mca-params.conf": "openmpi-mca",
                "prte-mca-params.conf": "prte-mca"}
ROUTES_STAGED = ".routes.txt"       # routes.txt while staged (no node is named so)
NODES_STAGED = ".nodes.json"        # the nodes' part of plan.json while staged
PARTS = 16                          # the nodes are written in this many parts, at most
PART_NODES = 64                     # ... of this many nodes at least


def title(plan: Plan) -> str:
    return "%s (%s)" % (plan["topology"]["name"], plan["topology"]["family"])


def parts(count: int) -> list[range]:
    """The node indexes, cut into the parts the two processes share out."""
    size = max(PART_NODES, -(-count // PARTS))
    return [range(lo, min(lo + size, count)) for lo in range(0, count, size)]


def _part_routes(k: int) -> str:
    return ".routes-%03d.txt" % k


def _part_nodes(k: int) -> str:
    return ".nodes-%03d.json" % k


class _NodeWriter:
    """Each node's persistent files (as the beonet_node role would write them),
    routes.txt and the nodes' part of plan.json, rendered from the routed graph
    into a staged nodes/ folder. A forked child starts on them while this
    process proves the routes; then this process joins in. The work is cut
    into jobs (the files, dry run and compact JSON of each part of the nodes;
    a small plan's indented JSON), each done by whichever of the two claims
    it first. Put in place by ``commit``; thrown away on any error."""

    def __init__(self, output: str, backend: str, physical_of: PhysicalOf) -> None:
        self.output, self.backend, self.physical_of = output, backend, physical_of
        self.nodes_dir = os.path.join(output, "nodes")
        self.staged = ""
        self.graph: Graph | None = None
        self.physical: render.Physical | None = None
        self.job: tree.Background | None = None
        self.parts: list[range] = []
        self.nets: list[str] = []             # the topology's prefixes (the forward filter's)

    def start(self, graph: Graph) -> None:
        self.graph, self.physical = graph, self.physical_of(graph)
        plain_names(graph, self.physical)
        self.parts, self.nets = parts(len(graph.nodes)), render.graph_prefixes(graph)
        self.staged = tree.stage(self.nodes_dir)
        self.job = tree.Background(lambda: self._share(self._jobs()))

    def _jobs(self) -> list[str]:
        """A job per part of the nodes; and the nodes' JSON as one job where it is
        indented (a small plan), else each part writes its nodes' share of it."""
        jobs = [_part_routes(k) for k in range(len(self.parts))]
        return jobs if self._compact() else jobs + [NODES_STAGED]

    def _compact(self) -> bool:
        return render.compact(len(self._graph().nodes))

    def _share(self, jobs: list[str]) -> None:
        """Do the jobs nobody has claimed yet."""
        for job in jobs:
            if tree.claim(self.staged, job):
                self._do(job)

    def _do(self, job: str) -> None:
        graph = self._graph()
        if job == NODES_STAGED:
            text = render.nodes_json(render.node_plans(graph, self.physical), compact_=False)
            tree.fill(self.staged, [(job, text)])
            return
        k = self._jobs().index(job)
        nodes = [graph.nodes[i] for i in self.parts[k]]
        plans = render.node_plans(graph, self.physical, nodes=nodes)
        tree.fill(self.staged, ((name + path, text) for name, n in plans.items()
                                for path, text in node.persistent_files(n, self.nets, self.backend,
                                                                        checked=True).items()))
        tree.fill(self.staged, [(job, "\n".join(dryrun.ip_route_text(n, name, checked=True)
                                                for name, n in plans.items()))])
        if self._compact():
            items = render.compact_nodes_items(graph, self.physical, nodes)
            tree.fill(self.staged, [(_part_nodes(k), items)])

    def _graph(self) -> Graph:
        if self.graph is None:
            raise AssertionError("the writer was not started")
        return self.graph

    def write_plan(self, path: str, plan: Plan) -> None:
        """Write plan.json (plan with the nodes' JSON), once this process has
        helped and the child is done."""
        jobs = self._jobs()
        self._share(jobs[-1:] + jobs[:-1])
        if self.job is not None:
            self.job.wait()
        before, after = render.around_nodes(plan)
        with contextlib.ExitStack() as files:
            if self._compact():
                pieces: list[str | IO[bytes]] = ["{"]
                for k in range(len(self.parts)):
                    pieces += [","] if k else []
                    pieces.append(files.enter_context(open(self._staged(_part_nodes(k)), "rb")))
                pieces.append("}")
            else:
                pieces = [files.enter_context(open(self._staged(NODES_STAGED), "rb"))]
            atomic_write(path, [before, *pieces, after], durable=False)

    def _staged(self, name: str) -> str:
        return os.path.join(self.staged, name)

    def commit(self) -> None:
        """routes.txt from the parts, in node order; the nodes/ folder put in place."""
        jobs = self._jobs()
        routes = [_part_routes(k) for k in range(len(self.parts))]
        with open(self._staged(ROUTES_STAGED), "wb") as out:
            for k, job in enumerate(routes):
                out.write(b"\n" if k else b"")         # one empty line between nodes
                with open(self._staged(job), "rb") as part:
                    shutil.copyfileobj(part, out, 1 << 20)
        staged = routes + ([_part_nodes(k) for k in range(len(self.parts))] if self._compact()
                           else [NODES_STAGED])
        for name in staged:
            os.unlink(self._staged(name))
        os.replace(os.path.join(self.staged, ROUTES_STAGED), os.path.join(self.output, "routes.txt"))
        tree.unclaim(self.staged, jobs)
        tree.commit(self.staged, self.nodes_dir)

    def discard(self) -> None:
        if self.job is not None:
            self.job.cancel()
        if self.staged:
            tree.discard(self.staged)


def plain_names(graph: Graph, physical: render.Physical | None) -> None:
    """The writers' second wall for a whole build, once: every name the nodes'
    files and dry runs are made of (nodes, segments, interfaces, switches, the
    inventory's NIC names) is plain text; the rest of a plan is made of numbers.
    ValueError otherwise (the entries check names first: never raised there)."""
    names = [graph.name, graph.management] + [s.name for s in graph.segments] + \
        [s.name for s in graph.switches] + [v for m in (physical or {}).values() for v in m.values()]
    for n in graph.nodes:
        names += [n.name] + [i.name for i in n.interfaces]
    found = control_characters_in(names)
    if found:
        raise ValueError("a name holds a control character: %r" % found[0][1])


def build(topology: str, output: str, backend: str, physical_of: PhysicalOf,
          down: str | None = None) -> tuple[Plan, list[str], dict[str, str]]:
    """Compile topology (with the nodes of down down, if any) and write everything
    into output; the plan (its nodes without routes), the names of the files
    written beside nodes/ and, by name, why an export could not be written for
    this plan (an MPI file of an IPv6-only plan: an older one of that name is removed)."""
    _check_targets(output)
    created = not os.path.isdir(output)
    writer = _NodeWriter(output, backend, physical_of)
    try:
        compiled = pipeline.compile_file(topology, writer.start, down)
        # The nodes' routes are the writer's to render; the exports do not read them.
        plan = cast("Plan", render.plan(compiled, writer.physical, routes=False))
        texts, refused = _texts(compiled, plan)
        for name, text in texts.items():
            atomic_write(os.path.join(output, name), text, durable=False)
        for name in refused:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(output, name))
        writer.write_plan(os.path.join(output, "plan.json"), plan)
        writer.commit()
    except BaseException:
        writer.discard()
        if created and os.path.isdir(output) and not os.listdir(output):
            os.rmdir(output)
        raise
    return plan, ["plan.json", "routes.txt"] + list(texts), refused


def _check_targets(output: str) -> None:
    """Every file a build writes can be written (a regular file or nothing there,
    nodes/ a folder or nothing), before anything is: OSError naming the first
    that cannot."""
    names = ["plan.json", "routes.txt", *EXPORT_FILES, *cabling.BUILD_FILES]
    why = output_problem(output, folder=True)
    if why:
        raise OSError(errno.EINVAL, why, output)
    for name in names:
        why = output_problem(os.path.join(output, name), regular=True)
        if why:
            raise OSError(errno.EINVAL, why, os.path.join(output, name))
    nodes = os.path.join(output, "nodes")
    if os.path.lexists(nodes) and (os.path.islink(nodes) or not os.path.isdir(nodes)):
        raise OSError(errno.ENOTDIR, "not a folder", nodes)


def _texts(compiled: pipeline.Compiled, plan: Plan) -> tuple[dict[str, str], dict[str, str]]:
    """The exports and the cabling sheets, by file name; the exports refused for this
    plan, with why."""
    texts, refused = {}, {}
    for name, what in EXPORT_FILES.items():
        try:
            texts[name] = export.EXPORTS[what](plan)
        except MpiError as exc:
            refused[name] = str(exc)
    sheet = cabling_sheet.sheet(compiled)
    for name, fmt in cabling.BUILD_FILES.items():
        texts[name] = cabling.render(sheet, fmt, title(plan), cabling.physical_names(plan))
    return texts, refused
