"""The node agent with IPv6: the plan check, the commands for a dual-stack or IPv6-only
node, forwarding without losing router advertisements, the forward filter, the failover
sysctls, the module's reads, the fast path and the rollback."""

import copy
import ipaddress
import json

import pytest
from conftest import ROOT
from test_node import _blank_node, _Exit, _FakeModule, _run_module, _simulate, beonet_node  # noqa: F401

from beonet.agent import apply as node
from beonet.agent import checkpoint, fast, nodeplan, restore, routes
from beonet.compiler import pipeline
from beonet.outputs import plan as render

DUAL = "addressing: {ipv6: true}\n"
ONLY = "addressing: {ipv4: false, ipv6: true}\n"


def _plan(topology, addressing):
    text = (ROOT / "topologies" / topology).read_text() + addressing
    return render.plan(pipeline.compile_text(text, topology))


@pytest.fixture(scope="module")
def dual():
    return _plan("routed-mesh.yml", DUAL)


@pytest.fixture(scope="module")
def only():
    return _plan("routed-mesh.yml", ONLY)


def _route6(n):
    return next(r for r in n["routes"] if ":" in r["to"] and "nexthops" not in r)


# -- the plan check ----------------------------------------------------------------------

def test_a_route_without_src_is_installed_and_read_back_without_one(dual):
    """An IPv6 route the plan gives no src (its NIC holds the source alone): no src in the
    command, and the kernel's route, which has no prefsrc then, is the planned one. The
    check takes it; an IPv4 route without src it refuses."""
    live = {"dst": "fd00:0:0:1::/64", "nexthops": [{"gateway": "fd00::2", "dev": "eth1"}],
            "protocol": "beonet"}
    planned = {"to": "fd00:0:0:1::/64", "via": "fd00::2", "dev": "eth1"}
    assert routes.live_key(live) == routes.planned_key(planned) == (
        "fd00:0:0:1::/64", (("fd00::2", "eth1"),), None)
    assert routes.replace_command(routes.planned_key(planned)) == [
        "ip", "-6", "route", "replace", "fd00:0:0:1::/64", "via", "fd00::2", "dev", "eth1", "proto", "250"]
    n = copy.deepcopy(dual["nodes"]["node-0-0"])
    _route6(n).pop("src", None)
    assert nodeplan.plan_problems("node-0-0", n) == []
    n["routes"][0].pop("src")
    assert nodeplan.plan_problems("node-0-0", n) == [
        "node-0-0: plan.routes[0].src: must be an IPv4 address, not null"]


@pytest.mark.parametrize("topology", ["routed-mesh.yml", "bonded-dual-net.yml", "switch-tree.yml",
                                      "metanode-testbed-frr.yml"])
@pytest.mark.parametrize("addressing", [DUAL, ONLY])
def test_dual_stack_and_ipv6_only_plans_pass_the_check(topology, addressing):
    assert nodeplan.whole_plan_problems(_plan(topology, addressing), most=1000) == []


def _set(path, value):
    def change(n):
        where = n
        for key in path[:-1]:
            where = where[key]
        where[path[-1]] = value
    return change


def _in_route6(key, value):
    return lambda n: _route6(n).update({key: value})


@pytest.mark.parametrize("change,where,message", [
    (_in_route6("via", "fe80::1%eth1"), "via", "'fe80::1%eth1' holds a zone id: a cluster address is global"),
    (_in_route6("to", "fd76:db0c:60c:1::1/64"), "to",
     "'fd76:db0c:60c:1::1/64' has host bits set: the network is fd76:db0c:60c:1::/64"),
    (_in_route6("via", "10.0.128.2"), "via", "'10.0.128.2' is IPv4 on an IPv6 route (its to is IPv6)"),
    (_in_route6("src", "10.0.0.1"), "src", "'10.0.0.1' is IPv4 on an IPv6 route (its to is IPv6)"),
    (_in_route6("via", "::ffff:10.0.0.2"), "via",
     "'::ffff:10.0.0.2' is an IPv4-mapped address (write the IPv4 one)"),
    (_in_route6("via", "ff02::1"), "via", "'ff02::1' is a multicast address"),
    (_in_route6("via", "fe80::2"), "via",
     "'fe80::2' is a link-local address (the OS's own, never the plan's)"),
    (_in_route6("via", "fd76::g"), "via", "'fd76::g' is not an IPv6 address"),
    (_in_route6("src", 6), "src", "must be an IPv6 address, not a number"),
    (_in_route6("to", "fe80::/64"), "to", "'fe80::/64' is a link-local address"),
])
def test_bad_ipv6_route_text_is_refused_naming_the_key(dual, change, where, message):
    n = copy.deepcopy(dual["nodes"]["node-0-0"])
    change(n)
    k = next(k for k, r in enumerate(n["routes"]) if r is _route6(n))
    assert ("node-0-0: plan.routes[%d].%s: %s" % (k, where, message)) in \
        "\n".join(nodeplan.plan_problems("node-0-0", n)), nodeplan.plan_problems("node-0-0", n)


