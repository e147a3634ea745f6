"""The `beonet` command line: compile, dry run, paths, metrics, drawings, exports."""

import argparse
import contextlib
import gc
import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from . import __version__, gate
from .agent.files import atomic_write, output_problem, too_long
from .agent.names import quoted, shown
from .agent.nodeplan import plan_format_problem, plan_problems
from .cabling import sheet as cabling_sheet
from .compiler import pipeline
from .compiler.errors import CompileError
from .compiler.failures import STATIC_STEPS
from .compiler.heal import DownError, warning
from .compiler.metrics import BISECTION_EVALUATIONS, RESILIENCE_STEPS
from .compiler.model import Graph
from .compiler.schema import MAX_NODES, SCHEMA
from .labs import VM_IMAGES
from .outputs import build, cabling, diff, drawing, dryrun, export, inventory
from .outputs import plan as render

EXIT_INPUT = 2
PLAN_BYTES = 1 << 30          # a plan.json of MAX_NODES nodes with FRR takes about 300 MB
PLAN_DEPTH = 12
Plan = dict[str, Any]


class UsageError(Exception):
    """The command was used wrongly: main prints 'beonet COMMAND: message' and exits 2."""


def _write(data: str | bytes, output: str | None) -> None:
    """Print, or write the file atomically (nothing is written on error). Outputs
    are not flushed to disk one by one: a build writes thousands of them."""
    if not output or output == "-":
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        return
    atomic_write(output, data, durable=False)


def _physical(args: argparse.Namespace, graph: Graph) -> render.Physical | None:
    """{node: {logical: physical NIC}} from -i INVENTORY, or None without one."""
    if not getattr(args, "inventory", None):
        return None
    hosts, problems = inventory.read_inventory(args.inventory)
    if problems:
        raise CompileError(problems.items)
    physical, problems = inventory.physical_names(graph, hosts, args.inventory,
                                                  inventory.management_of(hosts))
    if problems:
        raise CompileError(problems.items)
    return physical


def _compiled(args: argparse.Namespace) -> pipeline.Compiled:
    """The compiled topology, with --down's nodes down; a partition of the live
    nodes is a warning on stderr."""
    try:
        compiled = pipeline.compile_file(args.topology, down=getattr(args, "down", None),
                                         resilience=getattr(args, "resilience", False),
                                         bisection_budget=getattr(args, "bisection_budget", None))
    except DownError as exc:
        raise UsageError("--down: " + "; ".join(p.message for p in exc.problems)) from None
    if len(compiled.components) > 1:
        print("beonet: warning: " + warning(compiled.down, compiled.components), file=sys.stderr)
    return compiled


def _compile(args: argparse.Namespace) -> tuple[pipeline.Compiled, Plan]:
    """The compiled topology and its plan (NIC names from -i INVENTORY if given)."""
    compiled = _compiled(args)
    return compiled, render.plan(compiled, _physical(args, compiled.graph))


def cmd_compile(args: argparse.Namespace) -> None:
    compiled, plan = _compile(args)
    if args.paths:
        plan["paths"] = {}
        for a, b in _every_pair(plan):
            plan["paths"].setdefault(a, {})[b] = [[h["address"] for h in hops]
                                                  for hops in compiled.path(a, b) or []]
    _write(render.dumps(plan, args.format), args.output)


def _every_pair(plan: Plan) -> list[tuple[str, str]]:
    """Every ordered (source, destination) pair of nodes that can reach each
    other (a plan compiled with nodes down may have a partition), in plan order."""
    names = list(plan["nodes"])
    cut = {(a, b) for a, b in plan.get("partition", ())}
    return [(a, b) for a in names for b in names
            if a != b and (a, b) not in cut and (b, a) not in cut]


def cmd_routes(args: argparse.Namespace) -> None:
    _, plan = _compile(args)
    nodes = plan["nodes"]
    if args.node:
        _known(plan, args.node, "--node")
        nodes = {args.node: nodes[args.node]}
    text = "\n".join(dryrun.ip_route_text(v, k) for k, v in nodes.items())
    _write(text, args.output)


def _known(plan: Plan, name: str, flag: str) -> None:
    if name in plan.get("down", ()):
        raise UsageError("%s: node '%s' is down (--down)" % (flag, name))
    if name not in plan["nodes"]:
        raise UsageError("%s: no node '%s' in %s" % (flag, name, plan["topology"]["source"]))


def _pairs(plan: Plan, args: argparse.Namespace) -> list[tuple[str, str]]:
    """The ordered (source, destination) pairs asked for: --all, or --from [--to]."""
    if args.all and args.dst:
        raise UsageError("--to goes with --from, not with --all")
    if args.all:
        return _every_pair(plan)
    _known(plan, args.src, "--from")
    if args.dst:
        _known(plan, args.dst, "--to")
        if [args.src, args.dst] in plan.get("partition", ()) or \
                [args.dst, args.src] in plan.get("partition", ()):
            raise UsageError("%s cannot reach %s: the live nodes are partitioned"
                             % (args.src, args.dst))
        return [(args.src, args.dst)]
    return [(a, b) for a, b in _every_pair(plan) if a == args.src]


