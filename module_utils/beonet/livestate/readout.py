"""verify.yml on the controller: each node's one ``raw`` command (agent/readout.py)
built from the plan and the pairs it traces, and its output read back into the
state the proof walks and the result the diagnosis sorts."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from ..agent import diagnose, readout, verify
from ..agent.nodeplan import NodePlan
from ..gate import node as sent
from . import proof, report, tables

MODES = ("live", "traceroute")


def traced(plan: Mapping[str, Any], mode: str, sample: Mapping[str, Any], paths: Mapping[str, Any],
           max_targets: int) -> dict[str, dict[str, Any]]:
    """{source: {destination: allowed hop lists}} each node traces: the live sample,
    or (traceroute) every pair of the plan's paths, above max_targets destinations a
    sample of them fixed by the source's name."""
    if mode == "live":
        return {n: dict(sample.get(n, {})) for n in plan["nodes"]}
    out = {}
    for n in plan["nodes"]:
        mine = paths.get(n, {})
        names = list(mine)
        if len(names) > max_targets:
            random.Random(n).shuffle(names)
            names = names[:max_targets]
        out[n] = {d: mine[d] for d in names}
    return out


def pick(plan: Mapping[str, Any], prefixes: list[str], mode: str, paths: Mapping[str, Any],
         max_targets: int, settle: float = 3.0) -> dict[str, Any]:
    """What verify.yml needs before it reads the nodes: the sample (live), what each node
    traces (``expected``) and each node's raw command (``commands``)."""
    result = proof.plan_sample(plan, prefixes) if mode == "live" else {}
    expected = traced(plan, mode, result.get("sample", {}), paths, max(0, max_targets))
    result.update(expected=expected, commands=commands(plan, expected, max(0.0, settle)))
    return result


def _targets(plan: Mapping[str, Any], expected: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(destination, address) in the order the command traces them."""
    return [(d, plan["nodes"][d]["address"]) for d in sorted(expected) if d in plan["nodes"]]


def commands(plan: Mapping[str, Any], expected: Mapping[str, Mapping[str, Any]],
             settle: float) -> dict[str, str]:
    """{node: its raw command}."""
    out = {}
    for n, node in plan["nodes"].items():
        mine = expected.get(n, {})
        hops_max = verify.longest_path(dict(mine)) + 2
        targets = [(addr, hops_max, verify.allowed_paths(mine[d])) for d, addr in _targets(plan, mine)]
        out[n] = readout.read_command(node, targets, settle)
    return out


def judge(plan: Mapping[str, Any], prefixes: list[str], outputs: Mapping[str, str],
          expected: Mapping[str, Mapping[str, Any]], unreachable: list[str], keep: int,
          live: bool) -> dict[str, Any]:
    """The proof of every pair from the states (live), and every node's traces and checks
    sorted by the diagnosis (``traced``). A trace is judged against the plan's hop lists
    and (live) the ones the live tables the proof walked allow: the proof compares those
    tables with the plan, the trace the packets with the tables."""
    start = time.monotonic()
    nodes: dict[str, NodePlan] = plan["nodes"]
    states: dict[str, Any] = {}
    outs: dict[str, readout.Output] = {}
    refused: dict[str, list[str]] = {}
    for name, text in outputs.items():
        if name in nodes and isinstance(text, str):
            outs[name] = readout.parse_output(text) if len(text) <= sent.MAX_OUTPUT else readout.Output()
            refused[name] = sent.screen(name, text, outs[name].commands, nodes[name])
            states[name] = readout.state_of_output(outs[name])
    result: dict[str, Any] = {}
    allowed = {name: dict(expected.get(name, {})) for name in outs}
    if live:
        result, net = proof.prove_live(plan, prefixes, states, keep, False)
        allowed = allowed_by_tables(net, allowed)
    results = {name: readout.node_result(name, nodes[name], out, _targets(plan, allowed[name]), allowed[name])
               for name, out in outs.items()}
    for name, problems in refused.items():
        results[name]["problems"][:0] = problems
    result["traced"] = summarise(results, unreachable, nodes, time.monotonic() - start)
    return result


def allowed_by_tables(net: tables.Net, expected: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each traced pair's plan hop lists and, after them, the live tables' others."""
    index = {name: i for i, name in enumerate(net.names)}
    skel = tables.skeleton(net.names, net.address)
    out: dict[str, dict[str, Any]] = {}
    for name, mine in expected.items():
        out[name] = {}
        for dest, want in mine.items():
            lists = verify.allowed_paths(want)
            if name in index and dest in index:
                more = report.live_allowed(net, skel, index[name], index[dest])
                lists += [b for b in more if b not in lists]
            out[name][dest] = lists
    return out


def summarise(results: Mapping[str, dict[str, Any]], unreachable: list[str], nodes: Mapping[str, NodePlan],
              seconds: float) -> dict[str, Any]:
    """Every node's traces and checks, sorted by the diagnosis (the module's ``traced``)."""
    diagnosis = diagnose.summarise(results, unreachable, nodes)
    problems = [p for n in sorted(results) for p in results[n]["problems"]]
    return {"checked": sum(r["checked"] for r in results.values()),
            "mismatches": [row for n in sorted(results) for row in results[n]["mismatches"]],
            "problems": problems, "summary": diagnosis["lines"] + report.problem_lines(problems),
            "dead": diagnosis["dead"], "seconds": round(seconds, 3)}
