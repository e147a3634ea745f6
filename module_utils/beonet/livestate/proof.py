"""The live-state proof from end to end: the plan and the nodes' states in, the
findings, the state problems, the summary and the traceroute sample out (what
the beonet_verify_live module returns)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..agent.collect import COMMANDS, NEEDED6, six_error
from ..agent.names import escaped
from ..agent.nodeplan import NodePlan
from ..agent.verify import target_key
from . import report, state, tables
from .family import V4, V6, Family, family_of
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


def unreadable(name: str, st: state.NodeState, fam: Family = V4) -> str:
    """The one problem of a node whose state (of IPv6: its IPv6 state) could not be read:
    what failed, and what to do."""
    commands = dict(COMMANDS)
    keys = st.unread if fam is V4 else st.unread or list(NEEDED6)
    why = [e for e in st.errors if any(e.startswith((key + ":", " ".join(commands[key]) + ":"))
                                       for key in keys)]
    why = [e for e in why if not e.endswith(": no usable output")] or why
    if fam is not V4:
        return ("%s: %s state unreadable: could not read its %s (%s); its %s pairs are not proven, run "
                "verify again" % (name, fam.name, ", ".join(keys), "; ".join(why[:4]) or "it sent none",
                                  fam.name))
    return ("%s: state unreadable: could not read its %s (%s); its pairs are not proven, run verify again"
            % (name, ", ".join(st.unread), "; ".join(why[:4]) or "no reason given"))


def _states(names: list[str], plan_nodes: dict[str, NodePlan], prefixes: list[str],
            raw: Mapping[str, Any]) -> _States:
    """The states: a node that sent nothing, or nothing usable, has no live state (dead);
    one that could not read what decides its forwarding has none either (unread)."""
    out = _States()
    out.problems = ["states.%s: not a node of the plan" % escaped(str(k)) for k in raw if k not in plan_nodes]
    live, planned, problems = out.live, out.planned, out.problems
    six = V6 in families(plan_nodes)
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
            st = state.parse(name, got, six)
        except state.StateError as exc:
            problems.append("%s (its pairs count as to or from a dead node)" % exc)
            live.append(None)
            continue
        if not six:                     # what the node could not read of IPv6 is of no weight
            st.errors[:] = [e for e in st.errors if not six_error(e)]
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


def families(plan_nodes: Mapping[str, NodePlan]) -> list[Family]:
    """The address families of a plan, IPv4 first: those its nodes have an address of
    (``address``; ``address6`` with IPv6)."""
    nodes = list(plan_nodes.values())
    return [fam for fam, key in ((V4, "address"), (V6, "address6")) if any(key in n for n in nodes)]


def _address(name: str, n: NodePlan, fam: Family) -> int:
    """The node's address of the family (``address``, ``address6``)."""
    key = "address" if fam is V4 else "address6"
    return _parsed(n.get(key), fam, "%s.%s" % (name, key))


def _parsed(text: Any, fam: Family, where: str) -> int:
    found = fam.parse(text) if isinstance(text, str) else None
    if found is None:
        raise PlanError("plan.nodes.%s: %s is not an %s address"
                        % (escaped(where), escaped(str(text)), fam.name))
    return found


def _fallback(name: str, n: NodePlan, fam: Family = V4) -> list[int]:
    """The node's planned interface addresses of the family."""
    return [_parsed(a.split("/")[0], fam, "%s.interfaces" % name)
            for i in n["interfaces"] for a in i["addresses"] if family_of(a) is fam]


def cluster_prefixes(plan: Mapping[str, Any], prefixes: list[str]) -> list[str]:
    """The prefixes beonet's filter passes: those given and, where none of them is of
    IPv6, the plan's IPv6 segments and loopbacks."""
    if any(":" in p for p in prefixes):
        return list(prefixes)
    six = [seg["prefix6"] for seg in (plan.get("segments") or {}).values()
           if isinstance(seg, dict) and isinstance(seg.get("prefix6"), str)]
    six += [n["routing"]["loopback6"] for n in _plan_nodes(plan).values()
            if "loopback6" in n.get("routing", {})]
    return list(prefixes) + six


