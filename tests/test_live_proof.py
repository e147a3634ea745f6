"""The controller's half of the live-state proof (beonet.livestate): a plan made into
the state its nodes would report proves with no mismatch, for every shipped topology
and random ones; the plan's tables made that way give beonet_plan's paths exactly;
faults put into that state (a wrong route, a filter drop, a dead node, a link down,
forwarding off, a neighbour that does not answer, a filter beonet cannot judge) are
each found and named as traceroute's diagnosis names them; the traceroute sample
covers every path length and every gateway; the recorded kernel state makes the
tables the kernel would use. Dual-stack and IPv6-only plans prove every pair of each
family, walked apart, and an IPv6 fault is named with its family while IPv4 passes."""

import copy
import json

import pytest
import yaml
from conftest import ROOT, golden
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties import custom_topologies, dump

from beonet.agent import verify
from beonet.compiler import pipeline
from beonet.compiler.model import ON_LINK, ip_int
from beonet.livestate import nft, proof, state, synthetic, tables
from beonet.livestate.family import V6, six
from beonet.livestate.report import expected
from beonet.outputs import plan as render

TOPOLOGIES = sorted(p.stem for p in (ROOT / "topologies").glob("*.yml"))
HERE = ROOT / "tests/livestate"


def _compiled(name):
    return pipeline.compile_file(str(ROOT / "topologies" / ("%s.yml" % name)))


def _healthy(plan):
    """Every node's state as it would report the plan applied (through JSON, as Ansible
    hands it over)."""
    prefixes = render.prefixes(plan)
    return json.loads(json.dumps({n: synthetic.plan_state(p, prefixes) for n, p in plan["nodes"].items()}))


def _prove(plan, states, **kw):
    return proof.prove(plan, render.prefixes(plan), states, **kw)


class _Testbed(tuple):
    """(compiled, plan) of the metanode testbed, shown briefly (a failing test would
    otherwise print the whole graph)."""

    def __repr__(self):
        return "<metanode-testbed>"


@pytest.fixture(scope="module")
def testbed():
    compiled = _compiled("metanode-testbed")
    return _Testbed((compiled, render.plan(compiled)))


def _round_trip(compiled):
    plan = render.plan(compiled)
    result = _prove(plan, _healthy(plan))
    n = len(plan["nodes"])
    families = sum(key in next(iter(plan["nodes"].values())) for key in ("address", "address6"))
    pairs = families * n * (n - 1)             # every ordered pair in each IP family
    assert (result["pairs"], result["proven"], result["mismatched"], result["walked"]) == \
        (pairs, pairs, 0, 0), result["summary"]
    assert result["problems"] == [] and result["dead"] == [] and result["unjudged_nodes"] == []
    return plan, result


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_every_topology_applied_proves_every_pair(name):
    _round_trip(_compiled(name))


@pytest.mark.parametrize("name", ["metanode-testbed", "routed-mesh", "custom-example", "backends-chain",
                                  "bonded-dual-net"])
def test_the_plans_tables_from_its_state_give_beonet_plans_paths(name):
    """The tables made from the plan's state are those the compiler proved: every pair's
    allowed hop lists are the same, so the live proof compares with beonet_plan's paths."""
    compiled = _compiled(name)
    plan = render.plan(compiled)
    names = list(plan["nodes"])
    address = [ip_int(plan["nodes"][n]["address"]) for n in names]
    states = [state.parse(n, synthetic.plan_state(plan["nodes"][n], render.prefixes(plan))) for n in names]
    net = tables.build(names, address, states, [[] for _n in names])
    for s, a in enumerate(names):
        for d, b in enumerate(names):
            if a != b:
                assert expected(net, net.tables, s, d) == [[h["address"] for h in branch]
                                                           for branch in compiled.path(a, b)], (a, b)


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(custom_topologies())
def test_random_topologies_applied_prove_every_pair(topo):
    _round_trip(pipeline.compile_text(dump(topo), "prop.yml"))


def test_a_heal_plan_proves_the_pairs_it_routes_and_no_others():
    compiled = pipeline.compile_file(str(ROOT / "topologies/metanode-testbed.yml"), down="node01,node10")
    plan = render.plan(compiled)
    result = _prove(plan, _healthy(plan))
    parts = compiled.components
    routed = sum(len(p) * (len(p) - 1) for p in parts)
    assert result["pairs"] == result["proven"] == routed and result["mismatched"] == 0


# -- faults put into the healthy state ----------------------------------------------

