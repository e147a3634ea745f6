"""verify.yml over IPv6: the node's IPv6 readings reduced (agent/collect.py, from output
written as iproute2 6.x prints it, both forms of a multipath route), screened as
hostile as the IPv4 ones (gate/node.py, livestate/state.py), and walked per family
(livestate/proof.py): dual-stack and IPv6-only plans applied prove every pair of
each family; a planted IPv6 fault is found and named while IPv4 passes; the
traceroute sample and the traces include IPv6 pairs whose hops are the IPv4 ones on
the same NICs; the diagnosis tells dead nodes on an IPv6-only cluster."""

import copy
import json

import pytest
import yaml
from conftest import ROOT

from beonet.agent import collect, diagnose, readout, verify
from beonet.compiler import pipeline
from beonet.gate import node as gate_node
from beonet.livestate import nft, proof, state, synthetic, task
from beonet.livestate import readout as controller
from beonet.livestate.family import V6, six

# `ip -j -6 addr show` of a node (iproute2 6.x): lo, eth1 with its planned address, a
# link-local one and one that failed duplicate address detection
ADDRS6 = [
    {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"],
     "addr_info": [{"family": "inet6", "local": "::1", "prefixlen": 128, "scope": "host"}]},
    {"ifindex": 2, "ifname": "eth1", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
     "addr_info": [{"family": "inet6", "local": "fd00:0:0:1::1", "prefixlen": 64, "scope": "global"},
                   {"family": "inet6", "local": "fd00:0:0:9::1", "prefixlen": 64, "scope": "global",
                    "dadfailed": True, "tentative": True},
                   {"family": "inet6", "local": "fe80::1", "prefixlen": 64, "scope": "link"}]}]
# `ip -j -6 -d route show table main`: a connected /64, the kernel's link-local and
# multicast routes, a default through a link-local router, a host route, and a multipath
# route once as one entry (kernels from 4.11) and once as one entry per next hop
ROUTES6 = [
    {"type": "unicast", "dst": "fd00:0:0:1::/64", "dev": "eth1", "protocol": "kernel", "metric": 256,
     "flags": [], "pref": "medium"},
    {"type": "unicast", "dst": "fe80::/64", "dev": "eth1", "protocol": "kernel", "metric": 256, "flags": [],
     "pref": "medium"},
    {"type": "multicast", "dst": "ff00::/8", "dev": "eth1", "protocol": "kernel", "metric": 256, "flags": [],
     "pref": "medium"},
    {"type": "unicast", "dst": "default", "gateway": "fe80::99", "dev": "eth1", "protocol": "ra",
     "metric": 1024, "flags": [], "expires": 1780, "pref": "medium"},
    {"type": "unicast", "dst": "fd00:0:0:2::5", "gateway": "fd00:0:0:1::2", "dev": "eth1", "protocol": "250",
     "metric": 1024, "flags": [], "pref": "medium"},
    {"type": "unicast", "dst": "fd00:0:0:3::/64", "protocol": "250", "metric": 1024, "flags": [],
     "pref": "medium", "nexthops": [{"gateway": "fd00:0:0:1::2", "dev": "eth1", "weight": 1, "flags": []},
                                    {"gateway": "fd00:0:0:1::3", "dev": "eth1", "weight": 1, "flags": []}]},
    {"type": "unicast", "dst": "fd00:0:0:4::/64", "gateway": "fd00:0:0:1::2", "dev": "eth1",
     "protocol": "250", "metric": 1024, "flags": [], "pref": "medium"},
    {"type": "unicast", "dst": "fd00:0:0:4::/64", "gateway": "fd00:0:0:1::3", "dev": "eth1",
     "protocol": "250", "metric": 1024, "flags": [], "pref": "medium"}]
# `ip -j -6 netconf show`: true/false from iproute2 5.x, "on"/"off" before
NETCONF6 = [{"family": "inet6", "interface": "lo", "forwarding": True, "mc_forwarding": False,
             "proxy_neigh": False, "ignore_routes_with_linkdown": False},
            {"family": "inet6", "interface": "eth1", "forwarding": "on",
             "ignore_routes_with_linkdown": "off"},
            {"family": "inet6", "interface": "all", "forwarding": True, "ignore_routes_with_linkdown": True},
            {"family": "inet6", "interface": "default", "forwarding": False}]
