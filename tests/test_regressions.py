"""Cases that once went wrong."""

from beonet.compiler import pipeline
from beonet.outputs import plan as render


def test_neighbour_over_a_link_gets_a_host_route():
    # d's address is on the c--d link; a reaches d in one hop over a--d, not
    # through c. Once failed with "paths are not shortest".
    c = pipeline.compile_text(
        "name: c2\nfamily: custom\ncustom:\n  nodes: [a, b, c, d]\n  segments:\n"
        "    - {name: s, members: [a, b, c]}\n  links:\n    - {ends: [c, d]}\n"
        "    - {ends: [a, d]}\n")
    assert [h["node"] for h in c.path("a", "d")] == ["d"]
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