def _gateway(compiled):
    """The node that forwards the most pairs, and its first NIC with an address."""
    g = max(compiled.proof.forwarded, key=lambda i: (compiled.proof.forwarded[i], -i))
    node = compiled.graph.nodes[g]
    return node.name, node.interfaces[0].name


def _fault(testbed, change):
    compiled, plan = testbed
    states = _healthy(plan)
    change(states, plan, *_gateway(compiled))
    return _prove(plan, states, keep=3)


def _kinds(result):
    return {r["kind"] for r in result["mismatches"]}


def _lines(result):
    return [line for line in result["summary"] if not line.endswith("(0)")]


def test_a_dead_gateway_is_named_and_the_pairs_through_it_broken(testbed):
    result = _fault(testbed, lambda s, plan, gw, nic: s.pop(gw))
    assert result["dead"] == ["node01"] and result["dead_pairs"] == 2 * 35
    assert result["summary"][0] == "nodes dead or unreachable (1): node01"
    assert result["summary"][1] == "pairs broken through a dead gateway or one with forwarding off (86):"
    assert result["summary"][2].startswith("  stops before node01 (dead): 86 pairs, e.g. node10 -> node02")
    row = result["mismatches"][0]
    assert (row["pair"], row["expected"], row["seen"]) == \
        ("node10 -> node02", [["10.0.0.1", "10.0.0.2"]], ["*"])
    assert result["proven"] + result["mismatched"] + result["dead_pairs"] == result["pairs"]


def test_forwarding_off_on_a_gateway_breaks_the_pairs_through_it(testbed):
    def off(states, plan, gw, nic):
        states[gw]["sysctl"]["forwarding"] = dict.fromkeys(states[gw]["sysctl"]["forwarding"], 0)
    result = _fault(testbed, off)
    assert _kinds(result) == {"broken"} and result["mismatched"] == 86
    assert result["summary"][2].startswith("  stops before node01 (forwarding off): 86 pairs")
    assert result["mismatches"][0]["seen"] == ["*"]          # node01 answers nothing it does not forward


def test_forwarding_off_on_one_nic_breaks_only_what_comes_in_by_it(testbed):
    def off(states, plan, gw, nic):
        states[gw]["sysctl"]["forwarding"]["eth2"] = 0
    result = _fault(testbed, off)
    assert result["problems"] == ["node01: forwarding off on NIC eth2, the plan says on"]
    assert result["mismatched"] == 44
    assert result["summary"][2].startswith("  stops before node01 (forwarding off)")


def test_a_filter_that_lacks_a_prefix_drops_the_pairs_through_the_node(testbed):
    def narrow(states, plan, gw, nic):
        states[gw]["filter"]["sets"]["inet beonet cluster"] = ["10.0.0.0/24", "10.0.2.0/23", "10.255.0.0/16"]
    result = _fault(testbed, narrow)
    assert _kinds(result) == {"lost"}
    assert ("  filter drop on node node01: 86 pairs, e.g. node10 -> node02, node10 -> node03, "
            "node10 -> node04") in result["summary"]
    assert result["problems"] == ["node01: beonet's forward filter drops cluster traffic: its set cluster "
                                  "lacks 10.0.1.1"]


def test_a_link_down_is_named_with_its_node_and_nic(testbed):
    def down(states, plan, gw, nic):
        states[gw]["links"]["eth2"]["state"] = "no-carrier"
    result = _fault(testbed, down)
    assert result["problems"] == ["node01: link down on NIC eth2 (no carrier)"]
    assert [line.split(",")[0] for line in _lines(result)[0:2]] == [
        "pairs that do not arrive (102):", "  link down on node node01 NIC eth2: 102 pairs"]


def test_a_wrong_route_is_named_at_the_node_that_holds_it(testbed):
    def wrong(states, plan, gw, nic):
        routes = [r for r in states[gw]["routes"] if r["proto"] == "250"]
        routes[0]["hops"] = [dict(routes[1]["hops"][0])]
    result = _fault(testbed, wrong)
    assert [line.split(",")[0] for line in _lines(result)[0:4]] == [
        "pairs that arrive by another path (2):", "  wrong route on node node01: 2 pairs",
        "pairs that do not arrive (49):", "  wrong route on node node01: 49 pairs"]
    row = next(r for r in result["mismatches"] if r["kind"] == "lost")
    assert row["why"] == "wrong route on node node01" and row["seen"][-1] == "*"


