"""benchmark-report and the figures (latency, mesh, bonded) from benchmark results."""

from __future__ import annotations

import argparse
import os
import sys

from .common import UsageError, compile_plan, compiled, options, wrote

# The papers' token exchange figures: command -> (its figure, the other net's run).
EXCHANGES = {"mesh-figure": ("mesh", "routed mesh"), "bonded-figure": ("bonded", "bonded dual net")}


def cmd_benchmark_report(args: argparse.Namespace) -> None:
    """A benchmark results folder's summary.md, CSV tables and plots, again
    from its results.json (capacities worked out again with --topology). The
    file is checked first: nothing is written when it is bad."""
    from ..agent.names import quoted
    from ..benchmarks import report
    plan = compile_plan(args)[1] if args.topology else None
    try:
        _sched, res, title = report.render(args.folder, plan)
        written = ["results.json", "summary.md"] + ["%s.csv" % t for t in report.TABLES]
        try:
            from ..benchmarks import plots
            written += plots.plot_all(args.folder, res, title)
        except ImportError as exc:
            print("beonet: no plots: %s (pip install -r requirements.txt)" % exc, file=sys.stderr)
    except OSError as exc:
        raise UsageError("cannot write %s: %s" % (quoted(str(exc.filename or args.folder)),
                                                  exc.strerror or exc)) from None
    wrote(written, args.folder)


def cmd_latency_figure(args: argparse.Namespace) -> None:
    """SC98's latency by path class from two benchmark runs of one lab."""
    from ..benchmarks import figures
    from ..compiler import latency
    _results_folders(args.output, args.delays_on, args.delays_off)
    result = compiled(args)
    fig = figures.latency(args.delays_on, args.delays_off,
                          lambda a, b: latency.pair_path(result.graph, result.proof, a, b))
    wrote(figures.write_latency(args.output, fig, result.graph.name), args.output)


def cmd_exchange_figure(args: argparse.Namespace) -> None:
    """The papers' token exchange on 10 Mbit/s nets: a single net beside a
    routed mesh (mesh-figure) or a bonded dual net (bonded-figure)."""
    from ..benchmarks import figures
    folders = {run: getattr(args, run) for _label, run, *_ in figures.EXCHANGES[args.figure].lines}
    _results_folders(args.output, *folders.values())
    fig = figures.exchange(args.figure, folders, args.proto)
    wrote(figures.write_exchange(args.output, fig, "10 Mbit/s nets"), args.output)


def _results_folders(output: str, *folders: str) -> None:
    """-o of a figure: a folder of its own (not empty, not a file, not a results
    folder it reads, whose summary.md it would replace). The results folders
    themselves are checked where they are read (benchmarks.results_schema)."""
    from ..agent.names import shown
    if os.path.lexists(output) and not os.path.isdir(output):
        raise UsageError("-o %s is a file, not a folder" % shown(output))
    for folder in folders:
        if os.path.realpath(folder) == os.path.realpath(output):
            raise UsageError("-o %s is a results folder the figure reads; give a folder of its own"
                             % shown(output))


def populate(name: str, s: argparse.ArgumentParser) -> None:
    """The options of benchmark-report, latency-figure, mesh-figure or bonded-figure."""
    if name == "benchmark-report":
        options(s, cmd_benchmark_report, topology=False, output=argparse.SUPPRESS)
        s.set_defaults(compiles=True)
        s.add_argument("folder", help="results/<topology>/<timestamp>/ of playbooks/benchmark.yml")
        s.add_argument("--topology", help="the topology YAML of the run: work out each set of "
                       "pairs' capacity again from its plan (the file's own are kept without it)")
    elif name == "latency-figure":
        options(s, cmd_latency_figure, inv=False, down=False, output="the folder to write to",
                need_output=True)
        s.add_argument("--delays-on", required=True, metavar="FOLDER",
                       help="results folder of the run with the delays on")
        s.add_argument("--delays-off", required=True, metavar="FOLDER",
                       help="results folder of the run with the delays off")
    else:
        figure, other = EXCHANGES[name]
        options(s, cmd_exchange_figure, topology=False, inv=False, output="the folder to write to",
                need_output=True)
        s.set_defaults(figure=figure)
        s.add_argument("--single", required=True, metavar="FOLDER",
                       help="results folder of the single net's run")
        s.add_argument("--" + figure, required=True, metavar="FOLDER",
                       help="results folder of the %s's run" % other)
        s.add_argument("--proto", choices=["udp", "tcp"], default="udp",
                       help="the token exchange's protocol (default udp, as in the papers)")