@pytest.mark.parametrize("change,message", [
    (lambda n: n["routes"][0].update(via="fd76:db0c:60c:4000::2"),
     "plan.routes[0].via: 'fd76:db0c:60c:4000::2' is IPv6 on an IPv4 route (its to is IPv4)"),
    (lambda n: n["interfaces"][0]["addresses"].append("ff02::1/64"),
     "plan.interfaces[0].addresses[2]: 'ff02::1/64' is a multicast address"),
    (lambda n: n["interfaces"][0]["addresses"].append("fe80::1/64"),
     "plan.interfaces[0].addresses[2]: 'fe80::1/64' is a link-local address"),
    (lambda n: n["interfaces"][0]["addresses"].append("::ffff:10.0.0.9/120"),
     "plan.interfaces[0].addresses[2]: '::ffff:10.0.0.9/120' is an IPv4-mapped address"),
    (lambda n: n["interfaces"][0]["addresses"].append("fd00::1%eth1/64"),
     "plan.interfaces[0].addresses[2]: 'fd00::1%eth1/64' holds a zone id"),
    (lambda n: n["interfaces"][0]["addresses"].append("::1/128"),
     "plan.interfaces[0].addresses[2]: '::1/128' is the loopback address"),
    (lambda n: n["interfaces"][0]["addresses"].append("fd00::1/129"),
     "plan.interfaces[0].addresses[2]: 'fd00::1/129' is not an IPv6 interface"),
    (lambda n: n["interfaces"][0]["addresses"].append(["fd00::1/64"]),
     "plan.interfaces[0].addresses[2]: must be an IPv4 or IPv6 interface, not a list"),
    (_set(["address6"], "10.0.0.1"), "plan.address6: '10.0.0.1' is not an IPv6 address"),
    (_set(["address6"], "::"), "plan.address6: '::' is the unspecified address"),
])
def test_bad_ipv6_text_elsewhere_in_a_dual_stack_plan_is_refused(dual, change, message):
    n = copy.deepcopy(dual["nodes"]["node-0-0"])
    change(n)
    problems = nodeplan.plan_problems("node-0-0", n)
    assert any(p.startswith("node-0-0: " + message) for p in problems), problems


def test_an_ipv6_only_plan_needs_address6_and_no_ipv4_address(only):
    n = copy.deepcopy(only["nodes"]["node-0-0"])
    assert "address" not in n and nodeplan.plan_problems("node-0-0", n) == []
    del n["address6"]
    assert nodeplan.plan_problems("node-0-0", n) == [
        "node-0-0: plan.address: must be an IPv4 address, not null"]


def test_an_ipv6_only_frr_plan_has_loopback6_alone_and_it_must_be_a_128():
    plan = _plan("metanode-testbed-frr.yml", ONLY)
    name, n = next((k, v) for k, v in plan["nodes"].items() if "routing" in v)
    assert "loopback" not in n["routing"] and nodeplan.plan_problems(name, n) == []
    bad = copy.deepcopy(n)
    bad["routing"]["loopback6"] = bad["routing"]["loopback6"].replace("/128", "/64")
    assert nodeplan.plan_problems(name, bad) == ["%s: plan.routing.loopback6: must be a /128" % name]
    bad["routing"]["loopback6"] = "10.254.0.1/32"
    assert nodeplan.plan_problems(name, bad) == [
        "%s: plan.routing.loopback6: '10.254.0.1/32' is not an IPv6 interface" % name]
    del bad["routing"]["loopback6"]
    assert nodeplan.plan_problems(name, bad) == [
        "%s: plan.routing.loopback: must be an IPv4 interface, not null" % name]


# -- the commands --------------------------------------------------------------------------

