"""verify.yml on the controller: each node's one ``raw`` command (agent/readout.py)
built from the plan and the pairs it traces, and its output read back into the
state the proof walks and the result the diagnosis sorts. With IPv6 each node
also traces IPv6 pairs (the destination keyed by verify.target_key), their
allowed hop lists from the plan's IPv6 tables, and its IPv6 routes are compared
with its plan's."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from ..agent import collect, diagnose, readout, verify
from ..agent.nodeplan import NodePlan
from ..gate import node as sent
from . import linklocal, proof, report, state, tables
from .family import V4, V6

MODES = ("live", "traceroute")


def traced(plan: Mapping[str, Any], mode: str, sample: Mapping[str, Any], paths: Mapping[str, Any],
           max_targets: int, six: tables.Net | None = None) -> dict[str, dict[str, Any]]:
    """{source: {destination: allowed hop lists}} each node traces: the live sample,
    or (traceroute) every pair of the plan's paths, above max_targets destinations a
    sample of them fixed by the source's name; six (the plan's IPv6 tables): the
    same destinations (of an IPv6-only plan: every other node's) over IPv6 too."""
    if mode == "live":
        return {n: dict(sample.get(n, {})) for n in plan["nodes"]}
    index = {name: i for i, name in enumerate(six.names)} if six is not None else {}
    out = {}
    for n in plan["nodes"]:
        four = "address" in plan["nodes"][n]
        mine = paths.get(n, {}) if four else dict.fromkeys(p for p in plan["nodes"] if p != n)
        names = list(mine)
        if len(names) > max_targets:
            random.Random(n).shuffle(names)
            names = names[:max_targets]
        out[n] = {d: mine[d] for d in names} if four else {}
        if six is not None:
            s = index[n]
            out[n].update((verify.target_key(d, True), report.expected(six, six.tables, s, index[d]))
                          for d in names if d in index and d != n)
    return out


def pick(plan: Mapping[str, Any], prefixes: list[str], mode: str, paths: Mapping[str, Any],
         max_targets: int, settle: float = 3.0) -> dict[str, Any]:
    """What verify.yml needs before it reads the nodes: the sample (live), what each node
    traces (``expected``) and each node's raw command (``commands``)."""
    result = proof.plan_sample(plan, prefixes) if mode == "live" else {}
    six = None
    if mode != "live" and V6 in proof.families(proof._plan_nodes(plan)):
        six = proof.planned_net(plan, prefixes, V6)
    expected = traced(plan, mode, result.get("sample", {}), paths, max(0, max_targets), six)
    result.update(expected=expected, commands=commands(plan, expected, max(0.0, settle)))
    return result


def _targets(plan: Mapping[str, Any], expected: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(target key, address) in the order the command traces them (an IPv6 target: its
    node's address6)."""
    out = []
    for key in sorted(expected):
        node = plan["nodes"].get(verify.target_node(key))
        address = None if node is None else node.get("address6" if key.endswith(verify.SIX) else "address")
        if address is not None:
            out.append((key, address))
    return out


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
    nets: dict[str, tables.Net] = {}
    if live:
        result, nets = proof.prove_live(plan, prefixes, states, keep, False)
        allowed = allowed_by_tables(nets, allowed)
    results = {name: readout.node_result(name, nodes[name], out, _targets(plan, allowed[name]), allowed[name])
               for name, out in outs.items()}
    for name, problems in refused.items():
        results[name]["problems"][:0] = problems
    gateways = Gateways6(list(nodes), states, nets.get(V6.name))
    for name, out in outs.items():
        if "address6" in nodes[name]:
            results[name]["problems"] += routes6_problems(name, nodes[name], out, gateways)
    result["traced"] = summarise(results, unreachable, nodes, time.monotonic() - start)
    return result


class Gateways6:
    """The global address on the link of the node holding a link-local next hop (OSPFv3's
    routes name their next hops so; the plan names the neighbour's global address)."""

    def __init__(self, names: list[str], raw: Mapping[str, Any], net: tables.Net | None) -> None:
        self.index = {name: i for i, name in enumerate(names)}
        walked = list(net.states) if net is not None else [None] * len(names)
        self.states = [st if st is not None else _six(n, raw.get(n)) for n, st in zip(names, walked)]
        self.held = linklocal.holders(self.states)

    def name(self, node: str, via: Any, dev: Any) -> Any:
        """via as the plan would name it (itself when it is not a link-local address that
        one node on the link holds)."""
        addr = V6.parse(via) if isinstance(via, str) else None
        if addr is None or not linklocal.is_link_local(addr) or node not in self.index:
            return via
        found = linklocal.resolve(self.states, self.held, self.index[node], str(dev), addr)
        return via if isinstance(found, str) else V6.text(found[2])


def _six(name: str, raw: Any) -> state.NodeState | None:
    """A node's parsed IPv6 state (None: it sent none usable)."""
    try:
        return state.parse(name, raw).six if raw is not None else None
    except state.StateError:
        return None


def routes6_problems(name: str, n: NodePlan, out: readout.Output, gateways: Gateways6) -> list[str]:
    """The node's IPv6 routes against its plan's (the IPv4 ones are compared by
    readout.node_result): a route missing or not in the plan, or why they are unread.
    A link-local next hop counts as the global address its holder has on the link."""
    rc, text, err = out.commands.get("routes6", (127, "", "no IPv6 routes printed"))
    errors: list[str] = []
    routes = collect.needed(lambda _argv: (rc, text, err), dict(collect.COMMANDS)["routes6"], errors)
    if not isinstance(routes, list):
        return [verify.routes_unread(name, errors, True)]
    listed = [_as_listed(r, lambda via, dev: gateways.name(name, via, dev))
              for r in collect.reduce_routes(routes, 6)]
    return verify.route_problems(name, n, listed, True)[0]


def _as_listed(r: dict[str, Any], via: Any = lambda v, _d: v) -> dict[str, Any]:
    """A reduced route (collect.reduce_routes: its destination with its length, one
    multipath route for its siblings) as ``ip -j route`` lists one (via: how a next hop
    is named, given its address and device)."""
    hops = [{"gateway": via(h.get("via"), h.get("dev")), "dev": h.get("dev")} for h in r["hops"]]
    out: dict[str, Any] = {"dst": r["dst"], "prefsrc": r.get("src")}
    if len(hops) == 1:
        out.update(hops[0])
    elif hops:
        out["nexthops"] = hops
    return out


def allowed_by_tables(nets: Mapping[str, tables.Net],
                      expected: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each traced pair's plan hop lists and, after them, the live tables' others (of
    the pair's family)."""
    out: dict[str, dict[str, Any]] = {}
    index = {name: i for net in nets.values() for i, name in enumerate(net.names)}
    for name, mine in expected.items():
        out[name] = {}
        for key, want in mine.items():
            lists = verify.allowed_paths(want)
            net = nets.get((V6 if key.endswith(verify.SIX) else V4).name)
            dest = verify.target_node(key)
            if net is not None and name in index and dest in index:
                more = report.live_allowed(net, index[name], index[dest])
                lists += [b for b in more if b not in lists]
            out[name][key] = lists
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
