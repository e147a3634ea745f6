"""beonet view and the pinned drawings: the per-family layouts, the page's data
(route tables as the proof's, failures as `beonet metrics`), overlays read from
their files (refused with the file and key path when of the wrong shape), and
no input text able to leave its place in the page."""

import json
import math
import re

import pytest
import yaml
from conftest import ROOT, golden

from beonet import cli
from beonet.cabling import match
from beonet.compiler import pipeline, prove
from beonet.compiler.model import ip_int, ip_text
from beonet.outputs import plan as render
from beonet.outputs.ipfamily import Paths
from beonet.view import layout, model, overlays, page, pinned

TOPO = ROOT / "topologies"
TESTBED = str(TOPO / "metanode-testbed.yml")
MESH = str(TOPO / "routed-mesh.yml")
GOLDEN = ROOT / "tests/golden/view"
_COMPILED = {}


def compiled(name):
    """(compiled, plan) of a topology file of topologies/, compiled once."""
    if name not in _COMPILED:
        c = pipeline.compile_file(str(TOPO / (name + ".yml")))
        _COMPILED[name] = c, render.plan(c)
    return _COMPILED[name]


def run(capsys, *argv):
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def page_data(text):
    """The JSON embedded in a page."""
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
    assert found, "no data in the page"
    return json.loads(found.group(1))


# --- layouts -----------------------------------------------------------------------------