def test_ipv6_addresses_are_added_without_dad_and_routes_with_ip_6(dual):
    n = dual["nodes"]["node-0-0"]
    lines = [" ".join(a) for a in node.actions_on_blank_node(n, "node-0-0")]
    assert "ip -6 addr add fd76:db0c:60c::1/64 dev eth1 nodad" in lines
    assert "ip addr add 10.0.0.1/24 dev eth1" in lines
    assert ("ip -6 route replace fd76:db0c:60c:1::/64 via fd76:db0c:60c:4000::2 dev eth2 "
            "src fd76:db0c:60c::1 proto 250") in lines
    assert ("ip -6 route replace fd76:db0c:60c:1::2/128 src fd76:db0c:60c::1 proto 250 nexthop via "
            "fd76:db0c:60c:4000::2 dev eth2 nexthop via fd76:db0c:60c::2 dev eth1") in lines
    last_address = max(k for k, line in enumerate(lines) if " addr add " in line)
    assert last_address < min(k for k, line in enumerate(lines) if " route replace " in line)
    assert all(line.startswith("ip -6 route") for line in lines if "route" in line and "fd76" in line)


def test_a_route_is_read_back_from_the_kernel_as_the_plan_writes_it():
    live = {"dst": "fd00:0:0:1::5", "nexthops": [{"gateway": "fd00::2", "dev": "eth1"}],
            "prefsrc": "fd00::1", "protocol": "beonet"}
    planned = {"to": "FD00:0:0:1:0:0:0:5/128", "via": "fd00::2", "dev": "eth1", "src": "fd00:0::1"}
    assert routes.live_key(live) == routes.planned_key(planned) == (
        "fd00:0:0:1::5/128", (("fd00::2", "eth1"),), "fd00::1")
    assert routes.delete_command(routes.planned_key(planned)) == [
        "ip", "-6", "route", "del", "fd00:0:0:1::5/128", "via", "fd00::2", "dev", "eth1", "proto", "250"]
    assert routes.shell_line(routes.planned_key(planned)) == (
        "fd00:0:0:1::5/128 via fd00::2 dev eth1 src fd00::1 proto 250")


@pytest.mark.parametrize("topology", ["routed-mesh.yml", "bonded-dual-net.yml", "switch-tree.yml",
                                      "metanode-testbed-frr.yml"])
@pytest.mark.parametrize("addressing", [DUAL, ONLY])
def test_the_commands_bring_a_blank_node_to_the_plan_and_then_nothing_is_left(topology, addressing):
    plan = _plan(topology, addressing)
    prefixes = render.prefixes(plan)
    for host, n in list(plan["nodes"].items())[:6]:
        live = _blank_node(n)
        actions, problems = node.node_actions(n, host, prefixes, live)
        assert problems == [] and actions
        _simulate(live, actions, prefixes, n)
        live["installed"] = node.installed_addresses(n).splitlines()
        assert node.node_actions(n, host, prefixes, live) == ([], []), host
        have = node.live_addresses(live["addrs"]) - {("127.0.0.1/8", "lo")}
        assert have == {(a, i["name"]) for i in n["interfaces"] for a in i["addresses"]}
        assert node.routes_text(live["routes"]) == node.plan_routes_text(n)


def test_ipv6_addresses_and_routes_a_newer_plan_drops_are_removed_and_no_others(dual):
    n = dual["nodes"]["node-0-0"]
    prefixes = render.prefixes(dual)
    live = _simulate(_blank_node(n), node.actions_on_blank_node(n), prefixes, n)
    live["installed"] = node.installed_addresses(n).splitlines()
    live["addrs"][1]["addr_info"] += [
        {"family": "inet6", "local": "2001:db8::5", "prefixlen": 64, "dynamic": True},   # from an RA
        {"family": "inet6", "local": "fe80::1", "prefixlen": 64}]
    v4 = copy.deepcopy(n)
    v4.pop("address6")
    for i in v4["interfaces"]:
        i["addresses"] = [a for a in i["addresses"] if ":" not in a]
    v4["routes"] = [r for r in v4["routes"] if ":" not in r["to"]]
    actions, _ = node.node_actions(v4, "node-0-0", prefixes, live)
    lines = [" ".join(a) for a in actions]
    assert "ip -6 addr del fd76:db0c:60c::1/64 dev eth1" in lines
    assert "ip -6 route del fd76:db0c:60c:1::/64 via fd76:db0c:60c:4000::2 dev eth2 proto 250" in lines
    assert not any("2001:db8" in line or "fe80" in line for line in lines)
    assert not any(line.startswith(("ip addr", "ip route")) for line in lines), lines


