"""Balanced cuts of the cluster's segments, for the bisection in the metrics (stage 6).

A cut puts every node on side 0 or 1. What it severs (the project's cost rule): a
point-to-point link or a shared medium split between the sides carries its rate once; a
switched LAN or channel split a/b carries min(a, b) links of its rate (its switch sits
on whichever side costs less). A segment is a hyperedge with that cost, so a graph
library's edge-cut partitioner (networkx's Kernighan-Lin counts the edges of a clique,
a*b, for a LAN) does not measure it: the search here uses the rule itself.

``search`` is Fiduccia-Mattheyses local search (the single-node-move form of
Kernighan-Lin): from each start, passes that move every node once, the best gain first
(a heap of gains, updated for the nodes sharing a segment with the moved one), keeping
the sides within one node of a bisection, and roll back to the best balanced cut of the
pass; passes repeat while they gain. Its result is a cut that exists, so its crossing is
an upper bound of the worst bisection (the least crossing of any balanced cut), found in
a budget of gain evaluations.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterable, Sequence

Link = tuple[str, int, list[int]]   # (segment kind, rate, member node indexes)
RANDOM_STARTS = 2                    # random balanced starts besides the given ones
MAX_PASSES = 12                      # passes per start at most
NEIGHBOURHOOD_STARTS = 8             # LANs whose neighbourhood is a start (neighbourhood_starts)


def cost(kind: str, rate: int, a: int, b: int) -> int:
    """What a segment with a members on one side and b on the other carries across."""
    if kind in ("p2p", "shared"):     # one wire or one medium: its rate, however split
        return rate if a and b else 0
    return min(a, b) * rate


def crossing(side: list[int], links: list[Link]) -> int:
    total = 0
    for kind, rate, members in links:
        a = sum(side[m] for m in members)
        total += cost(kind, rate, a, len(members) - a)
    return total


def _steps(kind: str, rate: int, size: int) -> list[tuple[int, int]]:
    """For each count a of a segment's members on side 1 (0 to size): the change in its
    crossing if one of its members on side 0, or on side 1, moved to the other side."""
    at = [cost(kind, rate, size - a, a) for a in range(size + 1)]
    return [((at[a + 1] - at[a]) if a < size else 0, (at[a - 1] - at[a]) if a else 0)
            for a in range(size + 1)]


class _Shape:
    """What a cut's state needs of the segments alone, whatever the sides: each segment's
    marginal costs by its members on side 1 and each node's segments (worked out once
    for every start of a search)."""

    __slots__ = ("steps", "member_of")

    def __init__(self, links: list[Link], n: int) -> None:
        self.steps = [_steps(kind, rate, len(members)) for kind, rate, members in links]
        self.member_of: list[list[int]] = [[] for _node in range(n)]
        for k, (_kind, _rate, members) in enumerate(links):
            for m in members:
                self.member_of[m].append(k)


class _State:
    """A cut being changed: each segment's members on side 1 and marginal costs, each
    node's segments."""

    def __init__(self, side: list[int], links: list[Link], shape: _Shape | None = None) -> None:
        shape = shape or _Shape(links, len(side))
        self.side, self.links, self.ones = side, links, sum(side)
        self.member_of, self.steps = shape.member_of, shape.steps
        self.count: list[int] = []                      # segment -> its members on side 1
        self.margin: list[tuple[int, int]] = []          # segment -> its steps at its count
        for k, (_kind, _rate, members) in enumerate(links):
            a = sum(side[m] for m in members)
            self.count.append(a)
            self.margin.append(self.steps[k][a])
        self.evaluations = 0

    def delta(self, i: int) -> int:
        """The change in crossing if node i moved to the other side."""
        self.evaluations += 1
        s, margin = self.side[i], self.margin
        return sum([margin[k][s] for k in self.member_of[i]])

    def move(self, i: int) -> None:
        s = self.side[i]
        by = 1 if s == 0 else -1
        count, margin, steps = self.count, self.margin, self.steps
        for k in self.member_of[i]:
            count[k] += by
            margin[k] = steps[k][count[k]]
        self.side[i] = 1 - s
        self.ones += by

    def imbalance(self) -> int:
        return 2 * self.ones - len(self.side)     # 2 x (side 1) - n; |.| <= 1 balanced


def balance(side: list[int], links: list[Link]) -> int:
    """Move nodes from the larger side until the sides differ by at most one,
    each time the node whose move costs least; then return the crossing."""
    _balance(_State(side, links))
    return crossing(side, links)


def _balance(state: _State) -> None:
    side, n = state.side, len(state.side)
    if abs(state.imbalance()) <= 1:
        return
    big = 1 if state.imbalance() > 0 else 0
    version, locked = [0] * n, [False] * n
    heaps: tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]] = ([], [])
    heaps[big].extend((state.delta(i), i, 0) for i in range(n) if side[i] == big)
    heapq.heapify(heaps[big])
    while abs(state.imbalance()) > 1:
        pick = _best_entry(heaps, [big], version, locked, side)
        if pick is None:
            raise AssertionError("the larger side of a cut has no node")
        i = pick[1]
        was = [state.margin[k] for k in state.member_of[i]]
        state.move(i)
        locked[i] = True
        _requeue(state, i, was, heaps, version, locked)


def _allowed(d: int) -> tuple[int, ...]:
    """The sides a node may leave at imbalance d: the sides end at most one node past
    a bisection, and a side already past it gives, not takes."""
    return tuple(s for s in (0, 1) if abs(d + (2 if s == 0 else -2)) <= 3 and
                 (abs(d) <= 1 or (d > 0) == (s == 1)))