def test_metagraph_groups_sit_around_a_circle():
    """The testbed's four groups each hold a quarter of the circle, in order, every node
    at one radius; each group's LAN lies outside its arc; links are chords."""
    _, plan = compiled("metanode-testbed")
    lay = layout.layout(plan)
    radii = {round(math.hypot(*lay.at[n]), 3) for n in plan["nodes"]}
    assert len(radii) == 1
    radius = radii.pop()
    for name, node in plan["nodes"].items():
        angle = (math.atan2(lay.at[name][1], lay.at[name][0]) + math.pi / 2) % (2 * math.pi)
        assert int(angle // (math.pi / 2)) == node["group"], name
    for g in range(4):
        assert math.hypot(*lay.at["seg:group%d" % g]) > radius
    assert sum(1 for e in lay.parts.edges if e.kind == "p2p") == 18


def test_mesh_is_a_grid_with_row_and_column_bars():
    _, plan = compiled("routed-mesh")
    lay = layout.layout(plan)
    for name, node in plan["nodes"].items():
        assert lay.at[name] == (node["coords"][0] * layout.STEP, node["coords"][1] * layout.STEP)
    members = layout._members(lay.parts)
    for hub, nodes in members.items():
        x1, y1, x2, y2 = lay.bars[hub]
        assert x1 == x2 or y1 == y2                         # a row or a column
        for n in nodes:                                    # the bar runs past each member
            x, y = lay.at[n]
            assert (min(x1, x2) <= x <= max(x1, x2)) if y1 == y2 else (min(y1, y2) <= y <= max(y1, y2))
    assert sorted(x1 == x2 for x1, _, x2, _ in lay.bars.values()) == [False] * 4 + [True] * 4


def test_tree_by_switch_level_nodes_under_their_leaf():
    _, plan = compiled("switch-tree-3")
    lay = layout.layout(plan)
    for name, sw in plan["switches"].items():
        assert lay.at["sw:" + name][1] == sw["level"] * layout.STEP
        for n in sw["nodes"]:
            assert lay.at[n][1] > lay.at["sw:" + name][1]
        for child in sw["children"]:
            assert lay.at["sw:" + child][1] > lay.at["sw:" + name][1]


def test_bonded_nets_are_parallel_buses():
    _, plan = compiled("bonded-dual-net")
    lay = layout.layout(plan)
    assert lay.buses == {"seg:net0": 2}
    x1, y1, x2, y2 = lay.bars["seg:net0"]
    assert y1 == y2 and all(lay.at[n][1] < y1 for n in plan["nodes"])


def test_custom_stress_layout_is_deterministic_and_spread():
    _, plan = compiled("custom-example")
    first, second = layout.layout(plan).at, layout.layout(plan).at
    assert first == second
    points = list(first.values())
    closest = min(math.dist(p, q) for i, p in enumerate(points) for q in points[i + 1:])
    assert closest > layout.STEP / 4


def test_pinned_drawing_golden():
    """The testbed's pinned dot text (the input of `graph --format svg|png`)."""
    _, plan = compiled("metanode-testbed")
    text = pinned.dot(plan)
    assert text.count("!\"") >= 36 + 4
    golden(GOLDEN / "metanode-testbed.pinned.dot", text)


# --- the page's data ---------------------------------------------------------------------

def test_routing_is_the_proofs_tables(tmp_path, capsys):
    """The route tables the page walks are the proof's, entry for entry: every node's
    (length, network) -> (next node, source, further next nodes), node indices mapped
    from the page's back to the compiler's; the page's walk is checked in the browser."""
    code, _, err = run(capsys, "view", TESTBED, "-o", tmp_path / "tb.html")
    assert code == 0, err
    routing = page_data((tmp_path / "tb.html").read_text())["routing"]
    c, plan = compiled("metanode-testbed")
    graph_of = [c.graph.by_name[name].index for name in plan["nodes"]]
    assert routing["address"] == [c.graph.by_name[name].address for name in plan["nodes"]]
    assert routing["branches"] == prove.PATHS_CAP and routing["steps"] == model.WALK_STEPS
    for k, (sources, rows) in enumerate(routing["tables"]):
        table = {}
        for prefix, hop, src, *alt in rows:
            plen, net = routing["prefixes"][prefix]
            entry = (graph_of[hop] if hop >= 0 else hop, sources[src], tuple(graph_of[j] for j in alt))
            table.setdefault(plen, {})[net] = entry
        assert table == c.proof.tables[graph_of[k]].by_len
    assert any(len(row) > 3 for _, rows in routing["tables"] for row in rows)   # multipath


IPV4_TEXT = re.compile(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b")


def with_addressing(tmp_path, name, addressing):
    """topologies/NAME.yml with this addressing, written to tmp_path; its path."""
    topo = yaml.safe_load((TOPO / (name + ".yml")).read_text())
    topo["addressing"] = addressing
    out = tmp_path / ("%s-%s.yml" % (name, "only" if addressing.get("ipv4") is False else "dual"))
    out.write_text(yaml.safe_dump(topo, sort_keys=False))
    return out


def view_data(tmp_path, capsys, topo):
    """The data of the page of a topology file."""
    out = tmp_path / (topo.stem + ".html")
    code, _, err = run(capsys, "view", topo, "-o", out)
    assert code == 0, err
    return page_data(out.read_text())


def test_a_dual_stack_page_carries_the_ipv6_counterparts(tmp_path, capsys):
    """Each address the page's walk shows (every node's address, every route's source)
    has its IPv6 counterpart, the plan's: relabelled, the walk's hops are `beonet paths`'
    IPv6 ones; the node list holds both addresses."""
    data = view_data(tmp_path, capsys, TOPO / "dual-stack-mesh.yml")
    routing, six = data["routing"], data["routing"]["six"]
    assert routing["families"] == [4, 6]
    c = pipeline.compile_file(str(TOPO / "dual-stack-mesh.yml"))
    plan = render.plan(c)
    names = [n[0] for n in data["nodes"]]
    assert [six[str(a)] for a in routing["address"]] == [plan["nodes"][n]["address6"] for n in names]
    nodes = plan["nodes"]
    assert [n[1] for n in data["nodes"]] == ["%s %s" % (nodes[n]["address"], nodes[n]["address6"])
                                             for n in names]
    assert all(str(src) in six for sources, _ in routing["tables"] for src in sources)
    paths = Paths(c)
    for a, b in (("node-0-0", "node-3-3"), ("node-2-1", "node-0-3")):
        assert [[six[str(ip_int(h["address"]))] for h in hops] for hops in c.path(a, b)] == \
            paths.addresses(a, b)["address6"]


def test_a_dual_stack_pages_route_columns_are_the_plans_routes(tmp_path, capsys):
    """Each node's routed prefixes (not on-link) in the page: in IPv4 its plan's IPv4
    routes, in IPv6 (`prefixes6`) its plan's IPv6 routes, with the same next hops (FRR:
    the routes it learns)."""
    data = view_data(tmp_path, capsys, with_addressing(tmp_path, "metanode-testbed-frr", {"ipv6": True}))
    routing = data["routing"]
    c = pipeline.compile_text((tmp_path / "metanode-testbed-frr-dual.yml").read_text(), "t.yml")
    plan = render.plan(c)
    names = [n[0] for n in data["nodes"]]
    by_address = {n["address"]: name for name, n in plan["nodes"].items()}
    by_address.update({i: name for name, n in plan["nodes"].items() for a in
                       (x["addresses"] for x in n["interfaces"]) for i in (s.split("/")[0] for s in a)})
    for k, (_, rows) in enumerate(routing["tables"]):
        routed = [row for row in rows if row[1] >= 0]
        four = {"%s/%d" % (ip_text(routing["prefixes"][r[0]][1]), routing["prefixes"][r[0]][0]):
                [names[j] for j in (r[1], *r[3:])] for r in routed}
        six = {routing["prefixes6"][r[0]]: [names[j] for j in (r[1], *r[3:])] for r in routed}
        node = plan["nodes"][names[k]]
        proven = node["routes"] + node["learned"]          # under FRR: the routes OSPF learns
        for table, routes in ((four, [r for r in proven if ":" not in r["to"]]),
                              (six, [r for r in proven if ":" in r["to"]])):
            assert table == {r["to"]: [by_address[h["via"]] for h in r.get("nexthops", [r])] for r in routes}
    assert len(routing["prefixes6"]) == len(routing["prefixes"])


def test_an_ipv6_only_page_shows_no_ipv4(tmp_path, capsys):
    """An IPv6-only page has one family, IPv6: no IPv4 text outside the walk's
    internal labels (numbers, never shown)."""
    data = view_data(tmp_path, capsys, with_addressing(tmp_path, "metanode-testbed-frr",
                                                       {"ipv4": False, "ipv6": True}))
    assert data["routing"]["families"] == [6]
    shown = {k: v for k, v in data.items() if k != "routing"}
    assert IPV4_TEXT.findall(json.dumps(shown)) == []
    assert all(":" in n[1] for n in data["nodes"])


def test_an_ipv4_only_page_carries_no_family_data(tmp_path, capsys):
    data = view_data(tmp_path, capsys, TOPO / "routed-mesh.yml")
    assert "families" not in data["routing"] and "six" not in data["routing"]


def test_failures_are_the_metrics():
    """Per element, the counts behind `beonet metrics`' single failures: their histogram
    and worst element are the metrics'."""
    c, plan = compiled("custom-example")
    data = model.build(plan, c).data
    f, metrics = data["failures"], c.metrics["failures"]
    n = len(plan["nodes"])
    routed_nodes = f["routed"][:n]
    hist = {}
    for v in routed_nodes:
        hist[str(v)] = hist.get(str(v), 0) + 1
    assert hist == metrics["routed"]["node"]["histogram"]
    assert max(f["routed"]) > 0                         # head and a3 are cut vertices
    assert f["static"] is not None and len(f["static"]) == len(f["names"])
    # every drawn edge and hub stands for an element of the metrics (no uplinks here)
    assert all(e[9] >= 0 for e in data["edges"])
    assert all(h[7] >= 0 for h in data["hubs"])


def test_large_metagraph_folds_and_huge_degrades_to_groups(tmp_path):
    """Above FOLD_NODES a meta-graph also carries its group view (shown first); above
    DETAIL_NODES only that."""
    topo = tmp_path / "mg.yml"
    topo.write_text("name: mg\nfamily: metagraph\nmetagraph: {groups: 8, nodes_per_group: 50, "
                    "p2p_per_node: 1}\n")
    c = pipeline.compile_file(str(topo))
    data = model.build(render.plan(c), c).data
    assert data["level"] == "nodes" and len(data["groups"]["vertices"]) == 8
    assert len(data["routing"]["tables"]) == len(data["nodes"]) == 400
    assert sum(link[2] for link in data["groups"]["links"]) == sum(
        1 for s in render.plan(c)["segments"].values() if s["kind"] == "p2p")
    old = model.DETAIL_NODES
    try:
        model.DETAIL_NODES = 100
        small = model.build(render.plan(c), c).data
    finally:
        model.DETAIL_NODES = old
    assert small["level"] == "groups" and "nodes" not in small


# --- escaping ----------------------------------------------------------------------------

HOSTILE = "</script><script>alert(1)</script><!-- \u2028\u2029 & \"'"


def test_script_json_cannot_close_its_element():
    text = page.script_json({"x": HOSTILE, HOSTILE: [HOSTILE]})
    assert "<" not in text and ">" not in text and "&" not in text
    assert "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == {"x": HOSTILE, HOSTILE: [HOSTILE]}


def test_no_input_text_leaves_its_place(tmp_path, capsys):
    """Hostile text in a verify report and in its file name stays data: the page has
    exactly its own two scripts and the text comes back intact from the JSON."""
    folder = tmp_path / "x<script>alert(2)<"
    folder.mkdir()
    report = folder / "verify.json"
    report.write_text(json.dumps({"proven": 1, "pairs": 2, "dead": [HOSTILE],
                                  "mismatches": [{"source": "node01", "destination": HOSTILE,
                                                  "why": HOSTILE}],
                                  "problems": [HOSTILE]}))
    out = tmp_path / "p.html"
    code, _, err = run(capsys, "view", TESTBED, "--verify", report, "-o", out)
    assert code == 0, err
    text = out.read_text()
    assert text.count("<script") == 2 and text.count("</script>") == 2
    assert "<script>alert" not in text and "\u2028" not in text
    v = page_data(text)["overlays"]["verify"]
    assert v["dead"] == [HOSTILE] and v["mismatches"] == [["node01", HOSTILE, HOSTILE]]
    assert v["file"] == str(report)


def test_page_title_is_escaped():
    text = page.render({"title": "<b>x</b>", "level": "groups"})
    assert "<title>&lt;b&gt;x&lt;/b&gt; - beonet view</title>" in text
    assert '<h1 id="title">&lt;b&gt;x&lt;/b&gt;</h1>' in text


# --- overlays ----------------------------------------------------------------------------

BAD_VERIFY = [
    ("[1, 2]", ": must be a mapping (the beonet_verify_live module's result), not list"),
    ('{"a": 1}', ": is no verify report: none of dead, mismatches, proven, problems"),
    ('{"dead": "node01"}', ": dead: must be a list, not str"),
    ('{"dead": [3]}', ": dead[0]: must be text, not int"),
    ('{"mismatches": [{"source": "a"}]}', ": mismatches[0].destination: must be a node name (text)"),
    ('{"mismatches": ["x"]}', ": mismatches[0]: must be a mapping, not str"),
    ('{"proven": "many"}', ": proven: must be a whole number"),
    ('{"proven": NaN}', ": is not JSON: NaN is not a JSON value"),
    ('{"dead": [], "dead": ["node01"]}', ": is not JSON: the key 'dead' is given twice"),
    ("  \n", ": is empty"),
    ('{"dead": ' + "[" * 100 + "]" * 100 + "}", ": nests deeper than 16 levels"),
    ("[" * 100_000 + "]" * 100_000, ": nests deeper than 16 levels"),
    ("\xff", ": is not UTF-8 text"),
    ("{node01: dead", ": is not JSON"),
]


@pytest.mark.parametrize("content,message", BAD_VERIFY)
def test_a_verify_report_of_the_wrong_shape_is_refused(content, message, tmp_path, capsys):
    bad = tmp_path / "verify.json"
    bad.write_text(content, encoding="latin-1")
    out = tmp_path / "p.html"
    code, stdout, err = run(capsys, "view", TESTBED, "--verify", bad, "-o", out)
    assert code == 2 and stdout == "" and "Traceback" not in err
    assert err.startswith(str(bad)) and message in err, err
    assert not out.exists()


def test_missing_overlay_files_are_named(tmp_path, capsys):
    out = tmp_path / "p.html"
    code, _, err = run(capsys, "view", TESTBED, "--verify", tmp_path / "none.json",
                       "--discovered", tmp_path / "none2.json", "--results", tmp_path / "nofolder",
                       "-o", out)
    assert code == 2 and not out.exists()
    assert "none.json: cannot read: No such file or directory" in err
    assert "none2.json" in err and "nofolder" in err


def test_a_bad_discovery_file_is_refused(tmp_path, capsys):
    bad = tmp_path / "found.json"
    bad.write_text('{"node01": {"nics": 3}}')
    code, _, err = run(capsys, "view", TESTBED, "--discovered", bad, "-o", tmp_path / "p.html")
    assert code == 2 and str(bad) in err and "Traceback" not in err


def test_a_bad_results_folder_is_refused(tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "results.json").write_text('{"format": "beonet-benchmark/1", "iperf3": 3}')
    code, _, err = run(capsys, "view", MESH, "--results", folder, "-o", tmp_path / "p.html")
    assert code == 2 and "results.json: iperf3" in err and "Traceback" not in err


def test_an_output_inside_the_results_folder_is_refused(tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    code, _, err = run(capsys, "view", MESH, "--results", folder, "-o", folder / "p.html")
    assert code == 2 and "lies inside" in err


def miswired_reports(c):
    """Discovery reports of the testbed with node01's link cable unplugged."""
    net = next(n for n in match.networks(c) if n.kind == "p2p" and "node01" in n.ends)
    return match.synthesise(c, moves=[match.Move("node01", net.name)])


def test_discovery_overlay_names_the_miswired_nodes(tmp_path):
    c, _ = compiled("metanode-testbed")
    found = tmp_path / "found.json"
    found.write_text(json.dumps(miswired_reports(c)))
    o = overlays.cabling(str(found), c)
    assert o["faults"] and any("node01" in f[2] for f in o["faults"])
    assert all(f[0] for f in o["faults"])
    good = tmp_path / "good.json"
    good.write_text(json.dumps(match.synthesise(c)))
    assert overlays.cabling(str(good), c)["faults"] == []


def verify_report():
    return {"pairs": 1260, "proven": 1258, "mismatched": 2, "dead": ["node07"],
            "mismatches": [{"source": "node01", "destination": "node20", "why": "arrives by node04",
                            "kind": "path"}],
            "problems": ["node03: eth2 is down"]}


def test_verify_overlay_reads_what_the_module_returns(tmp_path):
    report = tmp_path / "v.json"
    report.write_text(json.dumps(verify_report()))
    o = overlays.verify(str(report))
    assert o["dead"] == ["node07"] and o["mismatches"] == [["node01", "node20", "arrives by node04"]]
    assert o["summary"] == "1258 of 1260 pairs proven, 2 mismatched"
    assert o["problems"] == ["node03: eth2 is down"]


def results_folder(parent):
    """A results folder of the routed mesh with known rates, as playbooks/benchmark.yml
    writes it."""
    from test_benchmarks import _fake_outputs
    from test_benchmarks import compiled as bench_compiled

    from beonet.benchmarks import planner, report
    plan, path_of = bench_compiled("routed-mesh.yml")
    s = planner.schedule(plan, path_of, {"count": 10, "sizes": [4, 8192], "mss_points": False,
                                         "pairs": [1, 2], "file_mb": [2], "remote_copies": [0]})
    folder = parent / "run"
    report.write_results(str(folder), s, report.collect(s, _fake_outputs(s), plan), {"kernel": "6.1"},
                         plan, {})
    return folder


def test_load_overlay_carries_each_pairs_best_rate(tmp_path):
    """Each measured pair once, by the page's node indices, with its best rate (the page
    adds it along the pair's preferred path: checked in the browser)."""
    c, plan = compiled("routed-mesh")
    m = model.build(plan, c)
    o = overlays.load(str(results_folder(tmp_path)), c, m)
    names = list(plan["nodes"])
    assert o["rows"] and len(o["rows"]) == len(o["pairs"])
    for row, (a, b, rate) in zip(o["rows"], o["pairs"]):
        assert row == "%s \u2192 %s: %.1f MB/s" % (names[a], names[b], rate) and rate > 0


def test_interfaces_show_physical_and_logical_names(tmp_path, capsys):
    out = tmp_path / "p.html"
    code, _, err = run(capsys, "view", MESH, "-i", ROOT / "inventories/example/hosts.yml", "-o", out)
    assert code == 0, err
    info = page_data(out.read_text())["info"]
    assert info["node-0-0"]["interfaces"][0][:4] == ["enp1s0", "eth1", "ethernet", "d0-0"]
    assert "dev enp1s0" in info["node-0-0"]["dryrun"]
    assert info["node-0-1"]["interfaces"][0][:2] == ["eth1", "eth1"]


def test_pinned_edges_carry_their_nics_and_cable_labels():
    """The labels the unpinned drawing prints on edges are each edge's tooltip."""
    from beonet.cabling import sheet
    c, plan = compiled("custom-example")
    text = pinned.dot(plan, sheet.sheet(c))
    assert 'tooltip="bond0 (eth1+eth2) sw-rack-a-ch0:01 sw-rack-a-ch1:01"' in text
    assert "taillabel" not in text and "headlabel" not in text