def test_a_nic_with_ipv6_off_says_so_when_its_address_is_refused():
    cmd = node.address_command("add", "fd00::1/64", "eth1")
    assert node.apply_actions("n1", [cmd], lambda argv: (2, "RTNETLINK answers: Permission denied\n")) == (
        "n1: ip -6 addr add fd00::1/64 dev eth1 nodad failed: RTNETLINK answers: Permission denied "
        "(IPv6 is off on eth1: net.ipv6.conf.eth1.disable_ipv6 is 1)")


# -- forwarding, router advertisements, the filter, failover ------------------------------

def _with_management(n, accept_ra="1", forwarding6="0", others=None):
    live = _blank_node(n)
    live["links"].append({"ifname": "eth0", "flags": ["UP"], "mtu": 1500})
    read = dict({"net.ipv6.conf.eth0.accept_ra": accept_ra, node.FORWARD6: forwarding6}, **(others or {}))
    live["sysctls"] = node.live_sysctls(n, lambda path: next(
        (v for k, v in read.items() if node.sysctl_path(k) == path), None),
        [link["ifname"] for link in live["links"]])
    return live


def test_a_forwarding_node_keeps_router_advertisements_on_the_management_nic(dual):
    n = dual["nodes"]["node-0-0"]
    assert n["forwarding"]
    live = _with_management(n)
    assert set(live["sysctls"]) >= {"net.ipv6.conf.eth0.accept_ra", node.FORWARD6}
    assert not any(".eth1.accept_ra" in k or ".lo." in k for k in live["sysctls"])
    lines = [" ".join(a) for a in node.node_actions(n, "node-0-0", render.prefixes(dual), live)[0]]
    assert lines[:4] == ["nft -f /etc/nftables.d/beonet.nft", "sysctl -w net.ipv4.ip_forward=1",
                         "sysctl -w net.ipv6.conf.eth0.accept_ra=2",
                         "sysctl -w net.ipv6.conf.all.forwarding=1"]
    files = node.persistent_files(n, render.prefixes(dual), "networkd", sysctls=live["sysctls"])
    text = files[node.SYSCTL_PATH]
    assert text.index("net.ipv6.conf.eth0.accept_ra = 2\n") < text.index("net.ipv6.conf.all.forwarding = 1\n")


@pytest.mark.parametrize("which,four", [("dual", "1"), ("only", "0")])
def test_forwarding_is_on_for_the_families_the_plan_has(dual, only, which, four):
    plan = {"dual": dual, "only": only}[which]
    n = plan["nodes"]["node-0-0"]
    assert n["forwarding"] and nodeplan.forwards_ipv4(n) == (four == "1")
    live = _with_management(n)
    lines = [" ".join(a) for a in node.node_actions(n, "node-0-0", render.prefixes(plan), live)[0]]
    assert ("sysctl -w net.ipv4.ip_forward=1" in lines) == (four == "1")
    assert "sysctl -w net.ipv6.conf.all.forwarding=1" in lines
    files = node.persistent_files(n, render.prefixes(plan), "networkd", sysctls=live["sysctls"])
    text = files[node.SYSCTL_PATH]
    assert "net.ipv4.ip_forward = %s\n" % four in text and "net.ipv6.conf.all.forwarding = 1\n" in text
    # the checkpoint keeps both switches the change may write, so a rollback puts both back
    kept = checkpoint.checkpoint_of("node-0-0", dict(live, forwarding="1\n"), [], [])["live"]
    assert kept["forwarding"] == "1\n" and kept["sysctls"][node.FORWARD6] == "0"
    now = dict(kept, forwarding="0\n", sysctls=dict(kept["sysctls"], **{node.FORWARD6: "1"}))
    back = [" ".join(a) for a in restore.actions(kept, now, [], "/tmp/x")]
    assert "sysctl -w net.ipv4.ip_forward=1" in back and "sysctl -w net.ipv6.conf.all.forwarding=0" in back


def test_an_ipv6_only_node_already_without_ipv4_forwarding_is_left_so(only):
    n = only["nodes"]["node-0-0"]
    live = dict(_with_management(n), forwarding="0\n")
    lines = [" ".join(a) for a in node.node_actions(n, "node-0-0", render.prefixes(only), live)[0]]
    assert not any("ip_forward" in line for line in lines)


@pytest.mark.parametrize("live,problem", [
    ("0\n", None), ("1\n", "node-0-0: IPv4 forwarding is on, the plan has no IPv4 (IPv6 only)")])