LINKS = [{"ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"]},
         {"ifname": "eth1", "flags": ["BROADCAST", "UP", "LOWER_UP"]}]


def _raw(**more):
    raw = {"links": LINKS, "addrs": [], "routes": [], "neigh": [], "rules": [], "nft": {"nftables": []},
           "addrs6": ADDRS6, "routes6": ROUTES6, "neigh6": [], "netconf6": NETCONF6}
    raw.update(more)
    return raw


def _collected(**more):
    return collect.state_of(_raw(**more), lambda _path: None)


def test_the_ipv6_readings_reduce_to_the_state():
    got = _collected()
    assert got["addrs6"] == {"lo": ["::1/128"], "eth1": ["fd00:0:0:1::1/64", "fe80::1/64"]}
    routes = {r["dst"]: r for r in got["routes6"]}
    assert routes["::/0"]["hops"] == [{"via": "fe80::99", "dev": "eth1"}] and routes["::/0"]["proto"] == "ra"
    assert routes["fd00:0:0:2::5/128"]["hops"] == [{"via": "fd00:0:0:1::2", "dev": "eth1"}]
    both = [{"via": "fd00:0:0:1::2", "dev": "eth1"}, {"via": "fd00:0:0:1::3", "dev": "eth1"}]
    assert routes["fd00:0:0:3::/64"]["hops"] == both
    assert routes["fd00:0:0:4::/64"]["hops"] == both            # listed once per next hop: one route
    assert [r["dst"] for r in got["routes6"]].count("fd00:0:0:4::/64") == 1
    assert got["sysctl6"] == {"forwarding": {"lo": 1, "eth1": 1, "all": 1},
                              "linkdown": {"lo": 0, "eth1": 0, "all": 1}}
    assert got["unread6"] == [] and got["unread"] == [] and got["errors"] == []


def test_routes_to_one_place_by_other_means_stay_apart():
    # the same destination and metric through another source, or on-link, is no sibling
    routes = [{"dst": "fd00::/64", "gateway": "fd00:1::1", "dev": "eth1", "metric": 5},
              {"dst": "fd00::/64", "gateway": "fd00:1::2", "dev": "eth1", "metric": 5,
               "prefsrc": "fd00:1::9"},
              {"dst": "fd00::/64", "dev": "eth2", "metric": 5}]
    assert len(collect.reduce_routes(routes, 6)) == 3


def test_the_ipv6_readings_that_fail_twice_are_unread6_not_unread():
    run_log = []

    def run(argv):
        run_log.append(argv)
        key = next(k for k, a in collect.COMMANDS if a == argv)
        if key in ("addrs6", "neigh6"):
            return 1, "", "Error: Address family not supported by protocol\n"
        return 0, json.dumps(_raw()[key]), ""
    got = collect.collect(run, lambda _path: None, settle=0)
    assert got["unread6"] == ["addrs6"] and got["unread"] == []
    assert run_log.count(dict(collect.COMMANDS)["addrs6"]) == 2       # tried twice, as NEEDED
    assert run_log.count(dict(collect.COMMANDS)["neigh6"]) == 1
    assert got["errors"] == ["ip -j -6 addr show: Error: Address family not supported by protocol",
                             "ip -j -6 neigh show: Error: Address family not supported by protocol"]
    assert all(collect.six_error(e) for e in got["errors"]) and not collect.six_error("links: x")


def test_ipv6_neighbours_that_failed_are_asked_again_with_the_ipv4_ones():
    failed = [{"dst": "fd00:0:0:1::2", "dev": "eth1", "state": ["FAILED"]},
              {"dst": "fe80::1%eth1", "dev": "eth1", "state": ["FAILED"]}]
    asked = []
    reads = []

    def run(argv):
        key = next(k for k, a in collect.COMMANDS if a == argv)
        reads.append(key)
        return 0, json.dumps(failed if key == "neigh6" and reads.count(key) == 1 else _raw()[key]), ""
    got = collect.collect(run, lambda _path: None, settle=0, ask=asked.append)
    assert asked == [[("fd00:0:0:1::2", "eth1")]] and reads.count("neigh6") == 2 and reads.count("neigh") == 1
    assert got["neigh6"] == []


