"""beonet view's page in a real headless browser (Debian's chromium with selenium):
it loads from file:// without console errors, clicks select and highlight, a
`#from=A&to=B` link shows a proven path in #path, failures show what the compiler
counts, overlays show what their files say, the 1,024-node page loads.

Skipped only where the browser is missing and the user is not root (root installs
it: scripts/host-tools.sh); as root a missing browser fails the test."""

import json

import pytest
from browser import chrome, click_node, console_errors, may_skip, missing, node_index, open_page
from test_view import (
    IPV4_TEXT,
    TOPO,
    compiled,
    miswired_reports,
    page_data,
    results_folder,
    run,
    verify_report,
    with_addressing,
)

from beonet.compiler import pipeline, prove
from beonet.compiler.model import ip6_text
from beonet.outputs.ipfamily import Paths
from beonet.view import model, page

WHY = missing()
if WHY and may_skip():
    pytest.skip("not root and missing %s" % WHY, allow_module_level=True)
pytestmark = pytest.mark.host("a real browser: Debian's chromium and chromium-driver")


@pytest.fixture(scope="module")
def driver():
    if WHY:
        pytest.fail("the browser test needs %s" % WHY)
    d = chrome()
    yield d
    d.quit()


def view(tmp_path, capsys, name, *more):
    """Write the page of topologies/NAME.yml (with more arguments); its path."""
    out = tmp_path / (name + ".html")
    code, _, err = run(capsys, "view", TOPO / (name + ".yml"), *more, "-o", out)
    assert code == 0, err
    return str(out)


def texts(driver, css):
    from selenium.webdriver.common.by import By
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]


def count(driver, css):
    return int(driver.execute_script("return document.querySelectorAll(arguments[0]).length", css))


def fail_hub(driver, name):
    """Fail mode on, then a click on the segment or switch of this name."""
    driver.find_element("id", "failmode").click()
    hub = driver.execute_script("var name = arguments[0];"
                                "return Array.from(document.querySelectorAll('g.hub')).find("
                                "function (g) { return g.textContent.indexOf(name) === 0; })", name)
    driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", hub)


def failed_switch(driver, tmp_path, capsys, topology, switch):
    """The page of a topology with one switch failed: the texts of #failure's counts."""
    open_page(driver, view(tmp_path, capsys, topology))
    fail_hub(driver, switch)
    return texts(driver, "#failure .routed"), texts(driver, "#failure .drawn")


def shown_paths(driver, a, b, more=""):
    """Pick nodes a and b through the page's address (#from=a&to=b, then more): each
    listed branch as [[address, node]...] and its drawn edges."""
    from selenium.webdriver.support.ui import WebDriverWait
    driver.execute_script("location.hash = arguments[0]", "#from=%s&to=%s%s" % (a, b, more))
    title = "%s \u2192 %s" % (a, b)
    WebDriverWait(driver, 30).until(lambda d: texts(d, "#path .pathtitle") == [title])
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#path ol')).map(function (ol) {"
        " return [Array.from(ol.children).map(function (li) {"
        "  return [li.dataset.address, li.dataset.node]; }),"
        " ol.dataset.edges.split(' ').map(Number)]; })")


def walks(edges, drawn, src, hops):
    """Whether the drawn edges join src to each hop's node in turn, one edge after another."""
    at, want = src, list(hops)
    for e in drawn:
        ends = edges[e][1:3]
        if at not in ends:
            return False
        at = ends[1] if ends[0] == at else ends[0]
        if want and at == want[0]:
            want.pop(0)
    return not want and at == hops[-1]


def assert_paths_are_the_compilers(driver, page, c, pairs, family=4):
    """For each pair, the page's branches in the family are `beonet paths`' (addresses
    and nodes, the preferred first), each drawn hop by hop, and the page's lines are
    `beonet paths`' own."""
    data = page_data(open(page).read())
    index = {n[0]: k for k, n in enumerate(data["nodes"])}
    paths, key = Paths(c), "address6" if family == 6 else "address"
    for a, b in pairs:
        shown = shown_paths(driver, a, b, "&family=6" if family == 6 else "")
        assert [hops for hops, _ in shown] == [[[h[key], h["node"]] for h in branch]
                                               for branch in paths.path(a, b)], (a, b)
        assert texts(driver, "#path pre.lines") == ["\n".join(paths.lines(a, b))]
        for hops, drawn in shown:
            assert walks(data["edges"], drawn, index[a], [index[n] for _, n in hops]), (a, b)
    assert console_errors(driver) == []