def test_verify_judges_an_ipv6_only_node_s_ipv4_forwarding_off(only, live, problem):
    from beonet.agent import verify

    n = only["nodes"]["node-0-0"]
    read = {verify.FORWARD: live}.get
    assert verify.state_problems("node-0-0", n, read, {}) == ([problem] if problem else [])


@pytest.mark.parametrize("accept_ra,forwarding6,kept", [("0", "0", False), ("1", "1", False),
                                                        ("2", "1", True)])
def test_a_nic_that_takes_no_router_advertisements_now_is_left_alone(dual, accept_ra, forwarding6, kept):
    n = dual["nodes"]["node-0-0"]
    live = _with_management(n, accept_ra, forwarding6)
    assert (("net.ipv6.conf.eth0.accept_ra", "2") in node.forwarding6_sysctls(n, live["sysctls"])) == kept
    lines = [" ".join(a) for a in node.node_actions(n, "node-0-0", render.prefixes(dual), live)[0]]
    assert not any("accept_ra" in line for line in lines)


def test_a_node_that_does_not_forward_turns_ipv6_forwarding_off_and_an_ipv4_plan_leaves_it(dual):
    host = next(h for h, n in dual["nodes"].items() if not n["forwarding"]) if any(
        not n["forwarding"] for n in dual["nodes"].values()) else None
    plan = dual if host else _plan("switch-tree.yml", DUAL)
    host = host or next(iter(plan["nodes"]))
    n = plan["nodes"][host]
    live = _with_management(n, forwarding6="1")
    assert "net.ipv6.conf.eth0.accept_ra" not in live["sysctls"]
    assert node.forwarding6_sysctls(n, live["sysctls"]) == [(node.FORWARD6, "0")]
    v4 = _plan("routed-mesh.yml", "")["nodes"]["node-0-0"]
    assert node.forwarding6_sysctls(v4, {node.FORWARD6: "1"}) == []
    assert not any("ipv6" in k for k in node.live_sysctls(v4, lambda path: "1", ["eth0"]))


def test_the_forward_filter_holds_both_families_and_an_ipv4_plans_ruleset_is_as_it_was(dual, only):
    n = dual["nodes"]["node-0-0"]
    text = node.persistent_files(n, render.prefixes(dual), "networkd")[node.NFT_PATH]
    assert "set cluster {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = { 10.0.0.0/22" in text
    assert ("type ipv6_addr\n\t\tflags interval\n\t\telements = { fd76:db0c:60c::/62, "
            "fd76:db0c:60c:4000::/62 }") in text         # the whole topology's, as for IPv4
    assert "\t\tip6 saddr @cluster6 ip6 daddr @cluster6 accept\n" in text
    six_only = node.persistent_files(only["nodes"]["node-0-0"], render.prefixes(only),
                                     "networkd")[node.NFT_PATH]
    assert "ipv4_addr" not in six_only and "@cluster6" in six_only and "ip saddr" not in six_only
    assert node.forward_ruleset(["10.0.0.0/24"])[1].endswith(
        "\tset cluster {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = { 10.0.0.0/24 }\n\t}\n"
        "\tchain forward {\n\t\ttype filter hook forward priority 0; policy drop;\n"
        "\t\tip saddr @cluster ip daddr @cluster accept\n\t}\n}\n")
    v4 = _plan("routed-mesh.yml", "")
    assert node.cluster_prefixes(v4["nodes"]["node-0-0"], render.prefixes(v4)) == render.prefixes(v4)


def test_ipv6_prefixes_given_to_the_module_join_the_plans_own(dual):
    n = dual["nodes"]["node-0-0"]
    got = node.cluster_prefixes(n, ["10.0.0.0/16", "fd76:db0c:60c::/48"])
    assert got == ["10.0.0.0/16", "fd76:db0c:60c::/48"]


def test_the_filters_ipv6_prefixes_merge_as_ipaddress_collapses_them():
    import random
    rng = random.Random(7)
    for _ in range(500):
        bases = [0, 0xFD << 120, (1 << 128) - 4096]
        nets = [ipaddress.IPv6Network((rng.choice(bases) + rng.randrange(4096),
                                       rng.choice([0, 48, 64, 120, 124, 126, 127, 128])), strict=False)
                for _ in range(rng.randrange(12))]
        spans = [(int(x.network_address), int(x.network_address) + x.num_addresses) for x in nets]
        assert [ipaddress.IPv6Network(x) for x in routes.aggregate(spans, 128)] == \
            list(ipaddress.collapse_addresses(nets))
    assert routes.aggregate([(16, 32), (0, 16), (32, 34)], 128) == [(0, 123), (32, 127)]