def _parsed(**more):
    return state.parse("node07", _collected(**more))


def test_the_kernels_own_ipv6_routes_are_not_walked_and_link_local_is_no_ones():
    st = _parsed().six
    assert st is not None and st.unread == []
    nets = {(V6.text(r.net), r.plen) for r in st.routes}
    assert ("fe80::", 64) not in nets and ("ff00::", 8) not in nets and ("::", 0) in nets
    assert st.forwarding == {"all": 1}          # IPv6 forwards by the switch of all alone
    assert st.links == {"lo": "up", "eth1": "up"} and st.filter == {"chains": [], "sets": {}, "legacy": []}


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: s["routes6"][0]["hops"][0].update(via="fe80::1%eth1"),
     "node07: state.routes6[0].hops[0].via: 'fe80::1%eth1' is not an IPv6 address"),
    (lambda s: s["routes6"][0].update(dst="10.0.0.0/24"),
     "node07: state.routes6[0].dst: '10.0.0.0/24' is not an IPv6 network"),
    (lambda s: s["routes6"][0].update(dst="fd00::1/64"),
     "node07: state.routes6[0].dst: 'fd00::1/64' has host bits set"),
    (lambda s: s["routes6"][0].update(dst="fd00::/129"),
     "node07: state.routes6[0].dst: 'fd00::/129' is not an IPv6 network"),
    (lambda s: s["addrs6"].update(eth1=["fd00::1%eth1/64"]),
     "node07: state.addrs6.eth1[0]: 'fd00::1%eth1/64' is not an IPv6 address with a prefix length"),
    (lambda s: s["neigh6"].append({"dst": "fd00::1", "dev": "eth1", "state": 5}),
     "node07: state.neigh6[0].state: must be a string, not a number"),
    (lambda s: s["sysctl6"]["forwarding"].update(all="yes"),
     "node07: state.sysctl6.forwarding.all: must be 0, 1, 2 or null, not 'yes'"),
    (lambda s: s.update(unread6=["links"]),
     "node07: state.unread6[0]: must be one of addrs6, routes6, not 'links'"),
    (lambda s: s.update(routes6=[{"dst": "fd00::/64", "hops": []}] * (state.MAX_ROUTES + 1)),
     "node07: state.routes6: holds 200001 entries, more than 200000"),
])
def test_an_ipv6_state_that_cannot_be_used_says_where_and_why(change, message):
    raw = json.loads(json.dumps(_collected()))
    change(raw)
    with pytest.raises(state.StateError) as exc:
        state.parse("node07", raw)
    assert str(exc.value) == message


@pytest.mark.parametrize(("key", "text", "why"), [
    ("routes6", '[{"dst": "fd00::/64", "pref": 5}]', "[0].pref: must be text"),
    ("routes6", '[{"dst": "fd00::/64", "nexthops": [{"gateway": 7}]}]',
     "[0].nexthops[0].gateway: must be text"),
    ("addrs6", '[{"ifname": "eth1", "addr_info": [{"local": "fd00::1", "dadfailed": "yes"}]}]',
     "[0].addr_info[0].dadfailed: must be bool"),
    ("netconf6", '[{"interface": "eth1", "forwarding": []}]',
     "[0].forwarding: must be bool or text or an integer"),
    ("neigh6", '[{"dst": "fd00::1", "dst": "fd00::2"}]', "the key 'dst' is given twice"),
])
def test_ipv6_readings_of_an_unexpected_shape_are_refused(key, text, why):
    got = gate_node.section_problem(key, text, {"routes": [], "interfaces": []})
    assert got is not None and why in got, got


