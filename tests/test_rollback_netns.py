"""The rollback against a real kernel: a network namespace holding a node as an admin
left it (an address, a static route, forwarding off), the node agent saves the
checkpoint, applies a routed-mesh node's plan (addresses, multipath routes of
protocol 250, forwarding, failover sysctls) and changes the node's files, then rolls
back: every address, route, link, sysctl and file is as it was, byte for byte.
Needs root, `ip` and network namespaces (the host's own network is not touched)."""

import contextlib
import json
import os
import subprocess
import sys
import time

import pytest
from conftest import ROOT, needs_host

from beonet.agent import apply
from beonet.compiler import pipeline
from beonet.outputs import plan as render

in_namespaces = needs_host("the rollback on a kernel: two network namespaces joined by veths", "ip",
                           netns=True)
PREFIX = "bcp%d" % (os.getpid() % 10000)
AGENT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from beonet.agent import apply, checkpoint
from beonet.agent.files import read_text as read
phase, args = sys.argv[2], json.load(open(sys.argv[3]))
def live(n):
    state = checkpoint.read_state(checkpoint.capture)
    state.update(installed=args.get("installed", []), forwarding=read(apply.FORWARD) or "", tso={},
                 sysctls=apply.live_sysctls(n, read, [link["ifname"] for link in state["links"]]))
    return state
n, nft = args["plan"], args.get("nft")
if phase == "save":
    saved = checkpoint.checkpoint_of("node", live(n), args["files"], args["scope"])
    print(json.dumps(saved))
elif phase in ("apply", "left"):
    actions, problems = apply.node_actions(n, "node", args.get("prefixes", []), live(n))
    assert not problems, problems
    if phase == "left":
        print(json.dumps(actions))
        sys.exit(0)
    err = apply.apply_actions("node", [["nft", "-f", nft] if a[:2] == ["nft", "-f"] else a
                                       for a in actions if nft or a[0] != "nft"],
                              lambda argv: checkpoint.capture(argv)[::2])
    assert err is None, err
else:
    print(json.dumps(checkpoint.roll_back(args["saved"], "a test")))
