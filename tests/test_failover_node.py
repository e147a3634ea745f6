"""Failover on the node: multipath routes and the failover sysctls (plan format 2).

The plans are written here by hand, so these tests do not depend on the compiler."""

import copy
import json
import subprocess
import sys

import pytest
from conftest import ROOT, needs_host
from test_node import beonet_node  # noqa: F401 (fixture)

from beonet.agent import apply as node
from beonet.agent import routes

FAILOVER = {"hash_policy": 0, "neigh": {"base_reachable_time_ms": 5000, "delay_first_probe_time": 1,
                                        "ucast_solicit": 3, "retrans_time_ms": 500}}
MULTI = {"to": "10.0.3.0/24", "via": "10.0.1.2", "dev": "eth1", "src": "10.0.1.1",
         "nexthops": [{"via": "10.0.1.2", "dev": "eth1"}, {"via": "10.0.2.3", "dev": "eth2"}]}
SINGLE = {"to": "10.0.4.4/32", "via": "10.0.2.3", "dev": "eth2", "src": "10.0.1.1"}


def diamond():
    """Node a of a diamond a-{b,c}-d: d's LAN through b or c, d's other address through c."""
    return {"address": "10.0.1.1", "forwarding": False, "failover": copy.deepcopy(FAILOVER),
            "interfaces": [
                {"name": "eth1", "kind": "ethernet", "segment": "ab", "addresses": ["10.0.1.1/24"],
                 "mtu": 1500, "rate_mbit": 1000},
                {"name": "eth2", "kind": "ethernet", "segment": "ac", "addresses": ["10.0.2.1/24"],
                 "mtu": 1500, "rate_mbit": 1000}],
            "routes": [copy.deepcopy(MULTI), copy.deepcopy(SINGLE)]}


MULTIPATH_LINE = ("ip route replace 10.0.3.0/24 src 10.0.1.1 proto 250 "
                  "nexthop via 10.0.1.2 dev eth1 nexthop via 10.0.2.3 dev eth2")


def _kernel_routes(n):
    """`ip -j route show table main` of a node that follows plan n, in the kernel's own
    shape (measured on iproute2 6.1: a multipath route has no gateway/dev, but nexthops)."""
    out = []
    for r in n["routes"]:
        entry = {"dst": r["to"].replace("/32", ""), "protocol": "250", "prefsrc": r["src"], "flags": []}
        if "nexthops" in r:
            entry["nexthops"] = [{"gateway": h["via"], "dev": h["dev"], "weight": 1, "flags": []}
                                 for h in r["nexthops"]]
        else:
            entry.update(gateway=r["via"], dev=r["dev"])
        out.append(entry)
    return out


def _live(n, kernel_routes, sysctls=None):
    links = [{"ifname": i["name"], "flags": ["UP"], "mtu": 1500} for i in n["interfaces"]]
    addrs = [{"ifname": i["name"], "addr_info": [
        {"family": "inet", "local": a.split("/")[0], "prefixlen": int(a.split("/")[1])}
        for a in i["addresses"]]} for i in n["interfaces"]]
    return {"links": links, "addrs": addrs, "routes": kernel_routes,
            "installed": node.installed_addresses(n).splitlines(), "forwarding": "0\n",
            "nft_table": None, "tso": {},
            "sysctls": dict(node.failover_sysctls(n)) if sysctls is None else sysctls}


def _actions(n, kernel_routes, sysctls=None):
    actions, problems = node.node_actions(n, "a", [], _live(n, kernel_routes, sysctls))
    assert problems == []
    return [" ".join(a) for a in actions]


def test_the_dry_run_prints_the_multipath_route_and_the_failover_sysctls():
    """On a blank node the kernel's defaults (ucast_solicit 3, hash policy 0) are kept,
    so only the settings that differ are printed, after the links and routes."""
    assert [" ".join(a) for a in node.actions_on_blank_node(diamond(), "a")] == [
        "ip link set dev eth1 up", "ip link set dev eth2 up",
        "ip addr add 10.0.1.1/24 dev eth1", "ip addr add 10.0.2.1/24 dev eth2",
        MULTIPATH_LINE,
        "ip route replace 10.0.4.4/32 via 10.0.2.3 dev eth2 src 10.0.1.1 proto 250",
        "sysctl -w net.ipv4.fib_multipath_use_neigh=1",
        "sysctl -w net.ipv4.neigh.eth1.base_reachable_time_ms=5000",
        "sysctl -w net.ipv4.neigh.eth1.delay_first_probe_time=1",
        "sysctl -w net.ipv4.neigh.eth1.retrans_time_ms=500",
        "sysctl -w net.ipv4.conf.eth1.ignore_routes_with_linkdown=1",
        "sysctl -w net.ipv4.neigh.eth2.base_reachable_time_ms=5000",
        "sysctl -w net.ipv4.neigh.eth2.delay_first_probe_time=1",
        "sysctl -w net.ipv4.neigh.eth2.retrans_time_ms=500",
        "sysctl -w net.ipv4.conf.eth2.ignore_routes_with_linkdown=1"]