def test_a_neighbour_that_does_not_answer_is_skipped_where_the_kernel_skips_it(testbed):
    """Neighbour-aware multipath (the failover plan) takes the other branches; a single
    next hop, or the destination itself on the link, is lost."""
    def failed(states, plan, gw, nic):
        states[gw]["neigh"] = [{"dst": "10.0.0.4", "dev": "eth1", "state": "FAILED"}]
    result = _fault(testbed, failed)
    assert result["problems"] == ["node01: neighbour 10.0.0.4 (node04) on NIC eth1 is FAILED"]
    assert [line.split(",")[0] for line in _lines(result)[0:2]] == [
        "pairs that do not arrive (9):", "  neighbour 10.0.0.4 on node node01 NIC eth1 is FAILED: 9 pairs"]


def test_a_filter_beonet_does_not_write_is_not_judged_and_does_not_fail(testbed):
    def foreign(states, plan, gw, nic):
        states[gw]["filter"]["chains"].append({"table": "ip filter", "chain": "FORWARD", "policy": "accept",
                                               "rules": [[{"drop": None}]], "count": 1, "prio": 0})
    result = _fault(testbed, foreign)
    assert result["mismatched"] == 0 and result["unjudged"] == 86 and result["problems"] == []
    assert result["unjudged_nodes"] == ["node01: forward filter not judged: forward chain ip filter FORWARD "
                                        "(policy accept, 1 rules) is not beonet's and may drop"]
    assert result["summary"][-3:-1] == ["pairs through nodes whose forwarding beonet cannot judge (86):",
                                        "  node node01: forward filter not judged: forward chain ip filter "
                                        "FORWARD (policy accept, 1 rules) is not beonet's and may drop: 86 "
                                        "pairs, e.g. node10 -> node02, node10 -> node03, node10 -> node04"]
    assert result["summary"][-1] == "state problems (0)"


def test_the_faults_summaries_are_golden(testbed):
    """Each fault's summary, as verify.yml prints it."""
    faults = {
        "a dead gateway": lambda s, plan, gw, nic: s.pop(gw),
        "forwarding off": lambda s, plan, gw, nic: s[gw]["sysctl"].update(
            forwarding=dict.fromkeys(s[gw]["sysctl"]["forwarding"], 0)),
        "a link without carrier": lambda s, plan, gw, nic: s[gw]["links"]["eth2"].update(state="no-carrier"),
        "a filter drop": lambda s, plan, gw, nic: s[gw]["filter"]["sets"].update(
            {"inet beonet cluster": ["10.0.0.0/24", "10.0.2.0/23", "10.255.0.0/16"]}),
        "no state from two nodes": lambda s, plan, gw, nic: [s.pop("node07"), s.pop("node20")],
        "a gateway whose links could not be read": lambda s, plan, gw, nic: _unreadable_links(s, gw),
    }
    out = []
    for label, change in faults.items():
        result = _fault(testbed, change)
        out += ["== %s: %d of %d pairs proven, %d walked one by one"
                % (label, result["proven"], result["pairs"], result["walked"])]
        out += result["summary"] + ["problems: %s" % p for p in result["problems"]]
        out += ["%s | %s | %s | %s" % (r["pair"], " or ".join(" ".join(b) for b in r["expected"]),
                                       " ".join(r["seen"]), r["why"]) for r in result["mismatches"]]
    golden(HERE / "faults-metanode-testbed.txt", "\n".join(out) + "\n")


def test_unusable_state_counts_as_no_state_and_says_why(testbed):
    compiled, plan = testbed
    states = _healthy(plan)
    states["node05"] = {"format": 1, "links": []}
    states["stranger"] = {}
    result = _prove(plan, states)
    assert result["dead"] == ["node05"]
    assert result["problems"][:2] == [
        "states.stranger: not a node of the plan",
        "node05: state.links: must be a mapping, not a list (its pairs count as to or from a dead node)"]


def _unreadable_links(states, node, **extra):
    """The state collect.state_of makes when `ip -j link show` failed twice."""
    states[node].update(links={}, errors=["ip -j link show: Error: Resource temporarily unavailable",
                                          "links: no usable output"], unread=["links"], **extra)


def _accounted(result):
    return (result["proven"] + result["mismatched"] + result["unjudged"] + result["dead_pairs"]
            + result["unread_pairs"])