def cmd_paths(args: argparse.Namespace) -> None:
    compiled, plan = _compile(args)
    pairs = _pairs(plan, args)
    if args.format == "json":
        out: dict[str, dict[str, Any]] = {}
        for a, b in pairs:
            out.setdefault(a, {})[b] = compiled.path(a, b)
        # One source keeps the flat {destination: hops} form.
        flat = out if args.all else out.get(args.src, {})
        _write(json.dumps(flat, indent=2) + "\n", args.output)
        return
    lines = []
    for a, b in pairs:
        for hops in compiled.path(a, b) or []:
            lines.append("%s -> %s (%d hop%s): %s" % (
                a, b, len(hops), "" if len(hops) == 1 else "s",
                " ".join(h["address"] for h in hops)))
    _write("\n".join(lines) + "\n", args.output)


def _plain(value: Any) -> str:
    """A metric value in words: dicts as 'key value, ...', empty lists as 'none'."""
    if isinstance(value, dict):
        return ", ".join("%s %s" % (k, _plain(v)) for k, v in value.items()) or "none"
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value) or "none"
    return str(value)


def _s(count: Any, word: str) -> str:
    return "%s %s%s" % (count, word, "" if count == 1 else "s")


def _hop_lines(hops: dict[str, int]) -> list[str]:
    """The hop histogram, one bar per hop count."""
    total = sum(hops.values()) or 1
    most = max(hops.values(), default=1) or 1
    return ["%-7s %6s pairs %5.1f%%  %s" % (_s(int(h), "hop"), n, 100.0 * n / total,
                                            "#" * max(1, round(30 * n / most)))
            for h, n in hops.items()]


def _named(key: str, value: Any) -> str:
    """'key words: value', with Mbit/s for keys ending in _mbit."""
    if key.endswith("_mbit"):
        return "%s: %s Mbit/s" % (key[:-5].replace("_", " "), _plain(value))
    return "%s: %s" % (key.replace("_", " "), _plain(value))


def _bisection_lines(b: dict[str, Any]) -> list[str]:
    rest = {k: v for k, v in b.items() if k not in (
        "crossing_mbit", "per_node_mbit", "link_mbit", "fraction_of_link", "method",
        "paper_closed_form", "structure_aligned_mbit", "search")}
    out = ["%s Mbit/s across the worst bisection found (%s)" % (b.get("crossing_mbit"), b.get("method")),
           "%s Mbit/s per node = %s of one %s Mbit/s link" % (
               b.get("per_node_mbit"), b.get("fraction_of_link"), b.get("link_mbit"))]
    if "paper_closed_form" in b:
        out.append("the papers' closed form (C/4)(L/(L-1)), whole groups on each side: %s of a link "
                   "per node" % b["paper_closed_form"])
    if "structure_aligned_mbit" in b:
        out.append("structure-aligned cuts (whole groups, mesh halves): %s Mbit/s"
                   % b["structure_aligned_mbit"])
    search = b.get("search")
    if isinstance(search, dict):
        out.append("local search (%s, %s starts, %s passes, %s gain evaluations%s): %s Mbit/s" % (
            search.get("method"), search.get("starts"), search.get("passes"), search.get("evaluations"),
            "; stopped by its budget (--bisection-budget)" if search.get("budget_spent") else "",
            search.get("crossing_mbit")))
    return out + [_named(k, v) for k, v in rest.items()]


RESILIENCE_ROWS = 20     # nodes listed in the text table, the worst first


def _resilience_lines(r: Mapping[str, Any]) -> list[str]:
    """Pairs of other nodes cut by each node's death: a summary, then the worst nodes."""
    if not r.get("computed"):
        return ["not computed: %s" % r.get("reason", "")]
    single, failover, risk = r["single_path"], r["failover"], r["failover_at_risk"]
    keys = ("single_path", "failover", "failover_at_risk")
    out = ["pairs of other nodes one dead node cuts, single path / failover (every branch "
           "cut) / failover at risk (some branch cut: the flow hash decides):",
           "max %s / %s / %s, mean %s / %s / %s" % (*(r["max"][k] for k in keys),
                                                    *(r["mean"][k] for k in keys))]
    worst = sorted(single, key=lambda v: (-single[v], -risk[v], -failover[v]))
    shown = [v for v in worst[:RESILIENCE_ROWS] if single[v] or risk[v]]
    if shown:
        width = max(len(v) for v in shown)
        out.append("%-*s  %11s  %8s  %7s" % (width, "node", "single path", "failover", "at risk"))
        out += ["%-*s  %11d  %8d  %7d" % (width, v, single[v], failover[v], risk[v]) for v in shown]
    if len(shown) < sum(1 for v in worst if single[v] or risk[v]):
        out.append("(the worst %d; --format json lists every node)" % len(shown))
    return out


FAILURE_KINDS = (("node", "node"), ("cable", "cable"), ("lan", "LAN"))


def _failures_lines(f: Mapping[str, Any]) -> list[str]:
    """Per kind of element: the worst and how many cut some pair, routed and static."""
    if not f:
        return []
    static = f.get("static", {})
    out = ["pairs of live nodes one failure cuts: routed (a routing daemon, converged)"
           + (" / static (the plan's preferred routes, until healed)"
              if static.get("computed") or "node" in static else "")]
    for key, label in FAILURE_KINDS:
        routed = f["routed"][key]
        line = "%-5s %6d: routed worst %s, %d cut some pair" % (
            label, routed["elements"], _worst(routed), routed["cutting"])
        if key in static:
            line += "; static worst %s, %d cut some pair" % (_worst(static[key]), static[key]["cutting"])
        out.append(line)
    for key, label in FAILURE_KINDS if "failover" in static else ():
        out.append("%-5s failover routes: every branch cut (for good) worst %s; some branch cut "
                   "(until the dead next hop is skipped) worst %s"
                   % (label, _worst(static["failover"][key]), _worst(static["disrupted"][key])))
    if not static.get("computed"):
        out.append("static %snot computed: %s" % ("cables and LANs " if "node" in static else "",
                                                  static.get("reason", "")))
    return out