def prove(plan: Mapping[str, Any], prefixes: list[str], raw: Mapping[str, Any],
          keep: int = 100, traceroute_sample: bool = True) -> dict[str, Any]:
    """Every ordered pair of the plan walked through the live tables (walk.py); the
    module's result (see library/beonet_verify_live.py's RETURN)."""
    return prove_live(plan, prefixes, raw, keep, traceroute_sample)[0]


class _Family:
    """One family's tables of the plan and of the live states, its nodes' addresses and
    every planned address of it (the cluster)."""

    def __init__(self, fam: Family, names: list[str], plan_nodes: Mapping[str, NodePlan],
                 read: _States, unread: set[int]) -> None:
        self.fam = fam
        self.address = [_address(n, plan_nodes[n], fam) for n in names]
        fallback = [_fallback(n, plan_nodes[n], fam) for n in names]
        live_states = [None if i in unread or st is None else _view(st, fam)
                       for i, st in enumerate(read.live)]
        planned = [_view(st, fam) for st in read.planned]
        self.planned = tables.build(names, self.address, planned, fallback, fam)
        self.live = tables.build(names, self.address, live_states, fallback, fam)
        self.cluster = sorted({a for f in fallback for a in f})


def _view(st: state.NodeState, fam: Family) -> state.NodeState | None:
    return st if fam is V4 else st.six


def prove_live(plan: Mapping[str, Any], prefixes: list[str], raw: Mapping[str, Any], keep: int = 100,
               traceroute_sample: bool = True) -> tuple[dict[str, Any], dict[str, tables.Net]]:
    """``prove``'s result, and the live tables it walked of each family (by its name, for
    the traces' allowed paths). Each family is walked apart; the causes of IPv6 name it."""
    start = time.monotonic()
    plan_nodes = _plan_nodes(plan)
    run = _Run(plan, plan_nodes, _states(list(plan_nodes), plan_nodes, cluster_prefixes(plan, prefixes), raw),
               keep, traceroute_sample)
    for k, fam in enumerate(families(plan_nodes)):
        run.walk(fam, k == 0)
    names = run.names
    lost = (sorted(names[i] for i in run.dead), sorted(names[i] for i in run.unread))
    result = _result(run.tally, names, lost, run.rows, run.read.problems, run.unjudged, run.picked,
                     time.monotonic() - start)
    return result, run.nets


class _Run:
    """The walks of every family and what they found, together."""

    def __init__(self, plan: Mapping[str, Any], plan_nodes: dict[str, NodePlan], read: _States, keep: int,
                 traceroute_sample: bool) -> None:
        self.plan_nodes, self.names, self.read = plan_nodes, list(plan_nodes), read
        self.keep, self.traceroute_sample = keep, traceroute_sample
        self.dead = {i for i, st in enumerate(read.live) if st is None} - read.unread
        self.component = _components(self.names, plan)
        self.tally = Tally()
        self.rows: list[dict[str, Any]] = []
        self.nets: dict[str, tables.Net] = {}
        self.picked: dict[str, dict[str, list[list[str]]]] = {}
        self.unread = set(read.unread)
        self.unjudged: list[str] = []

    def walk(self, fam: Family, first: bool) -> None:
        """Walk one family (first: the plan's first, which names what is the node's, not
        the family's: links, what could not be read, the filter's absence)."""
        names, plan_nodes = self.names, self.plan_nodes
        unread = self.read.unread | _unread6(names, self.read, fam)
        self.unread |= unread
        one = _Family(fam, names, plan_nodes, self.read, unread)
        live = self.nets[fam.name] = one.live
        refused = _refused(live, one.cluster)
        suspects = _suspects(live, [plan_nodes[n] for n in names], refused)
        tally = LiveWalk(one.planned, live, self.component, self.dead | suspects, self.keep,
                         frozenset(unread), "" if fam is V4 else fam.name + ": ").run()
        self.tally.merge(tally)
        room = max(0, self.keep - len(self.rows))
        self.rows += [report.row(live, one.planned.tables, f) for f in tally.rows[:room]]
        self.read.problems += report.state_problems(live, plan_nodes, refused, first)
        if first:
            self.unjudged = report.unjudged_nodes(live, [bool(plan_nodes[n]["forwarding"]) for n in names])
        if self.traceroute_sample:
            _keyed(self.picked, names, fam, sample(tables.skeleton(names, one.address), one.planned.tables,
                                                   self.component, self.dead, fam))