def test_a_node_whose_links_could_not_be_read_is_named_once_not_judged_as_links_down(testbed):
    """The pairs to, from and through it are not proven and not mismatched either (the
    proof cannot tell), the node is named once with what failed, and the result says
    verify did not prove every pair."""
    result = _fault(testbed, lambda s, plan, gw, nic: _unreadable_links(s, gw))
    assert result["problems"] == [
        "node01: state unreadable: could not read its links (ip -j link show: Error: Resource temporarily "
        "unavailable); its pairs are not proven, run verify again"]
    assert result["unreadable"] == ["node01"] and result["dead"] == []
    assert (result["mismatched"], result["mismatches"], result["dead_pairs"]) == (0, [], 0)
    assert result["unread_pairs"] == 2 * 35 + 86           # to and from it, and the 86 through it
    assert result["proven"] < result["pairs"] == _accounted(result)
    assert _lines(result) == [
        "nodes whose state could not be read, to verify again (1): node01",
        "pairs not proven, to, from or through nodes whose state could not be read (156)",
        "state problems (1):", "  " + result["problems"][0]]


@pytest.mark.parametrize("change", ["links came back empty", "a listing cut short", "an older node's errors"])
def test_a_state_that_cannot_be_whole_is_unreadable_whoever_checked_it(testbed, change):
    """The controller finds what the node's own check finds (a node of an older beonet
    sends no `unread`): no NIC at all, NICs holding addresses or routes missing, and
    the errors that name a reading without usable output."""
    def fault(states, plan, gw, nic):
        st = states["node05"]
        if change == "links came back empty":
            st["links"] = {}
        elif change == "a listing cut short":
            del st["links"]["eth1"], st["links"]["eth2"]
        else:
            st.update(errors=["ip -j -4 -d route show table main: Error", "routes: no usable output"],
                      routes=[])
    result = _fault(testbed, fault)
    why = {"links came back empty": "links (links: ip listed no NIC, not even lo)",
           "a listing cut short": "links (links: NICs eth1, eth2 hold addresses or routes but are not "
                                  "listed)",
           "an older node's errors": "routes (ip -j -4 -d route show table main: Error)"}[change]
    assert result["problems"] == ["node05: state unreadable: could not read its %s; its pairs are not "
                                  "proven, run verify again" % why]
    assert (result["unreadable"], result["mismatched"], result["unread_pairs"]) == (
        ["node05"], 0, 2 * 35 + _through(testbed, "node05"))


def _through(testbed, name):
    """The pairs of two other nodes some branch of whose planned paths passes node name."""
    compiled, plan = testbed
    return sum(1 for s in plan["nodes"] for d in plan["nodes"] if name not in (s, d) and s != d
               and any(h["node"] == name for b in compiled.path(s, d) for h in b[:-1]))


def test_a_dead_node_and_an_unreadable_one_are_counted_apart(testbed):
    def both(states, plan, gw, nic):
        states.pop("node07")
        _unreadable_links(states, "node20")
    result = _fault(testbed, both)
    assert result["dead"] == ["node07"] and result["unreadable"] == ["node20"]
    # a pair between the two counts where its destination does
    assert result["dead_pairs"] == 2 * 35 - 1 and result["unread_pairs"] > 2 * 35 - 1
    assert {r["why"] for r in result["mismatches"]} == {"node07 (dead)"}       # through the dead one
    assert _accounted(result) == result["pairs"]
    assert result["summary"][:2] == ["nodes dead or unreachable (1): node07",
                                     "nodes whose state could not be read, to verify again (1): node20"]


def test_a_branch_off_the_plan_before_an_unreadable_node_is_still_a_mismatch(testbed):
    """node02 sends node03's packets through node04, which the plan does not (both are
    on group 0's switch); node04 could not be read: the pair is a mismatch all the same."""
    def detour(states, plan, gw, nic):
        states["node02"]["routes"].append({"dst": "10.0.0.3/32", "type": "unicast", "proto": "static",
                                           "hops": [{"via": "10.0.0.4", "dev": "eth1"}]})
        _unreadable_links(states, "node04")
    result = _fault(testbed, detour)
    rows = {r["pair"]: (r["kind"], r["why"]) for r in result["mismatches"]}
    assert rows["node02 -> node03"] == ("other_path", "wrong route on node node02")
    assert set(rows.values()) == {("other_path", "wrong route on node node02")}   # node11 -> node03 too
    assert result["unreadable"] == ["node04"] and _accounted(result) == result["pairs"]


def test_a_plan_that_is_not_one_is_refused_with_a_message():
    with pytest.raises(proof.PlanError, match="plan.nodes: must be a mapping"):
        proof.prove({"nodes": []}, [], {})
    with pytest.raises(proof.PlanError, match=r"plan.nodes.a: cannot be read as a node's plan"):
        proof.prove({"nodes": {"a": {"address": "10.0.0.1"}}}, [], {})


