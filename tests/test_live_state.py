"""What the controller makes of what a node sends (livestate/state.py) and of its
forward filter (livestate/nft.py): a state that is not one, lacks a key, holds a
wrong type or a hostile size is refused with one message that says where; nothing
a node sends raises anything else. The filter beonet writes is judged exactly;
any other rule is not judged, and says why."""

import copy
import json

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_live_collect import ipv6_reading

from beonet.agent import collect
from beonet.compiler.model import ip_int
from beonet.livestate import nft, state
from beonet.livestate.family import V6

RAW = json.loads((ROOT / "tests/livestate/raw-node.json").read_text())
GOOD = collect.state_of(RAW["commands"], RAW["files"].get)


def _bad(change):
    raw = copy.deepcopy(GOOD)
    change(raw)
    with pytest.raises(state.StateError) as exc:
        state.parse("node07", raw)
    return str(exc.value)


def test_the_recorded_state_parses():
    st_ = state.parse("a", GOOD)
    assert st_.links["eth3"] == "no-carrier" and st_.addrs["eth1"] == [(ip_int("10.0.1.1"), 24)]
    assert st_.unresolved == {(ip_int("10.0.1.99"), "eth1"): "FAILED"}
    assert st_.forwarding["eth3"] == 0 and not st_.use_neigh
    multipath = next(r for r in st_.routes if r.net == ip_int("10.0.10.0"))
    assert [(h.via, h.dev, h.linkdown) for h in multipath.hops] == [
        (ip_int("10.0.1.2"), "eth1", False), (ip_int("10.0.4.4"), "eth3", True)]


@pytest.mark.parametrize("change, message", [
    (lambda s: s.clear(), "node07: state: lacks 'format'"),
    (lambda s: s.update(format=2), "node07: state.format: a number 2 is not the state format this controller "
                                   "reads (1); run the same collection on the nodes and the controller"),
    (lambda s: s.pop("routes"), "node07: state: lacks 'routes'"),
    (lambda s: s.update(links=[]), "node07: state.links: must be a mapping, not a list"),
    (lambda s: s["links"].update(eth1={"state": "sideways"}),
     "node07: state.links.eth1.state: must be up, no-carrier or down, not 'sideways'"),
    (lambda s: s["addrs"].update(eth1=["10.0.1.1"]),
     "node07: state.addrs.eth1[0]: '10.0.1.1' is not an IPv4 address with a prefix length"),
    (lambda s: s["routes"][0].update(dst="10.0.0.1/8"), "node07: state.routes[0].dst: '10.0.0.1/8' has host "
                                                        "bits set"),
    (lambda s: s["routes"][1].update(dst="999.0.0.0/8"),
     "node07: state.routes[1].dst: '999.0.0.0/8' is not an IPv4 network"),
    (lambda s: s["routes"][3]["hops"][0].update(via=["10.0.1.2"]),
     "node07: state.routes[3].hops[0].via: must be a string, not a list"),
    (lambda s: s["routes"][3].update(hops=[]),
     "node07: state.routes[3].hops: a unicast route needs a next hop or a device"),
    (lambda s: s["routes"][3].update(metric=-1), "node07: state.routes[3].metric: must be a whole number, "
                                                 "not a number -1"),
    (lambda s: s["neigh"].append({"dst": "10.0.1.98"}), "node07: state.neigh[1]: lacks 'state'"),
    (lambda s: s["sysctl"]["forwarding"].update(eth1="yes"),
     "node07: state.sysctl.forwarding.eth1: must be 0, 1, 2 or null, not 'yes'"),
    (lambda s: s["filter"]["chains"][0].pop("policy"), "node07: state.filter.chains[0]: lacks 'policy'"),
    (lambda s: s["filter"]["sets"]["inet beonet cluster"].append(7),
     "node07: state.filter.sets.inet beonet cluster[2]: must be a string, not a number"),
    (lambda s: s["links"].update(eth1={"state": "up", "master": "x" * 300}),
     "node07: state.links.eth1.master: is 300 characters long, more than 256"),
    (lambda s: s.update(routes=[GOOD["routes"][0]] * (state.MAX_ROUTES + 1)),
     "node07: state.routes: holds 200001 entries, more than 200000"),
    (lambda s: s["routes"][0].update(hops=[{"dev": "eth0"}] * 300),
     "node07: state.routes[0].hops: holds 300 entries, more than 256"),
    (lambda s: s.update(links={"eth%d" % k: {"state": "up"} for k in range(5000)}),
     "node07: state.links: holds 5000 entries, more than 4096"),
    (lambda s: s.update(unread=["nft"]),
     "node07: state.unread[0]: must be one of links, addrs, routes, not 'nft'"),
    (lambda s: s.update(unread="links"), "node07: state.unread: must be a list, not text"),
])
def test_a_state_that_cannot_be_used_says_where_and_why(change, message):
    assert _bad(change) == message