def test_the_route_cap_counts_ipv6_routes_too():
    plan_node = {"routes": [], "interfaces": [{}]}
    limit = gate_node.route_limit(plan_node)
    text = json.dumps([{"dst": "fd00::%x" % k} for k in range(limit + 1)])
    assert gate_node.section_problem("routes6", text, plan_node).startswith(
        "lists %d routes, more than the %d its plan explains" % (limit + 1, limit))


def test_a_zone_id_or_an_ipv4_address_is_no_ipv6_address():
    assert six("fe80::1") == 0xFE80 << 112 | 1 and six("::1") == 1
    assert [six(t) for t in ("fe80::1%eth0", "10.0.0.1", "fd00::g", ":", "1:2:3:4:5:6:7:8:9", "x" * 60)] == \
        [None] * 6


# --- the proof per family ------------------------------------------------------------

def _plan(name, **addressing):
    from beonet.outputs import plan as render
    doc = yaml.safe_load((ROOT / "topologies" / ("%s.yml" % name)).read_text())
    doc["addressing"] = dict(doc.get("addressing") or {}, **addressing)
    return render.plan(pipeline.compile_text(yaml.safe_dump(doc), name + ".yml"))


@pytest.fixture(scope="module")
def dual():
    return _plan("routed-mesh", ipv6=True)


@pytest.fixture(scope="module")
def only():
    return _plan("routed-mesh", ipv4=False, ipv6=True)


def _prefixes(plan):
    from beonet.outputs import plan as render
    return render.prefixes(plan) if any("address" in n for n in plan["nodes"].values()) else []


def _healthy(plan):
    prefixes = proof.cluster_prefixes(plan, _prefixes(plan))
    return json.loads(json.dumps({n: synthetic.plan_state(p, prefixes) for n, p in plan["nodes"].items()}))


def _prove(plan, states, **kw):
    return proof.prove(plan, _prefixes(plan), states, **kw)


@pytest.mark.parametrize("name", ["routed-mesh", "metanode-testbed-frr", "bonded-dual-net", "switch-tree"])
@pytest.mark.parametrize("addressing", [{"ipv6": True}, {"ipv4": False, "ipv6": True}])
def test_dual_stack_and_ipv6_only_plans_applied_prove_every_pair_of_each_family(name, addressing):
    plan = _plan(name, **addressing)
    n = len(plan["nodes"])
    result = _prove(plan, _healthy(plan))
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
    plan = _plan(name, ipv6=True)
    four = proof.planned_net(plan, _prefixes(plan))
    sixes = proof.planned_net(plan, _prefixes(plan), V6)
    from beonet.livestate.report import expected
    relabel = _six_of(plan)
    for s in range(0, len(four.names), 5):
        for d in range(len(four.names)):
            if s != d:
                want = [[relabel[h] for h in branch] for branch in expected(four, four.tables, s, d)]
                assert expected(sixes, sixes.tables, s, d) == want


def test_a_missing_ipv6_route_is_found_and_named_while_ipv4_passes(dual):
    states = _healthy(dual)
    gone = next(r for r in states["node-0-0"]["routes6"] if r["dst"].endswith("/64") and r["proto"] == "250")
    states["node-0-0"]["routes6"].remove(gone)
    result = _prove(dual, states)
    n = len(dual["nodes"])
    assert result["mismatched"] == 4 and result["proven"] == 2 * n * (n - 1) - 4
    assert {r["why"] for r in result["mismatches"]} == {"IPv6: no route on node node-0-0"}
    assert all(r["pair"].endswith(" (IPv6)") and r["family"] == "IPv6" for r in result["mismatches"])
    assert result["mismatches"][0]["expected"][0][-1].startswith("fd")
    assert "  IPv6: no route on node node-0-0: 4 pairs, e.g. " in "\n".join(result["summary"])
    four = copy.deepcopy(states)
    for st in four.values():
        st.pop("routes6")
    assert "IPv6 state unreadable" in "\n".join(_prove(dual, four)["problems"])


