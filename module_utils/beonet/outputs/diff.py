"""What a change of the cluster's plan does, before it is pushed (``beonet diff``).

Two plans (each compiled from a topology, or read from a plan.json that ``beonet
build`` wrote) are compared node by node, by name:

* ``nodes_added`` and ``nodes_removed``;
* ``nodes_changed``: for a node in both, the NICs added, removed or changed (kind,
  segment, addresses, MTU, rate, bond and members, name on the node), forwarding,
  and the routes added and removed (a route whose next hops change is both);
* ``renumbered``: an address that changes on a node present in both (its node
  address or a NIC's): what breaks running jobs, caches and ssh known hosts;
* ``paths_changed``: the ordered pairs, of nodes in both plans, whose expected path
  changes, as the nodes a packet crosses (every branch of a multipath route): the
  route tables of both plans are walked (livestate.tables, the proof's walk), one
  longest-prefix lookup per node and destination in each plan. A pair whose path
  keeps its nodes is unchanged even when their addresses change;
* ``settings`` (in ``nodes_changed``): every other value of a node's plan that
  reaches the node, the routing engine's included (its loopback, BFD timers: what
  frr.conf is made from). The plans are the same only when nothing that reaches a
  node differs.

A plan.json read from a file is checked by ``shape_problems`` (and every node plan
as the node module checks it) before anything here reads it.

Above PATHS_ALL_UP_TO nodes the paths towards a fixed-seed sample of PATHS_SAMPLE
destinations are compared, and the result says so.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator, Mapping
from ipaddress import IPv4Network, IPv6Address, IPv6Interface, IPv6Network
from typing import Any, cast

from ..agent.names import escaped, shown, type_word
from ..agent.nodeplan import NodePlan
from ..compiler.model import ON_LINK
from ..livestate import tables
from ..livestate.proof import planned_net
from . import plan6
from .ipfamily import KEYS
from .plan import prefixes

PATHS_ALL_UP_TO = 2048
PATHS_SAMPLE = 256
EXAMPLES = 10
_PREFIX = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}")
IFACE_FIELDS = ("kind", "segment", "addresses", "mtu", "rate_mbit", "bond", "members", "mode", "logical")
# The node plan's parts compared one by one above; every other part is a setting.
# index, coords and learned do not reach a node's files (learned: what its routing
# engine should learn, compared as paths).
COMPARED = frozenset(("interfaces", "address", "address6", "forwarding", "routes", "index", "coords",
                      "learned"))
Plan = Mapping[str, Any]


def shape_problems(plan: Mapping[str, Any]) -> list[str]:
    """Why diff cannot read this plan (empty: it can): each node's interfaces and
    routes lists, the same IP families on every node, a mapping of segments, each a
    mapping whose prefix, where given, is an IPv4 network, and whose prefix6 and
    members' address6 are IPv6 ones."""
    segments = plan.get("segments")
    if not isinstance(segments, Mapping):
        return ["segments: must be a mapping of segments, not %s" % type_word(segments)]
    out = ["%s: plan.%s: must be a list, not %s" % (escaped(name), key, type_word(n.get(key)))
           for name, n in plan["nodes"].items() if isinstance(n, Mapping)
           for key in ("interfaces", "routes") if not isinstance(n.get(key, []), list)][:5]
    out += plan6.family_problems(plan["nodes"])
    for name, seg in segments.items():
        prefix = seg.get("prefix") if isinstance(seg, Mapping) else None
        if not isinstance(seg, Mapping):
            out.append("segments.%s: must be a mapping, not %s" % (escaped(name), type_word(seg)))
        elif prefix is not None and not _network(prefix):
            out.append("segments.%s.prefix: %s is not an IPv4 network" % (escaped(name), shown(prefix)))
        else:
            out += plan6.segment_problems6(name, seg)
        if len(out) > 5:
            break
    return out


def with_defaults(plan: dict[str, Any]) -> dict[str, Any]:
    """plan (checked: shape_problems and the node module's checks) with the parts a node
    plan may leave out filled in as the node module reads them: no routes, no
    addresses."""
    for node in plan["nodes"].values():
        node.setdefault("routes", [])
        for nic in node["interfaces"]:
            nic.setdefault("addresses", [])
    return plan


def _network(text: Any) -> bool:
    if not isinstance(text, str) or not _PREFIX.fullmatch(text):
        return False
    try:
        IPv4Network(text)
    except ValueError:
        return False
    return True


def route_text(r: Mapping[str, Any]) -> str:
    hops = r.get("nexthops") or [{"via": r.get("via"), "dev": r.get("dev")}]
    return "%s %s" % (r.get("to"), ", ".join("via %s dev %s" % (h.get("via"), h.get("dev")) for h in hops))


