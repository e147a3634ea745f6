"""The live-state proof against real kernels: the 2x3 routed mesh built from network
namespaces (one per node, veths and bridges for its segments), each node given its
plan with `ip` (addresses, routes with every next hop, forwarding, the failover
sysctls, beonet's nftables filter where nft is installed), then each node's state
collected by the agent inside its namespace and every ordered pair proven on the
controller; then faults made in the kernels: forwarding off on a node, a NIC taken
down. Needs root, `ip` and network namespaces (the host's own network is not
touched); skipped elsewhere."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, needs_host

from beonet.agent import apply, readout, routes
from beonet.compiler import pipeline
from beonet.livestate import proof
from beonet.livestate import readout as controller
from beonet.outputs import plan as render

in_namespaces = needs_host("the live-state proof on kernels: a mesh of network namespaces (veths, bridges) "
                           "with the plan's forward filter", "ip", "nft", netns=True)
PREFIX = "blv%d" % (os.getpid() % 10000)
COLLECT = ("import json, subprocess, sys\nsys.path.insert(0, sys.argv[1])\nfrom beonet.agent import collect\n"
           "def run(argv):\n    try:\n        r = subprocess.run(argv, capture_output=True, text=True)\n"
           "    except FileNotFoundError:\n        return 127, '', '%s is not installed' % argv[0]\n"
           "    return r.returncode, r.stdout, r.stderr\n"
           "def read(path):\n    try:\n        with open(path) as fh:\n            return fh.read()\n"
           "    except OSError:\n        return None\n"
           "print(json.dumps(collect.collect(run, read, settle=0)))\n")


def _run(*argv, stdin=None):
    return subprocess.run(list(argv), input=stdin, capture_output=True, text=True, check=True, timeout=60)


class Mesh:
    """The namespaces of one plan: a namespace per node, one for the bridges."""

    def __init__(self, plan, prefix=PREFIX):
        self.plan, self.made, self.prefix = plan, [], prefix
        self.ns = {name: "%s-%d" % (prefix, k) for k, name in enumerate(plan["nodes"])}

    def sh(self, node, cmd, stdin=None):
        return _run("ip", "netns", "exec", self.ns.get(node, node), "sh", "-c", cmd, stdin=stdin)

    def build(self):
        for ns in list(self.ns.values()) + ["%s-sw" % self.prefix]:
            _run("ip", "netns", "add", ns)
            self.made.append(ns)
            _run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        for k, seg in enumerate(self.plan["segments"].values()):
            self._segment(k, seg)
        for name, n in self.plan["nodes"].items():
            self._apply(name, n)

    def _segment(self, k, seg):
        members = [(m["node"], m["interface"]) for m in seg["members"]]
        if len(members) == 2:
            (a, nic_a), (b, nic_b) = members
            _run("ip", "link", "add", nic_a, "netns", self.ns[a], "type", "veth", "peer", "name", nic_b,
                 "netns", self.ns[b])
            return
        sw = "%s-sw" % self.prefix
        self.sh(sw, "ip link add br%d type bridge && ip link set br%d up" % (k, k))
        for j, (node, nic) in enumerate(members):
            port = "p%d-%d" % (k, j)
            _run("ip", "link", "add", nic, "netns", self.ns[node], "type", "veth", "peer", "name", port,
                 "netns", sw)
            self.sh(sw, "ip link set %s master br%d && ip link set %s up" % (port, k, port))

    def _apply(self, name, n):
        lines = ["echo %d > /proc/sys/net/ipv4/ip_forward" % (1 if n["forwarding"] else 0)]
        for iface in n["interfaces"]:
            lines.append("ip link set %s up" % iface["name"])
            lines += ["ip addr add %s dev %s" % (a, iface["name"]) for a in iface["addresses"]]
        lines += ["echo %s > %s" % (v, apply.sysctl_path(k)) for k, v in apply.failover_sysctls(n)]
        lines += [" ".join(routes.replace_command(routes.planned_key(r))) for r in n["routes"]]
        self.sh(name, " && ".join(lines))
        if n["forwarding"] and shutil.which("nft"):
            self.sh(name, "nft -f -", stdin=apply.forward_ruleset(render.prefixes(self.plan))[1])

    def states(self):
        cmd = "%s -c '%s' %s" % (sys.executable, COLLECT.replace("'", "'\\''"), ROOT / "module_utils")
        return {name: json.loads(self.sh(name, cmd).stdout) for name in self.plan["nodes"]}

    def delete(self):
        for ns in self.made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


@pytest.fixture(scope="module")
def mesh():
    yield from _built(Mesh(render.plan(pipeline.compile_file(str(ROOT / "topologies/routed-mesh-2x3.yml")))))


def _built(made):
    """A fixture's namespaces: built, yielded, deleted however the tests end."""
    try:
        made.build()
        yield made
    finally:
        made.delete()


@in_namespaces
def test_the_kernels_holding_the_plan_prove_every_pair(mesh):
    result = proof.prove(mesh.plan, render.prefixes(mesh.plan), mesh.states())
    assert (result["pairs"], result["proven"], result["mismatched"]) == (30, 30, 0), result["summary"]
    assert result["problems"] == [] and result["dead"] == []