def test_a_correct_multipath_route_is_in_place():
    n = diamond()
    assert _actions(n, _kernel_routes(n)) == []


def test_single_path_where_multipath_is_planned_is_replaced_without_a_gap():
    n = diamond()
    live = _kernel_routes(dict(n, routes=[{k: v for k, v in MULTI.items() if k != "nexthops"},
                                          SINGLE]))
    assert _actions(n, live) == [MULTIPATH_LINE]


def test_multipath_where_single_path_is_planned_is_replaced():
    n = diamond()
    live = _kernel_routes(n)
    n["routes"][0] = {k: v for k, v in MULTI.items() if k != "nexthops"}
    assert _actions(n, live) == [
        "ip route replace 10.0.3.0/24 via 10.0.1.2 dev eth1 src 10.0.1.1 proto 250"]


def test_next_hops_in_another_order_are_in_place_another_set_differs():
    """The kernel picks a next hop by hash, not by position; NetworkManager restores
    the next hops sorted. Another set of next hops is replaced, in the plan's order."""
    n = diamond()
    live = _kernel_routes(n)
    live[0]["nexthops"].reverse()
    assert _actions(n, live) == []
    live[0]["nexthops"].pop()
    assert _actions(n, live) == [MULTIPATH_LINE]
    live = _kernel_routes(n)
    live[0]["nexthops"].append({"gateway": "10.0.2.9", "dev": "eth2", "weight": 1, "flags": []})
    assert _actions(n, live) == [MULTIPATH_LINE]


def test_a_multipath_route_the_plan_drops_is_deleted_with_its_next_hops():
    n = diamond()
    live = _kernel_routes(n)
    n["routes"] = [SINGLE]
    assert _actions(n, live) == [
        "ip route del 10.0.3.0/24 proto 250 nexthop via 10.0.1.2 dev eth1 nexthop via 10.0.2.3 dev eth2"]


def test_a_multipath_route_networkmanager_restored_as_static_is_in_place():
    n = diamond()
    live = _kernel_routes(n)
    for r in live:
        r["protocol"] = "static"
    assert _actions(n, live) == []


def test_failover_sysctls_change_only_where_they_differ():
    n = diamond()
    live = dict(node.failover_sysctls(n))
    live["net.ipv4.fib_multipath_hash_policy"] = "1"
    live["net.ipv4.neigh.eth2.ucast_solicit"] = None          # unreadable
    assert _actions(n, _kernel_routes(n), live) == [
        "sysctl -w net.ipv4.fib_multipath_hash_policy=0", "sysctl -w net.ipv4.neigh.eth2.ucast_solicit=3"]
    del n["failover"]
    assert node.failover_sysctls(n) == [] and _actions(n, _kernel_routes(n), {}) == []


def test_live_sysctls_of_a_nic_that_does_not_exist_yet_are_the_defaults():
    """A bond created by this run starts with net.ipv4.neigh.default's values (the
    kernel's, in a namespace where that folder does not exist)."""
    n = diamond()
    n["interfaces"].append({"name": "bond0", "kind": "bond", "segment": "x", "addresses": ["10.0.5.1/24"],
                            "members": [], "mode": "balance-rr", "miimon": 100})
    proc = {"/proc/sys/net/ipv4/fib_multipath_use_neigh": "1\n",
            "/proc/sys/net/ipv4/neigh/eth1/ucast_solicit": "4\n",
            "/proc/sys/net/ipv4/neigh/default/retrans_time_ms": "700\n"}
    live = node.live_sysctls(n, proc.get)
    assert live["net.ipv4.fib_multipath_use_neigh"] == "1"
    assert live["net.ipv4.fib_multipath_hash_policy"] is None
    assert live["net.ipv4.neigh.eth1.ucast_solicit"] == "4"
    assert live["net.ipv4.neigh.bond0.retrans_time_ms"] == "700"
    assert live["net.ipv4.neigh.bond0.base_reachable_time_ms"] == "30000"