def test_what_could_not_be_read_is_kept_from_the_node_or_from_its_errors():
    assert state.parse("a", GOOD).unread == []
    assert state.parse("a", dict(GOOD, unread=["routes", "links"])).unread == ["links", "routes"]
    assert state.parse("a", dict(GOOD, errors=["addrs: no usable output"])).unread == ["addrs"]
    cut = state.parse("a", dict(GOOD, links={"lo": {"state": "up"}}))
    assert cut.unread == ["links"]
    assert cut.errors[-1] == ("links: NICs eth0, eth1, eth2, eth3, eth4 hold addresses or routes but are "
                              "not listed")


def test_a_control_character_in_a_name_is_shown_escaped():
    message = _bad(lambda s: s["links"].update({"eth\n1": {"state": "off"}}))
    assert "\n" not in message and "eth\\n1" in message


MUTATIONS = st.sampled_from([None, True, -1, 3.5, "", "x" * 300, "10.0.0.1", "10.0.0.0/33", [], {}, [None],
                             {"via": "10.0.0.1"}])


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_whatever_a_node_sends_parses_or_is_refused_with_a_message(data):
    """Any value replaced anywhere in a good state: a NodeState, or StateError."""
    raw = copy.deepcopy(GOOD)
    where, target = [], raw
    while isinstance(target, (dict, list)) and target and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(target) if isinstance(target, dict) else range(len(target))))
        where.append(key)
        if not isinstance(target[key], (dict, list)):
            break
        target = target[key]
    value = data.draw(MUTATIONS)
    if isinstance(target, dict) and target:
        target[data.draw(st.sampled_from(sorted(target)))] = value
    elif isinstance(target, list) and target:
        target[data.draw(st.integers(0, len(target) - 1))] = value
    else:
        raw = value
    try:
        state.parse("n", raw)
    except state.StateError as exc:
        assert str(exc).startswith("n: state")


# -- the forward filter -------------------------------------------------------------------

def _filter(name):
    raw = json.loads((ROOT / "tests/livestate" / name).read_text())
    return collect.state_of(raw["commands"], raw["files"].get)["filter"]


def test_beonets_filter_is_judged_exactly():
    v = nft.judge(_filter("raw-node.json"))
    assert v.unjudged is None and v.beonet and v.ranges == [(ip_int("10.0.0.0"), ip_int("10.0.255.255")),
                                                           (ip_int("172.16.5.0"), ip_int("172.16.5.255"))]
    assert v.accepts(ip_int("10.0.3.1"), ip_int("172.16.5.255"))
    assert not v.accepts(ip_int("10.0.3.1"), ip_int("172.16.6.0"))
    assert not v.accepts(ip_int("192.168.121.10"), ip_int("10.0.3.1"))
    assert nft.refused_text(v, [ip_int("10.0.0.1"), ip_int("10.1.0.1")]) == "its set cluster lacks 10.1.0.1"


def test_a_foreign_forward_chain_is_not_judged_but_an_idle_one_is_ignored():
    v = nft.judge(_filter("raw-foreign.json"))
    assert v.unjudged == ("forward chain ip filter FORWARD (policy accept, 1 rules) is not beonet's "
                          "and may drop")
    idle = [c for c in _filter("raw-foreign.json")["chains"] if c["table"] != "ip filter"]
    assert nft.judge(dict(_filter("raw-foreign.json"), chains=idle)).unjudged is None


