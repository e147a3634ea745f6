"""Trees of switches of any shape: per-level fanouts and uplink rates, the exact
worst bisection (checked against brute force) and oversubscription per level."""

import itertools
import random

import pytest
import yaml

from beonet.compiler import pipeline
from beonet.compiler.errors import CompileError
from beonet.compiler.metrics import tree_crossing
from beonet.compiler.model import Switch


def tree(**params):
    topo = {"name": "t", "family": "tree", "tree": params}
    return pipeline.compile_text(yaml.safe_dump(topo, sort_keys=False), "t.yml")


def problems(**params):
    with pytest.raises(CompileError) as err:
        tree(**params)
    return [str(p) for p in err.value.problems]


# -- brute force ------------------------------------------------------------------

def _flatten(root):
    """(switches, nodes as (switch index, downlink rate)) in a fixed order."""
    switches, nodes = [], []

    def walk(sw):
        switches.append(sw)
        nodes.extend((len(switches) - 1, sw.downlink_mbit) for _node in sw.nodes)
        for child in sw.children:
            walk(child)
    walk(root)
    return switches, nodes


def brute_crossing(root):
    """Every split of floor(N/2) nodes from the rest, every placement of every
    switch: the least capacity the cut severs."""
    switches, nodes = _flatten(root)
    index = {id(sw): i for i, sw in enumerate(switches)}
    uplinks = [(index[id(sw.parent)], i, sw.uplink_mbit) for i, sw in enumerate(switches)
               if sw.parent is not None]
    best = None
    for chosen in itertools.combinations(range(len(nodes)), len(nodes) // 2):
        in_s = set(chosen)
        for placed in itertools.product((0, 1), repeat=len(switches)):
            cost = sum(d for k, (sw, d) in enumerate(nodes) if placed[sw] != (k in in_s))
            cost += sum(u for a, b, u in uplinks if placed[a] != placed[b])
            best = cost if best is None else min(best, cost)
    return best


def random_tree(rng):
    """An irregular tree: up to 5 switches, nodes on any of them, rates per link."""
    root = Switch("s0", 0)
    switches = [root]
    for k in range(1, rng.randint(1, 5)):
        parent = rng.choice(switches)
        sw = Switch("s%d" % k, parent.level + 1, parent=parent, uplink_mbit=rng.choice([1, 2, 3, 5]))
        parent.children.append(sw)
        switches.append(sw)
    for _node in range(rng.randint(1, 8)):
        rng.choice(switches).nodes.append("n")
    for sw in switches:
        sw.downlink_mbit = rng.choice([1, 2, 4])
    return root


@pytest.mark.parametrize("seed", range(12))
def test_bisection_equals_brute_force_on_random_trees(seed):
    rng = random.Random(seed)
    for _tree in range(12):
        root = random_tree(rng)
        assert tree_crossing(root) == brute_crossing(root)


@pytest.mark.parametrize("fanout,per_leaf,down,up", [
    ([3], 3, 100, 250),
    ([2, 3], 1, 100, [300, 100]),
    ([3, 2], 1, 10, [5, 20]),
    ([1, 2, 2], 2, 100, [100, 150, 60]),
    (2, 3, 100, 100),
])
def test_compiled_trees_match_brute_force(fanout, per_leaf, down, up):
    c = tree(fanout=fanout, nodes_per_leaf=per_leaf, downlink_mbit=down, uplink_mbit=up)
    b = c.metrics["bisection"]
    assert b["crossing_mbit"] == brute_crossing(c.graph.switches[0])
    assert b["method"] == "exact over the switch tree"


# -- shapes -------------------------------------------------------------------------

def test_three_levels_of_fanout_three_is_exact():
    """36 nodes: the worst split of 18 takes one subtree of 12 behind its
    1000 Mbit/s uplink and 6 more nodes by their downlinks: 1600 Mbit/s, 4/9
    (0.5 when the nodes are split on the LAN alone)."""
    c = tree(levels=3, fanout=3, nodes_per_leaf=4, downlink_mbit=100, uplink_mbit=1000)
    b = c.metrics["bisection"]
    assert c.metrics["nodes"] == 36
    assert b["crossing_mbit"] == 1600
    assert b["fraction_of_link"] == pytest.approx(4 / 9, abs=1e-4)


def test_two_by_three_tree():
    c = tree(fanout=[2, 3], nodes_per_leaf=4, downlink_mbit=100, uplink_mbit=[1000, 200])
    sw = {s.name: s for s in c.graph.switches}
    assert [s.name for s in sw["root"].children] == ["agg1-0", "agg1-1"]
    assert [s.name for s in sw["agg1-1"].children] == ["leaf3", "leaf4", "leaf5"]
    assert {s.uplink_mbit for s in sw["root"].children} == {1000}
    assert {sw["leaf%d" % i].uplink_mbit for i in range(6)} == {200}
    assert c.graph.nodes[23].switch == "leaf5"
    assert c.metrics["nodes"] == 24
    # 12 a side: three leaves behind their 200 Mbit/s uplinks
    assert c.metrics["bisection"]["crossing_mbit"] == 600
    assert c.metrics["bisection"]["uplink_per_node_mbit"] == pytest.approx(1000 / 12, abs=1e-3)


def test_a_single_fanout_repeats_on_every_level():
    one = tree(levels=4, fanout=2, nodes_per_leaf=3, uplink_mbit=500)
    listed = tree(fanout=[2, 2, 2], nodes_per_leaf=3, uplink_mbit=[500, 500, 500])
    assert [(s.name, s.level, s.uplink_mbit) for s in one.graph.switches] == \
        [(s.name, s.level, s.uplink_mbit) for s in listed.graph.switches]
    assert one.metrics == listed.metrics
    assert one.graph.params["fanout"] == [2, 2, 2]


def test_levels_follow_the_uplink_list():
    c = tree(fanout=2, nodes_per_leaf=2, uplink_mbit=[400, 300, 200])
    assert c.graph.params["levels"] == 4
    assert [s.uplink_mbit for s in c.graph.switches if s.level == 3] == [200] * 8


# -- oversubscription ------------------------------------------------------------------

def test_oversubscription_at_every_level():
    """The aggregation uplink carries 12 nodes' 100 Mbit/s on 1000: 1.2, not the leaf's 0.6."""
    c = tree(levels=3, fanout=2, nodes_per_leaf=6, downlink_mbit=100, uplink_mbit=1000)
    levels = c.metrics["oversubscription"]
    assert [(x["level"], x["switches"], x["nodes_below"], x["offered_mbit"], x["uplink_mbit"])
            for x in levels] == [(1, 2, 12, 1200, 1000), (2, 4, 6, 600, 1000)]
    assert [x["ratio"] for x in levels] == [1.2, 0.6]
    assert c.metrics["bisection"]["oversubscription"] == 1.2


def test_oversubscription_per_level_rates():
    c = tree(fanout=[2, 3], nodes_per_leaf=4, downlink_mbit=100, uplink_mbit=[1000, 200])
    assert [x["ratio"] for x in c.metrics["oversubscription"]] == [1.2, 2.0]
    assert c.metrics["bisection"]["oversubscription"] == 2.0


def test_bisection_is_fast_on_the_largest_tree():
    root = Switch("root", 0)
    for i in range(4):
        agg = Switch("a%d" % i, 1, parent=root, uplink_mbit=1000)
        root.children.append(agg)
        for j in range(4):
            leaf = Switch("l%d%d" % (i, j), 2, parent=agg, uplink_mbit=300,
                          nodes=["n"] * 64, downlink_mbit=100)
            agg.children.append(leaf)
    # 512 a side: two aggregation subtrees whole behind their 1000 Mbit/s uplinks
    assert tree_crossing(root) == 2000


# -- errors -------------------------------------------------------------------------

def test_list_lengths_must_agree():
    assert problems(levels=4, fanout=[2, 2], nodes_per_leaf=2) == [
        "t.yml:5: tree.fanout: 2 values for a tree of 4 levels: give one per level below "
        "the root (3), from the root down, or one number for every level"]
    assert problems(fanout=[2, 2], nodes_per_leaf=2, uplink_mbit=[10, 10, 10]) == [
        "t.yml:8: tree.uplink_mbit: 3 values for a tree of 3 levels: give one per level below "
        "the root (2), from the root down, or one number for every level"]


def test_list_values_are_checked_one_by_one():
    assert problems(fanout=[2, 0], nodes_per_leaf=2, uplink_mbit="fast") == [
        "t.yml:6: tree.fanout[1]: must be an integer from 1 to 1024",
        "t.yml:8: tree.uplink_mbit: must be an integer from 1 to 10000000 or a list"]
    assert problems(fanout=[], nodes_per_leaf=2) == [
        "t.yml:4: tree.fanout: must have at least 1 items"]
    assert problems(fanout=[2] * 6, nodes_per_leaf=1) == [
        "t.yml:4: tree.fanout: must have at most 5 items"]


def test_size_counts_every_level():
    assert problems(fanout=[8, 8, 8], nodes_per_leaf=4) == [
        "t.yml:3: tree: the tree puts 2048 nodes on its one LAN; beonet supports at most 1024"]


def test_a_value_of_several_forms_is_checked_against_the_form_of_its_type():
    """fanout, uplink_mbit and custom node entries take one of several forms: the
    message is about the form the value has, or names the forms when it has none."""
    with pytest.raises(CompileError) as err:
        pipeline.compile_text("name: c\nfamily: custom\ncustom:\n"
                              "  nodes: [a, 9bad, 5, {name: b, idd: 3}]\n", "c.yml")
    assert [str(p) for p in err.value.problems] == [
        "c.yml:4: custom.nodes[1]: must be a name: a letter, then letters, digits, '_', '.', '-'",
        "c.yml:4: custom.nodes[2]: must be a name or a mapping with 'name' (and 'id')",
        "c.yml:4: custom.nodes[3].idd: unknown key (did you mean 'id'?)"]
    assert problems(fanout="x", nodes_per_leaf=1, uplink_mbit=[0, 100]) == [
        "t.yml:4: tree.fanout: must be an integer from 1 to 1024 or a list",
        "t.yml:7: tree.uplink_mbit[0]: must be an integer from 1 to 10000000"]
