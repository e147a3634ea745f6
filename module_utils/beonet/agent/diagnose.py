"""Tell dead nodes from broken paths, over every node's verify results.

Standard library only (it runs inside the beonet_verify module, once, on the
controller). Each node's ``beonet_verify`` result says which targets it traced
(``targets``), which of them answered no ping at all (``silent``), whether it
forwards (``forwarding``, live) and which pairs differ from the plan
(``mismatches``: pair, source, destination, expected hop lists, seen hops).
``summarise`` sorts them:

* nodes dead or unreachable: hosts Ansible could not reach (or whose verify
  failed), and targets that answered no source's ping and reached no target of
  their own;
* pairs broken through a dead gateway or one with forwarding off: where the
  trace stopped, the next hop of an allowed hop list belongs to such a node;
* pairs that arrive by another path: the destination answered, but on no
  allowed hop list;
* pairs that do not arrive, for another reason;
* pairs to or from a dead node (counted: the dead node explains them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .nodeplan import NodePlan
from .verify import allowed_paths, target_node

if TYPE_CHECKING:
    Result = Mapping[str, Any]       # one node's beonet_verify result


def owners(nodes: Mapping[str, NodePlan]) -> dict[str, str]:
    """{address: node name} of every address in the plan, IPv4 and IPv6 (hops are shown
    by address)."""
    out = {}
    for name, n in nodes.items():
        for key in ("address", "address6"):
            if key in n:
                out[n[key]] = name
        for iface in n["interfaces"]:
            for a in iface["addresses"]:
                out[a.split("/")[0]] = name
    return out


def dead_nodes(results: Mapping[str, Result], unreachable: Iterable[str]) -> list[str]:
    """Hosts Ansible could not reach, and targets that answered no source's ping while
    nothing answered their own pings either. A node that reaches some others but no one
    reaches is cut off, not dead: the pairs to it tell where its paths stop. A target
    traced over IPv6 is its node (verify.target_node): one answering in either family
    is alive."""
    silent: set[str] = set()
    answered: set[str] = set()
    for res in results.values():
        quiet = set(res.get("silent", []))
        silent |= {target_node(t) for t in quiet}
        answered |= {target_node(t) for t in set(res.get("targets", [])) - quiet}
    reaches = {name for name, res in results.items()
               if set(res.get("targets", [])) - set(res.get("silent", []))}
    return sorted(set(unreachable) | (silent - answered - reaches))


def followed(branch: Sequence[str], seen: Sequence[str]) -> int:
    """How many hops of branch, from the first, the trace followed."""
    k = 0
    while k < len(branch) and k < len(seen) and seen[k] == branch[k]:
        k += 1
    return k


def arrived(row: Result) -> bool:
    """Whether the destination answered the trace (its address is the last hop seen)."""
    branches = allowed_paths(row["expected"])
    answers = [h for h in row["seen"] if h != "*"]
    return bool(branches and answers and answers[-1] == branches[0][-1])


def _stops_at(row: Result, owner: Mapping[str, str], down: Mapping[str, str]) -> list[str]:
    """'NODE (why)' for each node but the destination where an allowed hop list of the
    pair goes on after the part the trace followed, that is dead or does not forward;
    and the last node the trace followed, when it does not forward (it answered, but
    forwarded nothing)."""
    out = []
    for branch in allowed_paths(row["expected"]):
        k = followed(branch, row["seen"])
        nodes = [owner.get(branch[k])] if k < len(branch) else []
        if k > 0 and down.get(owner.get(branch[k - 1], "")) == "forwarding off":
            nodes.append(owner.get(branch[k - 1]))
        out += ["%s (%s)" % (node, down[node]) for node in nodes
                if node and node != target_node(row["destination"]) and node in down]
    return sorted(set(out))


def summarise(results: Mapping[str, Result], unreachable: Iterable[str],
              nodes: Mapping[str, NodePlan]) -> dict[str, Any]:
    """The diagnosis over every node's result (see the module docstring).

    Returns {dead, broken, other_path, lost, dead_pairs, lines}: the rows of
    each category (broken rows gain ``through``), the number of pairs to or
    from dead nodes, and the summary as text lines."""
    dead = dead_nodes(results, unreachable)
    down = {name: "forwarding off" for name, res in results.items() if res.get("forwarding") is False}
    down.update(dict.fromkeys(dead, "dead"))
    owner = owners(nodes)
    out: dict[str, Any] = {"dead": dead, "broken": [], "other_path": [], "lost": [], "dead_pairs": 0}
    for name in sorted(results):
        for row in results[name].get("mismatches", []):
            if row["source"] in dead or target_node(row["destination"]) in dead:
                out["dead_pairs"] += 1
            elif arrived(row):
                out["other_path"].append(dict(row))
            elif _stops_at(row, owner, down):
                out["broken"].append(dict(row, through=_stops_at(row, owner, down)))
            else:
                out["lost"].append(dict(row))
    out["lines"] = summary_lines(out)
    return out


def _rows(title: str, rows: Sequence[Result], detail: str) -> list[str]:
    lines = ["%s (%d)%s" % (title, len(rows), ":" if rows else "")]
    for r in rows:
        lines.append("  %s  %s" % (r["pair"], detail % dict(r, through=", ".join(r.get("through", [])),
                                                            seen=" ".join(r["seen"]) or "(nothing)")))
    return lines


def summary_lines(s: Mapping[str, Any]) -> list[str]:
    """The summary as text: dead nodes, then each category of pairs."""
    lines = ["nodes dead or unreachable (%d)%s" % (len(s["dead"]),
                                                   ": " + ", ".join(s["dead"]) if s["dead"] else "")]
    lines += _rows("pairs broken through a dead gateway or one with forwarding off", s["broken"],
                   "stops before %(through)s; seen %(seen)s")
    lines += _rows("pairs that arrive by another path", s["other_path"], "seen %(seen)s")
    lines += _rows("pairs that do not arrive", s["lost"], "seen %(seen)s")
    lines.append("pairs to or from dead nodes (%d)" % s["dead_pairs"])
    return lines
