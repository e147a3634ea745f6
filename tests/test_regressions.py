"""Cases that once went wrong."""

import os
import typing

import pytest
from conftest import ROOT

from beonet.compiler import address, pipeline, prove
from beonet.outputs import plan as render


def test_neighbour_over_a_link_gets_a_host_route():
    # d's address is on the c--d link; a reaches d in one hop over a--d, not
    # through c. Once failed with "paths are not shortest".
    c = pipeline.compile_text(
        "name: c2\nfamily: custom\ncustom:\n  nodes: [a, b, c, d]\n  segments:\n"
        "    - {name: s, members: [a, b, c]}\n  links:\n    - {ends: [c, d]}\n"
        "    - {ends: [a, d]}\n")
    assert [[h["node"] for h in hops] for hops in c.path("a", "d")] == [["d"]]
    # d is only ever a destination: its forwarding stays off.
    assert not c.graph.by_name["d"].forwarding


def test_254_hosts_fit_a_24():
    c = pipeline.compile_text("name: b\nfamily: bonded\nbonded: {nodes: 254, channels: 1}\n")
    assert c.graph.segments[0].plen == 24
    c = pipeline.compile_text("name: b\nfamily: bonded\nbonded: {nodes: 255, channels: 1}\n")
    assert c.graph.segments[0].plen == 23


def test_physical_names_reach_peers_and_segments():
    c = pipeline.compile_text("name: p\nfamily: custom\ncustom:\n  nodes: [a, b]\n"
                              "  links:\n    - {ends: [a, b]}\n")
    plan = render.plan(c, {"a": {"eth1": "ens4"}, "b": {"eth1": "ens5"}})
    assert plan["nodes"]["a"]["interfaces"][0]["peer"] == {"node": "b", "interface": "ens5"}
    assert [m["interface"] for m in plan["segments"]["a--b"]["members"]] == ["ens4", "ens5"]


def test_uneven_metagraph_lists_only_heavier_pairs():
    c = pipeline.compile_text("name: u\nfamily: metagraph\n"
                              "metagraph: {groups: 4, nodes_per_group: 5, p2p_per_node: 1}\n")
    m = c.metrics["metagraph"]
    assert m["links_per_group_pair"] == 1.6667
    assert m["uneven_pairs"] and all(m["weights"][p] == 2 for p in m["uneven_pairs"])


BONDED = "name: b\nfamily: bonded\nbonded: {nodes: 3, channels: 2}\n"


def test_address_stage_gives_every_bond_its_mac():
    """The MAC is part of the compiled graph (02:be + the bond's address), not
    computed while rendering: the plan shows what the graph holds."""
    c = pipeline.compile_text(BONDED)
    bonds = [(n, i) for n in c.graph.nodes for i in n.interfaces if i.kind == "bond"]
    assert [i.mac for _, i in bonds] == ["02:be:0a:00:00:01", "02:be:0a:00:00:02",
                                         "02:be:0a:00:00:03"]
    node, bond = bonds[0]
    bond.mac = "02:be:00:00:00:99"
    planned = render.plan(c)["nodes"][node.name]["interfaces"]
    assert [i["mac"] for i in planned if i["kind"] == "bond"] == ["02:be:00:00:00:99"]


def test_a_bond_without_an_address_gets_a_stable_hashed_mac():
    c = pipeline.compile_text(BONDED)
    node = c.graph.nodes[0]
    bond = node.iface("bond0")
    bond.addresses = []
    mac = address.bond_mac(node, bond)
    assert mac.startswith("02:be:") and mac == address.bond_mac(node, bond)
    assert mac != address.bond_mac(c.graph.nodes[1], c.graph.nodes[1].iface("bond0"))


def test_expected_paths_walk_the_tables_the_proof_checked(monkeypatch):
    c = pipeline.compile_text("name: m\nfamily: mesh\nmesh: {dims: [3, 3]}\n")
    assert len(c.proof.tables) == len(c.graph.nodes)

    def rebuilt(*_args: object) -> None:
        raise AssertionError("routing tables rebuilt after the proof")
    monkeypatch.setattr(prove, "checked_tables", rebuilt)
    branches = c.path("node-0-0", "node-2-2")
    # the route to node-2-2's dimension-0 LAN changes the other coordinate first; the
    # failover host route also changes the first coordinate first
    assert [[h["node"] for h in hops] for hops in branches] == [["node-0-2", "node-2-2"],
                                                                 ["node-2-0", "node-2-2"]]


def test_parallel_links_get_numbered_names():
    c = pipeline.compile_text("name: p\nfamily: custom\ncustom:\n  nodes: [a, b, c]\n  links:\n"
                              "    - {ends: [a, b]}\n    - {ends: [a, b]}\n    - {ends: [b, c]}\n")
    assert [s.name for s in c.graph.segments] == ["a--b", "a--b-2", "b--c"]
    c = pipeline.compile_text("name: p\nfamily: metagraph\n"
                              "metagraph: {groups: 2, nodes_per_group: 2, p2p_per_node: 3}\n")
    assert [s.name for s in c.graph.segments if s.kind == "p2p"] == [
        "node01--node03", "node02--node04", "node01--node03-2", "node02--node04-2",
        "node01--node03-3", "node02--node04-3"]


def _conforms(value: object, hint: object, where: str) -> None:
    """value has every required key of the TypedDicts in hint and no other key, all the way down."""
    if isinstance(hint, type) and hasattr(hint, "__required_keys__"):
        assert isinstance(value, dict), where
        keys = set(value)
        assert hint.__required_keys__ <= keys, (where, hint.__required_keys__ - keys)
        assert keys <= hint.__required_keys__ | hint.__optional_keys__, (where, keys)
        hints = typing.get_type_hints(hint)
        for k, v in value.items():
            _conforms(v, hints[k], "%s.%s" % (where, k))
    elif typing.get_origin(hint) is list:
        for i, v in enumerate(value):
            _conforms(v, typing.get_args(hint)[0], "%s[%d]" % (where, i))
    elif typing.get_origin(hint) is dict:
        for k, v in value.items():
            _conforms(v, typing.get_args(hint)[1], "%s.%s" % (where, k))


@pytest.mark.parametrize("topology", ["bonded-dual-net", "switch-tree", "metanode-testbed",
                                      "routed-mesh", "custom-example"])
def test_plans_have_the_shape_of_their_types(topology):
    c = pipeline.compile_file(os.path.join(ROOT, "topologies", topology + ".yml"))
    _conforms(render.plan(c, {c.graph.nodes[0].name: {"eth1": "ens4"}}), render.Plan, "plan")


def test_yaml_plans_write_shared_lists_in_full():
    """Equal nexthops lists of a node and the failover object are shared in the
    plan dict; the YAML plan writes each out, with no anchor or alias."""
    import json

    import yaml
    c = pipeline.compile_file(os.path.join(ROOT, "topologies", "metanode-testbed.yml"))
    plan = render.plan(c)
    text = render.dumps(plan, "yaml")
    assert "&id" not in text and "*id" not in text
    assert yaml.safe_load(text) == json.loads(render.dumps(plan))
    assert sum("nexthops" in r for n in plan["nodes"].values() for r in n["routes"]) > 0