def _worst(kind: Mapping[str, Any]) -> str:
    worst = kind.get("worst")
    return "%s (%d)" % (worst["name"], worst["pairs"]) if worst else "none"


def _latency_lines(lat: Mapping[str, Any]) -> list[str]:
    """The per-hop delays, then the pairs by path class (SC98's letters)."""
    out = ["one way: %s us per switch, %s us per cable, %s us per forwarding node%s" % (
        lat.get("switch_us"), lat.get("wire_us"), lat.get("forward_us"),
        " (model %s)" % lat["model"] if lat.get("model") else "")]
    classes = lat.get("classes")
    if classes is None:
        return out + ["path classes not walked (see notes)"]
    out.append("%-16s %7s  %12s  %s" % ("path", "pairs", "one way us", "e: end point, S: switch, "
                                        "H: hub, L: forwarding node"))
    for name, c in classes.items():
        lo, hi = c["one_way_us"], c["one_way_max_us"]
        out.append("%-16s %7d  %12s" % (name, c["pairs"], lo if lo == hi else "%s-%s" % (lo, hi)))
    return out


def _metric_rows(m: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """(label, lines) for every metric; keys without a layout of their own are
    listed under their own name, so nothing the compiler reports is left out."""
    rows = [
        ("size", ["%s, %s, %s, %s" % (_s(m.get("nodes"), "node"),
                                      _s(m.get("segments"), "LAN segment"),
                                      _s(m.get("links"), "point-to-point link"),
                                      _s(m.get("channels"), "bond channel"))]),
        ("pairs", ["%s ordered pairs, diameter %s" % (m.get("pairs"),
                                                      _s(m.get("diameter"), "hop"))]),
        ("hops", _hop_lines(m.get("hops", {}))),
        ("routes per node", [_plain(m.get("routes_per_node", {}))]),
        ("forwarding nodes", [str(m.get("forwarding_nodes"))]),
        ("gateway load", ["pairs forwarded per gateway: %s" % _plain(m.get("gateway_load", {}))]),
        ("bisection", _bisection_lines(m.get("bisection", {}))),
        ("resilience", _resilience_lines(m.get("resilience", {}))),
        ("single failures", _failures_lines(m.get("failures", {}))),
    ]
    if "latency" in m:
        rows.append(("latency", _latency_lines(m["latency"])))
    done = {"nodes", "segments", "links", "channels", "pairs", "diameter", "hops",
            "routes_per_node", "forwarding_nodes", "gateway_load", "bisection", "resilience",
            "latency", "failures"}
    for key, value in m.items():
        if key in done:
            continue
        if isinstance(value, dict):
            lines = [_named(k, v) for k, v in value.items()]
        elif isinstance(value, list):
            lines = [_plain(v) for v in value] or ["none"]
        else:
            lines = [_plain(value)]
        rows.append((key.replace("_", " "), lines))
    return rows


def metrics_text(name: str, metrics: Mapping[str, Any]) -> str:
    """The metrics as a two-column table for people."""
    out = ["metrics of %s" % name]
    for label, lines in _metric_rows(metrics):
        for k, line in enumerate(lines):
            out.append("  %-17s %s" % (label if k == 0 else "", line))
    return "\n".join(out) + "\n"


def _plan_file(path: str) -> Plan | None:
    """The plan in a plan.json file (None: the file is a topology, in any YAML style).
    The file passes the gate; every node plan is checked as the node module checks it,
    and the segments as diff reads them."""
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
    nodes = data.get("nodes") if isinstance(data, dict) else None
    fmt = data.get("beonet", {}).get("plan_format") if isinstance(data, dict) and \
        isinstance(data.get("beonet"), dict) else None
    if not isinstance(data, dict) or "beonet" not in data and "nodes" not in data:
        return None                            # JSON, but a topology (YAML's flow style)
    if not isinstance(nodes, dict) or not nodes or not isinstance(fmt, int) or isinstance(fmt, bool):
        raise UsageError("%s: not a plan.json (no beonet.plan_format and nodes)" % quoted(path))
    if len(nodes) > MAX_NODES:
        raise UsageError("%s: nodes: %d nodes, more than the %d a topology may have"
                         % (quoted(path), len(nodes), MAX_NODES))
    why = plan_format_problem(path, fmt)
    problems = ([why] if why else []) + diff.shape_problems(data)
    problems += [p for name, n in nodes.items() for p in plan_problems(name, n)]
    if problems:
        raise UsageError("%s: %s" % (quoted(path), "; ".join(problems[:5])
                                     + ("; and %d more" % (len(problems) - 5) if len(problems) > 5 else "")))
    return diff.with_defaults(data)


def _diff_side(path: str, args: argparse.Namespace) -> Plan:
    plan = _plan_file(path)
    if plan is not None:
        return plan
    return _compile(argparse.Namespace(**{**vars(args), "topology": path}))[1]


def cmd_diff(args: argparse.Namespace) -> int:
    """0: the plans are the same, 1: they differ (as diff(1)); errors exit 2 in main."""
    old = _diff_side(args.old, args)
    same_file = os.path.realpath(args.old) == os.path.realpath(args.new)
    found = diff.diff(old, old if same_file else _diff_side(args.new, args), args.examples)
    if args.format == "json":
        _write(json.dumps(found, indent=2) + "\n", args.output)
    else:
        _write(diff.text(found, args.old, args.new), args.output)
    return 0 if found["same"] else 1


def cmd_metrics(args: argparse.Namespace) -> None:
    compiled = _compiled(args)
    if args.format == "text":
        text = metrics_text("%s (%s)" % (compiled.graph.name, compiled.graph.family),
                            compiled.metrics)
    else:
        text = render.dumps(compiled.metrics, args.format)
    _write(text, args.output)


def cmd_graph(args: argparse.Namespace) -> None:
    if args.format not in drawing.IMAGES:
        compiled, plan = _compile(args)
        _write(drawing.GRAPHS[args.format](plan, cabling_sheet.sheet(compiled)), args.output)
        return
    dot_binary = drawing.graphviz()
    if dot_binary is None:
        raise UsageError("--format %s needs Graphviz's dot (apt-get install graphviz)"
                         % args.format)
    if args.format == "png" and (not args.output or args.output == "-"):
        raise UsageError("--format png is binary: give -o FILE.png")
    from .view import pinned
    compiled, plan = _compile(args)
    data = pinned.image(plan, args.format, dot_binary, cabling_sheet.sheet(compiled))
    _write(data.decode("utf-8") if args.format == "svg" else data, args.output)


def cmd_view(args: argparse.Namespace) -> None:
    from .view import command
    compiled, plan = _compile(args)
    _write(command.html(args, compiled, plan), args.output)


def cmd_export(args: argparse.Namespace) -> None:
    if args.format and args.what != "cabling":
        raise UsageError("--format goes with 'cabling' only")
    compiled, plan = _compile(args)
    if args.what == "cabling":
        sheet = cabling_sheet.sheet(compiled)
        _write(cabling.render(sheet, args.format or "md", build.title(plan),
                              cabling.physical_names(plan)), args.output)
        return
    if args.what in export.SLOTS_EXPORTS:
        _write(export.EXPORTS[args.what](plan, args.slots), args.output)
        return
    if args.slots != 1:
        raise UsageError("--slots goes with %s only" % ", ".join(sorted(export.SLOTS_EXPORTS)))
    _write(export.EXPORTS[args.what](plan), args.output)


def cmd_build(args: argparse.Namespace) -> None:
    try:
        plan, written = build.build(args.topology, args.output, args.backend,
                                    lambda graph: _physical(args, graph), down=args.down)
    except DownError as exc:
        raise UsageError("--down: " + "; ".join(p.message for p in exc.problems)) from None
    if "components" in plan:
        print("beonet: warning: " + warning(plan["down"], plan["components"]), file=sys.stderr)
    print("beonet: wrote %s and %s files of %d nodes to %s/"
          % (", ".join(written), args.backend, len(plan["nodes"]), args.output.rstrip("/")))


def _cabling_outputs(args: argparse.Namespace, hosts: list[str]) -> None:
    """Refuse (exit 2, nothing written) when any output of beonet cabling cannot be written."""
    from .cabling import match
    problems = ["%s %s: %s" % (flag, path, why) for flag, path in
                (("--report", args.report), ("-o", args.output)) if path and path != "-"
                for why in [output_problem(path)] if why]
    if args.host_vars:
        problems += ["--host-vars %s: %s" % (args.host_vars, why)
                     for why in match.host_vars_problems(args.host_vars, hosts)]
    if problems:
        raise UsageError("nothing written: " + "; ".join(problems))


def _cabling_hint(args: argparse.Namespace, nodes: list[str]) -> dict[str, dict[str, str]]:
    """The inventory's beonet_interfaces as a hint for matching; a warning for each
    value that is not a {logical: physical} mapping of interface names (ignored)."""
    from .cabling import match
    if not args.inventory:
        return {}
    hosts, problems = inventory.read_inventory(args.inventory)
    if problems:
        raise CompileError(problems.items)
    existing = {h: v[inventory.VAR] for h, v in hosts.items() if inventory.VAR in v}
    hint, warnings = match.mapping_hint(existing, nodes, args.inventory)
    for line in warnings:
        print("beonet cabling: warning: " + line, file=sys.stderr)
    return hint


def cmd_cabling(args: argparse.Namespace) -> None:
    """The discovered wiring matched to the plan: the NIC mapping, or the faults (exit 1).
    The discovery file is checked whole first (exit 2 with every problem), then
    that every output can be written (exit 2, nothing written)."""
    from .cabling import match, reports
    compiled = pipeline.compile_file(args.topology)
    nodes = [n.name for n in compiled.graph.nodes]
    found, problems = reports.load(args.discovered)
    if found is None:
        raise CompileError(problems.items)
    for host in sorted(set(found) - set(nodes)):
        print("beonet cabling: warning: %s: %s: not a node of the topology; its report is "
              "not used" % (args.discovered, host), file=sys.stderr)
    _cabling_outputs(args, nodes)
    result = match.match(compiled, found, existing=_cabling_hint(args, nodes))
    hidden = match.host_vars_clashes(args.host_vars, nodes) if args.host_vars and result.ok else []
    if hidden:
        raise UsageError("nothing written: Ansible stops reading host_vars/HOST.yml once "
                         "host_vars/HOST/ exists; move into its host's folder first: "
                         + ", ".join(hidden))
    try:
        if args.report:
            _write(match.report_text(compiled.graph.name, result), args.report)
        if result.faults:
            for fault in result.faults:
                print(str(fault), file=sys.stderr)
            print("beonet: %d cabling fault(s), no mapping written" % len(result.faults),
                  file=sys.stderr)
            sys.exit(1)
        if args.host_vars:
            match.write_host_vars(args.host_vars, result.mapping)
        _write(match.mapping_text(result.mapping), args.output)
    except (OSError, ValueError) as exc:
        raise UsageError(str(exc) if isinstance(exc, ValueError) else "cannot write %s: %s"
                         % (exc.filename, exc.strerror or exc)) from None


def cmd_benchmark_report(args: argparse.Namespace) -> None:
    """A benchmark results folder's summary.md, CSV tables and plots, again
    from its results.json (capacities worked out again with --topology). The
    file is checked first: nothing is written when it is bad."""
    from .benchmarks import report
    plan = _compile(args)[1] if args.topology else None
    try:
        _sched, res, title = report.render(args.folder, plan)
        written = ["results.json", "summary.md"] + ["%s.csv" % t for t in report.TABLES]
        try:
            from .benchmarks import plots
            written += plots.plot_all(args.folder, res, title)
        except ImportError as exc:
            print("beonet: no plots: %s (pip install -r requirements.txt)" % exc, file=sys.stderr)
    except OSError as exc:
        raise UsageError("cannot write %s: %s" % (quoted(str(exc.filename or args.folder)),
                                                  exc.strerror or exc)) from None
    _wrote(written, args.folder)


def cmd_latency_figure(args: argparse.Namespace) -> None:
    """SC98's latency by path class from two benchmark runs of one lab."""
    from .benchmarks import figures
    from .compiler import latency
    _results_folders(args.output, args.delays_on, args.delays_off)
    compiled = _compiled(args)
    fig = figures.latency(args.delays_on, args.delays_off,
                          lambda a, b: latency.pair_path(compiled.graph, compiled.proof, a, b))
    written = figures.write_latency(args.output, fig, compiled.graph.name)
    _wrote(written, args.output)


def cmd_exchange_figure(args: argparse.Namespace) -> None:
    """The papers' token exchange on 10 Mbit/s nets: a single net beside a
    routed mesh (mesh-figure) or a bonded dual net (bonded-figure)."""
    from .benchmarks import figures
    folders = {run: getattr(args, run) for _label, run, *_ in figures.EXCHANGES[args.figure].lines}
    _results_folders(args.output, *folders.values())
    fig = figures.exchange(args.figure, folders, args.proto)
    written = figures.write_exchange(args.output, fig, "10 Mbit/s nets")
    _wrote(written, args.output)


def _wrote(files: list[str], folder: str) -> None:
    from .agent.names import escaped
    print("beonet: wrote %s to %s/" % (", ".join(files), escaped(folder.rstrip("/"))))


def _results_folders(output: str, *folders: str) -> None:
    """-o of a figure: a folder of its own (not empty, not a file, not a results
    folder it reads, whose summary.md it would replace). The results folders
    themselves are checked where they are read (benchmarks.results_schema)."""
    if os.path.lexists(output) and not os.path.isdir(output):
        raise UsageError("-o %s is a file, not a folder" % shown(output))
    for folder in folders:
        if os.path.realpath(folder) == os.path.realpath(output):
            raise UsageError("-o %s is a results folder the figure reads; give a folder of its own"
                             % shown(output))


def cmd_schema(args: argparse.Namespace) -> None:
    _write(json.dumps(SCHEMA, indent=2) + "\n", args.output)


def cmd_lab(args):
    if args.action in ("fault", "link"):
        _lab_fault(args)
        return
    if args.action == "outage":
        _lab_outage(args)
        return
    if args.provider == "vm":
        from .labs import vm as vmlab
        try:
            node_images = vmlab.parse_node_images(args.node_images)
        except vmlab.LabError as exc:
            print("beonet lab (vm): %s" % exc, file=sys.stderr)
            sys.exit(2)
        code = vmlab.main([args.action, args.topology], args.name, image=args.image,
                          node_images=node_images)
        if code:
            sys.exit(code)
        return
    from .labs import docker as lab
    code = lab.main([args.action, args.topology], args.name, wiring=args.wiring,
                    miswire=args.miswire, seed=args.seed)
    if code:
        sys.exit(code)


def _lab_fault(args):
    """lab fault (and lab link, its older form for a VM NIC)."""
    from .labs import faults
    from .labs.base import LabError
    link, action = args.link, args.fault
    if args.action == "link":
        if args.provider != "vm" or not (args.node and args.nic and args.state):
            print("beonet lab: link needs --provider vm, --node, --nic and --state up|down "
                  "(or use lab fault --link NODE:NIC --down|--up, both labs)", file=sys.stderr)
            sys.exit(2)
        link, action = "%s:%s" % (args.node, args.nic), args.state
    try:
        if args.delays:
            print(faults.delays(args.topology, os.getcwd(), args.name, args.provider,
                                args.delays == "on"))
            return
        print(faults.fault(args.topology, os.getcwd(), args.name, args.provider,
                           node=None if link else args.node, link=link, action=action,
                           cable=args.cable, switch=args.switch))
    except LabError as exc:
        print("beonet lab: %s" % exc, file=sys.stderr)
        sys.exit(1)


def _lab_outage(args: argparse.Namespace) -> None:
    """lab outage: one failure measured on the Docker lab (labs/outage.py)."""
    from .labs import outage
    from .labs.base import LabError
    given = [(k, v) for k, v in (("node", args.node), ("cable", args.cable), ("switch", args.switch)) if v]
    try:
        if args.provider != "docker" or len(given) != 1:
            raise LabError("outage: the Docker lab, and one of --node, --cable or --switch")
        if not 1 <= args.window <= 600:          # NaN fails both
            raise LabError("outage: --window must be 1 to 600 seconds, not %s" % args.window)
        with contextlib.redirect_stdout(sys.stderr):      # the fault's own lines; stdout is the result's
            found = outage.measure(args.topology, os.getcwd(), args.name, given[0][0], given[0][1],
                                   args.window)
    except LabError as exc:
        print("beonet lab: %s" % exc, file=sys.stderr)
        sys.exit(1)
    print(outage.report(found, args.format_outage))


OUTPUT_HELP = "write the output to this file (atomically) instead of stdout"
DOWN_HELP = ("compile for the live nodes only: these nodes are dead (comma-separated). "
             "Addresses stay as in the full plan; routes avoid the dead nodes; live nodes "
             "that cannot reach each other are a warning, not an error")


def _commands(p: argparse.ArgumentParser) -> Any:
    """The sub-command table; returns add(name, func, help, ...) -> its sub-parser."""
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           help="one of the commands below; 'beonet COMMAND -h' for its options")

    def add(name: str, func: Any, help_: str, topology: bool = True, inv: bool = True,
            output: str = OUTPUT_HELP, need_output: bool = False,
            down: bool = True) -> argparse.ArgumentParser:
        s = sub.add_parser(name, help=help_, description=help_)
        if topology:
            s.add_argument("topology", help="topology YAML file")
            if down:
                s.add_argument("--down", metavar="NODE[,NODE...]", help=DOWN_HELP)
        if inv:
            s.add_argument("-i", "--inventory", help="Ansible inventory mapping NIC names "
                           "(host variable beonet_interfaces)")
        s.add_argument("-o", "--output", required=need_output, help=output)
        s.set_defaults(func=func, output_folder=need_output)
        return s
    return add