# imbalance -> _allowed; a pass starts balanced (|d| <= 1) and keeps |d| <= 3
_ALLOWED = {d: _allowed(d) for d in range(-3, 4)}


def _fm_pass(state: _State, current: int, budget: int) -> int:
    """One pass: every node moved at most once, best gain first, the sides never more
    than one node past a bisection; the cut rolled back to the pass's best balanced
    state. Returns its crossing."""
    side, n = state.side, len(state.side)
    version, locked = [0] * n, [False] * n
    heaps: tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]] = ([], [])
    for i in range(n):
        heaps[side[i]].append((state.delta(i), i, 0))
    for heap in heaps:
        heapq.heapify(heap)
    moved: list[int] = []
    best, best_at, cost_now = current, 0, current
    while state.evaluations < budget:
        pick = _best_entry(heaps, _ALLOWED[state.imbalance()], version, locked, side)
        if pick is None:
            break
        change, i = pick
        was = [state.margin[k] for k in state.member_of[i]]
        state.move(i)
        locked[i], cost_now = True, cost_now + change
        moved.append(i)
        if abs(state.imbalance()) <= 1 and cost_now < best:
            best, best_at = cost_now, len(moved)
        _requeue(state, i, was, heaps, version, locked)
    for i in reversed(moved[best_at:]):
        state.move(i)
    return best


def _requeue(state: _State, i: int, was: list[tuple[int, int]], heaps: tuple[list[tuple[int, int, int]], ...],
             version: list[int], locked: list[bool]) -> None:
    """New gains for the free nodes whose segments' marginal cost the move of i changed
    (a large LAN's members only when its split crosses the point where min(a, b) turns)."""
    side = state.side
    for k, before in zip(state.member_of[i], was):
        now = state.margin[k]
        if now == before:
            continue
        for m in state.links[k][2]:
            if not locked[m] and now[side[m]] != before[side[m]]:
                version[m] += 1
                heapq.heappush(heaps[side[m]], (state.delta(m), m, version[m]))


def _best_entry(heaps: tuple[list[tuple[int, int, int]], ...], allowed: Sequence[int], version: list[int],
                locked: list[bool], side: list[int]) -> tuple[int, int] | None:
    """The least delta among the allowed sides' current entries (stale ones dropped)."""
    best: tuple[int, int] | None = None
    for s in allowed:
        heap = heaps[s]
        while heap and (locked[heap[0][1]] or version[heap[0][1]] != heap[0][2] or side[heap[0][1]] != s):
            heapq.heappop(heap)
        if heap and (best is None or heap[0][0] < best[0]):
            best = (heap[0][0], heap[0][1])
    return best


class Found:
    """The least crossing found, its cut, and what the search spent."""

    __slots__ = ("crossing", "side", "starts", "passes", "evaluations", "budget_spent")

    crossing: int
    side: list[int]
    starts: int
    passes: int
    evaluations: int
    budget_spent: bool

    def __init__(self, crossing: int, side: list[int], starts: int, passes: int, evaluations: int,
                 budget_spent: bool) -> None:
        self.crossing = crossing
        self.side = side
        self.starts = starts
        self.passes = passes
        self.evaluations = evaluations
        self.budget_spent = budget_spent


def neighbourhood_starts(links: list[Link], n: int, most: int = NEIGHBOURHOOD_STARTS) -> list[list[int]]:
    """Cuts to start from besides the structure-aligned ones: a LAN's members with the far
    ends of their point-to-point links on one side (for a meta-graph: a group and every
    node wired to it, which leaves no point-to-point link cut and splits the other
    groups' switches only), for the first ``most`` LANs."""
    peers: list[list[int]] = [[] for _node in range(n)]
    for kind, _rate, members in links:
        if kind == "p2p":
            for m in members:
                peers[m] += [x for x in members if x != m]
    starts: list[list[int]] = []
    for kind, _rate, members in links:
        if kind == "p2p" or len(starts) >= most:
            continue
        chosen = set(members).union(*(peers[m] for m in members))
        starts.append([1 if i in chosen else 0 for i in range(n)])
    return starts


def _random_start(n: int, rng: random.Random) -> list[int]:
    ones = set(rng.sample(range(n), n // 2))
    return [1 if i in ones else 0 for i in range(n)]


def search(starts: Iterable[list[int]], links: list[Link], n: int, budget: int) -> Found:
    """Fiduccia-Mattheyses from each LAN's neighbourhood, from each start (balanced first)
    and from RANDOM_STARTS random bisections (a fixed seed: the same topology gives the
    same figure), within ``budget`` gain evaluations in all."""
    rng = random.Random(n)
    pool = (neighbourhood_starts(links, n) + [list(s) for s in starts]
            + [_random_start(n, rng) for _k in range(RANDOM_STARTS)])
    found = Found(-1, [], 0, 0, 0, False)
    shape = _Shape(links, n)
    for side in pool:
        if found.evaluations >= budget:
            found.budget_spent = True
            break
        state = _State(side, links, shape)
        _balance(state)
        here = crossing(side, links)
        found.evaluations, state.evaluations = found.evaluations + state.evaluations, 0
        for _k in range(MAX_PASSES):
            found.passes += 1
            after = _fm_pass(state, here, budget - found.evaluations)
            found.evaluations += state.evaluations
            state.evaluations = 0
            if after >= here:
                break
            here = after
        found.starts += 1
        if found.crossing < 0 or here < found.crossing:
            found.crossing, found.side = here, list(side)
    found.budget_spent = found.budget_spent or found.evaluations >= budget
    return found