def test_failover_sets_the_ipv6_hash_policy_and_neighbour_timers_beside_the_ipv4_ones(dual, only):
    keys = dict(node.failover_sysctls(dual["nodes"]["node-0-0"]))
    assert keys["net.ipv6.fib_multipath_hash_policy"] == keys["net.ipv4.fib_multipath_hash_policy"]
    for nic in ("eth1", "eth2"):
        for family in ("ipv4", "ipv6"):
            assert keys["net.%s.neigh.%s.ucast_solicit" % (family, nic)] == "3"
            assert keys["net.%s.conf.%s.ignore_routes_with_linkdown" % (family, nic)] == "1"
    six = dict(node.failover_sysctls(only["nodes"]["node-0-0"]))
    assert not any(k.startswith(("net.ipv4.neigh", "net.ipv4.conf")) for k in six)
    assert node.neigh_key("eth1.10", "ucast_solicit", "ipv6") == "net/ipv6/neigh/eth1.10/ucast_solicit"
    read = {"/proc/sys/net/ipv6/neigh/default/ucast_solicit": "7\n"}
    bond = dict(only["nodes"]["node-0-0"], interfaces=[dict(only["nodes"]["node-0-0"]["interfaces"][0],
                                                             name="bond9")])
    live = node.live_sysctls(bond, read.get)
    assert live["net.ipv6.neigh.bond9.ucast_solicit"] == "7"
    assert live["net.ipv6.neigh.bond9.retrans_time_ms"] == "1000"


# -- the module: reads, check mode, diff, second run ---------------------------------------

def _params(plan, host):
    return {"node": host, "plan": plan["nodes"][host], "plan_format": nodeplan.PLAN_FORMAT,
            "prefixes": render.prefixes(plan), "backend": "networkd"}


def test_the_module_reads_ipv6_routes_shows_them_in_its_diff_and_a_second_run_changes_nothing(
        beonet_node, monkeypatch, dual):  # noqa: F811
    n = dual["nodes"]["node-0-0"]
    live = _blank_node(n)
    out, commands = _run_module(beonet_node, monkeypatch, _params(dual, "node-0-0"), live)
    assert not out.failed and out.result["changed"], out.result
    assert ["ip", "-j", "-6", "route", "show", "table", "main"] in commands
    assert out.result["actions"] == [" ".join(a) for a in node.actions_on_blank_node(n, "node-0-0")]
    diff = out.result["diff"][0]
    assert "fd76:db0c:60c:1::/64 via fd76:db0c:60c:4000::2 dev eth2 src fd76:db0c:60c::1\n" in diff["after"]
    _simulate(live, node.actions_on_blank_node(n), render.prefixes(dual), n)
    live["installed"] = node.installed_addresses(n).splitlines()
    again, _ = _run_module(beonet_node, monkeypatch, _params(dual, "node-0-0"), live)
    assert not again.failed and again.result["actions"] == []
    assert all(d["before_header"] != "node-0-0 routes (proto beonet)" for d in again.result["diff"])


def test_a_kernel_without_ipv6_is_no_problem_for_an_ipv4_plan_and_one_for_an_ipv6_plan(
        beonet_node, monkeypatch, dual):  # noqa: F811
    class NoSix(_FakeModule):
        def run_command(self, cmd, **kw):
            if cmd[:3] == ["ip", "-j", "-6"]:
                self.commands.append(list(cmd))
                return 2, "", "RTNETLINK answers: Address family not supported by protocol"
            return super().run_command(cmd, **kw)

    for plan, fails in ((_plan("routed-mesh.yml", ""), False), (dual, True)):
        fake = NoSix(beonet_node, _params(plan, "node-0-0"), _blank_node(plan["nodes"]["node-0-0"]))
        monkeypatch.setattr(beonet_node, "AnsibleModule", lambda fake=fake, **_: fake)
        with pytest.raises(_Exit) as exc:
            beonet_node.main()
        assert exc.value.failed == fails
        if fails:
            assert "ip -j -6 route show table main failed: RTNETLINK answers: Address family" in \
                exc.value.result["msg"]


@pytest.mark.parametrize("key,value,expect", [
    ("prefixes", ["10.0.0.0/8", "fd76:db0c:60c::/48"], None),
    ("prefixes", ["fd76:db0c:60c::1/48"], "prefixes[0]: 'fd76:db0c:60c::1/48' has host bits set"),
    ("neighbours", [{"nic": "eth1", "address": "fd76:db0c:60c::2"}], None),
    ("neighbours", [{"nic": "eth1", "address": "fe80::2%eth1"}],
     "neighbours[0]: 'fe80::2%eth1' holds a zone id")])