def test_the_labs_chain_that_marks_forwarded_packets_passes_everything():
    f = _filter("raw-lab.json")
    assert ("inet beonet_lab", "forward") in {(c["table"], c["chain"]) for c in f["chains"]}
    v = nft.judge(f)
    assert v.unjudged is None and v.beonet
    f["chains"][-1]["rules"].append([{"jump": {"target": "elsewhere"}}])
    f["chains"][-1]["count"] = 2
    assert nft.judge(f).unjudged.endswith("(policy accept, 2 rules) is not beonet's and may drop")


@pytest.mark.parametrize("change, why", [
    (lambda f: f["chains"][0]["rules"].append([{"drop": None}]),
     "beonet's forward chain holds rules beonet does not write"),
    (lambda f: f["chains"][0].update(policy="accept"),
     "beonet's forward chain holds rules beonet does not write"),
    (lambda f: f["sets"]["inet beonet cluster"].append("?"),
     "beonet's set cluster holds elements beonet does not write"),
    (lambda f: f.update(legacy=["filter"]), "legacy iptables tables in use: filter"),
    (lambda f: f.update(error="nft -j list ruleset: Operation not permitted"),
     "the ruleset could not be read (nft -j list ruleset: Operation not permitted)"),
])
def test_what_beonet_does_not_write_is_not_judged(change, why):
    f = copy.deepcopy(_filter("raw-node.json"))
    change(f)
    assert nft.judge(f).unjudged == why


def test_no_filter_passes_everything_and_ranges_of_every_kind_are_read():
    assert nft.judge({"chains": [], "sets": {}, "legacy": []}).accepts(1, 2)
    f = copy.deepcopy(_filter("raw-node.json"))
    f["sets"]["inet beonet cluster"] = ["10.0.0.1", "10.0.0.2-10.0.0.9", "10.0.1.0/24"]
    v = nft.judge(f)
    assert v.ranges == [(ip_int("10.0.0.1"), ip_int("10.0.0.9")), (ip_int("10.0.1.0"), ip_int("10.0.1.255"))]


# --- IPv6: the state parsed apart, the kernel's own routes left out, hostile values refused

def _parsed(**more):
    return state.parse("node07", ipv6_reading(**more))


def test_the_kernels_own_ipv6_routes_are_not_walked_and_link_local_is_no_ones():
    st = _parsed().six
    assert st is not None and st.unread == []
    nets = {(V6.text(r.net), r.plen) for r in st.routes}
    assert ("fe80::", 64) not in nets and ("ff00::", 8) not in nets and ("::", 0) in nets
    assert st.forwarding == {"all": 1}          # IPv6 forwards by the switch of all alone
    assert st.links == {"lo": "up", "eth1": "up"} and st.filter == {"chains": [], "sets": {}, "legacy": []}


def test_an_ipv6_state_that_lacks_a_reading_or_says_nothing_of_forwarding_is_unread():
    no_all = [{"family": "inet6", "interface": "eth1", "forwarding": True}]      # "all" not listed
    assert _parsed(netconf6=no_all).six.unread == ["netconf6"]
    raw = ipv6_reading()
    raw.pop("routes6")
    assert state.parse("node07", raw).six.unread == ["routes6"]
    raw["unread6"] = ["addrs6"]
    assert state.parse("node07", raw).six.unread == ["addrs6", "routes6"]
    assert state.parse("node07", raw).unread == []          # the node's IPv4 state stands


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
    (lambda s: s.update(rules6=["x"]), "node07: state.rules6: must hold whole numbers, not 'x'"),
    (lambda s: s.update(rules6=5), "node07: state.rules6: must be a list, not a number"),
    (lambda s: s.update(unread6=["links"]),
     "node07: state.unread6[0]: must be one of addrs6, routes6, netconf6, not 'links'"),
    (lambda s: s.update(routes6=[{"dst": "fd00::/64", "hops": []}] * (state.MAX_ROUTES + 1)),
     "node07: state.routes6: holds 200001 entries, more than 200000"),
])
def test_an_ipv6_state_that_cannot_be_used_says_where_and_why(change, message):
    raw = json.loads(json.dumps(ipv6_reading()))
    change(raw)
    with pytest.raises(state.StateError) as exc:
        state.parse("node07", raw)
    assert str(exc.value) == message
