"""cabling: the discovered wiring matched to the plan."""

from __future__ import annotations

import argparse
import sys

from .common import UsageError, options, write


def _outputs(args: argparse.Namespace, hosts: list[str]) -> None:
    """Refuse (exit 2, nothing written) when any output of beonet cabling cannot be written."""
    from ..agent.files import output_problem
    from ..cabling import match
    problems = ["%s %s: %s" % (flag, path, why) for flag, path in
                (("--report", args.report), ("-o", args.output)) if path and path != "-"
                for why in [output_problem(path)] if why]
    if args.host_vars:
        problems += ["--host-vars %s: %s" % (args.host_vars, why)
                     for why in match.host_vars_problems(args.host_vars, hosts)]
    if problems:
        raise UsageError("nothing written: " + "; ".join(problems))


def _hint(args: argparse.Namespace, nodes: list[str]) -> dict[str, dict[str, str]]:
    """The inventory's beonet_interfaces as a hint for matching; a warning for each
    value that is not a {logical: physical} mapping of interface names (ignored)."""
    from ..cabling import match
    from ..compiler.errors import CompileError
    from ..outputs import inventory
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


def cmd_cabling(args: argparse.Namespace) -> int | None:
    """The discovered wiring matched to the plan: the NIC mapping, or the faults (exit 1).
    The discovery file is checked whole first (exit 2 with every problem), then
    that every output can be written (exit 2, nothing written)."""
    from ..cabling import match, reports
    from ..compiler import pipeline
    from ..compiler.errors import CompileError
    compiled = pipeline.compile_file(args.topology)
    nodes = [n.name for n in compiled.graph.nodes]
    found, problems = reports.load(args.discovered)
    if found is None:
        raise CompileError(problems.items)
    for host in sorted(set(found) - set(nodes)):
        print("beonet cabling: warning: %s: %s: not a node of the topology; its report is "
              "not used" % (args.discovered, host), file=sys.stderr)
    _outputs(args, nodes)
    result = match.match(compiled, found, existing=_hint(args, nodes))
    hidden = match.host_vars_clashes(args.host_vars, nodes) if args.host_vars and result.ok else []
    if hidden:
        raise UsageError("nothing written: Ansible stops reading host_vars/HOST.yml once "
                         "host_vars/HOST/ exists; move into its host's folder first: "
                         + ", ".join(hidden))
    try:
        if args.report:
            write(match.report_text(compiled.graph.name, result), args.report)
        if result.faults:
            for fault in result.faults:
                print(str(fault), file=sys.stderr)
            print("beonet: %d cabling fault(s), no mapping written" % len(result.faults),
                  file=sys.stderr)
            return 1
        if args.host_vars:
            match.write_host_vars(args.host_vars, result.mapping)
        write(match.mapping_text(result.mapping), args.output)
    except (OSError, ValueError) as exc:
        raise UsageError(str(exc) if isinstance(exc, ValueError) else "cannot write %s: %s"
                         % (exc.filename, exc.strerror or exc)) from None
    return None


def populate(_name: str, s: argparse.ArgumentParser) -> None:
    options(s, cmd_cabling, down=False)
    s.add_argument("--discovered", required=True, metavar="FILE.json",
                   help="discovery reports {host: report} (playbooks/discover.yml writes them)")
    s.add_argument("--host-vars", metavar="DIR", help="also write DIR/HOST/beonet_interfaces.yml")
    s.add_argument("--report", metavar="FILE", help="write the Markdown cabling report")
