# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The beonet_topology task: compile the topology into every host's plan, on the controller."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from ..agent import fast, frr
from ..agent.files import atomic_write, read_text
from ..controller import TaskFailed

try:
    from ..compiler import load, pipeline
    from ..compiler.errors import CompileError, Problem
    from ..livestate import readout
    from . import dryrun, inventory, rolling
    from . import plan as render
    from .ipfamily import Paths
    IMPORT_ERROR = load.missing_libraries()
except ImportError as exc:  # beonet's module_utils incomplete on the controller
    IMPORT_ERROR = str(exc)

ARGUMENT_SPEC: dict[str, Any] = {
    "topology": {"type": "path", "required": True},
    "hosts": {"type": "list", "elements": "str"},
    "interfaces": {"type": "dict", "default": {}},
    "management": {"type": "str"},
    "down": {"type": "list", "elements": "str", "default": []},
    "paths": {"type": "bool", "default": False},
    "verify": {"type": "str", "choices": ["live", "traceroute"]},
    "max_targets": {"type": "int", "default": 64},
    "dest": {"type": "path"},
}


def _fail(problems: Iterable[object]) -> TaskFailed:
    errors = [str(p) for p in problems]
    return TaskFailed("beonet: %d error(s)\n%s" % (len(errors), "\n".join(errors)), errors=errors)


def _physical(compiled: Any, p: dict[str, Any]) -> dict[str, Any]:
    graph = compiled.graph
    problems = []
    if p["hosts"] is not None:
        nodes = set(graph.by_name) | set(compiled.down)
        problems = [Problem("host '%s' is not a node of the topology" % host, "hosts", file="inventory")
                    for host in p["hosts"] if host not in nodes]
        hosts: dict[str, dict[str, Any]] = {h: {} for h in p["hosts"] if h not in compiled.down}
    else:
        hosts = {n.name: {} for n in graph.nodes}
    for host, names in (p["interfaces"] or {}).items():
        if host in hosts:
            hosts[host] = {inventory.VAR: names}
    physical, more = inventory.physical_names(graph, hosts, "inventory", p["management"])
    problems.extend(more.items)
    if problems:
        raise _fail(problems)
    return physical


def _write(result: dict[str, Any], plan: Any, dest: str, check_mode: bool, diff: bool) -> None:
    text = render.dumps(plan)
    old = read_text(dest)
    if old == text:
        return
    result["changed"] = True
    if diff:
        result["diff"] = {"before": old or "", "after": text, "before_header": dest, "after_header": dest}
    if not check_mode:
        atomic_write(dest, text)


def _digests(plan: Any, prefixes: list[str], agent: str) -> dict[str, str]:
    """Each node's digest of what its check is asked that the plan decides (the fast path's token)."""
    shared = [prefixes, plan["beonet"]["plan_format"], plan.get("down", []), agent]
    return {name: hashlib.sha256(json.dumps([node] + shared, sort_keys=True).encode()).hexdigest()
            for name, node in plan["nodes"].items()}


def compile_task(p: dict[str, Any], check_mode: bool, diff: bool) -> dict[str, Any]:
    """The plan of every host (and, asked for, the paths, verify's commands, the plan file)."""
    if IMPORT_ERROR is not None:
        raise TaskFailed("beonet needs the Python packages PyYAML and jsonschema on the "
                         "controller (run `make setup`); missing: %s" % IMPORT_ERROR)
    try:
        compiled = pipeline.compile_file(p["topology"], down=p["down"])
    except CompileError as exc:
        raise _fail(exc.problems) from None
    plan = render.plan(compiled, _physical(compiled, p))
    result: dict[str, Any] = {
        "changed": False, "plan": plan, "prefixes": render.prefixes(plan), "live": list(plan["nodes"]),
        "rolling": {"order": rolling.order(plan), "neighbours": rolling.neighbours(plan)},
        "fast": {k: fast.check_command(v) for k, v in plan["nodes"].items()},
        "agent": fast.agent_digest(),
        "routes_text": {k: dryrun.ip_route_text(v, k) for k, v in plan["nodes"].items()},
        "settle": {k: frr.settle_script(frr.learned_counts(v), repair=True)
                   for k, v in plan["nodes"].items() if "routing" in v}}
    result["digests"] = _digests(plan, result["prefixes"], result["agent"])
    if p["paths"]:
        paths = Paths(compiled)
        key = "address" if compiled.graph.v4 else "address6"    # an IPv6-only plan's hops are IPv6
        result["paths"] = {a: {b: paths.addresses(a, b)[key]
                               for b in plan["nodes"] if b != a and compiled.reachable(a, b)}
                           for a in plan["nodes"]}
    if p["verify"]:
        result["verify"] = readout.pick(plan, result["prefixes"], p["verify"], result.get("paths", {}),
                                        p["max_targets"])
    if p["dest"]:
        _write(result, plan, p["dest"], check_mode, diff)
    return result