def _nic_changes(old: NodePlan, new: NodePlan) -> dict[str, Any]:
    was = {i["name"]: i for i in old["interfaces"]}
    now = {i["name"]: i for i in new["interfaces"]}
    out: dict[str, Any] = {}
    added, removed = sorted(set(now) - set(was)), sorted(set(was) - set(now))
    if added:
        out["interfaces_added"] = added
    if removed:
        out["interfaces_removed"] = removed
    changed = {}
    for nic in sorted(set(was) & set(now)):
        rest = sorted((set(was[nic]) | set(now[nic])) - set(IFACE_FIELDS) - {"name"})
        fields = {f: [was[nic].get(f), now[nic].get(f)] for f in (*IFACE_FIELDS, *rest)
                  if was[nic].get(f) != now[nic].get(f)}
        if fields:
            changed[nic] = fields
    if changed:
        out["interfaces_changed"] = changed
    return out


def _leaves(value: Any) -> dict[str, Any]:
    """{key path: value} of every value in value that is not a mapping (a walk with
    a list, not recursion)."""
    out: dict[str, Any] = {}
    todo: list[tuple[str, Any]] = [("", value)]
    while todo:
        path, v = todo.pop()
        if isinstance(v, Mapping) and v:
            todo += [("%s.%s" % (path, k) if path else str(k), v[k]) for k in v]
        else:
            out[path] = v
    return out


def _setting_changes(old: NodePlan, new: NodePlan) -> dict[str, list[Any]]:
    """Every other setting that reaches the node (the routing engine's: loopback, BFD
    timers, ...): {key path: [old, new]} of the values that differ."""
    was = _leaves({k: v for k, v in old.items() if k not in COMPARED})
    now = _leaves({k: v for k, v in new.items() if k not in COMPARED})
    return {p: [was.get(p), now.get(p)] for p in sorted(set(was) | set(now))
            if was.get(p) != now.get(p)}


def node_changes(old: NodePlan, new: NodePlan) -> dict[str, Any]:
    """What changes on one node (empty: nothing)."""
    out = _nic_changes(old, new)
    settings = _setting_changes(old, new)
    if settings:
        out["settings"] = settings
    for key in KEYS:                    # the node's IPv4 and IPv6 addresses
        if old.get(key) != new.get(key):
            out[key] = [old.get(key), new.get(key)]
    if old["forwarding"] != new["forwarding"]:
        out["forwarding"] = [old["forwarding"], new["forwarding"]]
    was = {route_text(r) for r in old["routes"]}
    now = {route_text(r) for r in new["routes"]}
    if now - was:
        out["routes_added"] = sorted(now - was)
    if was - now:
        out["routes_removed"] = sorted(was - now)
    return out


def renumbered(old: NodePlan, new: NodePlan, name: str) -> list[dict[str, Any]]:
    """The addresses of a node present in both plans that change."""
    out = []
    was_: Mapping[str, Any] = old
    now_: Mapping[str, Any] = new
    for key, what in zip(KEYS, ("node address", "node address6")):
        if key in was_ and key in now_ and was_[key] != now_[key]:
            out.append({"node": name, "what": what, "old": [was_[key]], "new": [now_[key]]})
    was = {i["name"]: i["addresses"] for i in old["interfaces"]}
    for i in new["interfaces"]:
        before = was.get(i["name"])
        if before and i["addresses"] and before != i["addresses"]:
            out.append({"node": name, "what": i["name"], "old": before, "new": i["addresses"]})
    return out


NO_ROUTE = "(no route)"


class _Walk:
    """A plan's route tables walked: ``hops`` gives, per node and destination, the nodes
    the node hands a packet to, the preferred first (None: no route)."""

    names: list[str]

    def hops(self, src: str, dst: str) -> tuple[str, ...] | None:
        raise NotImplementedError

    def next_names(self, src: str, dst: str) -> tuple[str, ...]:
        """The nodes src hands a packet for dst to (dst: it is on a shared segment,
        "!": no route), every branch."""
        found = self.hops(src, dst)
        return ("!",) if found is None else tuple(sorted(found))

    def path(self, src: str, dst: str) -> list[str]:
        """The preferred branch's nodes from src to dst (src and dst included)."""
        out, at = [src], src
        while at != dst and len(out) <= len(self.names):
            found = self.hops(at, dst)
            at = found[0] if found and found[0] != "!" else NO_ROUTE
            out.append(at)
            if at == NO_ROUTE:
                break
        return out


