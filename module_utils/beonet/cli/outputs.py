"""graph, view, export, build and schema: the plan written in other forms."""

from __future__ import annotations

import argparse
import json
import sys

from .common import (
    MAX_SLOTS,
    Failed,
    UsageError,
    compile_plan,
    count,
    down_refused,
    options,
    physical,
    warn_partition,
    write,
)


def cmd_graph(args: argparse.Namespace) -> None:
    from ..cabling import sheet
    from ..outputs import drawing
    try:
        if args.format not in drawing.IMAGES:
            result, plan = compile_plan(args)
            write(drawing.GRAPHS[args.format](plan, sheet.sheet(result)), args.output)
            return
        dot_binary = drawing.graphviz()
        if dot_binary is None:
            raise UsageError("--format %s needs Graphviz's dot (apt-get install graphviz)"
                             % args.format)
        if args.format == "png" and (not args.output or args.output == "-"):
            raise UsageError("--format png is binary: give -o FILE.png")
        from ..view import pinned
        result, plan = compile_plan(args)
        data = pinned.image(plan, args.format, dot_binary, sheet.sheet(result))
    except drawing.DrawingError as exc:
        raise Failed(str(exc)) from None
    write(data.decode("utf-8") if args.format == "svg" else data, args.output)


def cmd_view(args: argparse.Namespace) -> None:
    from ..view import command
    result, plan = compile_plan(args)
    write(command.html(args, result, plan), args.output)


def cmd_export(args: argparse.Namespace) -> None:
    from ..outputs import export
    from ..outputs.mpi import MpiError
    if args.format and args.what != "cabling":
        raise UsageError("--format goes with 'cabling' only")
    result, plan = compile_plan(args)
    if args.what == "cabling":
        from ..cabling import sheet
        from ..outputs import build, cabling
        write(cabling.render(sheet.sheet(result), args.format or "md", build.title(plan),
                             cabling.physical_names(plan)), args.output)
        return
    if args.what not in export.SLOTS_EXPORTS and args.slots != 1:
        raise UsageError("--slots goes with %s only" % ", ".join(sorted(export.SLOTS_EXPORTS)))
    extra = (args.slots,) if args.what in export.SLOTS_EXPORTS else ()
    try:
        text = export.EXPORTS[args.what](plan, *extra)
    except MpiError as exc:
        raise UsageError("%s: %s" % (args.what, exc)) from None
    write(text, args.output)


def cmd_build(args: argparse.Namespace) -> None:
    from ..compiler.heal import DownError
    from ..outputs import build
    try:
        plan, written, refused = build.build(args.topology, args.output, args.backend,
                                             lambda graph: physical(args, graph), down=args.down)
    except DownError as exc:
        raise down_refused(exc) from None
    for name, why in refused.items():
        print("beonet: not written: %s: %s" % (name, why), file=sys.stderr)
    if "components" in plan:
        warn_partition(plan["down"], plan["components"])
    print("beonet: wrote %s and %s files of %d nodes to %s/"
          % (", ".join(written), args.backend, len(plan["nodes"]), args.output.rstrip("/")))


def cmd_schema(args: argparse.Namespace) -> None:
    from ..compiler.schema import SCHEMA
    write(json.dumps(SCHEMA, indent=2) + "\n", args.output)


def populate(name: str, s: argparse.ArgumentParser) -> None:
    """The options of graph, view, export, build or schema."""
    {"graph": _graph, "view": _view, "export": _export, "build": _build, "schema": _schema}[name](s)


def _graph(s: argparse.ArgumentParser) -> None:
    from ..outputs import drawing
    options(s, cmd_graph)
    s.add_argument("--format", choices=sorted(drawing.GRAPHS) + list(drawing.IMAGES),
                   default="dot", help="dot (default) or mermaid text; svg or png need "
                   "Graphviz's dot program, png also -o")


def _view(s: argparse.ArgumentParser) -> None:
    options(s, cmd_view, output="the HTML file to write", need_output=True)
    s.set_defaults(output_folder=False)
    s.add_argument("--verify", metavar="REPORT", help="the beonet_verify_live result of "
                   "playbooks/verify.yml saved as JSON: dead nodes, mismatched pairs")
    s.add_argument("--discovered", metavar="FILE.json", help="discovery reports {host: report} "
                   "(playbooks/discover.yml): miswired cables and their fixes")
    s.add_argument("--results", metavar="DIR", help="a benchmark results folder: load per link")


def _export(s: argparse.ArgumentParser) -> None:
    from ..outputs import cabling, export
    options(s, cmd_export)
    s.add_argument("what", choices=sorted([*export.EXPORTS, "cabling"]),
                   help="hosts: /etc/hosts lines; slurm: topology.conf; hostfile: Open MPI "
                   "hostfile (cluster addresses, slots); mpich-hosts: MPICH machine file; "
                   "openmpi-mca: openmpi-mca-params.conf lines keeping MPI on the networks "
                   "every node routes to; prte-mca: Open MPI 5's prte-mca-params.conf (its "
                   "runtime's daemons on them); mpich-env: each node's MPICH environment "
                   "(ch4:ofi on its cluster NIC); slurm-nodes: slurm.conf node lines "
                   "(NodeAddr: cluster address, CPUs: --slots); slurm-topology-yaml: "
                   "topology.yaml (Slurm 25.05+); cabling: every cable with both ends, "
                   "switch by switch")
    s.add_argument("--slots", type=count(1, MAX_SLOTS), default=1,
                   help="hostfile, mpich-hosts: processes (slots) per node; slurm-nodes: "
                   "CPUs per node (default 1, at most %d)" % MAX_SLOTS)
    s.add_argument("--format", choices=cabling.FORMATS,
                   help="cabling: md (Markdown tables, default), csv (one row per cable) "
                   "or json")


def _build(s: argparse.ArgumentParser) -> None:
    options(s, cmd_build, output="folder to write into (created if missing; files in it are "
            "replaced)", need_output=True)
    from ..agent.netbackends import NAMES
    s.add_argument("--backend", choices=NAMES, default="networkd",
                   help="persistent configuration files to render (default networkd; netplan "
                   "renders for networkd)")


def _schema(s: argparse.ArgumentParser) -> None:
    options(s, cmd_schema, topology=False, inv=False)