def test_the_module_takes_ipv6_prefixes_and_neighbours_and_refuses_bad_ones(
        beonet_node, dual, key, value, expect):  # noqa: F811
    params = dict(_FakeModule(beonet_node, dict(_params(dual, "node-0-0"), **{key: value}), {}).params)
    problems = beonet_node._param_problems(params)
    assert problems == [] if expect is None else problems[0].startswith("node-0-0: " + expect), problems


def test_the_fast_path_dump_reads_ipv6_where_the_plan_has_it(dual):
    n = dual["nodes"]["node-0-0"]
    cmd = fast.dump_command(n)
    for part in ("ip -j -6 addr show dev eth1 scope global permanent",
                 "ip -j -6 route show table main proto 250",
                 "ip -j -6 route show table main proto static", "/proc/sys/net/ipv6/conf/all/forwarding",
                 "/proc/sys/net/ipv6/conf/*/accept_ra", "/proc/sys/net/ipv6/neigh/eth1/ucast_solicit"):
        assert part in cmd, part
    v4 = fast.dump_command(_plan("routed-mesh.yml", "")["nodes"]["node-0-0"])
    assert "-6" not in v4 and "ipv6" not in v4


# -- the rollback ------------------------------------------------------------------------

def _entry(dev, *infos):
    return {"ifname": dev, "addr_info": list(infos)}


def test_the_rollback_puts_ipv6_addresses_back_and_leaves_those_from_router_advertisements():
    v6 = {"family": "inet6", "local": "fd00::1", "prefixlen": 64, "scope": "global"}
    ra = {"family": "inet6", "local": "2001:db8::7", "prefixlen": 64, "scope": "global", "dynamic": True}
    added = {"family": "inet6", "local": "fd00:1::1", "prefixlen": 64, "scope": "global"}
    saved = [_entry("eth1", v6, ra)]
    now = [_entry("eth1", added)]
    assert restore.address_actions(saved, now, ["eth1"]) == [
        ["ip", "-6", "addr", "del", "fd00:1::1/64", "dev", "eth1"],
        ["ip", "-6", "addr", "add", "fd00::1/64", "dev", "eth1", "nodad"]]


def test_the_rollback_puts_ipv6_routes_back_with_ip_6_and_never_those_of_router_advertisements():
    ours = {"dst": "fd00:1::/64", "gateway": "fd00::2", "dev": "eth1", "protocol": "250", "metric": 1024,
            "prefsrc": "fd00::1", "pref": "medium"}
    ra = {"dst": "default", "gateway": "fe80::1", "dev": "eth0", "protocol": "ra", "metric": 1024,
          "expires": 1790}
    multipath = {"dst": "fd00:2::5", "protocol": "250", "metric": 1024, "prefsrc": "fd00::1",
                 "nexthops": [{"gateway": "fd00::2", "dev": "eth1"}, {"gateway": "fd00::3", "dev": "eth1"}]}
    got = restore.route_actions([ours, ra], [multipath])
    assert got == [["ip", "-6", "route", "replace", "fd00:1::/64", "via", "fd00::2", "dev", "eth1", "proto",
                    "250", "metric", "1024", "src", "fd00::1"],
                   ["ip", "-6", "route", "del", "fd00:2::5", "proto", "250", "metric", "1024", "src",
                    "fd00::1", "nexthop", "via", "fd00::2", "dev", "eth1",
                    "nexthop", "via", "fd00::3", "dev", "eth1"]]
    assert restore.route_actions([], [ra]) == []


def test_the_rollback_turns_ipv6_forwarding_off_before_the_filter_goes_and_puts_accept_ra_back():
    saved = {"links": [{"ifname": "eth0", "flags": ["UP"]}], "addrs": [], "routes": [], "forwarding": "0\n",
             "nft_table": None, "sysctls": {node.FORWARD6: "0", "net.ipv6.conf.eth0.accept_ra": "1"}}
    now = dict(saved, nft_table="table inet beonet {}")
    lines = [" ".join(a) for a in restore.actions(saved, now, [], "/tmp/x")]
    assert lines == ["sysctl -w net.ipv4.ip_forward=0", "sysctl -w net.ipv6.conf.all.forwarding=0",
                     "nft delete table inet beonet", "sysctl -w net.ipv6.conf.eth0.accept_ra=1"]
    on = dict(saved, forwarding="1", nft_table="t", sysctls={node.FORWARD6: "1"})
    lines = [" ".join(a) for a in restore.actions(on, dict(on, nft_table=None), [], "/tmp/x")]
    assert lines == ["nft -f /tmp/x", "sysctl -w net.ipv4.ip_forward=1",
                     "sysctl -w net.ipv6.conf.all.forwarding=1"]


