"""The `beonet` command line: compile, dry run, paths, metrics, drawings, exports, labs.

One module per command or group of commands; each has populate(name, parser),
which adds the command's options and its function. Only the module of the
command asked for is imported (with what it needs), so a command pays only for
what it runs; parser() builds every command's options (help, tests)."""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Iterable

from .. import __version__
from ..compiler.records import cast
from .common import EXIT_INPUT, Failed, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

__all__ = ["COMMANDS", "UsageError", "main", "parser", "run"]

# command -> (its module in this package, its help), in the order `beonet -h` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "compile": ("plan", "print the plan: every node's NICs, addresses, bonds, forwarding and "
                "routes, the segments and the metrics"),
    "routes": ("plan", "dry run: each node's addresses, bonds, forwarding, routes"),
    "paths": ("plan", "expected `traceroute -n` hop lists from one node (--from), between two "
              "(--from, --to) or for every ordered pair (--all)"),
    "metrics": ("plan", "size, hop histogram, routes per node, gateway load, bisection, "
                "resilience, single failures"),
    "diff": ("diff", "what a change of the plan does: nodes added and removed, what changes on "
             "each node (NICs, addresses, forwarding, routes), addresses renumbered, pairs whose "
             "path changes; exit 0: the same, 1: they differ, 2: an error"),
    "graph": ("outputs", "drawing of the topology: Graphviz dot text, Mermaid, or an SVG or PNG "
              "picture rendered by Graphviz's dot"),
    "view": ("outputs", "one self-contained HTML page of the cluster: the layout of the papers' "
             "figures, each node's plan, the proven paths of two nodes, what a failure cuts, and "
             "overlays of verify, discovery and benchmark files"),
    "export": ("outputs", "/etc/hosts lines, Slurm's node lines, topology.conf or topology.yaml, "
               "MPI hostfiles, the MPI stacks' network settings or the cabling sheet"),
    "build": ("outputs", "write plan.json, routes.txt, hosts, topology.conf, topology.yaml, "
              "slurm-nodes.conf, the MPI files (hostfile, mpich.hosts, mpich.env, "
              "openmpi-mca-params.conf, prte-mca-params.conf), the cabling sheet (cabling.md, "
              ".csv, .json) and each node's persistent files (nodes/NODE/etc/...) into the "
              "folder given by -o; nothing is written if the topology has errors"),
    "lab": ("lab", "bring the embedded Docker lab (or, with --provider vm, the QEMU VM lab) of a "
            "topology up or down, make faults and outages in it"),
    "cabling": ("cabling", "match the discovered wiring to the plan: print each host's "
                "beonet_interfaces as YAML, or every cabling fault (exit 1)"),
    "schema": ("outputs", "print the topology JSON Schema"),
    "benchmark-report": ("figures", "write a benchmark results folder's summary.md, CSV tables "
                         "and plots again from its results.json (no node is touched)"),
    "latency-figure": ("figures", "SC98's latency by path class (Table 1) beside two benchmark "
                       "runs of one lab, with its per-hop delays on and off: summary.md, "
                       "figure.json, latency.svg"),
    "mesh-figure": ("figures", "the 1996 paper's token exchange on 10 Mbit/s nets (its Figure "
                    "7): a single shared net beside a routed mesh's local and remote pairs, from "
                    "two benchmark runs: summary.md, figure.json, token-exchange.svg"),
    "bonded-figure": ("figures", "the 1995/1996 papers' token exchange on the channel-bonded dual "
                      "net of 10 Mbit/s (1995 Figure 1): one channel beside two, from two "
                      "benchmark runs: summary.md, figure.json, token-exchange.svg"),
}


def parser(commands: Iterable[str] | None = None, only: bool = False) -> argparse.ArgumentParser:
    """The whole parser; with commands, the options of those commands only (the
    others are listed with their help, as `beonet -h` shows them; with only, not
    at all: for a line that names its command first, whose help is the command's)."""
    import argparse
    wanted = set(COMMANDS if commands is None else commands)
    p = argparse.ArgumentParser(prog="beonet", description="Compile a cluster network "
                                "topology into per-node plans, dry runs and exports.")
    p.add_argument("--version", action="version", version="beonet " + __version__,
                   help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           help="one of the commands below; 'beonet COMMAND -h' for its options")
    for name, (module, help_) in COMMANDS.items():
        if only and name not in wanted:
            continue
        s = sub.add_parser(name, help=help_, description=help_)
        if name in wanted:
            importlib.import_module("." + module, __name__).populate(name, s)
    return p


def _command(argv: list[str]) -> str | None:
    """The command named on the line (beonet's own options take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _plain(argv: list[str]) -> argparse.Namespace | None:
    """The namespace of a line that is a command and its positional arguments alone,
    read without argparse (plain.py); None for any other line."""
    if not argv or argv[0] not in COMMANDS or any(a.startswith("-") for a in argv[1:]):
        return None
    from . import plain
    recorder = plain.Recorder()
    importlib.import_module("." + COMMANDS[argv[0]][0], __name__).populate(argv[0], recorder)
    return cast("argparse.Namespace | None", plain.namespace(argv[0], recorder, argv[1:]))


def _run(args: argparse.Namespace) -> int:
    """The command's exit status; its errors as messages on stderr."""
    from ..compiler.errors import CompileError
    try:
        if getattr(args, "compiles", False) and sys.stderr.isatty():
            from .progress import shown
            with shown(sys.stderr):
                code = args.func(args)
        else:
            code = args.func(args)
    except CompileError as exc:
        for p in exc.problems:
            print(str(p), file=sys.stderr)
        n = len(exc.problems)
        print("beonet: %d error%s, nothing written" % (n, "" if n == 1 else "s"), file=sys.stderr)
        return EXIT_INPUT
    except (UsageError, Failed) as exc:
        print("beonet %s: %s" % (args.command, exc), file=sys.stderr)
        return EXIT_INPUT if isinstance(exc, UsageError) else 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("beonet %s: interrupted, nothing more written" % args.command, file=sys.stderr)
        return 130
    except OSError as exc:               # the output could not be written
        from ..agent.names import quoted
        print("beonet %s: cannot write %s: %s" % (
            args.command, quoted(str(exc.filename or getattr(args, "output", None) or "the output")),
            exc.strerror or exc), file=sys.stderr)
        return EXIT_INPUT
    return code if isinstance(code, int) else 0


def main(argv: list[str] | None = None) -> int:
    """Run one command; 0 on success, 2 on input or usage errors (argparse's too),
    1 when the command could not do its work (a lab's failure, Graphviz's)."""
    # A compile holds millions of small objects and makes no reference cycles worth
    # collecting: the cyclic collector would walk them all again and again (a
    # third of the time of a large build) for nothing a short-lived command needs.
    gc.disable()
    argv = sys.argv[1:] if argv is None else argv
    args = _plain(argv)
    if args is None:
        name = _command(argv)
        first = name in COMMANDS and argv[0] == name       # not `beonet -h compile`
        args = parser([name] if name in COMMANDS else [], only=first).parse_args(argv)
    from .safety import refused_arguments
    refused = refused_arguments(args)
    if refused:
        print("beonet %s: %s" % (args.command, refused), file=sys.stderr)
        return EXIT_INPUT
    return _run(args)


def run() -> None:
    """The ``beonet`` command: main, then exit without freeing the compiled
    topology object by object (half a second for a 4,096-node mesh)."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)
