"""The live-state proof from end to end: the plan and the nodes' states in, the
findings, the state problems, the summary and the traceroute sample out (what
the beonet_verify_live module returns)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..agent.collect import COMMANDS
from ..agent.names import escaped
from ..agent.nodeplan import NodePlan
from ..compiler.model import ip_int
from . import report, state, tables
from .nft import refused_text
from .sample import sample
from .synthetic import plan_state
from .walk import LiveWalk, Tally

MAX_NODES = 100_000


class PlanError(Exception):
    """A plan the proof cannot read (the message says where)."""


def _plan_nodes(plan: Any) -> dict[str, NodePlan]:
    nodes = plan.get("nodes") if isinstance(plan, dict) else None
    if not isinstance(nodes, dict) or not nodes or len(nodes) > MAX_NODES:
        raise PlanError("plan.nodes: must be a mapping of 1 to %d nodes (beonet_plan_result.plan)"
                        % MAX_NODES)
    return nodes


class _States:
    """The nodes' states: live (None: none to judge from), planned, the problems, and the
    nodes whose state could not be read."""

    def __init__(self) -> None:
        self.live: list[state.NodeState | None] = []
        self.planned: list[state.NodeState] = []
        self.problems: list[str] = []
        self.unread: set[int] = set()


def unreadable(name: str, st: state.NodeState) -> str:
    """The one problem of a node whose state could not be read: what failed, and what to do."""
    commands = dict(COMMANDS)
    why = [e for e in st.errors if any(e.startswith((key + ":", " ".join(commands[key]) + ":"))
                                       for key in st.unread)]
    why = [e for e in why if not e.endswith(": no usable output")] or why
    return ("%s: state unreadable: could not read its %s (%s); its pairs are not proven, run verify again"
            % (name, ", ".join(st.unread), "; ".join(why[:4]) or "no reason given"))


def _states(names: list[str], plan_nodes: dict[str, NodePlan], prefixes: list[str],
            raw: Mapping[str, Any]) -> _States:
    """The states: a node that sent nothing, or nothing usable, has no live state (dead);
    one that could not read what decides its forwarding has none either (unread)."""
    out = _States()
    out.problems = ["states.%s: not a node of the plan" % escaped(str(k)) for k in raw if k not in plan_nodes]
    live, planned, problems = out.live, out.planned, out.problems
    for name in names:
        try:
            planned.append(state.parse(name, plan_state(plan_nodes[name], prefixes)))
        except (state.StateError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PlanError("plan.nodes.%s: cannot be read as a node's plan (%s)"
                            % (escaped(name), exc)) from None
        got = raw.get(name)
        if got is None:
            live.append(None)
            continue
        try:
            st = state.parse(name, got)
        except state.StateError as exc:
            problems.append("%s (its pairs count as to or from a dead node)" % exc)
            live.append(None)
            continue
        if st.unread:
            out.unread.add(len(live))
            problems.append(unreadable(name, st))
        live.append(None if st.unread else st)
    return out


def _components(names: list[str], plan: Mapping[str, Any]) -> list[int]:
    """node -> its connected component (the plan's ``components`` of a heal plan)."""
    parts = plan.get("components") or [names]
    where = {name: k for k, part in enumerate(parts) if isinstance(part, list) for name in part}
    return [where.get(name, -1 - i) for i, name in enumerate(names)]


def _fallback(n: NodePlan) -> list[int]:
    return [ip_int(a.split("/")[0]) for i in n["interfaces"] for a in i["addresses"]]


def prove(plan: Mapping[str, Any], prefixes: list[str], raw: Mapping[str, Any],
          keep: int = 100, traceroute_sample: bool = True) -> dict[str, Any]:
    """Every ordered pair of the plan walked through the live tables (walk.py); the
    module's result (see library/beonet_verify_live.py's RETURN)."""
    return prove_live(plan, prefixes, raw, keep, traceroute_sample)[0]


def prove_live(plan: Mapping[str, Any], prefixes: list[str], raw: Mapping[str, Any],
               keep: int = 100, traceroute_sample: bool = True) -> tuple[dict[str, Any], tables.Net]:
    """``prove``'s result, and the live tables it walked (for the traces' allowed paths)."""
    start = time.monotonic()
    plan_nodes = _plan_nodes(plan)
    names = list(plan_nodes)
    read = _states(names, plan_nodes, prefixes, raw)
    live_states, plan_states, problems = read.live, read.planned, read.problems
    address = [ip_int(plan_nodes[n]["address"]) for n in names]
    fallback = [_fallback(plan_nodes[n]) for n in names]
    planned = tables.build(names, address, list(plan_states), fallback)
    live = tables.build(names, address, live_states, fallback)
    cluster = sorted({a for f in fallback for a in f})
    forwards = [bool(plan_nodes[n]["forwarding"]) for n in names]
    dead = {i for i, st in enumerate(live_states) if st is None} - read.unread
    refused = _refused(live, cluster)
    suspects = _suspects(live, [plan_nodes[n] for n in names], refused)
    walk = LiveWalk(planned, live, _components(names, plan), dead | suspects, keep, frozenset(read.unread))
    tally = walk.run()
    skel = tables.skeleton(names, address)
    rows = [report.row(live, skel, planned.tables, f) for f in tally.rows]
    problems += report.state_problems(live, plan_nodes, refused)
    picked = sample(skel, planned.tables, walk.component, dead) if traceroute_sample else {}
    result = _result(tally, names, (sorted(names[i] for i in dead), sorted(names[i] for i in read.unread)),
                     rows, problems, report.unjudged_nodes(live, forwards), picked, time.monotonic() - start)
    return result, live


def planned_net(plan: Mapping[str, Any], prefixes: list[str]) -> tables.Net:
    """The plan's route tables as the walks read them (every node taken as alive)."""
    plan_nodes = _plan_nodes(plan)
    names = list(plan_nodes)
    plan_states = _states(names, plan_nodes, prefixes, {}).planned
    address = [ip_int(plan_nodes[n]["address"]) for n in names]
    return tables.build(names, address, list(plan_states), [_fallback(plan_nodes[n]) for n in names])


def plan_sample(plan: Mapping[str, Any], prefixes: list[str]) -> dict[str, Any]:
    """The traceroute sample from the plan alone, every node taken as alive (picked
    before the nodes are read, so that each node traces its part in the same call)."""
    start = time.monotonic()
    planned = planned_net(plan, prefixes)
    names, address = planned.names, planned.address
    component = _components(names, plan)
    picked = sample(tables.skeleton(names, address), planned.tables, component, set())
    return {"sample": {names[s]: {names[d]: e for d, e in ds.items()} for s, ds in picked.items()},
            "sampled": sum(len(ds) for ds in picked.values()),
            "seconds": round(time.monotonic() - start, 3)}


def _refused(live: tables.Net, cluster: list[int]) -> list[str | None]:
    """node -> why beonet's filter there drops some cluster traffic (None: it does not),
    each distinct set checked once."""
    memo: dict[tuple[tuple[int, int], ...], str | None] = {}
    out = []
    for verdict in live.verdicts:
        key = tuple(verdict.ranges or ())
        if key not in memo:
            memo[key] = refused_text(verdict, cluster)
        out.append(memo[key])
    return out


def _suspects(live: tables.Net, plan_nodes: list[NodePlan], refused: list[str | None]) -> set[int]:
    """Planned forwarders that may not forward every pair the plan sends through them:
    forwarding off on a planned NIC, a filter not judged or not passing every cluster
    address, policy routing beside the main table."""
    out = set()
    for i, st in enumerate(live.states):
        n = plan_nodes[i]
        if st is None or not n["forwarding"]:
            continue
        verdict = live.verdicts[i]
        nics = [iface["name"] for iface in n["interfaces"] if iface["addresses"]]
        if (any(st.forwarding.get(nic, st.forwarding.get("all")) != 1 for nic in nics)
                or verdict.unjudged is not None or st.rules or refused[i] is not None):
            out.add(i)
    return out


def _result(tally: Tally, names: list[str], lost: tuple[list[str], list[str]], rows: list[dict[str, Any]],
            problems: list[str], unjudged: list[str], picked: dict[int, dict[int, list[list[str]]]],
            seconds: float) -> dict[str, Any]:
    """The module's result; lost: (the dead nodes, the nodes whose state could not be read)."""
    dead, unread = lost
    mismatched = tally.count("broken") + tally.count("other_path") + tally.count("lost")
    return {"pairs": tally.pairs, "proven": tally.proven, "mismatched": mismatched,
            "unjudged": tally.count("unjudged"), "dead_pairs": tally.dead_pairs,
            "unread_pairs": tally.unread_pairs, "walked": tally.walked,
            "dead": dead, "unreadable": unread, "mismatches": rows, "problems": problems,
            "unjudged_nodes": unjudged,
            "summary": report.summary_lines(tally, names, dead, unread) + report.problem_lines(problems),
            "sample": {names[s]: {names[d]: e for d, e in ds.items()} for s, ds in picked.items()},
            "sampled": sum(len(ds) for ds in picked.values()),
            "seconds": round(seconds, 3)}