def _inspect_commands(add: Any) -> None:
    """compile, routes, paths and metrics."""
    s = add("compile", cmd_compile, "print the plan: every node's NICs, addresses, bonds, "
            "forwarding and routes, the segments and the metrics")
    s.add_argument("--format", choices=["json", "yaml"], default="json",
                   help="output format (default json)")
    s.add_argument("--paths", action="store_true", help="include every pair's expected hops")
    s = add("routes", cmd_routes, "dry run: each node's addresses, bonds, forwarding, routes")
    s.add_argument("--node", help="only this node")
    s = add("paths", cmd_paths, "expected `traceroute -n` hop lists from one node (--from), "
            "between two (--from, --to) or for every ordered pair (--all)")
    which = s.add_mutually_exclusive_group(required=True)
    which.add_argument("--from", dest="src", metavar="NODE", help="source node")
    which.add_argument("--all", action="store_true", help="every ordered pair of nodes")
    s.add_argument("--to", dest="dst", metavar="NODE",
                   help="destination node (with --from; default: every other node)")
    s.add_argument("--format", choices=["text", "json"], default="text",
                   help="text: one line per allowed hop list of a pair, the preferred "
                   "first (default); json: {destination: [hops, ...]}, with --all "
                   "{source: {destination: [hops, ...]}}")
    s = add("metrics", cmd_metrics, "size, hop histogram, routes per node, gateway load, "
            "bisection, resilience, single failures", inv=False)
    s.add_argument("--format", choices=["text", "json", "yaml"], default="text",
                   help="text: a table to read (default); json or yaml: the plan's metrics object")
    s.add_argument("--resilience", action="store_true",
                   help="compute the resilience table and the static single failures of "
                   "cables and LANs even where they cost more than their steps (%s and %s) "
                   "(where routes towards a destination differ from node to node, as in "
                   "large 3D meshes: about 14 s for 16x16x16 with failover routes)"
                   % (format(RESILIENCE_STEPS, ","), format(STATIC_STEPS, ",")))
    s.add_argument("--bisection-budget", type=_count(0, 10 ** 9), metavar="N",
                   help="gain evaluations the worst bisection's local search may take (default "
                   "%s, about 7 microseconds each; 0: until no pass gains): a larger budget "
                   "can find a cheaper cut on clusters of thousands of nodes"
                   % format(BISECTION_EVALUATIONS, ","))
    s = add("diff", cmd_diff, "what a change of the plan does: nodes added and removed, what "
            "changes on each node (NICs, addresses, forwarding, routes), addresses renumbered, "
            "pairs whose path changes; exit 0: the same, 1: they differ, 2: an error",
            topology=False)
    s.add_argument("old", help="the plan now: a topology YAML file or a plan.json (beonet build)")
    s.add_argument("new", help="the plan to push: a topology YAML file or a plan.json")
    s.add_argument("--format", choices=["text", "json"], default="text",
                   help="text: to read (default); json: nodes_added, nodes_removed, nodes_changed, "
                   "renumbered, paths_changed, same")
    s.add_argument("--examples", type=_count(0, 100000), default=diff.EXAMPLES, metavar="N",
                   help="pairs whose path changes shown (default %d)" % diff.EXAMPLES)