def _unread6(names: list[str], read: _States, fam: Family) -> set[int]:
    """The nodes whose IPv6 state could not be read (IPv4's are read.unread), each named
    once in read.problems; none for IPv4."""
    out = set()
    for i, st in enumerate(read.live) if fam is not V4 else ():
        six = st.six if st is not None else None
        if st is not None and (six is None or six.unread):
            out.add(i)
            read.problems.append(unreadable(names[i], six or st, fam))
    return out


def _keyed(out: dict[str, dict[str, list[list[str]]]], names: list[str], fam: Family,
           picked: dict[int, dict[int, list[list[str]]]]) -> None:
    """Add a family's sample to out by node name, each destination by its target key
    (verify.target_key)."""
    for s, ds in picked.items():
        out.setdefault(names[s], {}).update((target_key(names[d], fam is not V4), e) for d, e in ds.items())


def planned_net(plan: Mapping[str, Any], prefixes: list[str], fam: Family | None = None) -> tables.Net:
    """The plan's route tables of a family as the walks read them (every node taken as
    alive); without a family, the plan's first."""
    plan_nodes = _plan_nodes(plan)
    names = list(plan_nodes)
    fam = fam or families(plan_nodes)[0]
    read = _states(names, plan_nodes, cluster_prefixes(plan, prefixes), {})
    return _Family(fam, names, plan_nodes, read, set()).planned


def plan_sample(plan: Mapping[str, Any], prefixes: list[str]) -> dict[str, Any]:
    """The traceroute sample from the plan alone, every node taken as alive (picked
    before the nodes are read, so that each node traces its part in the same call): the
    pairs of each family, an IPv6 destination by its target key (verify.target_key)."""
    start = time.monotonic()
    plan_nodes = _plan_nodes(plan)
    names = list(plan_nodes)
    component = _components(names, plan)
    read = _states(names, plan_nodes, cluster_prefixes(plan, prefixes), {})
    out: dict[str, dict[str, list[list[str]]]] = {}
    for fam in families(plan_nodes):
        one = _Family(fam, names, plan_nodes, read, set())
        _keyed(out, names, fam, sample(tables.skeleton(names, one.address), one.planned.tables, component,
                                       set(), fam))
    return {"sample": out, "sampled": sum(len(ds) for ds in out.values()),
            "seconds": round(time.monotonic() - start, 3)}


def _refused(live: tables.Net, cluster: list[int]) -> list[str | None]:
    """node -> why beonet's filter there drops some cluster traffic (None: it does not),
    each distinct set checked once."""
    memo: dict[tuple[tuple[int, int], ...], str | None] = {}
    out = []
    for verdict in live.verdicts:
        key = tuple(verdict.ranges or ())
        if key not in memo:
            memo[key] = refused_text(verdict, cluster, live.fam)
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
            problems: list[str], unjudged: list[str], picked: dict[str, dict[str, list[list[str]]]],
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
            "sample": picked,
            "sampled": sum(len(ds) for ds in picked.values()),
            "seconds": round(seconds, 3)}