def sample_pairs(c, names, multipath=3):
    """Some pairs spread over the nodes, and the first few with more than one branch."""
    n = len(names)
    spread = [(names[k], names[(k * 37 + n // 2) % n]) for k in range(0, n, max(1, n // 6))]
    multi = [(a, b) for a in names[:3] for b in names if a != b and len(c.path(a, b)) > 1]
    assert len(multi) >= multipath
    return [(a, b) for a, b in spread if a != b] + multi[:multipath]


def test_testbed_loads_and_clicks_select_and_highlight(driver, tmp_path, capsys):
    page = view(tmp_path, capsys, "metanode-testbed")
    open_page(driver, page)
    assert count(driver, "g.node") == 36 and count(driver, "g.edge.p2p") == 18
    click_node(driver, "node01")
    assert texts(driver, "#info h2") == ["node01"]
    assert "10.0.0.1/24" in driver.find_element("id", "info").text
    assert count(driver, "g.node.from") == 1 and count(driver, "g.edge.onpath") == 0
    click_node(driver, "node20")
    c, _ = compiled("metanode-testbed")
    expected = [h["address"] for h in c.path("node01", "node20")[0]]
    hops = driver.execute_script("return Array.from(document.querySelectorAll('#path ol')[0]"
                                 ".children).map(function (li) { return li.dataset.address; })")
    assert hops == expected
    assert count(driver, "g.edge.onpath") > 0 and count(driver, "g.node.to") == 1
    assert driver.execute_script("return location.hash") == "#from=node01&to=node20"
    assert console_errors(driver) == []


def test_a_path_link_opens_with_the_proven_path(driver, tmp_path, capsys):
    page = view(tmp_path, capsys, "routed-mesh")
    open_page(driver, page, "#from=node-0-0&to=node-3-3")
    c, _ = compiled("routed-mesh")
    lists = driver.execute_script(
        "return Array.from(document.querySelectorAll('#path ol')).map(function (ol) {"
        " return Array.from(ol.children).map(function (li) { return li.dataset.address; }); })")
    assert lists == [[h["address"] for h in hops] for hops in c.path("node-0-0", "node-3-3")]
    assert len(lists) > 1 and texts(driver, "#path .cut") == []
    assert "node-0-0 \u2192 node-3-3" in driver.find_element("id", "path").text
    assert count(driver, "line.alongbar") > 0
    assert console_errors(driver) == []


def test_the_walks_bounds_are_said(driver, tmp_path, capsys, monkeypatch):
    """A walk cut by its bound on branches lists the preferred ones and says so; one cut
    by its bound on steps says so."""
    c, _ = compiled("routed-mesh")
    monkeypatch.setattr(prove, "PATHS_CAP", 1)
    open_page(driver, view(tmp_path, capsys, "routed-mesh"), "#from=node-0-0&to=node-3-3")
    preferred = c.path("node-0-0", "node-3-3")[0]
    shown = shown_paths(driver, "node-0-0", "node-3-3")
    assert [hops for hops, _ in shown] == [[[h["address"], h["node"]] for h in preferred]]
    assert texts(driver, "#path .cut") == ["cut short: at most 1 branches are listed "
                                           "(beonet paths --from node-0-0 --to node-3-3)"]
    monkeypatch.undo()
    monkeypatch.setattr(model, "WALK_STEPS", 2)
    (tmp_path / "steps").mkdir()
    open_page(driver, view(tmp_path / "steps", capsys, "routed-mesh"), "#from=node-0-0&to=node-3-3")
    assert len(texts(driver, "#path ol")) == 1
    assert texts(driver, "#path .cut") == ["cut short: the walk stopped after 2 steps "
                                           "(beonet paths --from node-0-0 --to node-3-3)"]
    assert console_errors(driver) == []


def test_a_table_without_a_route_or_with_a_loop_shows_no_path(driver, tmp_path, capsys):
    """Tables the proof would refuse, written into a page by hand: the walk says there is
    no path, and stops a loop at its bound on hops."""
    data = page_data(open(view(tmp_path, capsys, "routed-mesh")).read())
    routing, names = data["routing"], [n[0] for n in data["nodes"]]
    routing["prefixes"].append([0, 0])
    default = len(routing["prefixes"]) - 1
    routing["tables"][0] = [[routing["address"][0]], []]                       # no route at all
    routing["tables"][1] = [[routing["address"][1]], [[default, 2, 0]]]        # 1 -> 2 -> 1 ...
    routing["tables"][2] = [[routing["address"][2]], [[default, 1, 0]]]
    broken = tmp_path / "broken.html"
    broken.write_text(page.render(data))
    open_page(driver, str(broken), "#from=%s&to=%s" % (names[0], names[5]))
    assert texts(driver, "#path p") == ["no path: the nodes cannot reach each other"]
    shown_paths(driver, names[1], names[5])
    assert texts(driver, "#path p") == ["no path: the walk loops (more than %d hops)" % len(names)]
    assert count(driver, "g.edge.onpath") == 0 and console_errors(driver) == []


def hops(driver):
    """The addresses of each branch listed in #path."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#path ol')).map(function (ol) {"
        " return Array.from(ol.children).map(function (li) { return li.dataset.address; }); })")


def test_a_dual_stack_page_shows_each_familys_paths(driver, tmp_path, capsys):
    """A #from=A&to=B&family=6 link lists the IPv6 hops; the switch changes the family
    and the link; node details show both families."""
    page = view(tmp_path, capsys, "dual-stack-mesh")
    c = pipeline.compile_file(str(TOPO / "dual-stack-mesh.yml"))
    paths = Paths(c).addresses("node-0-0", "node-3-3")
    open_page(driver, page, "#from=node-0-0&to=node-3-3&family=6")
    assert hops(driver) == paths["address6"] and len(paths["address6"]) > 1
    assert texts(driver, "#path .family") == ["IPv6 hops"]
    assert "traceroute -n -6 %s from node-0-0" % paths["address6"][0][-1] in texts(driver, "#path .note")[0]
    driver.find_element("id", "family4").click()
    assert hops(driver) == paths["address"]
    assert driver.execute_script("return location.hash") == "#from=node-0-0&to=node-3-3"
    driver.find_element("id", "family6").click()
    assert driver.execute_script("return location.hash") == "#from=node-0-0&to=node-3-3&family=6"
    names = list(c.graph.by_name)
    assert_paths_are_the_compilers(driver, page, c, sample_pairs(c, names), family=6)
    assert_paths_are_the_compilers(driver, page, c, sample_pairs(c, names)[:3], family=4)
    click_node(driver, "node-1-1")
    info = driver.find_element("id", "info").text
    assert "address 10.0.1.2, IPv6 address fdc6:5405:d9b:1::2, forwarding on" in info
    assert texts(driver, "#info th")[4:6] == ["IPv4", "IPv6"]
    assert "ip -6 route replace fdc6:5405:d9b:3::/64 via" in info
    assert texts(driver, "#info table.routes th") == ["IPv4", "IPv6", "next hops"]
    rows = driver.execute_script("return Array.from(document.querySelectorAll('#info table.routes tr')).map("
                                 "function (tr) { return Array.from(tr.cells).map(function (td) {"
                                 " return td.innerText; }); })")
    assert ["10.0.3.0/24", "fdc6:5405:d9b:3::/64", "node-1-3"] in rows
    assert ["10.0.0.1/32", "fdc6:5405:d9b::1/128", "node-1-0\nnode-0-1"] in rows       # multipath
    assert console_errors(driver) == []


def test_a_hostile_family_in_a_link_is_ignored(driver, tmp_path, capsys):
    """A link's family is read as 4 or 6 or not at all: markup in it shows the default's hops."""
    page = view(tmp_path, capsys, "dual-stack-mesh")
    open_page(driver, page, "#from=node-0-0&to=node-3-3&family=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E6")
    assert [h[:3] for h in hops(driver)[0]] == ["10.", "10."]
    assert count(driver, "img") == 0
    assert driver.execute_script("return document.getElementById('family4').checked")
    assert console_errors(driver) == []


ONLY = {"ipv4": False, "ipv6": True}


@pytest.mark.parametrize("name", ["routed-mesh", "switch-tree-3", "metanode-testbed-frr", "bonded-dual-net"])
def test_an_ipv6_only_page_shows_ipv6_addresses_and_hops(driver, tmp_path, capsys, name):
    """IPv6 alone: no family switch, no IPv4 field or text, IPv6 hops (also for a link
    asking for IPv4), no console error."""
    topo = with_addressing(tmp_path, name, ONLY)
    out = tmp_path / "six.html"
    code, _, err = run(capsys, "view", topo, "-o", out)
    assert code == 0, err
    c = pipeline.compile_file(str(topo))
    a, b = list(c.graph.by_name)[0], list(c.graph.by_name)[-1]
    open_page(driver, str(out), "#from=%s&to=%s&family=4" % (a, b))
    assert count(driver, "#families") == 0
    assert_paths_are_the_compilers(driver, str(out), c, [(a, b)], family=6)
    assert hops(driver) == Paths(c).addresses(a, b)["address6"]
    assert "traceroute -n -6 " in texts(driver, "#path .note")[0]
    click_node(driver, b)
    side = driver.find_element("id", "side").text
    assert IPV4_TEXT.findall(side) == [] and "IPv4" not in side
    assert texts(driver, "#info table.routes th") == ["IPv6", "next hops"]
    assert "address %s, forwarding" % ip6_text(c.graph.by_name[b].address6) in side
    assert console_errors(driver) == []


def test_paths_of_a_mesh_over_128_nodes_are_the_compilers(driver, tmp_path, capsys):
    topo = tmp_path / "mesh144.yml"
    topo.write_text("name: mesh144\nfamily: mesh\nmesh: {dims: [12, 12]}\n")
    out = tmp_path / "mesh144.html"
    code, _, err = run(capsys, "view", topo, "-o", out)
    assert code == 0, err
    c = pipeline.compile_file(str(topo))
    open_page(driver, str(out))
    assert_paths_are_the_compilers(driver, str(out), c, sample_pairs(c, list(c.graph.by_name)))


def test_failing_a_node_shows_the_pairs_it_cuts(driver, tmp_path, capsys):
    """The compiler's count (as `beonet metrics`) and the drawing's pieces agree."""
    page = view(tmp_path, capsys, "backends-chain")
    open_page(driver, page)
    data = page_data(open(page).read())
    driver.find_element("id", "failmode").click()
    click_node(driver, "node-netplan")
    routed = data["failures"]["routed"][data["failures"]["names"].index("node-netplan")]
    assert routed == 2
    assert texts(driver, "#failure .routed") == ["pairs cut, routing daemon (converged): 2"]
    assert texts(driver, "#failure .drawn") == ["pairs the drawing falls apart into: 2"]
    assert count(driver, "g.node.cut") == 1 and count(driver, "g.node.failed") == 1
    assert console_errors(driver) == []


def test_failing_a_switch_shows_the_pairs_it_cuts(driver, tmp_path, capsys):
    routed, drawn = failed_switch(driver, tmp_path, capsys, "custom-example", "rack-a")
    assert texts(driver, "#failure h2") == ["failed: rack-a"]
    assert routed == ["pairs cut, routing daemon (converged): 11"]
    assert drawn == ["pairs the drawing falls apart into: 11"]
    assert console_errors(driver) == []


def test_failing_a_tree_switch_counts_the_pieces(driver, tmp_path, capsys):
    """A leaf switch of 4 of the 24 nodes: each of the 4 alone, 4 x 20 + 6 pairs cut."""
    routed, drawn = failed_switch(driver, tmp_path, capsys, "switch-tree-3", "leaf0")
    assert drawn == ["pairs the drawing falls apart into: 86"]
    assert routed == [] and count(driver, "g.node.cut") == 4
    assert console_errors(driver) == []


def test_frr_failure_shows_the_reroute(driver, tmp_path, capsys):
    page = view(tmp_path, capsys, "metanode-testbed-frr")
    open_page(driver, page, "#from=node01&to=node10")
    assert count(driver, "g.edge.onpath") > 0
    driver.find_element("id", "failmode").click()
    edge = driver.execute_script("return document.querySelector('g.edge.onpath.p2p')")
    assert edge is not None
    driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", edge)
    reroute = texts(driver, "#failure .reroute")
    assert len(reroute) == 1 and reroute[0].startswith("OSPF's reroute node01 \u2192 node10: node01")
    assert count(driver, "g.edge.reroute") > 0 and count(driver, "g.edge.failed") == 1
    assert console_errors(driver) == []


def test_overlays_show_what_their_files_say(driver, tmp_path, capsys):
    c, _ = compiled("metanode-testbed")
    report = tmp_path / "verify.json"
    report.write_text(json.dumps(verify_report()))
    found = tmp_path / "found.json"
    found.write_text(json.dumps(miswired_reports(c)))
    page = view(tmp_path, capsys, "metanode-testbed", "--verify", report, "--discovered", found)
    open_page(driver, page)
    dead = driver.execute_script("return Array.from(document.querySelectorAll('g.node.dead'))"
                                 ".map(function (g) { return g.id; })")
    assert dead == ["node-%d" % node_index(driver, "node07")]
    assert count(driver, "g.node.mismatch") == 2
    text = driver.find_element("id", "overlays").text
    assert "mismatch node01 \u2192 node20: arrives by node04" in text
    assert "1258 of 1260 pairs proven, 2 mismatched" in text and "node03: eth2 is down" in text
    assert count(driver, "g.node.miswired") >= 1 and count(driver, "li.fault") >= 1
    assert console_errors(driver) == []


def test_load_overlay_draws_the_measured_links(driver, tmp_path, capsys):
    folder = results_folder(tmp_path)
    page = view(tmp_path, capsys, "routed-mesh", "--results", folder)
    open_page(driver, page)
    data = page_data(open(page).read())
    names = [n[0] for n in data["nodes"]]
    pairs = data["overlays"]["load"]["pairs"]
    assert pairs and "MB/s" in driver.find_element("id", "overlays").text
    loaded = driver.execute_script("return Array.from(document.querySelectorAll('g.edge.loaded'))"
                                   ".map(function (g) { return [+g.dataset.i, +g.dataset.load]; })")
    expected = {}
    for a, b, rate in pairs:                # each rate along the preferred branch the page shows
        for e in shown_paths(driver, names[a], names[b])[0][1]:
            expected[e] = expected.get(e, 0.0) + rate
    assert {e: round(v, 1) for e, v in loaded} == {e: round(v, 1) for e, v in expected.items()}
    assert console_errors(driver) == []


def test_hostile_text_stays_text(driver, tmp_path, capsys):
    """Markup in a verify report is shown as text: no element made of it, no script run."""
    report = tmp_path / "verify.json"
    evil = "<img src=x onerror=\"document.title='owned'\"></script><script>document.title='owned'</script>"
    report.write_text(json.dumps({"dead": [evil], "mismatches": [], "problems": [evil]}))
    page = view(tmp_path, capsys, "metanode-testbed", "--verify", report)
    open_page(driver, page)
    assert driver.title == "metanode-testbed (metagraph) - beonet view"
    assert count(driver, "#overlays img") == 0 and count(driver, "script") == 2
    assert evil in driver.find_element("id", "overlays").text
    assert console_errors(driver) == []


def test_the_1024_node_metagraph_loads_with_its_paths(driver, tmp_path, capsys):
    topo = tmp_path / "mg1024.yml"
    topo.write_text("name: mg1024\nfamily: metagraph\nmetagraph: {groups: 32, nodes_per_group: 32, "
                    "p2p_per_node: 1}\n")
    out = tmp_path / "mg1024.html"
    code, _, err = run(capsys, "view", topo, "-o", out)
    assert code == 0, err
    seconds = open_page(driver, str(out))
    assert count(driver, "g.group") == 32 and count(driver, "g.node") == 0      # folded
    driver.find_element("id", "unfold").click()
    assert count(driver, "g.node") == 1024
    name = driver.execute_script("return JSON.parse(document.getElementById('data').textContent)"
                                 ".nodes[0][0]")
    click_node(driver, name)
    assert texts(driver, "#info h2") == [name]
    c = pipeline.compile_file(str(topo))
    assert_paths_are_the_compilers(driver, str(out), c, sample_pairs(c, list(c.graph.by_name)))
    print("1,024-node page: %d bytes, drawn in %.2f s" % (out.stat().st_size, seconds))


@pytest.mark.parametrize("name", sorted(p.stem for p in TOPO.glob("*.yml")))
def test_every_shipped_topology_draws_without_errors(driver, tmp_path, capsys, name):
    page = view(tmp_path, capsys, name)
    open_page(driver, page)
    data = page_data(open(page).read())
    assert count(driver, "g.node") == len(data["nodes"]) > 0
    assert count(driver, "g.edge") == len(data["edges"])
    assert console_errors(driver) == []
