"""Walk every ordered pair through the live tables and compare it with the plan.

Both sides are tables of the compiler, built by one code (tables.py: the plan's
from synthetic.plan_state, the kernels' from what the nodes sent), and the walk
goes by the proof's classes of destinations (prove.destination_classes,
prove.class_entries): towards one class, every node's entry in its live table
is compared with its entry in the plan's. Where all agree and no node is
suspect (dead, or a planned forwarder that does not forward everything the
plan needs), every pair of the class is proven at once: each hop of each of
its branches takes the planned next hops, and the plan is proven. Otherwise
only the sources upstream of a node that differs (prove.upstream over the live
next hops) are walked pair by pair: every branch, depth first, checking hop by
hop that the node has state, forwards on the NIC the packet comes in by, that
its filter passes the pair, that it has a route whose next hops carry packets,
and that each next hop is one the plan has. Host routes are corrections, as in
the proof: the holders of a destination's /32 in either table are compared,
and the sources upstream of one that differs are walked.

A node whose state could not be read (``unread``) is judged neither way: the
pairs to, from and through it are counted apart (``unread_pairs``), not proven
and not mismatched; a branch that left the plan before it is a mismatch all the
same.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..compiler.model import ON_LINK, Hop
from ..compiler.prove import class_entries, upstream
from .family import classes, host_holders
from .tables import Net, codes, gone_why, link_down, lookup, unanswered

BROKEN, OTHER, LOST, UNJUDGED, DEAD = "broken", "other_path", "lost", "unjudged", "dead"
UNREAD = "unread"               # to, from or through a node whose state could not be read
_RANK = {UNJUDGED: 1, UNREAD: 2, OTHER: 3}
MAX_STEPS = 10_000              # nodes visited walking the branches of one pair
EXAMPLES = 3                    # pairs kept per cause


@dataclass(slots=True)
class Finding:
    """A pair that is not proven: its kind, the cause and the branch that shows it
    (the nodes after the source; stopped: it ends there, else at the destination)."""

    source: int
    dest: int
    kind: str
    why: str
    path: tuple[int, ...] = ()
    stopped: bool = True


@dataclass(slots=True)
class Tally:
    """What the walk found over every ordered pair the plan routes."""

    pairs: int = 0
    proven: int = 0
    dead_pairs: int = 0
    unread_pairs: int = 0
    walked: int = 0
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)     # (kind, why) -> pairs
    examples: dict[tuple[str, str], list[Finding]] = field(default_factory=dict)
    rows: list[Finding] = field(default_factory=list)                    # the first `keep` mismatches

    def count(self, kind: str) -> int:
        return sum(v for (k, _why), v in self.counts.items() if k == kind)

    def merge(self, other: Tally) -> None:
        """Add the counts of another family's walk (its causes name the family; its
        rows are told apart, in their family's addresses)."""
        for name in ("pairs", "proven", "dead_pairs", "unread_pairs", "walked"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.counts.update(other.counts)
        for key, found in other.examples.items():
            self.examples.setdefault(key, []).extend(found[:EXAMPLES - len(self.examples.get(key, []))])


@dataclass(slots=True)
class _Cls:
    """One class of destinations: both sides' entries, the nodes that differ, the
    nodes upstream of them (over the live next hops, made when needed)."""

    pe: list[Hop | None]
    le: list[Hop | None]
    bad: list[int]
    rev: dict[int, list[int]] | None = None
    ups: set[int] = field(default_factory=set)


def same(a: Hop | None, b: Hop | None) -> bool:
    """Whether two entries send the same way: the same source and next hops (in any
    order: the kernel lists a multipath route's as it likes)."""
    if a is b or a == b:
        return True
    if a is None or b is None or a[1] != b[1]:
        return False
    return set(codes(a)) == set(codes(b))


def _reverse(entries: list[Hop | None]) -> dict[int, list[int]]:
    """node -> the nodes whose entry has it as a next hop (on any branch)."""
    rev: dict[int, list[int]] = {}
    for i, e in enumerate(entries):
        if e is not None:
            for j in codes(e):
                if j >= 0:
                    rev.setdefault(j, []).append(i)
    return rev


class LiveWalk:
    """The walk of every ordered pair (see the module docstring)."""

    def __init__(self, plan: Net, live: Net, component: list[int], suspect: set[int], keep: int,
                 unread: frozenset[int] = frozenset(), label: str = "") -> None:
        self.plan, self.live = plan, live
        self.component = component
        self.size = Counter(component)
        self.unread = unread            # nodes without state because it could not be read
        self.suspect = sorted(suspect | unread)
        self.keep = keep
        self.label = label              # before each cause: the family, where it is not IPv4
        self.tally = Tally()
        self.fam = live.fam
        self.hosts_p = host_holders(self.fam, plan.tables)
        self.hosts_l = host_holders(self.fam, live.tables)
        self.receives = [self._receives(d) for d in range(len(live.names))]
        self.unanswered: dict[int, list[int]] = {}
        for x, st in enumerate(live.states):
            for a, _dev in st.unresolved if st is not None else ():
                self.unanswered.setdefault(a, []).append(x)

    def run(self) -> Tally:
        cache_p: dict[int, list[dict[int, Hop]]] = {}
        cache_l: dict[int, list[dict[int, Hop]]] = {}
        for sig, dests in classes(self.fam, self.live.address, self.plan.tables + self.live.tables):
            pe = class_entries(self.plan.tables, sig, cache_p)
            le = class_entries(self.live.tables, sig, cache_l)
            bad = list(self.suspect)
            if pe != le:
                bad += [i for i, (a, b) in enumerate(zip(pe, le)) if not same(a, b)]
            cls = _Cls(pe, le, bad)
            if bad:
                cls.rev = _reverse(le)
                cls.ups = upstream(cls.rev, bad)
            for d in dests:
                self._dest(cls, d)
        return self.tally

    def _dest(self, cls: _Cls, d: int) -> None:
        t = self.tally
        reach = self.size[self.component[d]] - 1
        t.pairs += reach
        if d in self.unread:
            t.unread_pairs += reach
            return
        if self.live.states[d] is None:
            t.dead_pairs += reach
            return
        part = self.component[d]
        walked = [s for s in self._sources(cls, d) if s != d and self.component[s] == part]
        t.proven += reach - len(walked)
        t.walked += len(walked)
        for s in walked:
            self._record(self.pair(s, d))

    def _sources(self, cls: _Cls, d: int) -> set[int] | range:
        """The sources whose pairs to d must be walked one by one."""
        if self.receives[d] is not None:
            return range(len(self.live.names))
        addr = self.live.address[d]
        holders = set(self.hosts_p.get(addr, ())) | set(self.hosts_l.get(addr, ()))
        extra = [h for h in holders if not same(self._towards(self.plan, h, addr, cls.pe),
                                                self._towards(self.live, h, addr, cls.le))]
        extra += self.unanswered.get(addr, [])
        if not cls.bad and not extra:
            return set()
        if cls.rev is None:
            cls.rev = _reverse(cls.le)
        if holders:
            return self._upstream_of(cls, addr, cls.bad + extra)
        return cls.ups | upstream(cls.rev, extra) if extra else cls.ups

    @staticmethod
    def _towards(net: Net, i: int, addr: int, entries: list[Hop | None]) -> Hop | None:
        held = net.tables[i].by_len.get(net.fam.bits)
        entry = held.get(addr) if held else None
        return entry if entry is not None else entries[i]

    def _upstream_of(self, cls: _Cls, addr: int, seeds: list[int]) -> set[int]:
        """The seeds and the nodes whose live next hops towards addr lead to one: the
        class's next hops, but a holder's host route where it has one."""
        rev = cls.rev or {}
        held = {h: e for h in self.hosts_l.get(addr, ())
                for e in [self.live.tables[h].by_len[self.fam.bits][addr]]}
        more: dict[int, list[int]] = {}
        for h, e in held.items():
            for j in codes(e):
                more.setdefault(j, []).append(h)
        seen, todo = set(seeds), list(seeds)
        while todo:
            m = todo.pop()
            for up in (*rev.get(m, ()), *more.get(m, ())):
                if up not in seen and (up not in held or m in more and up in more[m]):
                    seen.add(up)
                    todo.append(up)
        return seen

    def _record(self, found: Finding | None) -> None:
        if found is None:
            self.tally.proven += 1
            return
        t = self.tally
        found.why = self.label + found.why
        if found.kind == DEAD:
            t.dead_pairs += 1
            return
        if found.kind == UNREAD:
            t.unread_pairs += 1
            return
        key = (found.kind, found.why)
        t.counts[key] += 1
        examples = t.examples.setdefault(key, [])
        if len(examples) < EXAMPLES:
            examples.append(found)
        if found.kind != UNJUDGED and len(t.rows) < self.keep:
            t.rows.append(found)

    def _receives(self, d: int) -> str | None:
        """Why node d cannot take packets for its address (None: it can)."""
        live = self.live
        addr, name = live.address[d], live.names[d]
        if live.states[d] is None:
            return "%s (dead)" % name
        if live.owner.get(addr) != d:
            return "address %s missing on node %s" % (self.fam.text(addr), name)
        nic = live.nic_of[d].get(addr)
        return None if live.up(d, nic) else link_down(name, nic)

    def pair(self, s: int, d: int) -> Finding | None:
        """The walk of every branch from s to d's address; None when each arrives on
        the plan's next hops only and every node on the way could be judged."""
        live = self.live
        if s in self.unread:
            return Finding(s, d, UNREAD, "%s (state unreadable)" % live.names[s])
        if live.states[s] is None:
            return Finding(s, d, DEAD, "%s (dead)" % live.names[s])
        addr = live.address[d]
        first = lookup(live, s, addr)
        return _PairWalk(self, s, d, addr, first[2][1] if first is not None else 0).run()


# A branch to follow: (node, the nodes after the source so far, the gateway address
# the last hop used, the first deviation from the plan on the way).
Branch = tuple[int, tuple[int, ...], "int | None", "str | None"]


class _PairWalk:
    """The branches of one pair, depth first (LiveWalk.pair)."""

    def __init__(self, owner: LiveWalk, s: int, d: int, addr: int, saddr: int) -> None:
        self.w, self.live = owner, owner.live
        self.s, self.d, self.addr, self.saddr = s, d, addr, saddr
        self.notes: list[Finding] = []          # findings that do not end the walk

    def run(self) -> Finding | None:
        stack: list[Branch] = [(self.s, (), None, None)]
        steps = 0
        while stack:
            x, path, gw, wrong = stack.pop()
            steps += 1
            if steps > MAX_STEPS:
                return Finding(self.s, self.d, UNJUDGED, "more than %d hops on the branches from %s"
                               % (MAX_STEPS, self.live.names[self.s]))
            fatal, more = self.visit(x, path, gw, wrong)
            if fatal is not None:
                return fatal
            stack.extend(reversed(more))
        return max(self.notes, key=lambda f: _RANK[f.kind], default=None)

    def stop(self, kind: str, why: str, path: tuple[int, ...], wrong: str | None) -> Finding:
        """A branch that ends before the destination; an earlier deviation from the plan
        is its cause."""
        return Finding(self.s, self.d, kind, wrong or why, path)

    def visit(self, x: int, path: tuple[int, ...], gw: int | None,
              wrong: str | None) -> tuple[Finding | None, list[Branch]]:
        """At node x (reached by path, through gateway address gw): (the finding that
        ends the walk, the branches to follow)."""
        live, name = self.live, self.live.names[x]
        if x == self.d:
            why = self.w.receives[x]
            if why is not None:
                return self.stop(LOST, why, path, wrong), []
            self.notes += [Finding(self.s, self.d, OTHER, wrong, path, False)] if wrong else []
            return None, []
        if x in self.w.unread:          # not judged past it; a deviation before it is one
            self.notes.append(Finding(self.s, self.d, OTHER, wrong, path) if wrong else
                              Finding(self.s, self.d, UNREAD, "through %s (state unreadable)" % name, path))
            return None, []
        if x != self.s:
            fatal = self.passes(x, path, gw, wrong)
            if fatal is not None:
                return fatal, []
        hit = lookup(live, x, self.addr)
        if hit is None:
            why = gone_why(live, x, self.addr, -1) or self.nic_down(x) or "no route on node %s" % name
            return self.stop(LOST, why, path, wrong), []
        plen, net, _entry = hit
        planned = self.planned(x)
        gone = gone_why(live, x, self.addr, plen)
        more: list[Branch] = []
        for code, via, dev in live.via[x][(plen, net)]:
            off = wrong or (None if code in planned else
                            gone or self.nic_down(x) or "wrong route on node %s" % name)
            if code < ON_LINK:
                return self.stop(LOST, gone or live.why(x, code), path, wrong), []
            if code == ON_LINK:
                why = self.delivers(x, dev)
                if why is not None:
                    return self.stop(LOST, why, path, off), []
                self.notes += [Finding(self.s, self.d, OTHER, off, path + (self.d,), False)] if off else []
            elif code == self.s or code in path:
                return self.stop(LOST, "routing loop through node %s" % live.names[code], path + (code,),
                                 off), []
            else:
                more.append((code, path + (code,), via, off))
        return None, more

    def passes(self, x: int, path: tuple[int, ...], gw: int | None, wrong: str | None) -> Finding | None:
        """Whether intermediate node x forwards the pair (None: it does, or cannot be
        judged, which is noted)."""
        live, name = self.live, self.live.names[x]
        st = live.states[x]
        if st is None:
            return self.stop(BROKEN, "%s (dead)" % name, path, wrong)
        nic = live.nic_of[x].get(gw) if gw is not None else None
        on = st.forwarding.get(nic) if nic is not None else None
        if not (on if on is not None else st.forwarding.get("all")):
            return self.stop(BROKEN, "%s (forwarding off)" % name, path, wrong)
        verdict = live.verdicts[x]
        if verdict.unjudged is not None or st.rules:
            why = "node %s: %s" % (name, unjudged_why(st.rules, verdict.unjudged))
            self.notes.append(Finding(self.s, self.d, UNJUDGED, why, path, False))
        elif not verdict.accepts(self.saddr, self.addr):
            return self.stop(LOST, "filter drop on node %s" % name, path, wrong)
        return None

    def nic_down(self, x: int) -> str | None:
        """A NIC the plan's route of node x towards the destination goes out by, that
        has no link (the kernel drops the routes through a NIC taken down)."""
        plan = self.w.plan
        hit = lookup(plan, x, self.addr)
        for _code, _via, dev in plan.via[x].get((hit[0], hit[1]), ()) if hit is not None else ():
            if dev is not None and not self.live.up(x, dev):
                return link_down(self.live.names[x], dev)
        return None

    def planned(self, x: int) -> set[int]:
        """The next hops of node x towards the destination in the plan."""
        entry = self.w.plan.tables[x].lookup(self.addr)
        return set(codes(entry)) if entry is not None else set()

    def delivers(self, x: int, dev: str | None) -> str | None:
        """Why node x cannot hand the packet to the destination on its link (None: it can)."""
        st = self.live.states[x]
        state = st.unresolved.get((self.addr, dev or "")) if st is not None else None
        if state is not None:
            return unanswered(self.live.fam.text(self.addr), self.live.names[x], dev, state)
        return self.w.receives[self.d]


def unjudged_why(rules: list[int], filter_why: str | None) -> str:
    """Why a forwarding node's verdict is not judged: its filter, its policy routing."""
    if filter_why is not None:
        return "forward filter not judged: %s" % filter_why
    return "policy routing rules beside main (priorities %s)" % ", ".join(map(str, rules))
