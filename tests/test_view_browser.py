"""beonet view's page in a real headless browser (Debian's chromium with selenium):
it loads from file:// without console errors, clicks select and highlight, a
`#from=A&to=B` link shows a proven path in #path, failures show what the compiler
counts, overlays show what their files say, the 1,024-node page loads.

Skipped only where the browser is missing and the user is not root (root installs
it: scripts/host-tools.sh); as root a missing browser fails the test."""

import json

import pytest
from browser import chrome, click_node, console_errors, may_skip, missing, node_index, open_page
from test_view import TOPO, compiled, miswired_reports, page_data, results_folder, run, verify_report

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
    branches = c.path("node-0-0", "node-3-3")
    lists = driver.execute_script(
        "return Array.from(document.querySelectorAll('#path ol')).map(function (ol) {"
        " return Array.from(ol.children).map(function (li) { return li.dataset.address; }); })")
    assert lists == [[h["address"] for h in hops] for hops in branches]
    assert "node-0-0 \u2192 node-3-3" in driver.find_element("id", "path").text
    assert count(driver, "line.alongbar") > 0
    assert console_errors(driver) == []


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
    page = view(tmp_path, capsys, "custom-example")
    open_page(driver, page)
    fail_hub(driver, "rack-a")
    assert texts(driver, "#failure h2") == ["failed: rack-a"]
    assert texts(driver, "#failure .routed") == ["pairs cut, routing daemon (converged): 11"]
    assert texts(driver, "#failure .drawn") == ["pairs the drawing falls apart into: 11"]
    assert console_errors(driver) == []


def test_failing_a_tree_switch_counts_the_pieces(driver, tmp_path, capsys):
    """A leaf switch of 4 of the 24 nodes: each of the 4 alone, 4 x 20 + 6 pairs cut."""
    page = view(tmp_path, capsys, "switch-tree-3")
    open_page(driver, page)
    fail_hub(driver, "leaf0")
    assert texts(driver, "#failure .drawn") == ["pairs the drawing falls apart into: 86"]
    assert texts(driver, "#failure .routed") == [] and count(driver, "g.node.cut") == 4
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
    assert count(driver, "g.edge.loaded") == len(data["overlays"]["load"]["edges"]) > 0
    assert "MB/s" in driver.find_element("id", "overlays").text
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


def test_the_1024_node_metagraph_loads(driver, tmp_path, capsys):
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
    assert console_errors(driver) == []
    print("1,024-node page: %d bytes, drawn in %.2f s" % (out.stat().st_size, seconds))



@pytest.mark.parametrize("name", sorted(p.stem for p in TOPO.glob("*.yml")))
def test_every_shipped_topology_draws_without_errors(driver, tmp_path, capsys, name):
    page = view(tmp_path, capsys, name)
    open_page(driver, page)
    data = page_data(open(page).read())
    assert count(driver, "g.node") == len(data["nodes"]) > 0
    assert count(driver, "g.edge") == len(data["edges"])
    assert console_errors(driver) == []