def test_a_nic_name_with_a_dot_uses_slash_separators():
    assert node.neigh_key("eth1.10", "ucast_solicit") == "net/ipv4/neigh/eth1.10/ucast_solicit"
    assert node.sysctl_path("net/ipv4/neigh/eth1.10/ucast_solicit") == \
        "/proc/sys/net/ipv4/neigh/eth1.10/ucast_solicit"
    assert node.sysctl_path("net.ipv4.neigh.eth1.ucast_solicit") == \
        "/proc/sys/net/ipv4/neigh/eth1/ucast_solicit"


def test_the_sysctl_file_holds_the_failover_settings_per_nic():
    text = node.persistent_files(diamond(), [], "networkd")[node.SYSCTL_PATH]
    assert text.endswith("net.ipv4.ip_forward = 0\nnet.ipv4.fib_multipath_use_neigh = 1\n"
                         "net.ipv4.fib_multipath_hash_policy = 0\n"
                         "net.ipv4.neigh.eth1.base_reachable_time_ms = 5000\n"
                         "net.ipv4.neigh.eth1.delay_first_probe_time = 1\n"
                         "net.ipv4.neigh.eth1.ucast_solicit = 3\n"
                         "net.ipv4.neigh.eth1.retrans_time_ms = 500\n"
                         "net.ipv4.conf.eth1.ignore_routes_with_linkdown = 1\n"
                         "net.ipv4.neigh.eth2.base_reachable_time_ms = 5000\n"
                         "net.ipv4.neigh.eth2.delay_first_probe_time = 1\n"
                         "net.ipv4.neigh.eth2.ucast_solicit = 3\n"
                         "net.ipv4.neigh.eth2.retrans_time_ms = 500\n"
                         "net.ipv4.conf.eth2.ignore_routes_with_linkdown = 1\n")
    plain = diamond()
    del plain["failover"]
    assert "multipath" not in node.persistent_files(plain, [], "networkd")[node.SYSCTL_PATH]


def test_diff_text_shows_a_multipath_route_on_one_line():
    n = diamond()
    line = "10.0.3.0/24 src 10.0.1.1 nexthop via 10.0.1.2 dev eth1 nexthop via 10.0.2.3 dev eth2"
    assert node.plan_routes_text(n).splitlines()[0] == line
    assert node.routes_text(_kernel_routes(n)) == node.plan_routes_text(n)


def test_route_keys_of_plan_and_kernel_agree():
    assert routes.planned_key(MULTI) == routes.live_key(_kernel_routes(diamond())[0])
    assert routes.planned_key(SINGLE) == ("10.0.4.4/32", (("10.0.2.3", "eth2"),), "10.0.1.1")


KERNEL_SCRIPT = """
import json, subprocess, sys
sys.path.insert(0, %(path)r)
from beonet.agent import apply as node
n = json.loads(%(plan)r)
def sh(*cmd):
    subprocess.run(cmd, check=True)
def run(cmd):
    res = subprocess.run(cmd, capture_output=True, text=True)
    return res.returncode, res.stderr
def ip_json(*args):
    return json.loads(subprocess.run(["ip", "-j"] + list(args), capture_output=True, text=True,
                                     check=True).stdout or "[]")
def live():
    return {"links": ip_json("link"), "addrs": ip_json("addr"),
            "routes": ip_json("route", "show", "table", "main"),
            "installed": node.installed_addresses(n).splitlines(), "forwarding": "0\\n",
            "nft_table": None, "tso": {},
            "sysctls": node.live_sysctls(n, lambda p: open(p).read())}
sh("ip", "link", "add", "eth1", "type", "veth", "peer", "name", "p1")
sh("ip", "link", "add", "eth2", "type", "veth", "peer", "name", "p2")
sh("ip", "link", "set", "p1", "up")
sh("ip", "link", "set", "p2", "up")
first = node.node_actions(n, "a", [], live())[0]
err = node.apply_actions("a", first, run)
second = node.node_actions(n, "a", [], live())
table = subprocess.run(["ip", "route", "show", "proto", "250"], capture_output=True, text=True).stdout
sysctl = [open(node.sysctl_path(k)).read().strip() for k, _ in node.failover_sysctls(n)]
print(json.dumps({"first": [" ".join(a) for a in first], "err": err, "second": second,
                  "table": table, "sysctl": sysctl}))
"""