class _Walker(_Walk):
    """One plan's IPv4 route tables (livestate.tables, the proof's walk)."""

    def __init__(self, plan: Plan) -> None:
        self.net = planned_net(plan, prefixes(plan))
        self.names, self.address = self.net.names, self.net.address
        self.index = {n: k for k, n in enumerate(self.names)}

    def hops(self, src: str, dst: str) -> tuple[str, ...] | None:
        found = tables.lookup(self.net, self.index[src], self.address[self.index[dst]])
        if found is None:
            return None
        return tuple(dst if c == ON_LINK else self.names[c] if c >= 0 else "!"
                     for c in tables.codes(found[2]))


class _Walker6(_Walk):
    """An IPv6-only plan's route tables: each node's connected prefixes and routes
    (learned ones too), longest prefix first; an entry holds the nodes its next hops
    are on ("": on-link, "!": no node has that address)."""

    def __init__(self, plan: Plan) -> None:
        nodes = plan["nodes"]
        self.names = list(nodes)
        self.index = {n: k for k, n in enumerate(self.names)}
        owner: dict[int, str] = {}
        for name, n in nodes.items():
            owner.update((int(IPv6Interface(a).ip), name) for i in n["interfaces"]
                         for a in i["addresses"] if plan6.is6(a))
        self.address = {name: int(IPv6Address(n["address6"])) for name, n in nodes.items()}
        owner.update((a, name) for name, a in self.address.items())
        self.tables = [self._table(n, owner) for n in nodes.values()]

    @staticmethod
    def _table(n: NodePlan, owner: Mapping[int, str]) -> list[tuple[int, dict[int, tuple[str, ...]]]]:
        by_len: dict[int, dict[int, tuple[str, ...]]] = {}
        for i in n["interfaces"]:
            for a in i["addresses"]:
                if plan6.is6(a):
                    net = IPv6Interface(a).network
                    by_len.setdefault(net.prefixlen, {})[int(net.network_address)] = ("",)
        for r in n["routes"] + n.get("learned", []):
            if plan6.is6(r["to"]):
                net = IPv6Network(r["to"])
                vias = [h["via"] for h in r.get("nexthops") or [r]]
                by_len.setdefault(net.prefixlen, {}).setdefault(
                    int(net.network_address), tuple(owner.get(int(IPv6Address(v)), "!") for v in vias))
        return sorted(by_len.items(), reverse=True)

    def hops(self, src: str, dst: str) -> tuple[str, ...] | None:
        addr = self.address[dst]
        for plen, bucket in self.tables[self.index[src]]:
            found = bucket.get(addr >> (128 - plen) << (128 - plen))
            if found is not None:
                return tuple(dst if c == "" else c for c in found)
        return None


def _walker(plan: Plan) -> _Walk:
    """The plan's walker: of its IPv4 tables (a dual-stack plan's IPv6 routes are its
    IPv4 routes relabelled: the same next hops), of its IPv6 ones on an IPv6-only plan."""
    if all("address" in n for n in plan["nodes"].values()):
        return _Walker(plan6.ipv4_plan(plan))
    return _Walker6(plan)


def paths_changed(old: Plan, new: Plan, both: list[str], examples: int = EXAMPLES) -> dict[str, Any]:
    """The ordered pairs of nodes in both plans whose path changes (see the docstring)."""
    dests = both
    sampled = len(both) > PATHS_ALL_UP_TO
    if sampled:
        dests = sorted(random.Random(len(both)).sample(both, PATHS_SAMPLE))
    compared = len(dests) * (len(both) - 1)
    if old["nodes"] == new["nodes"] and old["segments"] == new["segments"]:
        # the same route tables: every path is the same, no walk needed
        return {"count": 0, "compared": compared, "sampled": sampled, "examples": []}
    a, b = _walker(old), _walker(new)
    count, shown = 0, cast("list[dict[str, Any]]", [])
    for d in dests:
        memo: dict[str, bool] = {}
        for s in both:
            if s != d and _changed(a, b, s, d, memo):
                count += 1
                if len(shown) < examples:
                    shown.append({"pair": "%s -> %s" % (s, d), "old": a.path(s, d), "new": b.path(s, d)})
    return {"count": count, "compared": compared, "sampled": sampled,
            "examples": shown}