# -- the traceroute sample ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["metanode-testbed", "routed-mesh", "switch-tree", "custom-example"])
def test_the_sample_has_every_path_length_and_passes_every_gateway(name):
    compiled = _compiled(name)
    plan, result = _round_trip(compiled)
    sample = result["sample"]
    lengths = {len(b[0]) for ds in sample.values() for b in ds.values()}
    assert lengths == {int(k) for k in compiled.metrics["hops"]}
    owner = {a.split("/")[0]: n for n, p in plan["nodes"].items()
             for i in p["interfaces"] for a in i["addresses"]}
    passed = {owner[h] for ds in sample.values() for b in ds.values() for h in b[0][:-1]}
    forwarders = {compiled.graph.nodes[i].name for i, f in compiled.proof.forwarded.items() if f}
    assert passed == forwarders
    for s, ds in sample.items():
        for d, allowed in ds.items():
            assert allowed == [[h["address"] for h in b] for b in compiled.path(s, d)]
    assert result["sampled"] <= len(forwarders) + len(lengths)


# -- the recorded kernel state ---------------------------------------------------------

def test_the_recorded_node_makes_the_tables_its_kernel_uses():
    """Node a of tests/livestate (its peers b, c, d hold 10.0.1.2, 10.0.2.3, 10.0.4.4): a
    multipath route on two live NICs; one whose second branch is on a NIC without carrier
    that ignore_routes_with_linkdown leaves out on eth1 only; a blackhole; an onlink route
    to a gateway nobody holds."""
    raw = json.loads((HERE / "raw-node.json").read_text())
    from beonet.agent import collect
    a = state.parse("a", json.loads(json.dumps(collect.state_of(raw["commands"], raw["files"].get))))
    peers = {"b": "10.0.1.2/24", "c": "10.0.2.3/24", "d": "10.0.4.4/24"}
    names = ["a"] + list(peers)
    others = [state.parse(n, {"format": 1, "links": {"eth1": {"state": "up"}}, "addrs": {"eth1": [p]},
                              "routes": [], "sysctl": {}, "filter": {}}) for n, p in peers.items()]
    address = [ip_int("10.0.1.1")] + [ip_int(p.split("/")[0]) for p in peers.values()]
    net = tables.build(names, address, [a] + others, [[] for _n in names])
    t = net.tables[0]
    assert t.lookup(ip_int("10.0.3.9")) == (1, ip_int("10.0.1.1"), (2,))
    assert t.lookup(ip_int("10.0.1.7"))[0] == ON_LINK
    first, _src, more = t.lookup(ip_int("10.0.10.1"))     # eth3's branch: no carrier, not ignored there
    assert first == 1 and net.why(0, more[0]) == "link down on node a NIC eth3"
    assert net.why(0, t.lookup(ip_int("10.0.8.1"))[0]) == "route type blackhole on node a"
    assert net.why(0, t.lookup(ip_int("10.0.6.1"))[0]) == \
        "next hop 10.0.9.9 of node a: no node holds that address"
    assert net.why(0, t.lookup(ip_int("10.0.5.1"))[0]) == "link down on node a NIC eth3"
    assert net.verdicts[0].beonet and net.verdicts[0].accepts(ip_int("10.0.1.1"), ip_int("172.16.5.9"))
    assert not net.verdicts[0].accepts(ip_int("10.0.1.1"), ip_int("192.168.121.1"))


def test_a_branch_on_a_nic_without_carrier_is_left_out_where_the_kernel_ignores_it():
    st = {"format": 1, "links": {"eth1": {"state": "up"}, "eth2": {"state": "no-carrier"}},
          "addrs": {"eth1": ["10.0.1.1/24"], "eth2": ["10.0.2.1/24"]},
          "routes": [{"dst": "10.0.3.0/24", "hops": [{"via": "10.0.1.2", "dev": "eth1"},
                                                     {"via": "10.0.2.3", "dev": "eth2"}]},
                     {"dst": "10.0.4.0/24", "hops": [{"via": "10.0.2.3", "dev": "eth2"}]}],
          "sysctl": {"linkdown": {"all": 1}}, "filter": {}}
    peer = {"format": 1, "links": {"eth1": {"state": "up"}, "eth2": {"state": "up"}},
            "addrs": {"eth1": ["10.0.1.2/24"], "eth2": ["10.0.2.3/24"]}, "routes": [], "sysctl": {},
            "filter": {}}
    parsed = [state.parse("a", st), state.parse("b", dict(peer, addrs={"eth1": ["10.0.1.2/24"]})),
              state.parse("c", dict(peer, addrs={"eth2": ["10.0.2.3/24"]}))]
    net = tables.build(["a", "b", "c"], [ip_int("10.0.1.1"), ip_int("10.0.1.2"), ip_int("10.0.2.3")], parsed,
                       [[], [], []])
    assert net.tables[0].lookup(ip_int("10.0.3.1")) == (1, ip_int("10.0.1.1"), ())
    assert net.tables[0].lookup(ip_int("10.0.4.1")) is None
    assert tables.gone_why(net, 0, ip_int("10.0.4.1"), -1) == "link down on node a NIC eth2"


