"""What the commands share: their common options, errors, writing an output,
compiling the topology. Heavy modules are imported where they are used, so a
command pays only for what it runs."""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..compiler.records import cast

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from ..compiler.model import Graph
    from ..compiler.pipeline import Compiled
    from ..outputs.plan import Physical

EXIT_INPUT = 2
Plan = dict[str, "Any"]
Command = Callable[["argparse.Namespace"], "int | None"]
OUTPUT_HELP = "write the output to this file (atomically) instead of stdout"
DOWN_HELP = ("compile for the live nodes only: these nodes are dead (comma-separated). "
             "Addresses stay as in the full plan; routes avoid the dead nodes; live nodes "
             "that cannot reach each other are a warning, not an error")
MAX_SLOTS = 65536        # processes per node in a hostfile: far beyond any node's cores


class UsageError(Exception):
    """The command was used wrongly: main prints 'beonet COMMAND: message' and exits 2."""


class Failed(Exception):
    """The command could not do its work (not the input's fault): main prints
    'beonet COMMAND: message' and exits 1."""


def options(s: argparse.ArgumentParser, func: Command, topology: bool = True, inv: bool = True,
            output: str = OUTPUT_HELP, need_output: bool = False, down: bool = True) -> None:
    """The options most commands share: the topology, --down, -i and -o."""
    if topology:
        s.add_argument("topology", help="topology YAML file")
        if down:
            s.add_argument("--down", metavar="NODE[,NODE...]", help=DOWN_HELP)
    if inv:
        s.add_argument("-i", "--inventory", help="Ansible inventory mapping NIC names "
                       "(host variable beonet_interfaces)")
    s.add_argument("-o", "--output", required=need_output, help=output)
    s.set_defaults(func=func, output_folder=need_output, compiles=topology)


def count(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: a whole number from lo to hi."""
    def parse(text: str) -> int:
        import argparse

        from ..agent.names import shown
        try:
            value = int(text)
        except ValueError:
            value = lo - 1
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError("a whole number from %d to %d, not %s"
                                             % (lo, hi, shown(text)))
        return value
    return parse


def write(data: str | bytes, output: str | None) -> None:
    """Print, or write the file atomically (nothing is written on error). Outputs
    are not flushed to disk one by one: a build writes thousands of them."""
    if not output or output == "-":
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        return
    from ..agent.files import atomic_write
    atomic_write(output, data, durable=False)


def physical(args: argparse.Namespace, graph: Graph) -> Physical | None:
    """{node: {logical: physical NIC}} from -i INVENTORY, or None without one."""
    if not getattr(args, "inventory", None):
        return None
    from ..compiler.errors import CompileError
    from ..outputs import inventory
    hosts, problems = inventory.read_inventory(args.inventory)
    if problems:
        raise CompileError(problems.items)
    found, problems = inventory.physical_names(graph, hosts, args.inventory,
                                               inventory.management_of(hosts))
    if problems:
        raise CompileError(problems.items)
    return found


def down_refused(exc: Any) -> UsageError:
    """--down's problems (a heal.DownError) as a usage error."""
    return UsageError("--down: " + "; ".join(p.message for p in exc.problems))


def warn_partition(down: list[str], components: list[list[str]]) -> None:
    """A partition of the live nodes is a warning on stderr."""
    from ..compiler.heal import warning
    print("beonet: warning: " + warning(down, components), file=sys.stderr)


def compiled(args: argparse.Namespace) -> Compiled:
    """The compiled topology, with --down's nodes down; a partition of the live
    nodes is a warning on stderr."""
    from ..compiler import pipeline
    from ..compiler.heal import DownError
    try:
        result = pipeline.compile_file(args.topology, down=getattr(args, "down", None),
                                       resilience=getattr(args, "resilience", False),
                                       bisection_budget=getattr(args, "bisection_budget", None))
    except DownError as exc:
        raise down_refused(exc) from None
    if len(result.components) > 1:
        warn_partition(result.down, result.components)
    return result


def compile_plan(args: argparse.Namespace) -> tuple[Compiled, Plan]:
    """The compiled topology and its plan (NIC names from -i INVENTORY if given)."""
    from ..outputs import plan as render
    result = compiled(args)
    return result, cast(Plan, render.plan(result, physical(args, result.graph)))


def every_pair(plan: Plan) -> list[tuple[str, str]]:
    """Every ordered (source, destination) pair of nodes that can reach each
    other (a plan compiled with nodes down may have a partition), in plan order."""
    names = list(plan["nodes"])
    cut = {(a, b) for a, b in plan.get("partition", ())}
    return [(a, b) for a in names for b in names
            if a != b and (a, b) not in cut and (b, a) not in cut]


def wrote(files: list[str], folder: str) -> None:
    """Say which files a command wrote into a folder."""
    from ..agent.names import escaped
    print("beonet: wrote %s to %s/" % (", ".join(files), escaped(folder.rstrip("/"))))
