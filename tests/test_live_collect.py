"""The node's half of the live-state proof (agent/collect.py): real `ip -j` and `nft -j`
output recorded from network namespaces set up like a beonet node
(tests/livestate/capture.py) reduced to the compact state, golden; the commands run
once each and read-only; what goes wrong on a node (no nft, a failing command,
output that is not JSON, junk of every shape) is said, never raised. The IPv6 readings
(written after iproute2 6.x's JSON, with both forms of an IPv6 multipath route) reduce
the same way."""

import json
import subprocess
import sys

from conftest import ROOT, golden, needs_host
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beonet.agent import collect, probe

HERE = ROOT / "tests/livestate"


def _raw(name):
    """A recording; one made before the IPv6 readings answers them as a node without IPv6
    addresses, routes or neighbours does."""
    raw = json.loads((HERE / name).read_text())
    for key in collect.SIX:
        raw["commands"].setdefault(key, [])
    return raw


def _state(name):
    raw = _raw(name)
    return collect.state_of(raw["commands"], raw["files"].get)


def test_a_beonet_node_recorded_from_the_kernel_reduces_to_its_golden_state():
    state = _state("raw-node.json")
    golden(HERE / "state-node.json", json.dumps(state, indent=1, sort_keys=True) + "\n")
    routes = {r["dst"]: r for r in state["routes"]}
    assert routes["10.0.3.0/24"]["hops"] == [{"via": "10.0.1.2", "dev": "eth1"},
                                            {"via": "10.0.2.3", "dev": "eth2"}]
    assert routes["10.0.10.0/24"]["hops"][1] == {"via": "10.0.4.4", "dev": "eth3", "flags": ["linkdown"]}
    assert routes["10.0.6.0/24"]["hops"] == [{"via": "10.0.9.9", "dev": "eth1", "flags": ["onlink"]}]
    assert routes["10.0.7.7/32"]["src"] == "10.0.2.1" and routes["0.0.0.0/0"]["proto"] == "boot"
    assert routes["10.0.8.0/24"] == {"dst": "10.0.8.0/24", "type": "blackhole", "proto": "boot", "hops": []}
    assert "10.0.12.0/24" not in routes          # through eth4, which is down: the kernel dropped it
    assert state["links"]["eth3"] == {"state": "no-carrier"} and state["links"]["eth4"] == {"state": "down"}
    assert state["neigh"] == [{"dst": "10.0.1.99", "dev": "eth1", "state": "FAILED"}]
    assert state["sysctl"]["forwarding"]["eth3"] == 0 and state["sysctl"]["linkdown"]["eth1"] == 1
    assert state["filter"]["sets"] == {"inet beonet cluster": ["10.0.0.0/16", "172.16.5.0/24"]}
    assert state["errors"] == [] and state["rules"] == []


def test_a_foreign_forward_chain_is_kept_for_the_controller_to_judge():
    state = _state("raw-foreign.json")
    golden(HERE / "state-foreign.json", json.dumps(state["filter"], indent=1, sort_keys=True) + "\n")
    chains = {(c["table"], c["chain"]): c for c in state["filter"]["chains"]}
    assert set(chains) == {("inet beonet", "forward"), ("ip filter", "FORWARD"), ("inet idle", "fw")}
    assert chains[("ip filter", "FORWARD")]["count"] == 1 and chains[("inet idle", "fw")]["rules"] == []


class _Node:
    """Commands answered from a recording; every command is logged."""

    def __init__(self, raw, broken=(), missing=(), later=None):
        self.raw, self.broken, self.missing, self.later = raw, set(broken), set(missing), later
        self.commands = []

    def run(self, argv):
        self.commands.append(argv)
        key = next(k for k, a in collect.COMMANDS if a == argv)
        if argv[0] in self.missing:
            return 127, "", "%s is not installed" % argv[0]
        if key in self.broken:
            return 1, "", "Error: something failed\n"
        if key == "neigh" and self.later is not None and self.commands.count(argv) > 1:
            return 0, json.dumps(self.later), ""
        return 0, json.dumps(self.raw["commands"][key]), ""


def test_each_command_runs_once_and_only_reads():
    raw = _raw("raw-node.json")
    node = _Node(raw)
    slept = []
    state = collect.collect(node.run, raw["files"].get, sleep=slept.append)
    assert node.commands == [argv for _key, argv in collect.COMMANDS] and slept == []
    assert all(a[1] == "-j" and ("show" in a or a[-1] == "ruleset") for a in node.commands)
    assert state == _state("raw-node.json")


