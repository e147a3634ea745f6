"""What the live-state proof tells: the state problems of each node, the pairs
not proven as rows (pair, expected hop lists, seen hop list, why: the shape of
the traceroute check's rows) and the summary, grouped by cause under the
traceroute diagnosis's headings (agent/diagnose.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..agent.names import escaped
from ..agent.nodeplan import NodePlan
from ..agent.verify import expected_text
from ..compiler.model import RouteTable
from .family import V4, family_of, paths
from .tables import Net, lookup
from .walk import BROKEN, EXAMPLES, LOST, OTHER, UNJUDGED, Finding, Tally, unjudged_why

PROBLEM_LINES = 40             # state problems named one by one in a summary; the rest by node

HEADINGS = ((BROKEN, "pairs broken through a dead gateway or one with forwarding off", "stops before %s"),
            (OTHER, "pairs that arrive by another path", "%s"),
            (LOST, "pairs that do not arrive", "%s"))


def seen(live: Net, f: Finding) -> list[str]:
    """The hop addresses a traceroute of the finding's branch would show: each node
    answers from its route back to the source, '*' where nothing answers (a dead
    node, one that does not forward, and after where the branch stops)."""
    first = lookup(live, f.source, live.address[f.dest])
    saddr = first[2][1] if first is not None else live.address[f.source]
    out = []
    text = live.fam.text
    for y in f.path:
        if y == f.dest:
            out.append("*" if f.stopped else text(live.address[y]))
        elif live.states[y] is None or (f.kind == BROKEN and y == f.path[-1]):
            out.append("*")
        else:
            back = live.tables[y].lookup(saddr)
            out.append(text(back[1]) if back is not None else "*")
    if f.stopped and (not out or out[-1] != "*"):
        out.append("*")
    return out


def expected(live: Net, plan_tables: list[RouteTable], s: int, d: int) -> list[list[str]]:
    """The plan's allowed hop lists of a pair (what beonet_plan's ``paths`` holds), in
    the family of live."""
    found = paths(live.fam, live.names, live.address, plan_tables, s, d)
    return [[h["address"] for h in branch] for branch in found or []]


def live_allowed(live: Net, s: int, d: int) -> list[list[str]]:
    """The hop lists a traceroute from s to d shows by the live tables (every branch,
    each hop answering from its route back to the sender): [] where s has no state
    or a walk finds no route, a loop or a next hop that carries nothing."""
    if live.states[s] is None:
        return []
    return expected(live, live.tables, s, d)


def row(live: Net, plan_tables: list[RouteTable], f: Finding) -> dict[str, Any]:
    """One pair not proven, as the traceroute check's rows are (IPv6 pairs named so)."""
    names = live.names
    out = {"pair": "%s -> %s" % (names[f.source], names[f.dest]) + family_mark(live),
           "source": names[f.source], "destination": names[f.dest],
           "expected": expected(live, plan_tables, f.source, f.dest), "seen": seen(live, f), "why": f.why,
           "kind": f.kind}
    if live.fam is not V4:
        out["family"] = live.fam.name
    return out


def family_mark(live: Net) -> str:
    """What follows a pair of the family in the rows: nothing for IPv4, " (IPv6)"."""
    return "" if live.fam is V4 else " (%s)" % live.fam.name


def _pairs(names: list[str], found: list[Finding]) -> str:
    return ", ".join("%s -> %s" % (names[f.source], names[f.dest]) for f in found[:EXAMPLES])


def _group_lines(tally: Tally, names: list[str], kind: str, detail: str) -> list[str]:
    groups = sorted(((n, why) for (k, why), n in tally.counts.items() if k == kind),
                    key=lambda g: (-g[0], g[1]))
    return ["  %s: %d pair%s, e.g. %s"
            % (detail % why, n, "" if n == 1 else "s", _pairs(names, tally.examples[(kind, why)]))
            for n, why in groups]


def summary_lines(tally: Tally, names: list[str], dead: list[str],
                  unread: list[str] | None = None) -> list[str]:
    """The diagnosis as text: dead nodes (and those whose state could not be read), each
    kind of pair grouped by cause, the pairs to or from dead nodes (to, from or through
    unreadable ones), and those through nodes that could not be judged."""
    lines = ["nodes dead or unreachable (%d)%s" % (len(dead), ": " + ", ".join(dead) if dead else "")]
    if unread:
        lines.append("nodes whose state could not be read, to verify again (%d): %s"
                     % (len(unread), ", ".join(unread)))
    for kind, title, detail in HEADINGS:
        n = tally.count(kind)
        lines.append("%s (%d)%s" % (title, n, ":" if n else ""))
        lines += _group_lines(tally, names, kind, detail)
    lines.append("pairs to or from dead nodes (%d)" % tally.dead_pairs)
    if unread:
        lines.append("pairs not proven, to, from or through nodes whose state could not be read (%d)"
                     % tally.unread_pairs)
    n = tally.count(UNJUDGED)
    if n:
        lines.append("pairs through nodes whose forwarding beonet cannot judge (%d):" % n)
        lines += _group_lines(tally, names, UNJUDGED, "%s")
    return lines