def test_the_proof_of_a_healthy_state_survives_a_reordered_multipath_route(testbed):
    """The kernel lists a multipath route's next hops as it likes."""
    compiled, plan = testbed
    states = _healthy(plan)
    for node in states.values():
        for r in node["routes"]:
            r["hops"].reverse()
    result = _prove(plan, states)
    assert result["mismatched"] == 0 and result["proven"] == result["pairs"]


def test_more_rows_than_kept_are_counted(testbed):
    compiled, plan = testbed
    states = copy.deepcopy(_healthy(plan))
    states.pop("node01")
    result = _prove(plan, states, keep=5)
    assert len(result["mismatches"]) == 5 and result["mismatched"] == 86


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(custom_topologies(), st.data())
def test_a_dead_node_breaks_exactly_the_pairs_with_a_branch_through_it(topo, data):
    """Brute force against the classes: with one node's state missing, a pair of two
    other nodes is broken when some branch of its planned paths passes that node, and
    proven otherwise."""
    compiled = pipeline.compile_text(dump(topo), "prop.yml")
    plan = render.plan(compiled)
    names = list(plan["nodes"])
    dead = data.draw(st.sampled_from(names))
    states = _healthy(plan)
    states.pop(dead)
    result = _prove(plan, states, keep=10 ** 6)
    broken = {(s, d) for s in names for d in names if dead not in (s, d) and s != d
              and any(h["node"] == dead for b in compiled.path(s, d) for h in b[:-1])}
    assert {(r["source"], r["destination"]) for r in result["mismatches"]} == broken
    assert all(r["kind"] == "broken" and r["why"] == "%s (dead)" % dead for r in result["mismatches"])
    n = len(names)
    assert (result["dead_pairs"], result["proven"]) == (2 * (n - 1), (n - 1) * (n - 2) - len(broken))


# --- each family walked apart: dual-stack and IPv6-only plans

def six_plan(name, **addressing):
    """The plan of a shipped topology with IPv6 turned on (dual stack, or IPv6-only)."""
    doc = yaml.safe_load((ROOT / "topologies" / ("%s.yml" % name)).read_text())
    doc["addressing"] = dict(doc.get("addressing") or {}, **addressing)
    return render.plan(pipeline.compile_text(yaml.safe_dump(doc), name + ".yml"))


@pytest.fixture(scope="module", name="dual")
def dual_plan():
    return six_plan("routed-mesh", ipv6=True)


@pytest.fixture(scope="module", name="only")
def only_plan():
    return six_plan("routed-mesh", ipv4=False, ipv6=True)


def six_prefixes(plan):
    return render.prefixes(plan) if any("address" in n for n in plan["nodes"].values()) else []


def six_healthy(plan):
    """Every node's state as it would report the plan applied, IPv6 too."""
    prefixes = proof.cluster_prefixes(plan, six_prefixes(plan))
    return json.loads(json.dumps({n: synthetic.plan_state(p, prefixes) for n, p in plan["nodes"].items()}))


def _prove6(plan, states, **kw):
    return proof.prove(plan, six_prefixes(plan), states, **kw)


@pytest.mark.parametrize("name", ["routed-mesh", "metanode-testbed-frr", "bonded-dual-net", "switch-tree"])
@pytest.mark.parametrize("addressing", [{"ipv6": True}, {"ipv4": False, "ipv6": True}])
def test_dual_stack_and_ipv6_only_plans_applied_prove_every_pair_of_each_family(name, addressing):
    plan = six_plan(name, **addressing)
    n = len(plan["nodes"])
    result = _prove6(plan, six_healthy(plan))
    per_family = n * (n - 1)
    families = 2 if addressing.get("ipv4", True) else 1
    assert (result["pairs"], result["proven"], result["mismatched"]) == (families * per_family,) * 2 + (0,), \
        result["summary"]
    assert result["problems"] == [] and result["dead"] == [] and result["unreadable"] == []
    keys = [d for dests in result["sample"].values() for d in dests]
    assert any(k.endswith(verify.SIX) for k in keys)
    assert any(not k.endswith(verify.SIX) for k in keys) == (families == 2)