def test_a_node_without_ipv6_state_is_unreadable_for_ipv6_only(dual):
    states = _healthy(dual)
    for key in ("addrs6", "routes6", "neigh6", "sysctl6"):
        states["node-1-1"].pop(key)
    result = _prove(dual, states)
    n = len(dual["nodes"])
    assert result["unreadable"] == ["node-1-1"] and result["mismatched"] == 0
    assert result["unread_pairs"] > 0 and result["proven"] + result["unread_pairs"] == 2 * n * (n - 1)
    assert result["problems"] == ["node-1-1: IPv6 state unreadable: could not read its addrs6, routes6 "
                                  "(it sent none); its IPv6 pairs are not proven, run verify again"]


def test_on_an_ipv4_plan_what_a_node_could_not_read_of_ipv6_weighs_nothing():
    from beonet.outputs import plan as render
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/routed-mesh-2x2.yml")))
    states = _healthy(plan)
    states["node-0-0"].update(unread6=["addrs6"], errors=["ip -j -6 addr show: Error: not supported"])
    result = _prove(plan, states)
    assert result["problems"] == [] and result["unreadable"] == [] and result["mismatched"] == 0


def test_ipv6_forwarding_off_and_a_filter_without_an_ipv6_rule_are_named(dual):
    states = _healthy(dual)
    states["node-0-1"]["sysctl6"]["forwarding"]["all"] = 0
    chain = states["node-1-0"]["filter"]["chains"][0]
    chain["rules"], chain["count"] = chain["rules"][:1], 1
    result = _prove(dual, states)
    problems = "\n".join(result["problems"])
    assert "node-0-1: IPv6 forwarding off, the plan says on" in problems
    assert ("node-1-0: beonet's forward filter drops cluster traffic: it has no rule for IPv6: its policy "
            "drops every forwarded IPv6 packet") in problems
    whys = {r["why"] for r in result["mismatches"]}
    assert whys == {"IPv6: node-0-1 (forwarding off)", "IPv6: filter drop on node node-1-0"}
    assert all(r["pair"].endswith("(IPv6)") for r in result["mismatches"])


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


# --- verify.yml's raw call: IPv6 targets, routes, diagnosis -----------------------------

def test_the_sample_traces_ipv6_pairs_to_the_nodes_address6(dual):
    picked = controller.pick(dual, _prefixes(dual), "live", {}, 64, 0)
    mine = picked["expected"]["node-0-0"]
    keys6 = [k for k in mine if k.endswith(verify.SIX)]
    assert keys6 and all(mine[k][0][-1] == dual["nodes"][verify.target_node(k)]["address6"] for k in keys6)
    assert "traceroute -n -I" in picked["commands"]["node-0-0"]
    for k in keys6:
        assert " %s " % dual["nodes"][verify.target_node(k)]["address6"] in picked["commands"]["node-0-0"]


def test_traceroute_mode_on_an_ipv6_only_plan_traces_every_node_over_ipv6(only):
    picked = controller.pick(only, [], "traceroute", {}, 64, 0)
    mine = picked["expected"]["node-0-0"]
    assert sorted(mine) == sorted(verify.target_key(n, True) for n in only["nodes"] if n != "node-0-0")
    assert all(branch[-1] == only["nodes"][verify.target_node(k)]["address6"]
               for k, lists in mine.items() for branch in lists)


def test_traceroute_traces_an_ipv6_address_over_ipv6():
    assert verify.traceroute_command("fd00::1", 5, 1)[:3] == ["traceroute", "-n", "-6"]
    assert "-6" not in verify.traceroute_command("10.0.0.1", 5, 1)


def _listed(routes):
    """beonet's routes of a state as ``ip -j route`` lists them."""
    return [dict({"dst": r["dst"], "prefsrc": r["src"]},
                 **({"gateway": r["hops"][0]["via"], "dev": r["hops"][0]["dev"]} if len(r["hops"]) == 1 else
                    {"nexthops": [{"gateway": h["via"], "dev": h["dev"]} for h in r["hops"]]}))
            for r in routes if r.get("proto") == "250"]


