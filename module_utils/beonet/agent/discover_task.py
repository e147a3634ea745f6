"""The beonet_discover task: its arguments, and its background start as one command.

Standard library only. The module checks its arguments against ARGUMENT_SPEC and
``params_problem``; so does the action plugin, which starts a background listener
(``background``) without the module: ``start_command`` runs discover.start_background
on the node through agent/bundle.py (a ``python3 -I -S`` process carrying the
discovery code, no module packaging; the listener it leaves behind is that small
process, forked), and ``parse_started`` reads what it printed back into the module's
result, or its error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from . import bundle, discover, names

ARGUMENT_SPEC = {
    "node": {"type": "str", "required": True},
    "run": {"type": "str", "default": ""},
    "window": {"type": "float", "default": 10.0},
    "management": {"type": "list", "elements": "str", "default": []},
    "include_virtual": {"type": "bool", "default": False},
    "exclude": {"type": "list", "elements": "str", "default": []},
    "probe_only": {"type": "bool", "default": False},
    "background": {"type": "bool", "default": False},
    "collect": {"type": "bool", "default": False},
}
MODULES = ("names", "procs", "files", "discover")        # discover and what it imports, in order
STARTED = "beonet-discover-started: "                   # the start's one line of output, then JSON
_START = """d=sys.modules['beonet_agent.discover']
try:
 r=d.start_background(**A)
except d.DiscoveryError as e:
 r={'error':str(e)}
sys.stdout.write('%s'+json.dumps(r)+'\\n')
""" % STARTED


def params_problem(p: Mapping[str, Any]) -> str | None:
    """What is wrong with checked parameters beyond their types (None: nothing)."""
    problem = names.node_name_problem(p["node"])
    if problem:   # the name goes into every beacon, and from there into the discovery file
        return "node: %s" % names.escaped(problem)
    if p["background"] and p["collect"]:
        return "background and collect are mutually exclusive"
    return None


def start_command(p: Mapping[str, Any], python: str = "python3") -> str:
    """discover.start_background(node, run, window as its cap, management, include_virtual,
    exclude) run on the node by python; DiscoveryError for a run or node name that
    cannot name the run's files or a cap out of range (as start_background would say)."""
    discover.start_paths(p["node"], p["run"], p["window"])
    args = {"node": p["node"], "run": p["run"], "cap": p["window"], "management": list(p["management"]),
            "include_virtual": p["include_virtual"], "exclude": list(p["exclude"])}
    return bundle.command(MODULES, _START, args, python)


def parse_started(node: str, run: str, rc: int, stdout: str, stderr: str) -> dict[str, Any]:
    """The module's result of a background start from what start_command printed."""
    line = next((x for x in stdout.splitlines() if x.startswith(STARTED)), None)
    try:
        got: Any = json.loads(line[len(STARTED):]) if line is not None else None
    except ValueError:
        got = None
    if isinstance(got, dict) and isinstance(got.get("error"), str):
        raise discover.DiscoveryError(got["error"])
    if rc == 0 and isinstance(got, dict) and isinstance(got.get("pid"), int):
        return {"pid": got["pid"], "superseded": list(got.get("superseded", []))}
    said = (stderr.strip() or stdout.strip() or "no output")[-300:]
    raise discover.DiscoveryError("%s: the background listener of run %s could not be started (rc %s): %s"
                                  % (node, run, rc, said))
