"""What no command takes, checked before any command runs: empty values, NUL
bytes, an output that is one of the command's inputs or lies in a folder it reads."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

# The arguments that name files or folders a command reads (the results folders
# among them: nothing is written inside those), and those it writes.
FOLDERS_READ = ("folder", "delays_on", "delays_off", "single", "mesh", "bonded", "results")
INPUTS = ("topology", "inventory", "discovered", "verify", *FOLDERS_READ)
OUTPUTS = {"output": "-o", "report": "--report", "host_vars": "--host-vars"}


def _option(key: str) -> str:
    """How a message names an argument: its option, or what it is."""
    if key in ("topology", "folder"):
        return "the %s" % key
    return OUTPUTS.get(key) or ("-i (inventory)" if key == "inventory" else "--" + key.replace("_", "-"))


def refused_arguments(args: argparse.Namespace) -> str | None:
    """What no command takes: an empty value (-o '' would write into the working
    folder), a NUL byte (no file or node name holds one), '-' for a folder, an
    output name too long to make, an output that is one of the command's inputs
    or lies inside an input folder."""
    from ..agent.names import quoted
    given = {k: v for k, v in sorted(vars(args).items()) if isinstance(v, str) and k != "command"}
    for key, value in given.items():
        if value == "":
            return "%s: an empty value%s" % (_option(key), " (give a file or folder, or '-' for "
                                                           "stdout)" if key == "output" else "")
        if "\x00" in value:
            return "%s: %s holds a NUL byte" % (_option(key), quoted(value))
    if getattr(args, "output_folder", False) and args.output == "-":
        return "-o: this command writes a folder, not to stdout ('-')"
    for key, flag in OUTPUTS.items():
        if given.get(key, "-") != "-":
            why = _clashing_output(given[key], [given[k] for k in INPUTS if k in given],
                                   [given[k] for k in FOLDERS_READ if k in given])
            if why:
                return "%s %s: %s" % (flag, quoted(given[key]), why)
    return None


def _clashing_output(output: str, inputs: list[str], folders: list[str]) -> str | None:
    """Why output must not be written: its name cannot be made, it is an input, or it
    lies in a folder the command reads (a results folder of a figure)."""
    from ..agent.files import too_long
    from ..agent.names import quoted
    long = too_long(output)
    if long:
        return long
    real = os.path.realpath(output)
    for item in inputs:
        if real == os.path.realpath(item):
            return "is also what the command reads (%s)" % quoted(item)
    for item in folders:
        if real.startswith(os.path.realpath(item).rstrip(os.sep) + os.sep):
            return "lies inside %s, which the command reads" % quoted(item)
    return None