def _changed(a: _Walk, b: _Walk, s: str, d: str, memo: dict[str, bool]) -> bool:
    """Whether the nodes of any path from s to d differ between the plans: a
    depth-first walk of the new plan's next hops with a list, not recursion (a
    chain of thousands of nodes is as deep); a loop counts as changed."""
    if s == d:
        return False
    if s in memo:
        return memo[s]
    stack: list[tuple[str, Iterator[str]]] = []

    def enter(x: str) -> bool:
        """True: x changes (known at once); False: x is on the stack to walk."""
        memo[x] = True                  # until walked: a loop back to x counts as changed
        now = b.next_names(x, d)
        if a.next_names(x, d) != now or len(stack) >= len(a.names):
            return True
        stack.append((x, iter([y for y in now if y not in ("!", d)])))
        return False

    if enter(s):
        return True
    while stack:
        x, nexts = stack[-1]
        verdict, pushed = False, False
        for y in nexts:
            if y in memo:
                verdict = memo[y]
            elif not enter(y):
                pushed = True
            else:
                verdict = True
            if verdict or pushed:
                break
        if pushed:
            continue
        stack.pop()
        memo[x] = verdict
        if verdict:                     # every node on the way to x changes with it
            for up, _rest in stack:
                memo[up] = True
            stack.clear()
    return memo[s]


def diff(old: Plan, new: Plan, examples: int = EXAMPLES) -> dict[str, Any]:
    """The differences of two plans (the keys of the module docstring), and ``same``."""
    was, now = old["nodes"], new["nodes"]
    both = [n for n in now if n in was]
    changed = {n: c for n in both if (c := node_changes(was[n], now[n]))}
    renum = [r for n in both for r in renumbered(was[n], now[n], n)]
    paths = paths_changed(old, new, both, examples)
    out: dict[str, Any] = {"nodes_added": sorted(set(now) - set(was)),
                           "nodes_removed": sorted(set(was) - set(now)),
                           "nodes_changed": changed, "renumbered": renum, "paths_changed": paths}
    out["same"] = not (out["nodes_added"] or out["nodes_removed"] or changed or paths["count"])
    return out


def _s(n: int, word: str) -> str:
    return "%d %s%s" % (n, word, "" if n == 1 else "es" if word.endswith("s") else "s")


def _v(value: Any) -> str:
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, list):
        return " ".join(str(v) for v in value) or "(none)"
    return "(none)" if value is None else str(value)


def _node_lines(name: str, c: Mapping[str, Any]) -> list[str]:
    out = ["node %s:" % name]
    out += ["  NIC %s added" % nic for nic in c.get("interfaces_added", [])]
    out += ["  NIC %s removed" % nic for nic in c.get("interfaces_removed", [])]
    for nic, fields in c.get("interfaces_changed", {}).items():
        out += ["  %s %s: %s -> %s" % (nic, f, _v(old), _v(new)) for f, (old, new) in fields.items()]
    for key in ("address", "address6", "forwarding"):
        if key in c:
            out.append("  %s: %s -> %s" % (key, _v(c[key][0]), _v(c[key][1])))
    out += ["  %s: %s -> %s" % (k, _v(old), _v(new)) for k, (old, new) in c.get("settings", {}).items()]
    out += ["  + %s" % r for r in c.get("routes_added", [])]
    out += ["  - %s" % r for r in c.get("routes_removed", [])]
    return out


def text(d: Mapping[str, Any], old: str, new: str) -> str:
    """The differences to read: a summary line, then each part."""
    p = d["paths_changed"]
    head = "beonet diff %s -> %s: %s added, %s removed, %s changed, %s renumbered; " % (
        old, new, _s(len(d["nodes_added"]), "node"), _s(len(d["nodes_removed"]), "node"),
        _s(len(d["nodes_changed"]), "node"), _s(len(d["renumbered"]), "address"))
    lines = [head + "%s of %s take another path%s" % (
        p["count"], _s(p["compared"], "ordered pair"), " (sampled destinations)" if p["sampled"] else "")]
    if d["same"]:
        return lines[0] + "\nthe plans are the same\n"
    if d["nodes_added"]:
        lines.append("nodes added: %s" % ", ".join(d["nodes_added"]))
    if d["nodes_removed"]:
        lines.append("nodes removed: %s" % ", ".join(d["nodes_removed"]))
    for name, c in d["nodes_changed"].items():
        lines += _node_lines(name, c)
    if d["renumbered"]:
        lines.append("renumbered (addresses of nodes in both plans):")
        lines += ["  %s %s: %s -> %s" % (r["node"], r["what"], " ".join(r["old"]), " ".join(r["new"]))
                  for r in d["renumbered"]]
    if p["examples"]:
        lines.append("paths that change (the preferred branch; %d of %d shown):"
                     % (len(p["examples"]), p["count"]))
        lines += ["  %s: %s  ->  %s" % (e["pair"], " ".join(e["old"]), " ".join(e["new"]))
                  for e in p["examples"]]
    return "\n".join(lines) + "\n"
