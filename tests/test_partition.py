"""The balanced-cut search behind the worst bisection (beonet.compiler.partition):
against every cut of small random segment graphs, an independent cost rule, its budget."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from beonet.compiler import partition


def rule(links, side):
    """The project's cost rule, written out again: a wire or a shared medium split carries
    its rate once, a switched LAN split a/b min(a, b) times."""
    total = 0
    for kind, rate, members in links:
        a = sum(1 for m in members if side[m])
        b = len(members) - a
        if kind in ("p2p", "shared"):
            total += rate if a and b else 0
        else:
            total += min(a, b) * rate
    return total


def every_bisection(links, n):
    return min(rule(links, [1 if i in ones else 0 for i in range(n)])
               for ones in itertools.combinations(range(n), n // 2))


@st.composite
def segment_graphs(draw):
    n = draw(st.integers(4, 12))
    links = []
    for _k in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["p2p", "lan", "shared", "channel"]))
        size = 2 if kind == "p2p" else draw(st.integers(2, n))
        members = draw(st.lists(st.integers(0, n - 1), min_size=size, max_size=size, unique=True))
        links.append((kind, draw(st.sampled_from([10, 100, 1000])), members))
    return n, links


@settings(max_examples=150, deadline=None)
@given(segment_graphs(), st.randoms(use_true_random=False))
def test_search_returns_a_bisection_whose_crossing_it_reports(graph, rnd):
    n, links = graph
    start = [rnd.randint(0, 1) for _i in range(n)]
    found = partition.search([start], links, n, budget=10_000)
    assert abs(2 * sum(found.side) - n) <= 1
    assert found.crossing == rule(links, found.side) == partition.crossing(found.side, links)
    assert found.crossing >= every_bisection(links, n)
    assert not found.budget_spent and found.starts == 1 + len(partition.neighbourhood_starts(links, n)) + \
        partition.RANDOM_STARTS


@settings(max_examples=100, deadline=None)
@given(segment_graphs(), st.randoms(use_true_random=False))
def test_search_is_never_worse_than_its_start(graph, rnd):
    """A local search keeps the best cut of each pass: whatever it finds is at most the
    crossing of the balanced start it was given (the exact minimum is not promised)."""
    n, links = graph
    start = [rnd.randint(0, 1) for _i in range(n)]
    balanced = list(start)
    partition.balance(balanced, links)
    found = partition.search([start], links, n, budget=10 ** 6)
    assert found.crossing <= rule(links, balanced)


def test_balance_moves_the_cheapest_nodes_to_the_smaller_side():
    # a LAN of 0-3 and a wire 4-5: all on side 1, balancing moves one wire end
    # and two LAN members (min(2, 2) = 2) or the whole wire and one LAN member
    links = [("lan", 100, [0, 1, 2, 3]), ("p2p", 100, [4, 5])]
    side = [1] * 6
    crossing = partition.balance(side, links)
    assert sum(side) == 3 and crossing == rule(links, side) == 100


def test_neighbourhood_starts_put_a_lan_and_its_wired_nodes_together():
    links = [("lan", 100, [0, 1]), ("lan", 100, [2, 3]), ("lan", 100, [4, 5]),
             ("p2p", 100, [0, 2]), ("p2p", 100, [1, 4]), ("p2p", 100, [3, 5])]
    starts = partition.neighbourhood_starts(links, 6)
    assert starts[0] == [1, 1, 1, 0, 1, 0]
    assert len(starts) == 3
    assert len(partition.neighbourhood_starts(links, 6, most=1)) == 1


def test_the_budget_stops_the_search_and_says_so():
    n = 400
    links = [("lan", 100, list(range(g * 20, g * 20 + 20))) for g in range(20)]
    links += [("p2p", 100, [i, (i * 37 + 11) % n]) for i in range(n) if (i * 37 + 11) % n != i]
    found = partition.search([[1 if i < n // 2 else 0 for i in range(n)]], links, n, budget=500)
    assert found.budget_spent
    assert found.evaluations <= 500 + 2 * n        # a pass's first gains are taken whole
    assert found.crossing == rule(links, found.side) and abs(2 * sum(found.side) - n) <= 1