"""


def _run(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, check=True, timeout=60).stdout


def _in(ns, *argv):
    return _run("ip", "netns", "exec", ns, *argv)


def _agent(ns, phase, args, tmp_path):
    arg_file = tmp_path / ("%s.json" % phase)
    arg_file.write_text(json.dumps(args))
    out = _in(ns, sys.executable, "-c", AGENT, str(ROOT / "module_utils"), phase, str(arg_file))
    return json.loads(out) if out.strip() else None


def _kernel(ns, sysctls):
    """What the rollback must give back: addresses, routes (IPv4 and IPv6), links and sysctls
    as the kernel shows them (all but a veth's queueing discipline: noop until it first comes
    up, noqueue after)."""
    addrs = [{k: v for k, v in link.items() if k != "qdisc"}
             for link in json.loads(_in(ns, "ip", "-j", "addr"))]
    links = [{k: link.get(k) for k in ("ifname", "flags", "mtu", "master")}
             for link in json.loads(_in(ns, "ip", "-j", "link"))]
    values = {k: _in(ns, "cat", "/proc/sys/" + k.replace(".", "/")).strip() for k in sysctls}
    return {"addrs": addrs, "links": links, "sysctls": values,
            "routes": json.loads(_in(ns, "ip", "-j", "route", "show", "table", "main")),
            "routes6": json.loads(_in(ns, "ip", "-j", "-6", "route", "show", "table", "main"))}


@contextlib.contextmanager
def _pair(suffix, nics, up):
    """A node's namespace and its peer's, joined by a veth per NIC (both ends up: up);
    both deleted afterwards."""
    ns, peer = PREFIX + "-node" + suffix, PREFIX + "-peer" + suffix
    made = []
    try:
        for name in (ns, peer):
            _run("ip", "netns", "add", name)
            made.append(name)
        for nic in nics:
            _run("ip", "link", "add", nic, "netns", ns, "type", "veth", "peer", "name", nic, "netns", peer)
            for end in (peer, ns) if up else ():
                _in(end, "ip", "link", "set", nic, "up")
        yield ns
    finally:
        for name in made:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


@pytest.fixture()
def node():
    with _pair("", ("eth1", "eth2"), up=False) as ns:
        _in(ns, "ip", "link", "set", "eth1", "up")
        _in(ns, "ip", "addr", "add", "192.168.7.1/24", "dev", "eth1")
        _in(ns, "ip", "route", "add", "10.77.0.0/16", "via", "192.168.7.254", "dev", "eth1",
            "proto", "static", "metric", "100")
        yield ns


@in_namespaces
def test_a_rollback_gives_back_the_kernel_state_and_the_files_byte_for_byte(node, tmp_path):
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/routed-mesh.yml")))
    n = plan["nodes"]["node-0-0"]
    kept, made = tmp_path / "kept.network", tmp_path / "beonet.nft"
    kept.write_bytes(b"[Match]\nName=eth1\n\xe2\x82\xac\n")
    kept.chmod(0o640)
    keys = ["net.ipv4.ip_forward", "net.ipv4.fib_multipath_use_neigh",
            "net.ipv4.neigh.eth1.base_reachable_time_ms", "net.ipv4.conf.eth2.ignore_routes_with_linkdown"]
    before = _kernel(node, keys)
    saved = _agent(node, "save", {"plan": n, "files": [str(kept), str(made)], "scope": ["eth1", "eth2"]},
                   tmp_path)
    _agent(node, "apply", {"plan": n}, tmp_path)
    kept.write_text("changed\n")
    made.write_text("table inet beonet {}\n")
    applied = _kernel(node, keys)
    assert applied != before and any(r.get("protocol") in ("beonet", 250, "250") for r in applied["routes"])
    result = _agent(node, "rollback", {"plan": n, "saved": saved}, tmp_path)
    assert result["errors"] == [] and result["left"] == [], result
    assert _kernel(node, keys) == before
    assert kept.read_bytes() == b"[Match]\nName=eth1\n\xe2\x82\xac\n" and kept.stat().st_mode & 0o777 == 0o640
    assert not made.exists() and sorted(result["files"]) == sorted([str(kept), str(made)])


in_namespaces_with_nft = needs_host("the IPv6 apply and rollback on a kernel: two network namespaces "
                                    "joined by veths, the forward filter loaded", "ip", "nft", netns=True)
ADMIN6 = ("fd99::1/64", "fd98::/64", "fd99::fe")       # the management NIC's own address and route


@pytest.fixture()
def dual_node():
    """A node whose NICs are up with carrier (their peers up too), IPv6 on but on eth2 (as
    a container starts them); eth0 stands for the management interface: its own IPv6
    address and route, accepting router advertisements."""
    with _pair("6", ("eth0", "eth1", "eth2"), up=True) as ns:
        off = _in(ns, "sh", "-c", "cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null || echo 1")
        if off.strip() != "0":
            pytest.skip("IPv6 is off in this kernel's network namespaces")
        _in(ns, "ip", "-6", "addr", "add", ADMIN6[0], "dev", "eth0", "nodad")
        _in(ns, "ip", "-6", "route", "add", ADMIN6[1], "via", ADMIN6[2], "dev", "eth0", "proto", "static")
        _in(ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/eth0/accept_ra; "
                            "echo 1 > /proc/sys/net/ipv6/conf/eth2/disable_ipv6")      # as in a container
        for _try in range(50):                  # the link-local addresses' DAD ends (a second or two)
            if not _in(ns, "ip", "-6", "addr", "show", "tentative").strip():
                break
            time.sleep(0.1)
        yield ns


@in_namespaces_with_nft
@pytest.mark.parametrize("down", [[], ["eth1"]], ids=["NICs up", "eth1 down before"])
def test_a_dual_stack_node_is_applied_in_sync_on_a_second_run_and_rolled_back(dual_node, tmp_path, down):
    for nic in down:           # set down again by the rollback, which drops its IPv6 addresses and routes
        _in(dual_node, "ip", "link", "set", nic, "down")
    text = (ROOT / "topologies/routed-mesh.yml").read_text() + "addressing: {ipv6: true}\n"
    plan = render.plan(pipeline.compile_text(text, "routed-mesh.yml"))
    n, prefixes = plan["nodes"]["node-0-0"], render.prefixes(plan)
    ruleset = tmp_path / "beonet.nft"
    ruleset.write_text(apply.forward_ruleset(apply.cluster_prefixes(n, prefixes))[1])
    keys = ["net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding", "net.ipv6.conf.eth0.forwarding",
            "net.ipv6.conf.eth0.accept_ra", "net.ipv6.conf.eth1.accept_ra",
            "net.ipv6.fib_multipath_hash_policy",
            "net.ipv6.neigh.eth1.base_reachable_time_ms", "net.ipv6.conf.eth2.ignore_routes_with_linkdown",
            "net.ipv6.conf.eth2.disable_ipv6"]
    before = _kernel(dual_node, keys)
    args = {"plan": n, "prefixes": prefixes, "nft": str(ruleset), "files": [], "scope": ["eth1", "eth2"]}
    saved = _agent(dual_node, "save", args, tmp_path)
    _agent(dual_node, "apply", args, tmp_path)
    applied = _kernel(dual_node, keys)
    six = [r for r in applied["routes6"] if str(r.get("protocol")) in ("beonet", "250")]
    assert len(six) == len([r for r in n["routes"] if ":" in r["to"]]) and all(
        r["prefsrc"] == n["address6"] for r in six)
    assert sum(1 for r in six if r.get("nexthops")) == sum(1 for r in n["routes"] if ":" in r["to"]
                                                           and r.get("nexthops"))
    got = {"%s/%d" % (a["local"], a["prefixlen"]) for link in applied["addrs"] for a in link["addr_info"]
           if link["ifname"] in ("eth1", "eth2") and a.get("scope") == "global"}
    assert got == {a for i in n["interfaces"] for a in i["addresses"]}
    assert not any("tentative" in a or "dadfailed" in a for link in applied["addrs"]
                   for a in link["addr_info"] if a.get("scope") == "global")
    assert applied["sysctls"]["net.ipv6.conf.all.forwarding"] == "1"
    off = "net.ipv6.conf.eth2.disable_ipv6"
    assert (before["sysctls"][off], applied["sysctls"][off]) == ("1", "0")
    assert applied["sysctls"]["net.ipv6.conf.eth0.accept_ra"] == "2"          # keeps taking RAs
    assert applied["sysctls"]["net.ipv6.conf.eth1.accept_ra"] == \
        before["sysctls"]["net.ipv6.conf.eth1.accept_ra"]
    eth0 = [link["addr_info"] for link in applied["addrs"] if link["ifname"] == "eth0"]
    assert eth0 == [link["addr_info"] for link in before["addrs"] if link["ifname"] == "eth0"]
    assert [r for r in applied["routes6"] if r.get("dev") == "eth0"] == \
        [r for r in before["routes6"] if r.get("dev") == "eth0"]
    table = _in(dual_node, "nft", "list", "table", "inet", "beonet")
    assert "@cluster6" in table and "fd76:db0c:60c::/62" in table
    args["installed"] = apply.installed_addresses(n).splitlines()
    assert _agent(dual_node, "left", args, tmp_path) == []                  # the second run: nothing
    result = _agent(dual_node, "rollback", {"plan": n, "saved": saved}, tmp_path)
    assert result["errors"] == [] and result["left"] == [], result
    assert _kernel(dual_node, keys) == before
    assert subprocess.run(["ip", "netns", "exec", dual_node, "nft", "list", "table", "inet", "beonet"],
                          capture_output=True, check=False).returncode != 0