in_a_namespace = needs_host("the agent's routes and sysctls on a kernel (a fresh network namespace)",
                            "unshare", "ip", netns=True)


@in_a_namespace
def test_the_kernel_takes_the_multipath_route_and_sysctls_and_a_second_run_changes_nothing():
    """In a fresh network namespace (root; the host's network is not touched): the
    agent's commands for a blank node, run against the kernel, leave nothing to do."""
    n = diamond()
    code = KERNEL_SCRIPT % {"path": str(ROOT / "module_utils"), "plan": json.dumps(n)}
    res = subprocess.run(["unshare", "-n", sys.executable, "-c", code], capture_output=True,
                         text=True, check=False)
    out = json.loads(res.stdout)
    assert out["err"] is None and MULTIPATH_LINE in out["first"]
    assert out["second"] == [[], []], out["second"]
    assert "nexthop via 10.0.1.2 dev eth1 weight 1" in out["table"]
    assert "nexthop via 10.0.2.3 dev eth2 weight 1" in out["table"]
    assert out["sysctl"] == [v for _k, v in node.failover_sysctls(n)]


def test_verify_reads_a_multipath_route_as_planned_and_names_a_single_path_one():
    from beonet.agent import verify
    n = diamond()
    live = _kernel_routes(n)
    live[0]["nexthops"].reverse()
    assert verify.route_problems("a", n, live) == ([], [])
    single = _kernel_routes(dict(n, routes=[{k: v for k, v in MULTI.items() if k != "nexthops"},
                                            SINGLE]))
    problems, _diff = verify.route_problems("a", n, single)
    assert problems == [
        "a: route missing: 10.0.3.0/24 src 10.0.1.1 nexthop via 10.0.1.2 dev eth1 "
        "nexthop via 10.0.2.3 dev eth2",
        "a: route not in the plan: 10.0.3.0/24 via 10.0.1.2 dev eth1 src 10.0.1.1"]


# Persistent files ------------------------------------------------------------

BACKENDS = [("networkd", "networkd"), ("networkmanager", "networkd"), ("netplan", "networkd"),
            ("netplan", "networkmanager"), ("ifupdown", "networkd")]


@pytest.mark.parametrize("backend,renderer", BACKENDS)
def test_each_backend_writes_the_multipath_route(backend, renderer):
    from conftest import golden
    files = node.persistent_files(diamond(), [], backend, renderer)
    text = "".join("==> %s (%o) <==\n%s" % (p, node.file_mode(p), files[p]) for p in sorted(files))
    name = backend if backend != "netplan" else "netplan-" + renderer
    golden(ROOT / "tests/golden" / ("failover-diamond.%s" % name), text)


@pytest.mark.parametrize("renderer,path", [
    ("networkd", "/etc/systemd/network/10-netplan-eth1.network.d/60-beonet-multipath.conf"),
    ("networkmanager", "/etc/NetworkManager/dispatcher.d/60-beonet-multipath")])
def test_netplan_multipath_files_go_stale_with_the_multipath_route(renderer, path):
    """netplan cannot write a multipath route: the route is left out of its file and
    written beside it; a plan without one removes that file."""
    from beonet.agent import backends
    from beonet.agent.netbackends import netplan
    files = node.persistent_files(diamond(), [], "netplan", renderer)
    assert path in files and "10.0.3.0/24" not in files[netplan.NETPLAN]
    single = diamond()
    single["routes"][0] = {k: v for k, v in MULTI.items() if k != "nexthops"}
    now = node.persistent_files(single, [], "netplan", renderer)
    assert "10.0.3.0/24" in now[netplan.NETPLAN]
    assert backends.stale_paths(backends.record_text(files), now) == [path]


def test_the_dispatcher_script_is_executable_and_puts_the_route_back_only_when_a_nic_comes_up():
    from beonet.agent.netbackends import networkmanager
    script = networkmanager.nm_dispatcher_files(diamond())[networkmanager.NM_DISPATCHER]
    assert node.file_mode(networkmanager.NM_DISPATCHER) == 0o755 and script.startswith("#!/bin/sh\n")
    assert 'case "$2" in up) ;; *) exit 0 ;; esac\ncase "$1" in eth1|eth2) ;;' in script
    assert script.endswith(MULTIPATH_LINE + " 2>/dev/null || :\n")
    plain = diamond()
    plain["routes"] = [SINGLE]
    assert networkmanager.nm_dispatcher_files(plain) == {}