def problem_lines(problems: list[str], cap: int = PROBLEM_LINES) -> list[str]:
    """The state problems as summary lines, each escaped on one line: the first cap named,
    the rest counted by the node each begins with."""
    lines = ["state problems (%d)%s" % (len(problems), ":" if problems else "")]
    lines += ["  " + escaped(p) for p in problems[:cap]]
    rest: dict[str, int] = {}
    for p in problems[cap:]:
        node = escaped(p.split(":", 1)[0])[:64]
        rest[node] = rest.get(node, 0) + 1
    if rest:
        lines.append("  and %d more: %s" % (len(problems) - cap,
                                            ", ".join("%s %d" % kv for kv in sorted(rest.items()))))
    return lines


def report_lines(rows: list[dict[str, Any]], problems: list[str], cap: int = PROBLEM_LINES) -> list[str]:
    """What a failed verify says (verify.yml's last task): the pairs not as planned (pair |
    allowed hop lists | seen), the first cap of them, then the state problems
    (problem_lines); every line escaped."""
    lines = ["%s | %s | %s" % (escaped(str(r.get("pair"))), escaped(expected_text(r.get("expected"))),
                               escaped(" ".join(str(h) for h in r.get("seen") or [])))
             for r in rows[:cap]]
    if len(rows) > cap:
        lines.append("and %d more pairs not as planned" % (len(rows) - cap))
    return lines + (problem_lines(problems, cap) if problems else [])


def state_problems(live: Net, plan_nodes: Mapping[str, NodePlan], refused: list[str | None],
                   node_wide: bool = True) -> list[str]:
    """What each node's state differs in from its plan beyond its routes (which the
    node's own check compares), in the family of live: addresses missing, forwarding
    off, neighbours in the cluster that do not answer, beonet's filter dropping cluster
    traffic, and addresses held twice; with node_wide (once a node, whatever the
    families) NICs down or missing, beonet's filter missing, what could not be read."""
    out = list(live.problems)
    for i, name in enumerate(live.names):
        st = live.states[i]
        if st is None:
            continue
        n = plan_nodes[name]
        out += _link_problems(live, i, n, node_wide) + _forwarding_problems(live, i, n)
        out += _neighbour_problems(live, i) + _filter_problems(live, i, n, refused[i], node_wide)
        out += ["%s: could not read %s" % (name, e) for e in st.errors] if node_wide else []
    return out


def _link_problems(live: Net, i: int, n: NodePlan, node_wide: bool) -> list[str]:
    """The planned NICs (bond members too) without link (node_wide), and the planned
    addresses of the family missing."""
    st, name = live.states[i], live.names[i]
    if st is None:
        return []
    out = []
    for iface in n["interfaces"]:
        for nic in [iface["name"]] + list(iface.get("members", [])) if node_wide else ():
            state = st.links.get(nic, "no such NIC")
            if state != "up":
                out.append("%s: link down on NIC %s (%s)" % (name, nic, state.replace("-", " ")))
        mine = {live.fam.net_text(a, p) for a, p in st.addrs.get(iface["name"], [])}
        out += ["%s: address %s missing on NIC %s" % (name, a, iface["name"])
                for a in iface["addresses"] if a not in mine and family_of(a) is live.fam]
    return out


def _forwarding_problems(live: Net, i: int, n: NodePlan) -> list[str]:
    """Of IPv4, NICs with forwarding off where the node forwards (the node's own check
    compares the global switch); of IPv6 (which has only the global one) that switch."""
    st = live.states[i]
    if st is None or not n["forwarding"]:
        return []
    if live.fam is not V4:
        return [] if st.forwarding.get("all") == 1 else [
            "%s: %s forwarding off, the plan says on" % (live.names[i], live.fam.name)]
    if st.forwarding.get("all") != 1:
        return []
    return ["%s: forwarding off on NIC %s, the plan says on" % (live.names[i], iface["name"])
            for iface in n["interfaces"] if iface["addresses"] and st.forwarding.get(iface["name"]) == 0]


def _neighbour_problems(live: Net, i: int) -> list[str]:
    st = live.states[i]
    out = []
    for (a, dev), state in sorted(st.unresolved.items()) if st is not None else ():
        holder = live.owner.get(a)
        if holder is not None:
            out.append("%s: neighbour %s (%s) on NIC %s is %s"
                       % (live.names[i], live.fam.text(a), live.names[holder], dev, state))
    return out


def _filter_problems(live: Net, i: int, n: NodePlan, why: str | None, node_wide: bool) -> list[str]:
    verdict, name = live.verdicts[i], live.names[i]
    if verdict.refused is not None:
        return ["%s: %s" % (name, verdict.refused)]
    if not n["forwarding"] or verdict.unjudged is not None:
        return []
    if not verdict.beonet:
        return ["%s: beonet's forward filter (nftables table inet beonet) is not loaded" % name] * node_wide
    return ["%s: beonet's forward filter drops cluster traffic: %s" % (name, why)] if why else []


def unjudged_nodes(live: Net, forwards: list[bool]) -> list[str]:
    """The forwarding nodes whose filter or policy routing beonet cannot judge."""
    out = []
    for i, st in enumerate(live.states):
        if st is not None and forwards[i] and (live.verdicts[i].unjudged is not None or st.rules):
            out.append("%s: %s" % (live.names[i], unjudged_why(st.rules, live.verdicts[i].unjudged)))
    return out