def _six_of(plan):
    """{IPv4 address: the IPv6 address of the same NIC, or loopback} of a dual-stack plan."""
    out = {}
    for n in plan["nodes"].values():
        for iface in n["interfaces"]:
            four = [a.split("/")[0] for a in iface["addresses"] if ":" not in a]
            sixes = [a.split("/")[0] for a in iface["addresses"] if ":" in a]
            out.update(zip(four, sixes))
        if "routing" in n:
            out[n["routing"]["loopback"].split("/")[0]] = n["routing"]["loopback6"].split("/")[0]
    return out


@pytest.mark.parametrize("name", ["routed-mesh", "metanode-testbed-frr"])
def test_the_ipv6_hop_lists_are_the_ipv4_ones_on_the_same_nics(name):
    plan = six_plan(name, ipv6=True)
    four = proof.planned_net(plan, six_prefixes(plan))
    sixes = proof.planned_net(plan, six_prefixes(plan), V6)
    relabel = _six_of(plan)
    for s in range(0, len(four.names), 5):
        for d in range(len(four.names)):
            if s != d:
                want = [[relabel[h] for h in branch] for branch in expected(four, four.tables, s, d)]
                assert expected(sixes, sixes.tables, s, d) == want


def test_a_missing_ipv6_route_is_found_and_named_while_ipv4_passes(dual):
    states = six_healthy(dual)
    gone = next(r for r in states["node-0-0"]["routes6"] if r["dst"].endswith("/64") and r["proto"] == "250")
    states["node-0-0"]["routes6"].remove(gone)
    result = _prove6(dual, states)
    n = len(dual["nodes"])
    assert result["mismatched"] == 4 and result["proven"] == 2 * n * (n - 1) - 4
    assert {r["why"] for r in result["mismatches"]} == {"IPv6: no route on node node-0-0"}
    assert all(r["pair"].endswith(" (IPv6)") and r["family"] == "IPv6" for r in result["mismatches"])
    assert result["mismatches"][0]["expected"][0][-1].startswith("fd")
    assert "  IPv6: no route on node node-0-0: 4 pairs, e.g. " in "\n".join(result["summary"])
    four = copy.deepcopy(states)
    for reported in four.values():
        reported.pop("routes6")
    assert "IPv6 state unreadable" in "\n".join(_prove6(dual, four)["problems"])


def test_a_node_without_ipv6_state_is_unreadable_for_ipv6_only(dual):
    states = six_healthy(dual)
    for key in ("addrs6", "routes6", "neigh6", "sysctl6"):
        states["node-1-1"].pop(key)
    result = _prove6(dual, states)
    n = len(dual["nodes"])
    assert result["unreadable"] == ["node-1-1"] and result["mismatched"] == 0
    assert result["unread_pairs"] > 0 and result["proven"] + result["unread_pairs"] == 2 * n * (n - 1)
    assert result["problems"] == ["node-1-1: IPv6 state unreadable: could not read its addrs6, routes6, "
                                  "netconf6 (it sent none); its IPv6 pairs are not proven, run verify again"]


def test_a_plan_node_without_its_ipv6_address_is_named(dual):
    plan = copy.deepcopy(dual)
    del plan["nodes"]["node-0-1"]["address6"]
    with pytest.raises(proof.PlanError) as exc:
        _prove6(plan, {})
    assert str(exc.value) == "plan.nodes.node-0-1.address6: None is not an IPv6 address"


def test_on_an_ipv4_plan_what_a_node_could_not_read_of_ipv6_weighs_nothing():
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/routed-mesh-2x2.yml")))
    states = six_healthy(plan)
    states["node-0-0"].update(unread6=["addrs6"], errors=["ip -j -6 addr show: Error: not supported"])
    result = _prove6(plan, states)
    assert result["problems"] == [] and result["unreadable"] == [] and result["mismatched"] == 0


