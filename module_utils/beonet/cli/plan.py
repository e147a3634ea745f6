"""compile, routes, paths and metrics: the plan and what it says."""

from __future__ import annotations

import json

from .common import Plan, UsageError, compile_plan, compiled, count, every_pair, options, write

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any


def cmd_compile(args: argparse.Namespace) -> None:
    from ..outputs import plan as render
    result, plan = compile_plan(args)
    if args.paths:
        from ..outputs.ipfamily import Paths
        # "paths": the IPv4 hop lists, "paths6": the IPv6 ones (the plan's families)
        paths = Paths(result)
        for a, b in every_pair(plan):
            for key, lists in paths.addresses(a, b).items():
                plan.setdefault(key.replace("address", "paths"), {}).setdefault(a, {})[b] = lists
    write(render.dumps(plan, args.format), args.output)


def cmd_routes(args: argparse.Namespace) -> None:
    from ..outputs import dryrun
    _, plan = compile_plan(args)
    nodes = plan["nodes"]
    if args.node:
        known(plan, args.node, "--node")
        nodes = {args.node: nodes[args.node]}
    write("\n".join(dryrun.ip_route_text(v, k) for k, v in nodes.items()), args.output)


def known(plan: Plan, name: str, flag: str) -> None:
    """UsageError unless name is a live node of the plan."""
    if name in plan.get("down", ()):
        raise UsageError("%s: node '%s' is down (--down)" % (flag, name))
    if name not in plan["nodes"]:
        raise UsageError("%s: no node '%s' in %s" % (flag, name, plan["topology"]["source"]))


def _pairs(plan: Plan, args: argparse.Namespace) -> list[tuple[str, str]]:
    """The ordered (source, destination) pairs asked for: --all, or --from [--to]."""
    if args.all and args.dst:
        raise UsageError("--to goes with --from, not with --all")
    if args.all:
        return every_pair(plan)
    known(plan, args.src, "--from")
    if args.dst:
        known(plan, args.dst, "--to")
        if [args.src, args.dst] in plan.get("partition", ()) or \
                [args.dst, args.src] in plan.get("partition", ()):
            raise UsageError("%s cannot reach %s: the live nodes are partitioned"
                             % (args.src, args.dst))
        return [(args.src, args.dst)]
    return [(a, b) for a, b in every_pair(plan) if a == args.src]


def cmd_paths(args: argparse.Namespace) -> None:
    from ..outputs.ipfamily import Paths
    result, plan = compile_plan(args)
    pairs = _pairs(plan, args)
    paths = Paths(result)
    if args.format == "json":
        out: dict[str, dict[str, Any]] = {}
        for a, b in pairs:
            out.setdefault(a, {})[b] = paths.path(a, b)
        # One source keeps the flat {destination: hops} form.
        flat = out if args.all else out.get(args.src, {})
        write(json.dumps(flat, indent=2) + "\n", args.output)
        return
    lines = [line for a, b in pairs for line in paths.lines(a, b)]
    write("\n".join(lines) + "\n", args.output)


def cmd_metrics(args: argparse.Namespace) -> None:
    from ..outputs import metrics
    from ..outputs import plan as render
    result = compiled(args)
    if args.format == "text":
        text = metrics.text("%s (%s)" % (result.graph.name, result.graph.family), result.metrics)
    else:
        text = render.dumps(result.metrics, args.format)
    write(text, args.output)


def populate(name: str, s: argparse.ArgumentParser) -> None:
    """The options of compile, routes, paths or metrics."""
    if name == "compile":
        options(s, cmd_compile)
        s.add_argument("--format", choices=["json", "yaml"], default="json",
                       help="output format (default json)")
        s.add_argument("--paths", action="store_true", help="include every pair's expected hops")
    elif name == "routes":
        options(s, cmd_routes)
        s.add_argument("--node", help="only this node")
    elif name == "paths":
        options(s, cmd_paths)
        which = s.add_mutually_exclusive_group(required=True)
        which.add_argument("--from", dest="src", metavar="NODE", help="source node")
        which.add_argument("--all", action="store_true", help="every ordered pair of nodes")
        s.add_argument("--to", dest="dst", metavar="NODE",
                       help="destination node (with --from; default: every other node)")
        s.add_argument("--format", choices=["text", "json"], default="text",
                       help="text: one line per allowed hop list of a pair, the preferred "
                       "first, the IPv4 ones then the IPv6 ones (-6) (default); json: "
                       "{destination: [hops, ...]}, with --all {source: {destination: [hops, "
                       "...]}}, each hop {node, address, address6} as the plan has them")
    else:
        _metrics_options(s)


def _metrics_options(s: argparse.ArgumentParser) -> None:
    from ..compiler.failures import STATIC_STEPS
    from ..compiler.metrics import BISECTION_EVALUATIONS, RESILIENCE_STEPS
    options(s, cmd_metrics, inv=False)
    s.add_argument("--format", choices=["text", "json", "yaml"], default="text",
                   help="text: a table to read (default); json or yaml: the plan's metrics object")
    s.add_argument("--resilience", action="store_true",
                   help="compute the resilience table and the static single failures of "
                   "cables and LANs even where they cost more than their steps (%s and %s) "
                   "(where routes towards a destination differ from node to node, as in "
                   "large 3D meshes: about 14 s for 16x16x16 with failover routes)"
                   % (format(RESILIENCE_STEPS, ","), format(STATIC_STEPS, ",")))
    s.add_argument("--bisection-budget", type=count(0, 10 ** 9), metavar="N",
                   help="gain evaluations the worst bisection's local search may take (default "
                   "%s, about 7 microseconds each; 0: until no pass gains): a larger budget "
                   "can find a cheaper cut on clusters of thousands of nodes"
                   % format(BISECTION_EVALUATIONS, ","))