def test_a_resolving_neighbour_is_read_again_after_it_settles():
    raw = _raw("raw-node.json")
    raw["commands"]["neigh"].append({"dst": "10.0.2.77", "dev": "eth2", "state": ["INCOMPLETE"]})
    answered = [n for n in raw["commands"]["neigh"] if n["dst"] != "10.0.2.77"]
    node, slept = _Node(raw, later=answered), []
    state = collect.collect(node.run, raw["files"].get, settle=2.5, sleep=slept.append)
    assert slept == [2.5] and len(node.commands) == len(collect.COMMANDS) + 1
    assert state["neigh"] == [{"dst": "10.0.1.99", "dev": "eth1", "state": "FAILED"}]
    still = _Node(raw, later=raw["commands"]["neigh"])
    assert {"dst": "10.0.2.77", "dev": "eth2", "state": "INCOMPLETE"} in collect.collect(
        still.run, raw["files"].get, sleep=lambda s: None)["neigh"]


def test_a_node_without_nft_or_with_a_failing_command_says_so():
    raw = _raw("raw-node.json")
    state = collect.collect(_Node(raw, missing={"nft"}).run, raw["files"].get)
    assert state["filter"] == {"error": "nft -j list ruleset: nft is not installed", "legacy": []}
    assert state["errors"] == ["nft -j list ruleset: nft is not installed"]
    state = collect.collect(_Node(raw, broken={"routes"}).run, raw["files"].get)
    assert state["routes"] == []
    assert state["errors"] == ["ip -j -4 -d route show table main: Error: something failed",
                               "routes: no usable output"]


class _Loaded(_Node):
    """A node under load: the first answers of some commands are given instead of the
    recording's (an error, a listing cut short, ip's interrupted-dump warning)."""

    def __init__(self, raw, first):
        super().__init__(raw)
        self.first = dict(first)

    def run(self, argv):
        key = next(k for k, a in collect.COMMANDS if a == argv)
        if key in self.first:
            self.commands.append(argv)
            return self.first.pop(key)
        return super().run(argv)


def _without(raw, *nics):
    return json.dumps([link for link in raw["commands"]["links"] if link["ifname"] not in nics])


def test_a_reading_the_state_needs_is_tried_again_once_and_then_is_whole():
    raw = _raw("raw-node.json")
    for first in ({"links": (1, "", "Error: Resource temporarily unavailable\n")},
                  {"routes": (0, "[{", "")},
                  {"addrs": (0, json.dumps(raw["commands"]["addrs"]), "Dump was interrupted and may be "
                                                                        "inconsistent.\n")},
                  {"links": (0, "[]", "")},
                  {"links": (0, _without(raw, "eth1"), "")}):
        node = _Loaded(raw, first)
        state = collect.collect(node.run, raw["files"].get, sleep=lambda s: None)
        assert state == _state("raw-node.json"), first
        assert len(node.commands) == len(collect.COMMANDS) + 1


def test_a_reading_that_fails_twice_is_named_unread():
    raw = _raw("raw-node.json")
    state = collect.collect(_Node(raw, broken={"links"}).run, raw["files"].get, sleep=lambda s: None)
    assert state["unread"] == ["links"] and state["links"] == {}
    assert state["errors"] == ["ip -j link show: Error: something failed", "links: no usable output"]


def test_a_link_listing_that_is_empty_or_cut_short_is_unread():
    raw = _raw("raw-node.json")
    empty = dict(raw["commands"], links=[])
    assert collect.state_of(empty, raw["files"].get)["errors"] == ["links: ip listed no NIC, not even lo"]
    short = dict(raw["commands"], links=json.loads(_without(raw, "eth1", "eth2")))
    state = collect.state_of(short, raw["files"].get)
    assert state["unread"] == ["links"]
    assert state["errors"] == ["links: NICs eth1, eth2 hold addresses or routes but are not listed"]
    assert collect.state_of(raw["commands"], raw["files"].get)["unread"] == []


def test_output_that_is_not_json_is_an_error_not_a_crash():
    def run(argv):
        return 0, "<html>", ""
    state = collect.collect(run, lambda path: None, sleep=lambda s: None)
    assert state["links"] == {}
    assert state["filter"]["error"].startswith("nft -j list ruleset: output is not JSON")
    assert len(state["errors"]) == len(collect.COMMANDS) + 3