def test_the_checkpoint_reads_both_families_routes_and_a_kernel_without_ipv6():
    four = [{"dst": "10.0.1.0/24", "gateway": "10.0.0.2", "dev": "eth1", "protocol": "250"}]
    six = [{"dst": "fd00:1::/64", "gateway": "fd00::2", "dev": "eth1", "protocol": "250"}]

    def run(argv, six_error=None):
        if argv == checkpoint.ROUTES6:
            return (2, "", six_error) if six_error else (0, json.dumps(six), "")
        if argv[:3] == ["ip", "-j", "route"]:
            return 0, json.dumps(four), ""
        return (0, "[]", "") if argv[0] == "ip" else (1, "", "no table")
    assert checkpoint.read_state(run)["routes"] == four + six
    no_six = checkpoint.read_state(lambda argv: run(argv, "Address family not supported by protocol"))
    assert no_six["routes"] == four
    with pytest.raises(checkpoint.CheckpointError, match="ip -j -6 route show table main failed: Cannot"):
        checkpoint.read_state(lambda argv: run(argv, "Cannot talk to rtnetlink"))


def test_under_frr_the_filter_passes_the_learned_destinations_and_the_ipv6_loopback():
    plan = _plan("metanode-testbed-frr.yml", ONLY)
    name, n = next((k, v) for k, v in plan["nodes"].items() if "routing" in v and v["forwarding"])
    assert render.prefixes(plan) and all(":" in p for p in render.prefixes(plan))
    assert n["routes"] == [] and n["learned"]
    nets = [ipaddress.ip_network(p) for p in node.cluster_prefixes(n, [])]
    wanted = [ipaddress.ip_network(r["to"]) for r in n["learned"]]
    wanted.append(ipaddress.ip_interface(n["routing"]["loopback6"]).network)
    assert all(any(w.subnet_of(p) for p in nets) for w in wanted)
    assert all(not a.overlaps(b) for k, a in enumerate(nets) for b in nets[k + 1:])


def test_the_rollback_writes_no_sysctl_of_a_nic_that_is_not_there_any_more():
    saved = {"net.ipv6.conf.eth0.accept_ra": "1", "net.ipv6.neigh.bond0.ucast_solicit": "3",
             "net/ipv4/neigh/eth1.10/ucast_solicit": "3", "net.ipv6.fib_multipath_hash_policy": "0",
             node.FORWARD6: "0"}
    links = [{"ifname": "eth0"}, {"ifname": "eth1.10"}]
    assert [a[-1] for a in restore.sysctl_actions(saved, links)] == [
        "net.ipv6.conf.eth0.accept_ra=1", "net.ipv6.fib_multipath_hash_policy=0",
        "net/ipv4/neigh/eth1.10/ucast_solicit=3"]
    assert len(restore.sysctl_actions(saved)) == 4


def test_ipv6_is_turned_on_on_a_nic_that_has_it_off_before_its_addresses(dual):
    n = dual["nodes"]["node-0-0"]
    live = _blank_node(n)
    live["sysctls"]["net.ipv6.conf.eth2.disable_ipv6"] = "1"
    lines = [" ".join(a) for a in node.node_actions(n, "node-0-0", render.prefixes(dual), live)[0]]
    on = lines.index("sysctl -w net.ipv6.conf.eth2.disable_ipv6=0")
    assert on < lines.index("ip -6 addr add fd76:db0c:60c:4000::1/64 dev eth2 nodad")
    assert not any("eth1.disable_ipv6" in line for line in lines)
    text = node.persistent_files(n, render.prefixes(dual), "networkd")[node.SYSCTL_PATH]
    assert "net.ipv6.conf.eth1.disable_ipv6 = 0\nnet.ipv6.conf.eth2.disable_ipv6 = 0\n" in text
    bond = dict(n, interfaces=[dict(n["interfaces"][0], name="bond9")])
    read = {"/proc/sys/net/ipv6/conf/default/disable_ipv6": "1\n"}
    assert node.live_sysctls(bond, read.get)["net.ipv6.conf.bond9.disable_ipv6"] == "1"
