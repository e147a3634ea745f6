"""The cabling sheet: every cable with both ends, switch port counts, stable
ports when nodes are added, its Markdown/CSV/JSON forms and the drawings' labels."""

import csv
import io
import json
from collections import Counter

import pytest
import yaml
from conftest import ROOT, golden
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beonet import cli
from beonet.cabling.sheet import Cable, NicEnd, PortEnd, sheet
from beonet.compiler import pipeline
from beonet.compiler.errors import CompileError
from beonet.outputs import cabling, drawing
from beonet.outputs import plan as render

TOPOLOGIES = sorted(p.stem for p in (ROOT / "topologies").glob("*.yml"))
SETTINGS = dict(max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def compiled_of(name):
    return pipeline.compile_file(str(ROOT / "topologies" / ("%s.yml" % name)))


def compile_doc(doc):
    return pipeline.compile_text(yaml.safe_dump(doc, sort_keys=False), "t.yml")


def nic_ends(c):
    return [e for e in (c.a, c.b) if isinstance(e, NicEnd)]


# --- every shipped topology ----------------------------------------------------

@pytest.mark.parametrize("name", TOPOLOGIES)
def test_every_nic_has_exactly_one_cable(name):
    compiled = compiled_of(name)
    s = sheet(compiled)
    ethernet = {(n.name, i.name) for n in compiled.graph.nodes for i in n.interfaces
                if i.kind == "ethernet"}
    cabled = Counter((e.node, e.nic) for c in s.cables for e in nic_ends(c))
    assert set(cabled) == ethernet
    assert max(cabled.values()) == 1
    for node, nic in ethernet:
        assert s.cable_at(NicEnd(node, nic)) is not None
    assert s.cable_at(NicEnd(compiled.graph.nodes[0].name, "bond0")) is None


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_labels_and_switch_ports_are_unique(name):
    s = sheet(compiled_of(name))
    labels = [c.label for c in s.cables]
    assert len(labels) == len(set(labels))
    ports = [e for c in s.cables for e in (c.a, c.b) if isinstance(e, PortEnd)]
    assert len(ports) == len(set(ports))
    assert all(p.port >= 1 for p in ports)
    assert [sw.number for sw in s.switches] == list(range(1, len(s.switches) + 1))
    assert {p.switch for p in ports} == {sw.name for sw in s.switches}


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_cables_follow_the_plan(name):
    """A switch cable joins a NIC to the switch of the NIC's segment (or channel);
    a point-to-point cable joins the two ends of its link."""
    compiled = compiled_of(name)
    s = sheet(compiled)
    switches = {sw.name: sw for sw in s.switches}
    for node in compiled.graph.nodes:
        for iface in node.interfaces:
            if iface.kind != "ethernet":
                continue
            c = s.cable_at(NicEnd(node.name, iface.name))
            seg = iface.segment
            if seg.kind == "p2p":
                assert c.network == seg.name and c.channel is None
                assert {c.a, c.b} == {NicEnd(node.name, iface.name), NicEnd(*iface.peer)}
                continue
            assert c.a == NicEnd(node.name, iface.name)
            sw = switches[c.b.switch]
            assert c.label == "%s:%02d" % (sw.name, c.b.port)
            if seg.kind == "channel":
                assert c.network == sw.network == seg.channel_of.name
                assert sw.name == "sw-" + seg.name and c.channel == sw.channel is not None
            elif compiled.graph.switches:
                assert sw.name == node.switch
            else:
                assert sw.name == "sw-" + seg.name and c.network == seg.name


def test_one_switch_per_bond_channel():
    compiled = compiled_of("bonded-dual-net-4")
    k = compiled.graph.params["channels"]
    s = sheet(compiled)
    assert [(sw.name, sw.network, sw.channel) for sw in s.switches] == [
        ("sw-net0-ch%d" % c, "net0", c) for c in range(k)]
    for sw in s.switches:
        on = [c for c in s.cables if c.b.switch == sw.name]
        assert len(on) == len(compiled.graph.nodes)
        assert all(c.channel == sw.channel for c in on)


def test_custom_bonded_lan_gets_channel_switches_and_plain_lan_one():
    s = sheet(compiled_of("custom-example"))
    assert [(sw.name, sw.network, sw.channel) for sw in s.switches] == [
        ("sw-rack-a-ch0", "rack-a", 0), ("sw-rack-a-ch1", "rack-a", 1),
        ("sw-rack-b", "rack-b", None)]
    # a node's port is its host number on the segment (its `id`)
    assert s.cable_at(NicEnd("a2", "eth2")) == Cable(
        "sw-rack-a-ch1:12", NicEnd("a2", "eth2"), PortEnd("sw-rack-a-ch1", 12), "rack-a", 1)
    assert s.cable_at(NicEnd("b1", "eth2")) == Cable(
        "a3--b1", NicEnd("a3", "eth3"), NicEnd("b1", "eth2"), "a3--b1", None)


def test_tree_uplinks_on_port_one_children_from_port_two():
    s = sheet(compiled_of("switch-tree"))
    uplinks = [c for c in s.cables if isinstance(c.a, PortEnd)]
    assert uplinks[0] == Cable("leaf0:01", PortEnd("leaf0", 1), PortEnd("root", 1), "net0", None)
    assert [c.b for c in uplinks] == [PortEnd("root", k) for k in range(1, 5)]
    assert s.cable_at(NicEnd("node01", "eth1")).b == PortEnd("leaf0", 2)
    assert s.cable_at(NicEnd("node09", "eth1")).b == PortEnd("leaf1", 2)


def test_three_level_tree_aggregation_switches():
    s = sheet(compile_doc({"name": "t", "family": "tree",
                           "tree": {"levels": 3, "fanout": 2, "nodes_per_leaf": 3}}))
    by_a = {c.a: c for c in s.cables}
    assert by_a[PortEnd("agg1-1", 1)].b == PortEnd("root", 2)
    assert by_a[PortEnd("leaf3", 1)].b == PortEnd("agg1-1", 3)
    assert len([c for c in s.cables if isinstance(c.a, PortEnd)]) == 2 + 4


# --- port counts -----------------------------------------------------------------

BONDED = {"name": "b", "family": "bonded", "bonded": {"nodes": 8, "channels": 2}}


def test_switch_with_enough_ports_compiles():
    doc = dict(BONDED, switch={"ports": 8})
    s = sheet(compile_doc(doc))
    assert {sw.ports for sw in s.switches} == {8}


def test_switch_with_too_few_ports_is_an_error_naming_it():
    doc = dict(BONDED, switch={"ports": 7})
    with pytest.raises(CompileError) as exc:
        compile_doc(doc)
    texts = [str(p) for p in exc.value.problems]
    assert texts == ["t.yml:7: switch.ports: switch sw-net0-ch%d has 7 ports but needs port 8 "
                     "for node node08 (its host number on net0)" % k for k in (0, 1)]


def test_segment_ports_override_the_cluster_default():
    doc = {"name": "c", "family": "custom", "switch": {"ports": 48},
           "custom": {"nodes": ["a", "b", "c"],
                      "segments": [{"name": "lan", "members": ["a", "b", "c"], "ports": 2}]}}
    with pytest.raises(CompileError) as exc:
        compile_doc(doc)
    (problem,) = exc.value.problems
    assert (problem.path, problem.line, problem.file) == ("custom.segments[0].ports", 16, "t.yml")
    assert "switch sw-lan has 2 ports but needs port 3 for node c" in problem.message
    doc["custom"]["segments"][0]["ports"] = 3
    assert [sw.ports for sw in sheet(compile_doc(doc)).switches] == [3]


def test_tree_switch_ports_count_the_uplink():
    doc = {"name": "t", "family": "tree", "switch": {"ports": 4},
           "tree": {"fanout": 4, "nodes_per_leaf": 3}}
    assert len(sheet(compile_doc(doc)).switches) == 5
    doc["tree"]["nodes_per_leaf"] = 4
    with pytest.raises(CompileError) as exc:
        compile_doc(doc)
    assert len(exc.value.problems) == 4
    assert "switch leaf0 has 4 ports but needs port 5 for node node04" in str(exc.value)


def test_many_short_switches_are_summarised():
    doc = {"name": "t", "family": "tree", "switch": {"ports": 2},
           "tree": {"fanout": 12, "nodes_per_leaf": 2}}
    with pytest.raises(CompileError) as exc:
        compile_doc(doc)
    problems = exc.value.problems
    assert len(problems) == 9
    assert problems[-1].message.startswith("and 5 more switches with too few ports: leaf7, ")


# --- stable ports ----------------------------------------------------------------

@st.composite
def custom_growth(draw):
    """A connected custom topology and the same one with one more node appended."""
    n = draw(st.integers(2, 7))
    names = ["n%d" % i for i in range(n)]
    ids = draw(st.lists(st.sampled_from([None, 20, 30, 40]), min_size=n, max_size=n))
    nodes = [nm if i is None or ids.index(i) != k else {"name": nm, "id": i}
             for k, (nm, i) in enumerate(zip(names, ids))]
    segments = [{"name": "all", "members": list(names),
                 "channels": draw(st.integers(1, 3))}]
    for k in range(draw(st.integers(0, 2))):
        members = draw(st.lists(st.sampled_from(names), min_size=2, max_size=n, unique=True))
        segments.append({"name": "lan%d" % k, "members": members})
    links = [{"ends": list(e)} for e in draw(st.lists(
        st.tuples(st.sampled_from(names), st.sampled_from(names)).filter(lambda t: t[0] != t[1]),
        max_size=3))]
    doc = {"name": "grow", "family": "custom",
           "custom": {"nodes": nodes, "segments": segments, "links": links}}
    grown = json.loads(json.dumps(doc))
    new = "new"
    grown["custom"]["nodes"].append(new)
    for seg in grown["custom"]["segments"]:
        if seg["name"] == "all" or draw(st.booleans()):
            seg["members"].append(new)
    if draw(st.booleans()):
        grown["custom"]["links"].append({"ends": [draw(st.sampled_from(names)), new]})
    return doc, grown


def assert_old_cables_unchanged(before, after):
    old, new = sheet(before), sheet(after)
    missing = set(old.cables) - set(new.cables)
    assert not missing, "cables moved: %s" % sorted(c.label for c in missing)
    assert old.switches == new.switches[:len(old.switches)]


@settings(**SETTINGS)
@given(custom_growth())
def test_adding_a_custom_node_moves_no_cable(docs):
    before, after = docs
    assert_old_cables_unchanged(compile_doc(before), compile_doc(after))


@settings(**SETTINGS)
@given(st.integers(2, 40), st.integers(1, 4))
def test_adding_a_bonded_node_moves_no_cable(nodes, channels):
    doc = {"name": "b", "family": "bonded", "bonded": {"nodes": nodes, "channels": channels}}
    grown = {"name": "b", "family": "bonded", "bonded": {"nodes": nodes + 1, "channels": channels}}
    assert_old_cables_unchanged(compile_doc(doc), compile_doc(grown))


@settings(**SETTINGS)
@given(st.integers(2, 6), st.integers(2, 6))
def test_adding_a_mesh_row_moves_no_cable(rows, cols):
    doc = {"name": "m", "family": "mesh", "mesh": {"dims": [rows, cols]}}
    grown = {"name": "m", "family": "mesh", "mesh": {"dims": [rows + 1, cols]}}
    old, new = sheet(compile_doc(doc)), sheet(compile_doc(grown))
    assert set(old.cables) <= set(new.cables)


def test_adding_a_leaf_moves_no_cable():
    doc = {"name": "t", "family": "tree", "tree": {"fanout": 3, "nodes_per_leaf": 4}}
    grown = {"name": "t", "family": "tree", "tree": {"fanout": 4, "nodes_per_leaf": 4}}
    assert_old_cables_unchanged(compile_doc(doc), compile_doc(grown))


# --- formats -----------------------------------------------------------------------

def _end_of(device, port_or_nic):
    return PortEnd(device, int(port_or_nic)) if port_or_nic.isdigit() else NicEnd(device, port_or_nic)


@pytest.mark.parametrize("name", ["custom-example", "switch-tree", "bonded-dual-net"])
def test_csv_parses_back(name):
    s = sheet(compiled_of(name))
    rows = list(csv.DictReader(io.StringIO(cabling.csv_text(s))))
    assert list(rows[0]) == cabling.CSV_HEADER
    back = [Cable(r["label"], _end_of(r["a"], r["a_nic_or_port"]),
                  _end_of(r["b"], r["b_nic_or_port"]), r["network"],
                  int(r["channel"]) if r["channel"] else None) for r in rows]
    assert back == s.cables


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_json_parses_back(name):
    s = sheet(compiled_of(name))
    assert cabling.from_json(cabling.json_text(s)) == s


@pytest.mark.parametrize("name", ["custom-example", "switch-tree"])
def test_markdown_has_a_table_per_switch_and_every_cable(name):
    s = sheet(compiled_of(name))
    text = cabling.markdown(s, name)
    heads = [line for line in text.splitlines() if line.startswith("## Switch ")]
    assert heads == ["## Switch %d: %s" % (sw.number, sw.name) for sw in s.switches]
    cells = [line.strip("| ").split(" | ") for line in text.splitlines()
             if line.startswith("| ") and not line.startswith(("| port", "| cable", "| ---"))]
    rows = [row[1] if row[0].isdigit() else row[0] for row in cells]
    # a switch-to-switch cable has a row at each switch; every other cable one row
    # (its switch port, or the point-to-point table)
    both = [c.label for c in s.cables if isinstance(c.a, PortEnd)]
    assert Counter(rows) == Counter([c.label for c in s.cables] + both)


def test_export_cabling_formats(capsys):
    topo = str(ROOT / "topologies/custom-example.yml")
    assert cli.main(["export", topo, "cabling", "--format", "json"]) == 0
    s = cabling.from_json(capsys.readouterr().out)
    assert s == sheet(compiled_of("custom-example"))
    assert cli.main(["export", topo, "cabling"]) == 0
    assert capsys.readouterr().out.startswith("# Cabling of custom-example (custom)\n")


def test_export_format_only_with_cabling(capsys):
    assert cli.main(["export", str(ROOT / "topologies/custom-example.yml"), "hosts",
                     "--format", "csv"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "beonet export: --format goes with 'cabling' only\n"


def test_build_writes_the_sheet(capsys, tmp_path):
    out = tmp_path / "b"
    assert cli.main(["build", str(ROOT / "topologies/switch-tree.yml"), "-o", str(out)]) == 0
    assert "cabling.md, cabling.csv, cabling.json" in capsys.readouterr().out
    s = sheet(compiled_of("switch-tree"))
    assert cabling.from_json((out / "cabling.json").read_text()) == s
    assert (out / "cabling.csv").read_text() == cabling.csv_text(s)
    assert (out / "cabling.md").read_text().startswith("# Cabling of switch-tree (tree)\n")


@pytest.mark.parametrize("fmt", ["md", "csv", "json"])
def test_testbed_sheet_golden(fmt, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert cli.main(["export", "topologies/metanode-testbed.yml", "cabling", "--format", fmt]) == 0
    golden(ROOT / "tests/golden" / ("metanode-testbed.cabling.%s" % fmt), capsys.readouterr().out)


# --- drawings --------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["dot", "mermaid"])
@pytest.mark.parametrize("name", TOPOLOGIES)
def test_drawings_show_every_cable_label(name, fmt):
    compiled = compiled_of(name)
    text = drawing.GRAPHS[fmt](render.plan(compiled), sheet(compiled))
    for c in sheet(compiled).cables:
        assert c.label in text, c.label


def test_drawing_labels_follow_physical_nic_names():
    compiled = compiled_of("custom-example")
    physical = {n.name: {i.name: "enp%ds0" % k for k, i in enumerate(n.interfaces)}
                for n in compiled.graph.nodes}
    text = drawing.dot(render.plan(compiled, physical), sheet(compiled))
    for c in sheet(compiled).cables:
        assert c.label in text, c.label


def test_drawing_without_a_sheet_has_no_cable_labels():
    compiled = compiled_of("custom-example")
    assert "sw-rack-b:21" not in drawing.dot(render.plan(compiled))


def test_markdown_names_physical_nics_from_the_inventory(capsys):
    argv = ["export", str(ROOT / "topologies/routed-mesh.yml"), "cabling",
            "-i", str(ROOT / "inventories/example/hosts.yml")]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert "| 1 | sw-d0-0:01 | node-0-0 | eth1 (enp1s0) |" in text
    assert "| 2 | sw-d0-0:02 | node-1-0 | eth1 |" in text
    assert cli.main(argv + ["--format", "csv"]) == 0
    assert "sw-d0-0:01,node-0-0,eth1,sw-d0-0,1,d0-0,\n" in capsys.readouterr().out


def test_segment_named_like_an_earlier_or_later_bond_channel_is_an_error():
    segments = [{"name": "x-ch1", "members": ["a", "b"]},
                {"name": "x", "members": ["a", "b"], "channels": 2}]
    doc = {"name": "c", "family": "custom", "custom": {"nodes": ["a", "b"], "segments": segments}}
    with pytest.raises(CompileError) as exc:
        compile_doc(doc)
    (problem,) = exc.value.problems
    assert problem.path == "custom.segments[0].name"
    assert "'x-ch1' is the name of a bond channel of segment 'x'" in problem.message
    segments[0]["name"] = "x-ch2"
    assert len(sheet(compile_doc(doc)).switches) == 3