def test_networkmanager_leaves_multipath_routes_to_the_dispatcher_script():
    """NetworkManager 1.42 installs keyfile routes that carry a weight both merged and
    one by one (two kernel routes where the plan has one): the keyfiles hold the
    single-path routes only, the dispatcher script the multipath ones."""
    from beonet.agent.netbackends import networkmanager
    files = networkmanager.nm_files(diamond())
    eth1 = files["%s/beonet-eth1.nmconnection" % networkmanager.NM]
    eth2 = files["%s/beonet-eth2.nmconnection" % networkmanager.NM]
    assert "route" not in eth1 and "weight" not in eth2
    assert "route1=10.0.4.4/32,10.0.2.3\nroute1_options=src=10.0.1.1\n" in eth2
    script = files[networkmanager.NM_DISPATCHER]
    assert ("ip route replace 10.0.3.0/24 src 10.0.1.1 proto 250 nexthop via 10.0.1.2 dev eth1 "
            "nexthop via 10.0.2.3 dev eth2") in script
    assert networkmanager.NM_DISPATCHER not in networkmanager.nm_files(dict(diamond(), routes=[SINGLE]))


def test_the_module_in_check_mode_reports_the_dry_run_and_the_failover_files(beonet_node,  # noqa: F811
                                                                            monkeypatch):
    """beonet_node on a blank node (check mode, networkd): the actions are the dry-run
    lines, the sysctls are read from /proc (here: the kernel's defaults), and nothing runs."""
    from test_node import _blank_node, _FakeModule
    lib = beonet_node
    n = diamond()
    defaults = {"/proc/sys/net/ipv4/" + k: v + "\n" for k, v in [
        ("fib_multipath_use_neigh", "0"), ("fib_multipath_hash_policy", "0")]}
    for nic in ("eth1", "eth2"):
        defaults.update({"/proc/sys/net/ipv4/neigh/%s/%s" % (nic, t): node.KERNEL_DEFAULTS[t] + "\n"
                         for t in node.NEIGH_TIMERS})
    fake = _FakeModule(lib, {"node": "a", "plan": n, "plan_format": 2, "prefixes": [],
                             "backend": "networkd"}, _blank_node(n), check_mode=True)
    monkeypatch.setattr(lib, "AnsibleModule", lambda **_: fake)
    monkeypatch.setattr(lib, "read_text", lambda path: "0\n" if path == node.FORWARD else defaults.get(path))
    from test_node import _Exit
    with pytest.raises(_Exit) as exc:
        lib.main()
    result = exc.value.result
    assert not exc.value.failed, result
    assert result["actions"] == [" ".join(a) for a in node.actions_on_blank_node(n, "a")]
    assert node.SYSCTL_PATH in result["files"]
    assert all(c[:2] in (["ip", "-j"], ["nft", "list"]) for c in fake.commands)
    route_diff = result["diff"][0]
    assert route_diff["after"].startswith("10.0.3.0/24 src 10.0.1.1 nexthop via 10.0.1.2 dev eth1 ")


@in_a_namespace
def test_the_dispatcher_script_puts_the_route_back_in_the_kernel(tmp_path):
    """The script NetworkManager would run, in a fresh network namespace: nothing for
    another action, the multipath route when one of its NICs comes up."""
    from beonet.agent.netbackends import networkmanager
    script = tmp_path / "60-beonet-multipath"
    script.write_text(networkmanager.nm_dispatcher_files(diamond())[networkmanager.NM_DISPATCHER])
    script.chmod(0o755)
    shell = ("set -e; ip link add eth1 type veth peer name p1; ip link add eth2 type veth peer name p2;"
             "for l in eth1 eth2 p1 p2; do ip link set $l up; done;"
             "ip addr add 10.0.1.1/24 dev eth1; ip addr add 10.0.2.1/24 dev eth2;"
             "%(s)s eth1 down; echo after-down; ip route show proto 250;"
             "%(s)s eth1 up; echo after-up; ip route show proto 250" % {"s": script})
    res = subprocess.run(["unshare", "-n", "sh", "-c", shell], capture_output=True, text=True, check=False)
    down, up = res.stdout.split("after-up")
    assert "10.0.3.0/24" not in down, res.stdout + res.stderr
    assert "nexthop via 10.0.1.2 dev eth1 weight 1" in up and "nexthop via 10.0.2.3 dev eth2 weight 1" in up
