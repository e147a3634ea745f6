"""The rollback against a real kernel: a network namespace holding a node as an admin
left it (an address, a static route, forwarding off), the node agent saves the
checkpoint, applies a routed-mesh node's plan (addresses, multipath routes of
protocol 250, forwarding, failover sysctls) and changes the node's files, then rolls
back: every address, route, link, sysctl and file is as it was, byte for byte.
Needs root, `ip` and network namespaces (the host's own network is not touched)."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, needs_host

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
    state.update(installed=[], forwarding=read(apply.FORWARD) or "", tso={},
                 sysctls=apply.live_sysctls(n, read))
    return state
n = args["plan"]
if phase == "save":
    saved = checkpoint.checkpoint_of("node", live(n), args["files"], args["scope"])
    print(json.dumps(saved))
elif phase == "apply":
    actions, problems = apply.node_actions(n, "node", [], live(n))
    assert not problems, problems
    err = apply.apply_actions("node", [a for a in actions if a[0] != "nft"],
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
    """What the rollback must give back: addresses, routes, links and sysctls as the kernel shows
    them (all but a veth's queueing discipline: noop until it first comes up, noqueue after)."""
    addrs = [{k: v for k, v in link.items() if k != "qdisc"}
             for link in json.loads(_in(ns, "ip", "-j", "addr"))]
    links = [{k: link.get(k) for k in ("ifname", "flags", "mtu", "master")}
             for link in json.loads(_in(ns, "ip", "-j", "link"))]
    values = {k: _in(ns, "cat", "/proc/sys/" + k.replace(".", "/")).strip() for k in sysctls}
    return {"addrs": addrs, "links": links, "sysctls": values,
            "routes": json.loads(_in(ns, "ip", "-j", "route", "show", "table", "main"))}


@pytest.fixture()
def node():
    ns, peer = PREFIX + "-node", PREFIX + "-peer"
    made = []
    try:
        for name in (ns, peer):
            _run("ip", "netns", "add", name)
            made.append(name)
        for nic in ("eth1", "eth2"):
            _run("ip", "link", "add", nic, "netns", ns, "type", "veth", "peer", "name", nic, "netns", peer)
        _in(ns, "ip", "link", "set", "eth1", "up")
        _in(ns, "ip", "addr", "add", "192.168.7.1/24", "dev", "eth1")
        _in(ns, "ip", "route", "add", "10.77.0.0/16", "via", "192.168.7.254", "dev", "eth1",
            "proto", "static", "metric", "100")
        yield ns
    finally:
        for name in made:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


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