@in_namespaces
def test_the_one_shell_command_reads_what_the_agent_collects_and_traces_the_sample(mesh):
    """verify.yml's raw call: each node's command run in its namespace; its output read on
    the controller is the state the agent collects, and proves every pair."""
    prefixes = render.prefixes(mesh.plan)
    expected = controller.traced(mesh.plan, "live", proof.plan_sample(mesh.plan, prefixes)["sample"], {}, 64)
    outputs = {n: mesh.sh(n, c).stdout for n, c in controller.commands(mesh.plan, expected, 0).items()}
    states = mesh.states()
    for name, text in outputs.items():
        read = readout.state_of_output(readout.parse_output(text))
        assert dict(read, neigh=[]) == dict(states[name], neigh=[]), name
    result = controller.judge(mesh.plan, prefixes, outputs, expected, [], 100, True)
    assert (result["pairs"], result["proven"], result["mismatched"]) == (30, 30, 0), result["summary"]
    assert result["traced"]["checked"] == sum(len(e) for e in expected.values()) > 0
    assert result["traced"]["problems"] == []
    if shutil.which("traceroute"):
        assert result["traced"]["mismatches"] == [], result["traced"]["summary"]


@in_namespaces
def test_a_node_whose_kernel_stops_forwarding_breaks_the_pairs_through_it(mesh):
    mesh.sh("node-1-1", "echo 0 > /proc/sys/net/ipv4/ip_forward")
    try:
        result = proof.prove(mesh.plan, render.prefixes(mesh.plan), mesh.states())
    finally:
        mesh.sh("node-1-1", "echo 1 > /proc/sys/net/ipv4/ip_forward")
    assert result["mismatched"] > 0
    assert {r["why"] for r in result["mismatches"]} == {"node-1-1 (forwarding off)"}


@in_namespaces
def test_a_nic_taken_down_is_named(mesh):
    nic = mesh.plan["nodes"]["node-1-1"]["interfaces"][0]["name"]
    mesh.sh("node-1-1", "ip link set %s down" % nic)
    try:
        result = proof.prove(mesh.plan, render.prefixes(mesh.plan), mesh.states())
    finally:
        mesh.sh("node-1-1", "ip link set %s up" % nic)
        node = mesh.plan["nodes"]["node-1-1"]
        for r in node["routes"]:                  # taking a NIC down drops the routes through it
            mesh.sh("node-1-1", " ".join(routes.replace_command(routes.planned_key(r))))
    assert "node-1-1: link down on NIC %s (down)" % nic in result["problems"]
    assert result["mismatched"] > 0
    # the NIC at the other end of the link (a veth) has lost its carrier too
    assert {r["why"] for r in result["mismatches"]} == {"link down on node node-1-1 NIC %s" % nic,
                                                        "link down on node node-0-1 NIC eth1"}, \
        "\n".join(result["summary"])


class Mesh6(Mesh):
    """The namespaces of a plan given with the node module's own commands for a blank
    node (its dry run: IPv6 addresses without duplicate address detection, the routes
    as routes.txt has them); sysctls written in the node's namespace, the forward
    filter loaded from standard input."""

    def _apply(self, name, n):
        lines = []
        for argv in apply.actions_on_blank_node(n, name):
            if argv[:2] == ["sysctl", "-w"]:
                key, value = argv[2].split("=", 1)
                lines.append("echo %s > /proc/sys/%s" % (value, key.replace(".", "/")))
            elif argv[0] == "ip":
                lines.append(" ".join(argv))
        self.sh(name, " && ".join(lines))
        if n["forwarding"]:
            self.sh(name, "nft -f -", stdin=apply.forward_ruleset(render.prefixes(self.plan))[1])


@pytest.fixture(scope="module")
def metagraph6():
    text = ("name: mg6\nfamily: metagraph\nmetagraph: {groups: 3, nodes_per_group: 2, p2p_per_node: 1}\n"
            "addressing: {ipv4: false, ipv6: true}\n")
    yield from _built(Mesh6(render.plan(pipeline.compile_text(text, "mg6.yml")), PREFIX + "s"))


@in_namespaces
def test_ipv6_routes_without_src_send_from_the_nodes_address_and_prove_every_pair(metagraph6):
    """An IPv6-only meta-graph: the routes through a node's LAN name no src, those through
    its point-to-point NIC do; the kernel sends every pair's packets from the node's
    address6 either way, and the live proof holds for every ordered pair."""
    plan = metagraph6.plan
    six = {name: n["address6"] for name, n in plan["nodes"].items()}
    bare = [(name, r) for name, n in plan["nodes"].items() for r in n["routes"] if "src" not in r]
    assert bare and len(bare) < sum(len(n["routes"]) for n in plan["nodes"].values())
    for name in plan["nodes"]:
        for other, address in six.items():
            if other != name:
                got = metagraph6.sh(name, "ip -6 route get %s" % address).stdout.split()
                assert got[got.index("src") + 1] == six[name], (name, other, got)
    result = proof.prove(plan, render.prefixes(plan), metagraph6.states())
    assert (result["pairs"], result["proven"], result["mismatched"]) == (30, 30, 0), result["summary"]
    assert result["problems"] == [] and result["dead"] == []