MAX_SLOTS = 65536        # processes per node in a hostfile: far beyond any node's cores


def _count(lo: int, hi: int) -> Any:
    """An argparse type: a whole number from lo to hi."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = lo - 1
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError("a whole number from %d to %d, not %s"
                                             % (lo, hi, shown(text)))
        return value
    return parse


def _output_commands(add: Any) -> None:
    """graph, export and build."""
    s = add("graph", cmd_graph, "drawing of the topology: Graphviz dot text, Mermaid, or "
            "an SVG or PNG picture rendered by Graphviz's dot")
    s.add_argument("--format", choices=sorted(drawing.GRAPHS) + list(drawing.IMAGES),
                   default="dot", help="dot (default) or mermaid text; svg or png need "
                   "Graphviz's dot program, png also -o")
    s = add("view", cmd_view, "one self-contained HTML page of the cluster: the layout of the "
            "papers' figures, each node's plan, the proven paths of two nodes, what a failure "
            "cuts, and overlays of verify, discovery and benchmark files",
            output="the HTML file to write", need_output=True)
    s.set_defaults(output_folder=False)
    s.add_argument("--verify", metavar="REPORT", help="the beonet_verify_live result of "
                   "playbooks/verify.yml saved as JSON: dead nodes, mismatched pairs")
    s.add_argument("--discovered", metavar="FILE.json", help="discovery reports {host: report} "
                   "(playbooks/discover.yml): miswired cables and their fixes")
    s.add_argument("--results", metavar="DIR", help="a benchmark results folder: load per link")
    s = add("export", cmd_export, "/etc/hosts lines, Slurm's node lines, topology.conf or "
            "topology.yaml, MPI hostfiles, the MPI stacks' network settings or the cabling sheet")
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
    s.add_argument("--slots", type=_count(1, MAX_SLOTS), default=1,
                   help="hostfile, mpich-hosts: processes (slots) per node; slurm-nodes: "
                   "CPUs per node (default 1, "
                   "at most %d)" % MAX_SLOTS)
    s.add_argument("--format", choices=cabling.FORMATS,
                   help="cabling: md (Markdown tables, default), csv (one row per cable) "
                   "or json")
    s = add("build", cmd_build, "write plan.json, routes.txt, hosts, topology.conf, "
            "topology.yaml, slurm-nodes.conf, the MPI files (hostfile, mpich.hosts, mpich.env, "
            "openmpi-mca-params.conf, prte-mca-params.conf), the cabling sheet (cabling.md, "
            ".csv, .json) and each node's persistent files (nodes/NODE/etc/...) into the "
            "folder given by -o; nothing is written if the topology has errors",
            output="folder to write into (created if missing; files in it are replaced)",
            need_output=True)
    s.add_argument("--backend", choices=["networkd", "networkmanager"], default="networkd",
                   help="persistent configuration files to render (default networkd)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="beonet", description="Compile a cluster network "
                                "topology into per-node plans, dry runs and exports.")
    p.add_argument("--version", action="version", version="beonet " + __version__,
                   help="print the version and exit")
    add = _commands(p)
    _inspect_commands(add)
    _output_commands(add)
    s = add("lab", cmd_lab, "bring the embedded Docker lab (or, with --provider vm, the "
            "QEMU VM lab) of a topology up or down", topology=False, inv=False)
    s.add_argument("action", choices=["up", "down", "image", "fault", "link", "outage"],
                   help="image: print the node image the Docker lab of the topology needs, as "
                   "the argument of scripts/build-image.sh (node, frr or mpi); fault: stop "
                   "or start a node, cut or restore a NIC's link, a cable or a switch "
                   "(--node N --stop|--start, --link NODE:NIC, --cable NODE:NIC or "
                   "--switch NAME with --down|--up; alone: what is down); link: a VM NIC's "
                   "link (--provider vm --node --nic --state); outage: one failure (--node, "
                   "--cable or --switch) made and measured on the Docker lab, then undone")
    s.add_argument("topology", help="topology YAML file")
    s.add_argument("--name", help="lab name: container prefix and .lab/NAME/ state folder "
                   "(default beonet-<topology file name>); lets labs of one topology coexist; "
                   "down and link work from the state folder (the file need not exist)")
    s.add_argument("--provider", choices=["docker", "vm"], default="docker",
                   help="docker: containers (shared kernel, no bonding); vm: QEMU VMs "
                   "with their own Debian kernel (scripts/build-vm-image.sh first)")
    s.add_argument("--image", choices=VM_IMAGES, default="networkd",
                   help="vm: base image of every VM, named after the network manager it "
                   "boots with (default networkd)")
    s.add_argument("--node-images", metavar="NODE=IMAGE,...", help="vm: nodes booted from "
                   "another image than --image (the node role detects its manager)")
    s.add_argument("--node", help="fault, link: the node")
    what = s.add_mutually_exclusive_group()
    for flag, help_ in (("stop", "fault --node: stop it as if its power were cut"),
                        ("start", "fault --node: start it again"),
                        ("down", "fault --link, --cable, --switch: cut it (carrier loss)"),
                        ("up", "fault --link, --cable, --switch: restore it")):
        what.add_argument("--" + flag, dest="fault", action="store_const", const=flag, help=help_)
    s.add_argument("--link", metavar="NODE:NIC", help="fault: a node's NIC (the plan's name, "
                   "eth1, ...): that NIC loses carrier")
    s.add_argument("--cable", metavar="NODE:NIC", help="fault: the cable at a node's NIC: both "
                   "ends of a point-to-point link lose carrier, on a LAN only that NIC")
    s.add_argument("--switch", metavar="NAME", help="fault: a segment or switch as the plan "
                   "names it (a tree's leaf switch, a bonded LAN): every NIC on it loses carrier")
    s.add_argument("--window", type=float, default=10.0, metavar="SECONDS",
                   help="outage: seconds the probes run after the failure (default 10)")
    s.add_argument("--outage-format", dest="format_outage", choices=["text", "json"], default="text",
                   help="outage: one line (default) or the JSON with every probed pair")
    s.add_argument("--nic", help="link: the plan NIC (eth1, ...) or mgmt")
    s.add_argument("--state", choices=["up", "down"], help="link: new link state")
    s.add_argument("--delays", choices=["on", "off"], help="fault, vm: the topology's per-hop "
                   "delays (latency) off in every VM, or on again")
    s.add_argument("--wiring", choices=["plan", "scrambled"], default="plan",
                   help="docker: plan (default): NICs named and mapped as planned; scrambled: "
                   "as on a new cluster (realistic names, random order, spare NICs, no "
                   "mapping in the inventory; the truth in .lab/NAME/wiring.json)")
    s.add_argument("--miswire", type=_count(0, 10_000), default=0, metavar="N",
                   help="docker, scrambled: move N cables (point-to-point to a wrong node, "
                   "switch to another segment's switch)")
    s.add_argument("--seed", type=int, default=0, help="docker, scrambled: seed of the "
                   "names, order, spares and moved cables (default 0)")
    s = add("cabling", cmd_cabling, "match the discovered wiring to the plan: print each "
            "host's beonet_interfaces as YAML, or every cabling fault (exit 1)", down=False)
    s.add_argument("--discovered", required=True, metavar="FILE.json",
                   help="discovery reports {host: report} (playbooks/discover.yml writes them)")
    s.add_argument("--host-vars", metavar="DIR", help="also write DIR/HOST/beonet_interfaces.yml")
    s.add_argument("--report", metavar="FILE", help="write the Markdown cabling report")
    add("schema", cmd_schema, "print the topology JSON Schema", topology=False, inv=False)
    s = add("benchmark-report", cmd_benchmark_report, "write a benchmark results folder's "
            "summary.md, CSV tables and plots again from its results.json (no node is "
            "touched)", topology=False, output=argparse.SUPPRESS)
    s.add_argument("folder", help="results/<topology>/<timestamp>/ of playbooks/benchmark.yml")
    s.add_argument("--topology", help="the topology YAML of the run: work out each set of "
                   "pairs' capacity again from its plan (the file's own are kept without it)")
    s = add("latency-figure", cmd_latency_figure, "SC98's latency by path class (Table 1) "
            "beside two benchmark runs of one lab, with its per-hop delays on and off: "
            "summary.md, figure.json, latency.svg", inv=False, down=False,
            output="the folder to write to", need_output=True)
    s.add_argument("--delays-on", required=True, metavar="FOLDER",
                   help="results folder of the run with the delays on")
    s.add_argument("--delays-off", required=True, metavar="FOLDER",
                   help="results folder of the run with the delays off")
    for name, other, words in (
            ("mesh", "routed mesh", "the 1996 paper's token exchange on 10 Mbit/s nets (its "
             "Figure 7): a single shared net beside a routed mesh's local and remote pairs"),
            ("bonded", "bonded dual net", "the 1995/1996 papers' token exchange on the "
             "channel-bonded dual net of 10 Mbit/s (1995 Figure 1): one channel beside two")):
        s = add(name + "-figure", cmd_exchange_figure, words + ", from two benchmark runs: "
                "summary.md, figure.json, token-exchange.svg", topology=False, inv=False,
                output="the folder to write to", need_output=True)
        s.set_defaults(figure=name)
        s.add_argument("--single", required=True, metavar="FOLDER",
                       help="results folder of the single net's run")
        s.add_argument("--" + name, required=True, metavar="FOLDER",
                       help="results folder of the %s's run" % other)
        s.add_argument("--proto", choices=["udp", "tcp"], default="udp",
                       help="the token exchange's protocol (default udp, as in the papers)")
    return p


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


def _refused_arguments(args: argparse.Namespace) -> str | None:
    """What no command takes: an empty value (-o '' would write into the working
    folder), a NUL byte (no file or node name holds one), '-' for a folder, an
    output name too long to make, an output that is one of the command's inputs
    or lies inside an input folder."""
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


def main(argv: list[str] | None = None) -> int:
    """Run one command; 0 on success, 2 on input or usage errors (argparse's too)."""
    # A compile holds millions of small objects and makes no reference cycles worth
    # collecting: the cyclic collector would walk them all again and again (a
    # third of the time of a large build) for nothing a short-lived command needs.
    gc.disable()
    args = parser().parse_args(argv)
    refused = _refused_arguments(args)
    if refused:
        print("beonet %s: %s" % (args.command, refused), file=sys.stderr)
        return EXIT_INPUT
    try:
        with pipeline.progress(sys.stderr):
            code = args.func(args)
    except CompileError as exc:
        for p in exc.problems:
            print(str(p), file=sys.stderr)
        n = len(exc.problems)
        print("beonet: %d error%s, nothing written" % (n, "" if n == 1 else "s"), file=sys.stderr)
        return EXIT_INPUT
    except UsageError as exc:
        print("beonet %s: %s" % (args.command, exc), file=sys.stderr)
        return EXIT_INPUT
    except drawing.DrawingError as exc:
        print("beonet %s: %s" % (args.command, exc), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("beonet %s: interrupted, nothing more written" % args.command, file=sys.stderr)
        return 130
    except OSError as exc:               # the output could not be written
        print("beonet %s: cannot write %s: %s" % (
            args.command, quoted(str(exc.filename or getattr(args, "output", None) or "the output")),
            exc.strerror or exc), file=sys.stderr)
        return EXIT_INPUT
    return code if isinstance(code, int) else 0


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


if __name__ == "__main__":
    run()