def test_legacy_iptables_tables_are_reported():
    raw = _raw("raw-node.json")
    files = dict(raw["files"], **{collect.IPTABLES_NAMES: "filter\nnat\n"})
    assert collect.state_of(raw["commands"], files.get)["filter"]["legacy"] == ["filter", "nat"]


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                  max_size=4), max_leaves=20)
KEYS = st.sampled_from(["ifname", "flags", "dst", "gateway", "dev", "nexthops", "addr_info", "state", "chain",
                        "rule", "set", "nftables", "hook", "family", "elem", "expr", "priority", "master"])
NEAR = st.recursive(JSON, lambda inner: st.lists(st.dictionaries(KEYS, inner, max_size=5), max_size=4)
                    | st.dictionaries(KEYS, inner, max_size=5), max_leaves=30)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from([k for k, _a in collect.COMMANDS]), NEAR))
def test_junk_of_any_shape_reduces_without_raising(raw):
    state = collect.state_of(raw, lambda path: "1\n")
    json.dumps(state)
    assert state["format"] == collect.STATE_FORMAT


in_a_namespace = needs_host("the collector on a kernel (a fresh network namespace: veths, routes, "
                            "neighbours)", "unshare", "ip", netns=True)

KERNEL_SCRIPT = """
import json, subprocess, sys, socket, time
sys.path.insert(0, %(path)r)
from beonet.agent import collect
def sh(cmd):
    subprocess.run(cmd, shell=True, check=True)
sh("ip link set lo up")
sh("ip link add eth1 type veth peer name peer1; ip link add eth2 type veth peer name peer2")
sh("ip link set eth1 up; ip link set peer1 up; ip link set eth2 up")
sh("ip addr add 10.0.1.1/24 dev eth1; ip addr add 10.0.2.1/24 dev eth2")
sh("ip route add 10.0.3.0/24 src 10.0.1.1 proto 250 "
   "nexthop via 10.0.1.2 dev eth1 nexthop via 10.0.2.3 dev eth2")
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"x", ("10.0.1.9", 9))
def run(argv):
    try:
        res = subprocess.run(argv, capture_output=True, text=True)
    except FileNotFoundError:
        return 127, "", "%%s is not installed" %% argv[0]
    return res.returncode, res.stdout, res.stderr
def read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return None
print(json.dumps(collect.collect(run, read, settle=3.5)))
"""


@in_a_namespace
def test_the_collector_reads_a_kernel():
    """In a fresh network namespace (root; the host's network is untouched): a multipath
    route, a NIC without carrier (its peer down), a neighbour that never answers."""
    code = KERNEL_SCRIPT % {"path": str(ROOT / "module_utils")}
    res = subprocess.run(["unshare", "-n", sys.executable, "-c", code], capture_output=True, text=True,
                         check=False, timeout=60)
    assert res.returncode == 0, res.stderr
    state = json.loads(res.stdout)
    routes = {r["dst"]: r for r in state["routes"]}
    assert [h["via"] for h in routes["10.0.3.0/24"]["hops"]] == ["10.0.1.2", "10.0.2.3"]
    assert routes["10.0.3.0/24"]["hops"][1]["flags"] == ["linkdown"]
    assert state["links"]["eth1"]["state"] == "up" and state["links"]["eth2"]["state"] == "no-carrier"
    assert state["neigh"] == [{"dst": "10.0.1.9", "dev": "eth1", "state": "FAILED"}]
    forwarding = state["sysctl"]["forwarding"]
    assert set(forwarding) == {"all", "lo", "eth1", "eth2"} and len(set(forwarding.values())) == 1


def test_a_neighbour_that_failed_once_is_asked_again_before_it_is_judged():
    # a FAILED entry is the kernel's memory of an earlier failure (a node since started
    # again): it is asked once more and the table read again
    raw = _raw("raw-node.json")
    answered = [n for n in raw["commands"]["neigh"] if n["dst"] != "10.0.1.99"]
    asked = []
    node = _Node(raw, later=answered)
    state = collect.collect(node.run, raw["files"].get, sleep=lambda s: None, ask=asked.append)
    assert asked == [[("10.0.1.99", "eth1")]] and state["neigh"] == []
    # still FAILED after it was asked: it does not answer now, and is reported
    still = _Node(raw, later=raw["commands"]["neigh"])
    state = collect.collect(still.run, raw["files"].get, sleep=lambda s: None, ask=lambda t: None)
    assert state["neigh"] == [{"dst": "10.0.1.99", "dev": "eth1", "state": "FAILED"}]