def test_ipv6_forwarding_off_and_a_filter_without_an_ipv6_rule_are_named(dual):
    states = six_healthy(dual)
    states["node-0-1"]["sysctl6"]["forwarding"]["all"] = 0
    chain = states["node-1-0"]["filter"]["chains"][0]
    chain["rules"], chain["count"] = chain["rules"][:1], 1
    result = _prove6(dual, states)
    problems = "\n".join(result["problems"])
    assert "node-0-1: IPv6 forwarding off, the plan says on" in problems
    assert ("node-1-0: beonet's forward filter drops cluster traffic: it has no rule for IPv6: its policy "
            "drops every forwarded IPv6 packet") in problems
    whys = {r["why"] for r in result["mismatches"]}
    assert whys == {"IPv6: node-0-1 (forwarding off)", "IPv6: filter drop on node node-1-0"}
    assert all(r["pair"].endswith("(IPv6)") for r in result["mismatches"])


@pytest.mark.parametrize("family", ["rules", "rules6"])
def test_policy_routing_on_a_forwarding_node_leaves_the_pairs_of_its_family_unjudged(dual, family):
    states = six_healthy(dual)
    states["node-0-0"][family] = [100]
    result = _prove6(dual, states)
    n = len(dual["nodes"])
    assert result["unjudged"] > 0 and result["proven"] + result["unjudged"] == 2 * n * (n - 1)
    line = "  %snode node-0-0: policy routing rules beside main (priorities 100): %d pairs, e.g. " % (
        "IPv6: " if family == "rules6" else "", result["unjudged"])
    assert any(s.startswith(line) for s in result["summary"]), result["summary"]


def test_beonets_ipv6_rule_is_judged_by_its_own_set():
    f = synthetic.forward_filter(["10.0.0.0/16", "fd00::/48"])
    v4, v6 = nft.judge(f), nft.judge(f, 128)
    assert v4.accepts(10 << 24 | 5, 10 << 24 | 6) and not v4.accepts(11 << 24, 10 << 24)
    assert v6.accepts(six("fd00::1"), six("fd00:0:0:7::1")) and not v6.accepts(six("fd01::1"), six("fd00::1"))
    f["sets"][nft.SET6].append("10.0.0.0/8")
    assert nft.judge(f, 128).refused == ("beonet's forward filter's set cluster6 holds '10.0.0.0/8', not an "
                                         "IPv6 address, prefix or range: its filter is refused")
    f["chains"][0]["rules"].append(nft.RULE6)
    f["chains"][0]["count"] = 3
    assert nft.judge(f, 128).unjudged == "beonet's forward chain holds rules beonet does not write"


# --- OSPFv3's routes: next hops named by the neighbour's link-local address

FRR6 = ("name: frr6\nfamily: metagraph\nmetagraph: {groups: 2, nodes_per_group: 3, p2p_per_node: 1}\n"
        "routing: {engine: frr}\naddressing: {ipv6: true}\n")


@pytest.fixture(scope="module", name="frr6")
def frr6_plan():
    return render.plan(pipeline.compile_text(FRR6, "frr6.yml"))


def _link_local(states, node, nic):
    return next(a for a in states[node]["addrs6"][nic] if a.startswith("fe80:"))


def test_ospfv3_routes_through_link_local_next_hops_prove_every_pair(frr6):
    states = six_healthy(frr6)
    vias = [h["via"] for s in states.values() for r in s["routes6"] for h in r["hops"] if h.get("via")]
    assert len(vias) > 30 and all(v.startswith("fe80::") for v in vias)
    result = _prove6(frr6, states)
    assert (result["proven"], result["mismatched"], result["problems"]) == (2 * 6 * 5, 0, [])


def test_a_link_local_next_hop_no_node_on_its_link_holds_is_named(frr6):
    states = six_healthy(frr6)
    lost = _link_local(states, "node02", "eth1")
    states["node02"]["addrs6"]["eth1"].remove(lost)
    # the same address on another link (node04's point-to-point NIC) holds nothing on the LAN
    states["node04"]["addrs6"]["eth2"].append(lost)
    result = _prove6(frr6, states)
    why = ("IPv6: next hop %s of node node01: no node on the network of its NIC eth1 holds that "
           "link-local address" % lost.split("/")[0])
    assert why in {r["why"] for r in result["mismatches"]}
    assert all(r["pair"].endswith("(IPv6)") for r in result["mismatches"])


def test_a_link_local_address_two_nodes_hold_on_one_link_is_named(frr6):
    states = six_healthy(frr6)
    twice = _link_local(states, "node02", "eth1")
    states["node03"]["addrs6"]["eth1"].append(twice)
    result = _prove6(frr6, states)
    why = ("IPv6: next hop %s of node node01: 2 nodes on the network of its NIC eth1 hold that "
           "link-local address" % twice.split("/")[0])
    assert why in {r["why"] for r in result["mismatches"]}