def _output(plan, name, states, traces):
    """The raw call's output of a node: each command's section, its traces."""
    st = states[name]
    listed = {"links": [{"ifname": k, "flags": ["UP", "LOWER_UP"]} for k in st["links"]],
              "addrs": [{"ifname": k, "addr_info": [{"family": "inet", "local": a.split("/")[0],
                                                     "prefixlen": int(a.split("/")[1])} for a in v]}
                        for k, v in st["addrs"].items()],
              "routes": _listed(st["routes"]), "neigh": [], "rules": [], "nft": {"nftables": []},
              "addrs6": [{"ifname": k, "addr_info": [{"family": "inet6", "local": a.split("/")[0],
                                                      "prefixlen": int(a.split("/")[1])} for a in v]}
                         for k, v in st["addrs6"].items()],
              "routes6": _listed(st["routes6"]),
              "neigh6": [], "netconf6": []}
    text = "".join("%s out %s -\n%s\n\n%s err %s 0\n\n" % (readout.MARK, k, json.dumps(v), readout.MARK, k)
                   for k, v in listed.items())
    return text + "".join("%s trace %d 0 0\n%s\n" % (readout.MARK, k, t) for k, t in enumerate(traces))


def test_the_traces_and_routes_of_a_node_are_judged_per_family(dual):
    states = _healthy(dual)
    picked = controller.pick(dual, _prefixes(dual), "live", {}, 64, 0)
    mine = picked["expected"]["node-0-0"]
    targets = controller._targets(dual, mine)
    traces = ["\n".join(" %d  %s  0.1 ms" % (k + 1, h) for k, h in enumerate(mine[key][0]))
              for key, _a in targets]
    six_key = next(k for k, _a in targets if k.endswith(verify.SIX))
    wrong = targets.index((six_key, dual["nodes"][verify.target_node(six_key)]["address6"]))
    traces[wrong] = " 1  fd00::dead  0.1 ms"
    states["node-0-0"]["routes6"] = [r for r in states["node-0-0"]["routes6"] if r["dst"] != "fd00::/8"]
    dropped = next(r for r in states["node-0-0"]["routes6"] if r.get("proto") == "250")
    states["node-0-0"]["routes6"].remove(dropped)
    outputs = {"node-0-0": _output(dual, "node-0-0", states, traces)}
    got = controller.judge(dual, _prefixes(dual), outputs, picked["expected"], [], 10, False)["traced"]
    assert [(r["pair"], r["destination"], r["family"]) for r in got["mismatches"]] == \
        [("node-0-0 -> %s" % six_key, verify.target_node(six_key), "IPv6")]
    hop = dropped["hops"][0]
    assert [p for p in got["problems"] if "route" in p] == [
        "node-0-0: route missing: %s via %s dev %s src %s"
        % (dropped["dst"], hop["via"], hop["dev"], dropped["src"])]


def test_dead_nodes_are_told_on_an_ipv6_only_cluster(only):
    owner = diagnose.owners(only["nodes"])
    assert owner[only["nodes"]["node-1-1"]["address6"]] == "node-1-1"
    key = verify.target_key("node-1-1", True)
    results = {"node-0-0": {"targets": [key], "silent": [key], "forwarding": True, "mismatches": [
        {"pair": "node-0-0 -> " + key, "source": "node-0-0", "destination": key, "expected": [["x"]],
         "seen": ["*"]}]}}
    got = diagnose.summarise(results, [], only["nodes"])
    assert got["dead"] == ["node-1-1"] and got["dead_pairs"] == 1


def test_the_module_reports_ipv6_mismatches_on_one_line_each(dual):
    states = _healthy(dual)
    states["node-0-0"]["routes6"] = [r for r in states["node-0-0"]["routes6"] if r.get("proto") != "250"]
    params = {p: v.get("default") for p, v in task.ARGUMENT_SPEC.items()}
    params.update(plan=dual, prefixes=_prefixes(dual), states=states)
    result = task.prove_task(params, False, False)
    assert result["mismatched"] > 0 and all(line.isprintable() for line in result["report"])
    assert any(" (IPv6) | fd" in line for line in result["report"])