def test_only_ipv4_neighbours_on_interface_names_are_asked():
    neigh = [{"dst": "10.0.0.1", "dev": "eth0", "state": ["FAILED"]},
             {"dst": "10.0.0.2", "dev": "-f", "state": ["FAILED"]},
             {"dst": "--help", "dev": "eth0", "state": ["FAILED"]},
             {"dst": "10.0.0.3", "dev": "eth1", "state": ["REACHABLE"]},
             {"dst": "10.0.0.4", "dev": "eth1", "state": ["INCOMPLETE"]}]
    assert collect.unanswered(neigh) == [("10.0.0.1", "eth0"), ("10.0.0.4", "eth1")]
    many = [{"dst": "10.1.%d.%d" % (i // 250, i % 250 + 1), "dev": "eth0", "state": "FAILED"}
            for i in range(1000)]
    assert len(collect.unanswered(many)) == collect.ASK_MAX


def test_asking_without_ping_asks_nobody(monkeypatch):
    started = []
    monkeypatch.setattr(probe.shutil, "which", lambda name, path=None: None)
    monkeypatch.setattr(probe.procs.subprocess, "Popen", lambda *a, **k: started.append(a))
    collect.ask_neighbours([("10.0.0.1", "eth0")])
    assert started == [] and probe.ping_all([("10.0.0.1", "eth0")]) is None


def test_asking_sends_one_echo_per_neighbour_out_of_its_nic_and_tells_who_answered(monkeypatch):
    started = []

    class _Proc:
        def __init__(self, argv, **kwargs):
            started.append(argv)
            self.rc = 0 if argv[-1] == "10.0.0.1" else 1

        def wait(self, timeout=None):
            return self.rc

    monkeypatch.setattr(probe.shutil, "which", lambda name, path=None: "/bin/ping")
    monkeypatch.setattr(probe.procs.subprocess, "Popen", _Proc)
    collect.ask_neighbours([("10.0.0.1", "eth0"), ("10.0.1.1", "eth1")])
    assert started == [["/bin/ping", "-n", "-q", "-c", "1", "-W", "1", "-I", "eth0", "10.0.0.1"],
                       ["/bin/ping", "-n", "-q", "-c", "1", "-W", "1", "-I", "eth1", "10.0.1.1"]]
    assert probe.ping_all([("10.0.0.1", "eth0"), ("10.0.1.1", "eth1")]) == {("10.0.0.1", "eth0")}


# --- IPv6: the readings as iproute2 6.x prints them (written after its format), both
# forms of a multipath route

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
LINKS6 = [{"ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"]},
         {"ifname": "eth1", "flags": ["BROADCAST", "UP", "LOWER_UP"]}]


def _raw6(**more):
    raw = {"links": LINKS6, "addrs": [], "routes": [], "neigh": [], "rules": [], "nft": {"nftables": []},
           "addrs6": ADDRS6, "routes6": ROUTES6, "neigh6": [], "rules6": [], "netconf6": NETCONF6}
    raw.update(more)
    return raw


def ipv6_reading(**more):
    """The state reduced from the IPv6 readings above (more: readings replaced)."""
    return collect.state_of(_raw6(**more), lambda _path: None)


def test_the_ipv6_readings_reduce_to_the_state():
    got = ipv6_reading()
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


def test_the_ipv6_policy_rules_beside_the_kernel_s_are_kept_as_the_ipv4_ones():
    rules = [{"priority": 0, "src": "all", "table": "local"}, {"priority": 100, "src": "fd00::/64",
                                                                "table": "7"},
             {"priority": 32766, "src": "all", "table": "main"}, {"priority": "x"}]
    got = ipv6_reading(rules6=rules)
    assert got["rules6"] == [100] and got["rules"] == []
    assert ipv6_reading()["rules6"] == []


def test_the_ipv6_readings_that_fail_twice_are_unread6_not_unread():
    run_log = []

    def run(argv):
        run_log.append(argv)
        key = next(k for k, a in collect.COMMANDS if a == argv)
        if key in ("addrs6", "neigh6"):
            return 1, "", "Error: Address family not supported by protocol\n"
        return 0, json.dumps(_raw6()[key]), ""
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
        return 0, json.dumps(failed if key == "neigh6" and reads.count(key) == 1 else _raw6()[key]), ""
    got = collect.collect(run, lambda _path: None, settle=0, ask=asked.append)
    assert asked == [[("fd00:0:0:1::2", "eth1")]] and reads.count("neigh6") == 2 and reads.count("neigh") == 1
    assert got["neigh6"] == []
