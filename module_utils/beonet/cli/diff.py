"""diff: what a change of the plan does, between topologies or plan.json files."""

from __future__ import annotations

import argparse
import json
import os

from .common import Plan, UsageError, compile_plan, count, options, write

PLAN_BYTES = 1 << 30          # a plan.json of MAX_NODES nodes with FRR takes about 300 MB
PLAN_DEPTH = 12


def _problems(path: str, data: dict[str, object], nodes: dict[str, object], fmt: int) -> list[str]:
    """What is wrong with a plan.json's contents: the format, the segments as diff
    reads them, every node plan as the node module checks it (its IPv6 texts as
    plan6 checks them)."""
    from ..agent.nodeplan import plan_format_problem, plan_problems
    from ..outputs import diff, plan6
    why = plan_format_problem(path, fmt)
    problems = ([why] if why else []) + diff.shape_problems(data)
    for name, n in nodes.items():
        if not isinstance(n, dict):
            problems += plan_problems(name, n)
            continue
        four, six = plan6.split(n)          # the node module's checks read the IPv4 part
        problems += plan_problems(name, four) + plan6.problems6(name, six)
    return problems


def plan_file(path: str) -> Plan | None:
    """The plan in a plan.json file (None: the file is a topology, in any YAML style).
    The file passes the gate; every node plan is checked as the node module checks it,
    and the segments as diff reads them."""
    from .. import gate
    from ..agent.names import quoted
    from ..compiler.schema import MAX_NODES
    from ..outputs import diff
    try:
        text = gate.read_text(path, PLAN_BYTES, "a plan.json")
    except gate.GateError as exc:
        raise UsageError(str(exc)) from None
    try:
        data = gate.loads_json(text, path, PLAN_DEPTH)
    except gate.TooDeep as exc:
        raise UsageError(str(exc)) from None
    except gate.GateError:
        return None                            # not JSON: the topology loader says why
    if not isinstance(data, dict) or "beonet" not in data and "nodes" not in data:
        return None                            # JSON, but a topology (YAML's flow style)
    nodes = data.get("nodes")
    fmt = data["beonet"].get("plan_format") if isinstance(data.get("beonet"), dict) else None
    if not isinstance(nodes, dict) or not nodes or not isinstance(fmt, int) or isinstance(fmt, bool):
        raise UsageError("%s: not a plan.json (no beonet.plan_format and nodes)" % quoted(path))
    if len(nodes) > MAX_NODES:
        raise UsageError("%s: nodes: %d nodes, more than the %d a topology may have"
                         % (quoted(path), len(nodes), MAX_NODES))
    problems = _problems(path, data, nodes, fmt)
    if problems:
        raise UsageError("%s: %s" % (quoted(path), "; ".join(problems[:5])
                                     + ("; and %d more" % (len(problems) - 5) if len(problems) > 5 else "")))
    return diff.with_defaults(data)


def _side(path: str, args: argparse.Namespace) -> Plan:
    plan = plan_file(path)
    if plan is not None:
        return plan
    return compile_plan(argparse.Namespace(**{**vars(args), "topology": path}))[1]


def cmd_diff(args: argparse.Namespace) -> int:
    """0: the plans are the same, 1: they differ (as diff(1)); errors exit 2 in main."""
    from ..outputs import diff
    old = _side(args.old, args)
    same_file = os.path.realpath(args.old) == os.path.realpath(args.new)
    found = diff.diff(old, old if same_file else _side(args.new, args), args.examples)
    if args.format == "json":
        write(json.dumps(found, indent=2) + "\n", args.output)
    else:
        write(diff.text(found, args.old, args.new), args.output)
    return 0 if found["same"] else 1


def populate(_name: str, s: argparse.ArgumentParser) -> None:
    from ..outputs.diff import EXAMPLES
    options(s, cmd_diff, topology=False)
    s.set_defaults(compiles=True)
    s.add_argument("old", help="the plan now: a topology YAML file or a plan.json (beonet build)")
    s.add_argument("new", help="the plan to push: a topology YAML file or a plan.json")
    s.add_argument("--format", choices=["text", "json"], default="text",
                   help="text: to read (default); json: nodes_added, nodes_removed, nodes_changed, "
                   "renumbered, paths_changed, same")
    s.add_argument("--examples", type=count(0, 100000), default=EXAMPLES, metavar="N",
                   help="pairs whose path changes shown (default %d)" % EXAMPLES)
