"""What beonet_node does on a node, as pure functions of plan and live state."""

import importlib.util
import io
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, golden, needs_host

from beonet.agent import apply as node
from beonet.agent import files, frr, nodeplan
from beonet.agent.backends import RECORD_PATH
from beonet.agent.netbackends import networkmanager
from beonet.compiler import pipeline
from beonet.outputs import dryrun
from beonet.outputs import plan as render


@pytest.fixture(scope="module")
def mesh():
    """The routed mesh with single-path routes (its 3 segment routes per node)."""
    text = (ROOT / "topologies/routed-mesh.yml").read_text() + "routing: {failover: false}\n"
    return render.plan(pipeline.compile_text(text, "routed-mesh.yml"))


def _live(n, with_routes=True, extra_routes=()):
    links = [{"ifname": i["name"], "flags": ["UP"], "mtu": i["mtu"]} for i in n["interfaces"]]
    addrs = [{"ifname": i["name"], "addr_info": [
        {"family": "inet", "local": a.split("/")[0], "prefixlen": int(a.split("/")[1])}
        for a in i["addresses"]]} for i in n["interfaces"]]
    routes = [_simulated_route(_replace_args(r)) for r in n["routes"]] if with_routes else []
    return links, addrs, routes + list(extra_routes)


def test_in_sync_means_no_action(mesh):
    n = mesh["nodes"]["node-0-0"]
    actions, problems = node.runtime_actions(n, "node-0-0", *_live(n))
    assert (actions, problems) == ([], [])


def test_missing_routes_are_added_with_src_and_proto(mesh):
    n = mesh["nodes"]["node-0-0"]
    actions, _ = node.runtime_actions(n, "node-0-0", *_live(n, with_routes=False))
    assert actions[0] == ["ip", "route", "replace", "10.0.1.0/24", "via", "10.0.128.2",
                          "dev", "eth2", "src", "10.0.0.1", "proto", "250"]
    assert len(actions) == 3


def test_only_beonet_routes_and_addresses_are_removed(mesh):
    n = mesh["nodes"]["node-0-0"]
    stale = {"dst": "10.9.0.0/24", "gateway": "10.0.0.2", "dev": "eth1", "prefsrc": "10.0.0.1",
             "protocol": "250"}
    foreign = {"dst": "192.168.7.0/24", "gateway": "10.0.0.2", "dev": "eth1", "protocol": "static"}
    links, addrs, routes = _live(n, extra_routes=[stale, foreign])
    addrs[0]["addr_info"].append({"family": "inet", "local": "10.7.0.1", "prefixlen": 24})
    addrs[0]["addr_info"].append({"family": "inet", "local": "10.8.0.1", "prefixlen": 24})
    actions, _ = node.runtime_actions(n, "node-0-0", links, addrs, routes,
                                      installed=["10.7.0.1/24 eth1"])
    assert ["ip", "route", "del", "10.9.0.0/24", "via", "10.0.0.2", "dev", "eth1",
            "proto", "250"] in actions
    assert ["ip", "addr", "del", "10.7.0.1/24", "dev", "eth1"] in actions
    assert not any("192.168.7.0/24" in a or "10.8.0.1/24" in a for a in actions)


def test_missing_nic_is_a_problem_and_no_action(mesh):
    n = mesh["nodes"]["node-0-0"]
    links, addrs, routes = _live(n)
    actions, problems = node.runtime_actions(n, "node-0-0", links[:1], addrs, routes)
    assert actions == [] and problems == ["node-0-0: no NIC named eth2 (plan segment d1-0)"]


def test_bond_is_created_and_members_enslaved():
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/bonded-dual-net.yml")))
    n = plan["nodes"]["node01"]
    links = [{"ifname": "eth1", "flags": []}, {"ifname": "eth2", "flags": []}]
    actions, _ = node.runtime_actions(n, "node01", links, [], [])
    assert actions[:5] == [["ip", "link", "add", "bond0", "address", "02:be:0a:00:00:01", "type",
                            "bond", "mode", "balance-rr", "miimon", "100"],
                           ["ip", "link", "set", "eth1", "down"],
                           ["ip", "link", "set", "eth1", "master", "bond0"],
                           ["ip", "link", "set", "eth2", "down"],
                           ["ip", "link", "set", "eth2", "master", "bond0"]]


def test_a_bond_keeps_its_planned_mac():
    """A bond created earlier with another MAC (by an older plan, or by the kernel)
    gets the planned one, so the live bond and the one networkd makes at boot agree."""
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/bonded-dual-net.yml")))
    n = plan["nodes"]["node02"]
    links = [{"ifname": "bond0", "flags": ["UP"], "address": "52:54:00:12:34:56"},
             {"ifname": "eth1", "flags": ["UP"], "master": "bond0"},
             {"ifname": "eth2", "flags": ["UP"], "master": "bond0"}]
    actions, _ = node.runtime_actions(n, "node02", links, [], [])
    assert actions[0] == ["ip", "link", "set", "dev", "bond0", "address", "02:be:0a:00:00:02"]
    links[0]["address"] = "02:BE:0A:00:00:02"
    actions, _ = node.runtime_actions(n, "node02", links, [], [])
    assert not any("address" in a for a in actions)


@pytest.mark.parametrize("backend", ["networkd", "networkmanager"])
def test_persistent_files_of_a_bonded_node(backend):
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/bonded-dual-net.yml")))
    files = node.persistent_files(plan["nodes"]["node01"], ["10.0.0.0/24"], backend)
    text = "".join("==> %s <==\n%s" % (p, files[p]) for p in sorted(files))
    golden(ROOT / "tests/golden" / ("bonded-dual-net.node01.%s" % backend), text)


def test_forwarding_node_gets_the_cluster_only_ruleset(mesh):
    files = node.persistent_files(mesh["nodes"]["node-0-0"], ["10.0.0.0/24", "10.0.1.0/24"],
                                  "networkd")
    assert "net.ipv4.ip_forward = 1" in files[node.SYSCTL_PATH]
    assert "ip saddr @cluster ip daddr @cluster accept" in files[node.NFT_PATH]
    assert "policy drop" in files[node.NFT_PATH]


def test_planned_routes_restored_by_networkmanager_as_static_are_in_place(mesh):
    """NetworkManager (1.42) cannot set protocol 250: the planned routes it
    restores at boot are 'static'. Equal to the plan, they need no action; a
    static route that is not planned is never touched."""
    n = mesh["nodes"]["node-0-0"]
    links, addrs, routes = _live(n)
    for r in routes:
        r["protocol"] = "static"
    foreign = {"dst": "10.9.0.0/24", "gateway": "10.0.0.2", "dev": "eth1",
               "prefsrc": "10.0.0.1", "protocol": "static"}
    actions, problems = node.runtime_actions(n, "node-0-0", links, addrs, routes + [foreign])
    assert (actions, problems) == ([], [])
    routes[0]["gateway"] = "10.0.128.9"        # a static route that differs from the plan
    actions, _ = node.runtime_actions(n, "node-0-0", links, addrs, routes)
    assert [a[:4] for a in actions] == [["ip", "route", "replace", n["routes"][0]["to"]]]


def test_networkmanager_bond_ports_use_master_and_slave_type():
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/bonded-dual-net-4.yml")))
    files = networkmanager.nm_files(plan["nodes"]["node01"])
    port = files["%s/beonet-eth1.nmconnection" % networkmanager.NM]
    assert "master=bond0\nslave-type=bond\n" in port and "controller=" not in port


def _bond_plan(text, tmp_path):
    src = tmp_path / "t.yml"
    src.write_text(text)
    return render.plan(pipeline.compile_file(str(src)))


def test_balance_rr_bonds_turn_tso_off_and_other_modes_leave_it(tmp_path):
    """balance-rr stripes what the bond is handed: frames with TSO off, TSO
    super-packets of varying size with it on (reordering). Other modes leave it."""
    rr = _bond_plan("name: t\nfamily: bonded\nbonded: {nodes: 2}\n", tmp_path)["nodes"]["node01"]
    ab = _bond_plan("name: t\nfamily: bonded\nbonded: {nodes: 2, mode: active-backup}\n",
                    tmp_path)["nodes"]["node01"]
    kept = _bond_plan("name: t\nfamily: bonded\nbonded: {nodes: 2, tso: true}\n",
                      tmp_path)["nodes"]["node01"]
    assert [i.get("tso") for i in rr["interfaces"]] == [None, None, False]
    assert ab["interfaces"][-1]["tso"] is True and kept["interfaces"][-1]["tso"] is True
    assert "ethtool -K bond0 tso off\n" in dryrun.ip_route_text(rr, "node01")
    for n in (ab, kept):
        assert "ethtool" not in dryrun.ip_route_text(n, "node01")
        for backend in ("networkd", "networkmanager"):
            files = node.persistent_files(n, [], backend)
            assert not any(p.endswith(".link") for p in files)
            assert not any("[ethtool]" in t for t in files.values())
        assert node.offload_actions(n, {"bond0": True}) == []


def test_tso_off_is_applied_only_when_the_bond_has_it_on():
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/bonded-dual-net.yml")))
    n = plan["nodes"]["node01"]
    off = [["ethtool", "-K", "bond0", "tso", "off"]]
    assert node.offload_actions(n, {"bond0": None}) == off      # bond still to be made
    assert node.offload_actions(n, {"bond0": True}) == off
    assert node.offload_actions(n, {"bond0": False}) == []


in_a_namespace = needs_host("the ethtool ioctl and /proc/sys on a kernel (a fresh network namespace)",
                            "unshare", netns=True)


@in_a_namespace
def test_tso_is_read_and_set_through_the_ethtool_ioctl():
    """get_tso/set_tso on the loopback of a fresh network namespace (root, as in CI)."""
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from beonet.agent import apply as node\n"
            "a = node.get_tso('lo'); node.set_tso('lo', False); b = node.get_tso('lo')\n"
            "node.set_tso('lo', True); c = node.get_tso('lo')\n"
            "try:\n    node.get_tso('nosuch0'); d = 'read'\n"
            "except OSError as e:\n    d = e.errno\n"
            "print(a, b, c, d)\n" % str(ROOT / "module_utils"))
    out = subprocess.run(["unshare", "-n", sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["True", "False", "True", "19"]        # 19: ENODEV


# The dry run is what gets applied -------------------------------------------

TOPOLOGIES = sorted(p.stem for p in (ROOT / "topologies").glob("*.yml"))


def _blank_node(n):
    """What the module reads on a node as it comes: the planned Ethernet NICs,
    down, MTU 1500; no address, route, bond, forwarding or beonet ruleset."""
    links = [{"ifname": "lo", "flags": ["LOOPBACK", "UP"], "mtu": 65536}]
    links += [{"ifname": i["name"], "flags": ["BROADCAST", "MULTICAST"], "mtu": 1500,
               "address": "52:54:00:00:00:%02x" % k}
              for k, i in enumerate(n["interfaces"]) if i["kind"] == "ethernet"]
    return {"links": links, "addrs": [{"ifname": "lo", "addr_info": [
                {"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]}],
            "routes": [], "installed": [], "forwarding": "0\n", "nft_table": None,
            "tso": {i["name"]: None for i in n["interfaces"] if i["kind"] == "bond"},
            "sysctls": node.blank_live_state(n)["sysctls"]}


def _link(live, name):
    return next(link for link in live["links"] if link["ifname"] == name)


def _simulate_ip(live, cmd):
    """What one `ip` command of the agent does to the live state (`ip -6` and `nodad` alike)."""
    cmd = [w for w in cmd if w not in ("-6", "nodad")]
    what, verb, args = cmd[1], cmd[2], cmd[3:]
    if cmd[1:4] == ["link", "add", args[0]]:
        opts = dict(zip(args[1::2], args[2::2]))
        live["links"].append({"ifname": args[0], "flags": [], "mtu": 1500,
                              "address": opts.get("address", "fe:00:00:00:00:01")})
        live["tso"][args[0]] = True
    elif what == "link":
        link = _link(live, args[1] if args[0] == "dev" else args[0])
        key, value = args[-2], args[-1]
        if value in ("up", "down"):
            link["flags"] = [f for f in link["flags"] if f != "UP"] + (["UP"] if value == "up" else [])
        else:
            link[key] = int(value) if key == "mtu" else value
    elif what == "addr":
        entry = next((e for e in live["addrs"] if e["ifname"] == args[2]), None)
        if entry is None:
            entry = {"ifname": args[2], "addr_info": []}
            live["addrs"].append(entry)
        local, plen = args[0].split("/")
        info = {"family": "inet6" if ":" in local else "inet", "local": local, "prefixlen": int(plen)}
        entry["addr_info"] = [i for i in entry["addr_info"] if i != info] + ([info] if verb == "add" else [])
    else:
        live["routes"] = [r for r in live["routes"] if r["dst"] != _host(args[0])]
        if verb == "replace":
            live["routes"].append(_simulated_route(args))


def _host(dst):
    """A destination as `ip -j route` prints it: a host without its /32 or /128."""
    return dst.replace("/128", "") if ":" in dst else dst.replace("/32", "")


def _simulated_route(args):
    """`ip -j route` of what `ip route replace TO ...` adds: one next hop, or a
    multipath route's `nexthops` (`... nexthop via A dev X nexthop via B dev Y`)."""
    head, _sep, rest = " ".join(args).partition(" nexthop ")
    words = head.split()
    opts = dict(zip(words[1::2], words[2::2]))
    route = {"dst": _host(words[0]), "prefsrc": opts["src"], "protocol": "beonet"}
    if not rest:
        return dict(route, gateway=opts["via"], dev=opts["dev"])
    hops = [dict(zip(h.split()[0::2], h.split()[1::2])) for h in rest.split(" nexthop ")]
    return dict(route, nexthops=[{"gateway": h["via"], "dev": h["dev"], "weight": 1} for h in hops])


def _replace_args(r):
    """The arguments `ip route replace` takes for plan route r."""
    if "nexthops" not in r:
        return [r["to"], "via", r["via"], "dev", r["dev"], "src", r["src"]]
    return [r["to"], "src", r["src"]] + [w for h in r["nexthops"] for w in ("nexthop", "via", h["via"],
                                                                                "dev", h["dev"])]


def _route_key(dst, hops, src):
    return (dst if "/" in dst else dst + ("/128" if ":" in dst else "/32"), tuple(sorted(hops)), src)


def _simulate(live, actions, prefixes, n=None):
    """The live state after the agent's commands (a model of ip, sysctl, nft, ethtool);
    n: the plan, whose own IPv6 prefixes the ruleset also holds."""
    for cmd in actions:
        if cmd[0] == "ip":
            _simulate_ip(live, cmd)
        elif cmd[0] == "sysctl":
            key, value = cmd[-1].split("=")
            if key == "net.ipv4.ip_forward":
                live["forwarding"] = value + "\n"
            else:
                live["sysctls"][key] = value
        elif cmd[:2] == ["nft", "-f"]:
            live["nft_table"] = node.forward_ruleset(node.cluster_prefixes(n, prefixes) if n else prefixes)[1]
        elif cmd[:2] == ["nft", "delete"]:
            live["nft_table"] = None
        elif cmd in (frr.service("start", True), frr.service("start", False)):
            live["frr_running"] = True
        else:
            assert cmd[:2] == ["ethtool", "-K"] and cmd[3:] == ["tso", "off"], cmd
            live["tso"][cmd[2]] = False
    return live


def _assert_follows_plan(live, n):
    """The simulated node has the plan's links, bonds, MTUs, addresses, routes and forwarding."""
    for i in n["interfaces"]:
        link = _link(live, i["name"])
        assert "UP" in link["flags"] and link.get("master") == i.get("bond"), link
        assert link["mtu"] == i["mtu"] or i.get("bond"), link
        have = {"%s/%d" % (a["local"], a["prefixlen"]) for e in live["addrs"] if e["ifname"] == i["name"]
                for a in e["addr_info"]}
        assert have == set(i["addresses"]), i["name"]
        if i["kind"] == "bond":
            assert link["address"] == i["mac"] and live["tso"][i["name"]] == (i["tso"] is not False)
    routes = [_route_key(r["dst"], [(h["gateway"], h["dev"]) for h in r.get("nexthops", [r])],
                         r["prefsrc"]) for r in live["routes"]]
    planned = [_route_key(r["to"], [(h["via"], h["dev"]) for h in r.get("nexthops", [r])], r["src"])
               for r in n["routes"]]
    assert sorted(routes) == sorted(planned)
    assert all(live["sysctls"][k] == v for k, v in node.failover_sysctls(n))
    assert live["forwarding"] == ("1\n" if n["forwarding"] else "0\n")
    assert (live["nft_table"] is not None) == n["forwarding"]


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_the_dry_run_is_what_the_agent_runs_on_a_blank_node(name):
    """Per node: the dry-run lines are the agent's commands for a blank node, those
    commands bring a (simulated) blank node to the plan, and then nothing is left to do."""
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies" / ("%s.yml" % name))))
    prefixes = render.prefixes(plan)
    for host, n in plan["nodes"].items():
        printed = dryrun.ip_route_text(n, host).splitlines()
        assert printed[0].startswith("# %s  address" % host)
        assert printed[1:] == [" ".join(a) for a in node.actions_on_blank_node(n, host)]
        live = _blank_node(n)
        actions, problems = node.node_actions(n, host, prefixes, live)
        assert problems == [] and [" ".join(a) for a in actions] == printed[1:]
        live = _simulate(live, actions, prefixes)
        _assert_follows_plan(live, n)
        live["installed"] = node.installed_addresses(n).splitlines()
        assert node.node_actions(n, host, prefixes, live) == ([], []), host


def test_the_dry_run_shows_links_mtu_bonds_forwarding_ruleset_and_offloads():
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/custom-example.yml")))
    head = dryrun.ip_route_text(plan["nodes"]["head"], "head")
    assert head.splitlines()[1:] == [
        "nft -f /etc/nftables.d/beonet.nft",
        "sysctl -w net.ipv4.ip_forward=1",
        "ip link add bond0 address 02:be:0a:14:00:01 type bond mode balance-rr miimon 100",
        "ip link set eth1 down", "ip link set eth1 master bond0",
        "ip link set eth2 down", "ip link set eth2 master bond0",
        "ip link set dev eth1 up", "ip link set dev eth2 up", "ip link set dev bond0 up",
        "ip link set dev eth3 up",
        "ip addr add 10.20.0.1/28 dev bond0", "ip addr add 10.21.0.2/31 dev eth3",
        "ip route replace 10.20.1.0/27 via 10.21.0.3 dev eth3 src 10.20.0.1 proto 250",
        "ip route replace 10.20.1.21/32 src 10.20.0.1 proto 250 nexthop via 10.21.0.3 dev eth3 "
        "nexthop via 10.20.0.13 dev bond0",
        "sysctl -w net.ipv4.fib_multipath_use_neigh=1",
        *["sysctl -w net.ipv4.%s.%s.%s" % (kind, nic, value) for nic in ("bond0", "eth3")
          for kind, value in (("neigh", "base_reachable_time_ms=5000"), ("neigh", "delay_first_probe_time=1"),
                              ("neigh", "retrans_time_ms=500"), ("conf", "ignore_routes_with_linkdown=1"))],
        "ethtool -K bond0 tso off"]
    jumbo = [i for i in plan["nodes"]["b1"]["interfaces"] if i.get("mtu") == 9000]
    assert jumbo and "ip link set dev %s mtu 9000\n" % jumbo[0]["name"] \
        in dryrun.ip_route_text(plan["nodes"]["b1"], "b1")
    leaf = dryrun.ip_route_text(plan["nodes"]["a1"], "a1")
    assert "ip_forward" not in leaf and "nft" not in leaf     # a blank node forwards nothing


def test_forwarding_and_ruleset_change_only_where_they_differ(mesh):
    n = mesh["nodes"]["node-0-0"]
    digest, ruleset = node.forward_ruleset(["10.0.0.0/24"])
    assert node.forwarding_actions(n, ["10.0.0.0/24"], "1\n", ruleset) == []
    assert node.forwarding_actions(n, ["10.0.0.0/24"], "0\n", None) == [
        ["nft", "-f", node.NFT_PATH], ["sysctl", "-w", "net.ipv4.ip_forward=1"]]  # filter first
    other = node.forward_ruleset(["10.9.0.0/24"])[1]          # another topology's ruleset
    assert node.forwarding_actions(n, ["10.0.0.0/24"], "1", other) == [["nft", "-f", node.NFT_PATH]]
    leaf = dict(n, forwarding=False)
    assert node.forwarding_actions(leaf, [], "1", ruleset) == [
        ["sysctl", "-w", "net.ipv4.ip_forward=0"], ["nft", "delete", "table", "inet", "beonet"]]
    assert node.forwarding_actions(leaf, [], "0", None) == []


# The beonet_node module, in process with a stand-in for AnsibleModule -------

class _Exit(Exception):
    def __init__(self, failed, result):
        super().__init__(result.get("msg", ""))
        self.failed, self.result = failed, result


class _FakeModule:
    """Answers the module's reads with a blank node's state; any other command is recorded."""

    def __init__(self, lib, params, live, check_mode=True):
        self.params = {k: v.get("default") for k, v in lib.ARGUMENT_SPEC.items()}
        self.params.update(params)
        self.check_mode, self._diff, self.live, self.commands = check_mode, True, live, []

    def run_command(self, cmd, **_):
        self.commands.append(list(cmd))
        answers = {("ip", "-j", "link"): self.live["links"], ("ip", "-j", "addr"): self.live["addrs"],
                   ("ip", "-j", "route"): [r for r in self.live["routes"] if ":" not in r["dst"]],
                   ("ip", "-j", "-6"): [r for r in self.live["routes"] if ":" in r["dst"]]}
        if tuple(cmd[:3]) in answers:
            return 0, json.dumps(answers[tuple(cmd[:3])]), ""
        if cmd[:2] == ["nft", "list"]:
            return (1, "", "No such file or directory") if self.live["nft_table"] is None \
                else (0, self.live["nft_table"], "")
        return 0, "", ""

    from_json = staticmethod(json.loads)

    def get_bin_path(self, _name):
        return None

    def fail_json(self, **result):
        raise _Exit(True, result)

    def exit_json(self, **result):
        raise _Exit(False, result)


@pytest.fixture()
def beonet_node(monkeypatch, tmp_path):
    """library/beonet_node.py, importing ansible.module_utils.beonet from this tree, on
    a blank node in a folder (never the controller's own files): the network managers
    are probed and /etc/os-release read under NODE_ROOT, an empty folder, and so are the
    files the module reads; the kernel has the bonding driver; the checkpoints live in
    the folder too."""
    import ansible.module_utils
    monkeypatch.setattr(ansible.module_utils, "__path__",
                        [*ansible.module_utils.__path__, str(ROOT / "module_utils")])
    spec = importlib.util.spec_from_file_location("beonet_node_module", ROOT / "library/beonet_node.py")
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    root = tmp_path / "node"
    root.mkdir()
    monkeypatch.setattr(lib, "NODE_ROOT", str(root))
    monkeypatch.setattr(lib, "read_text", lambda path: files.read_text(str(root / path.lstrip("/"))))
    monkeypatch.setattr(lib, "_bonding_driver", lambda module: True)
    boot = tmp_path / "boot_id"
    boot.write_text("boot-1\n")
    monkeypatch.setattr(lib.checkpoint, "BOOT_ID", str(boot))
    monkeypatch.setattr(lib.checkpoint, "FOLDER", str(tmp_path / "checkpoint"))
    return lib


def _run_module(lib, monkeypatch, params, live, check_mode=True):
    fake = _FakeModule(lib, params, live, check_mode)
    monkeypatch.setattr(lib, "AnsibleModule", lambda **_: fake)
    monkeypatch.setattr(lib, "read_text", lambda path: _proc(lib, live, path))
    monkeypatch.setattr(lib.beonet, "live_tso", lambda n: dict(live["tso"]))
    # sysctls go to /proc on a node: here into the simulated node, never the host's
    monkeypatch.setattr(lib.beonet, "_write_sysctl",
                        lambda text: fake.commands.append(["sysctl", "-w", text]))
    with pytest.raises(_Exit) as exc:
        lib.main()
    return exc.value, fake.commands


def _proc(lib, live, path):
    """What the module reads from /proc/sys on the simulated node: forwarding, and
    the failover keys (the live value, else the kernel's default); the persistent files
    the simulated node has (live["files"]); other files: none."""
    if path in live.get("files", {}):
        return live["files"][path]
    if path == lib.beonet.FORWARD:
        return live["forwarding"]
    for key, value in live.get("sysctls", {}).items():
        if node.sysctl_path(key) == path:
            return value
    return None


def _module_params(plan, host, plan_format=nodeplan.PLAN_FORMAT):
    return {"node": host, "plan": plan["nodes"][host], "plan_format": plan_format,
            "prefixes": render.prefixes(plan), "backend": "networkd"}


@pytest.mark.parametrize("topology,host", [("routed-mesh", "node-0-0"), ("bonded-dual-net", "node01"),
                                           ("custom-example", "b1"), ("single-net", "node01")])
def test_the_module_reports_on_a_blank_node_what_the_dry_run_prints(beonet_node, monkeypatch,
                                                                     topology, host):
    """Check mode on a blank node: the module's actions are the dry run's lines, and it
    only reads (ip -j, nft list)."""
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies" / ("%s.yml" % topology))))
    n = plan["nodes"][host]
    out, commands = _run_module(beonet_node, monkeypatch, _module_params(plan, host), _blank_node(n))
    assert not out.failed, out.result
    assert out.result["actions"] == dryrun.ip_route_text(n, host).splitlines()[1:]
    assert out.result["changed"] and node.SYSCTL_PATH in out.result["files"]
    assert all(c[:2] in (["ip", "-j"], ["nft", "list"]) for c in commands), commands


def test_the_module_runs_its_actions_in_order_after_the_files(beonet_node, monkeypatch):
    """Out of check mode the commands run in the reported order, after the files
    (recorded here, not written). A node that neither forwards nor bonds: every
    command goes through run_command, none to /proc or the ethtool ioctl."""
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/single-net.yml")))
    n = plan["nodes"]["node01"]
    live = _blank_node(n)
    written = []
    monkeypatch.setattr(beonet_node, "atomic_write", lambda path, text, mode: written.append(path))
    out, commands = _run_module(beonet_node, monkeypatch, _module_params(plan, "node01"), live,
                                check_mode=False)
    ran = [c for c in commands if c[:2] not in (["ip", "-j"], ["nft", "list"])]
    assert not out.failed and [" ".join(c) for c in ran] == out.result["actions"]
    assert written == sorted(node.persistent_files(n, [], "networkd")) + [RECORD_PATH, node.STATE_PATH]


@pytest.mark.parametrize("plan_format,word,known", [(4, "newer", "3"), (1, "older", "2 to 3")])
def test_the_module_refuses_a_plan_format_it_does_not_understand(beonet_node, monkeypatch,
                                                                   plan_format, word, known):
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/single-net.yml")))
    params = _module_params(plan, "node01", plan_format)
    out, commands = _run_module(beonet_node, monkeypatch, params, _blank_node(plan["nodes"]["node01"]))
    assert out.failed and not out.result["changed"] and commands == []
    assert out.result["msg"].startswith("node01: plan_format %d is %s than this beonet_node "
                                        "understands (%s)" % (plan_format, word, known))


def test_plan_format_messages_and_the_format_the_compiler_writes():
    assert nodeplan.PLAN_FORMAT == render.PLAN_FORMAT
    assert nodeplan.plan_format_problem("node01", render.PLAN_FORMAT) is None
    assert nodeplan.plan_format_problem("node01", 2) is None      # format 3 without FRR
    assert nodeplan.plan_format_problem("node01", 4) == (
        "node01: plan_format 4 is newer than this beonet_node understands (3); update the collection")
    assert nodeplan.plan_format_problem("node01", 1) == (
        "node01: plan_format 1 is older than this beonet_node understands (2 to 3); "
        "compile the plan again with this collection")


def test_the_module_refuses_the_management_interface_before_reading_the_node(beonet_node,
                                                                             monkeypatch):
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/single-net.yml")))
    params = dict(_module_params(plan, "node01"), management_interface="eth1",
                  management_address="10.0.0.1")
    out, commands = _run_module(beonet_node, monkeypatch, params, _blank_node(plan["nodes"]["node01"]))
    assert out.failed and out.result["problems"] == [
        "node01: the plan would change eth1, the interface Ansible connects through",
        "node01: the plan would add 10.0.0.1, the address Ansible connects to"]
    assert all(c[:2] in (["ip", "-j"], ["nft", "list"]) for c in commands)


def test_actions_stop_at_the_first_failure_with_a_clear_message():
    ran = []

    def run(cmd):
        ran.append(cmd)
        return (2, "RTNETLINK answers: File exists\n") if cmd[1] == "addr" else (0, "")

    actions = [["ip", "link", "set", "dev", "eth1", "up"],
               ["ip", "addr", "add", "10.0.0.1/24", "dev", "eth1"],
               ["ip", "route", "replace", "10.0.1.0/24", "via", "10.0.0.2", "dev", "eth1"]]
    assert node.apply_actions("node01", actions, run) == (
        "node01: ip addr add 10.0.0.1/24 dev eth1 failed: RTNETLINK answers: File exists")
    assert ran == actions[:2]
    assert node.apply_actions("node01", actions[:1], lambda cmd: (1, "")) == (
        "node01: ip link set dev eth1 up failed: exit status 1")
    bond = ["ip", "link", "add", "bond0", "type", "bond", "mode", "balance-rr", "miimon", "100"]
    assert node.apply_actions("node01", [bond], lambda cmd: (2, "Error: Unknown device type.")) == (
        "node01: this kernel has no bonding driver (Error: Unknown device type.); bonds need a VM "
        "or bare metal")


@in_a_namespace
def test_forwarding_and_offload_are_set_without_sysctl_or_ethtool():
    """run_action writes the sysctl to /proc and sets TSO with the ioctl (root, in a
    fresh network namespace: the host's network is not touched)."""
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from beonet.agent import apply as node\n"
            "def run(cmd):\n    raise AssertionError(cmd)\n"
            "err = node.apply_actions('n', [['sysctl', '-w', 'net.ipv4.ip_forward=1'],\n"
            "                               ['ethtool', '-K', 'lo', 'tso', 'off']], run)\n"
            "fwd = open('/proc/sys/net/ipv4/ip_forward').read().strip()\n"
            "bad = node.apply_actions('n', [['ethtool', '-K', 'nosuch0', 'tso', 'off']], run)\n"
            "print(err, fwd, node.get_tso('lo'), bad, sep='|')\n" % str(ROOT / "module_utils"))
    out = subprocess.run(["unshare", "-n", sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout.strip().split("|")
    assert out == ["None", "1", "False", "n: ethtool -K nosuch0 tso off failed: [Errno 19] No such device"]


def test_refusals_name_the_management_interface_address_and_missing_bonding():
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/bonded-dual-net.yml")))
    n = plan["nodes"]["node01"]
    assert node.refusals(n, "node01", "none", "", bonding=True) == []
    assert node.refusals(n, "node01", "eth2", "10.0.0.1", bonding=False) == [
        "node01: the plan would change eth2, the interface Ansible connects through",
        "node01: the plan would add 10.0.0.1, the address Ansible connects to",
        "node01: this kernel has no bonding driver (no /sys/class/net/bonding_masters, no bonding "
        "module); the plan's bonds need a VM or bare metal"]


# atomic_write ---------------------------------------------------------------

def test_atomic_write_creates_the_folder_and_sets_the_mode(tmp_path):
    path = tmp_path / "a" / "b" / "beonet-eth1.nmconnection"
    files.atomic_write(str(path), "one\n", 0o600)
    assert path.read_text() == "one\n" and path.stat().st_mode & 0o777 == 0o600
    assert os.listdir(path.parent) == [path.name]


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "plan.json"
    files.atomic_write(str(path), "new\n")
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()
    path.chmod(0o640)
    files.atomic_write(str(path), "newer\n")
    assert path.read_text() == "newer\n" and path.stat().st_mode & 0o777 == 0o640


def test_atomic_write_leaves_the_file_and_no_temporary_on_error(tmp_path, monkeypatch):
    path = tmp_path / "addresses"
    path.write_text("old\n")

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        files.atomic_write(str(path), "new\n", 0o644)
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["addresses"]


def test_atomic_write_of_pieces_copies_files_from_where_they_stand(tmp_path):
    part = tmp_path / "nodes.json"
    part.write_bytes(b'{"node01":{}}')
    path = tmp_path / "plan.json"
    with open(part, "rb") as fh:
        fh.seek(1)
        files.atomic_write(str(path), ['{"nodes":{', fh, b"}", "\u00e9\n"], durable=False)
    assert path.read_text(encoding="utf-8") == '{"nodes":{"node01":{}}}\u00e9\n'
    assert sorted(os.listdir(tmp_path)) == ["nodes.json", "plan.json"]


def test_atomic_write_of_pieces_leaves_the_file_when_a_piece_fails(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text("old\n")

    class Broken(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, buffer):
            raise OSError(5, "Input/output error")

    with pytest.raises(OSError, match="Input/output"):
        files.atomic_write(str(path), ["new", io.BufferedReader(Broken())])
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["plan.json"]


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


# The module as Ansible runs it ----------------------------------------------

def _ansible(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), args[0]), *args[1:]],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)


def test_the_module_documentation_parses():
    res = _ansible("ansible-doc", "-M", "library", "beonet_node")
    assert res.returncode == 0, res.stderr
    assert "plan_format" in res.stdout


def test_ansible_refuses_a_newer_plan_format_before_any_change():
    """Through Ansible (the agent packaged with the module), in check mode, with a NIC
    this machine does not have: the format is refused first, nothing is read or changed."""
    plan = {"address": "10.0.0.1", "forwarding": False, "routes": [], "interfaces": [
        {"name": "beonet-nosuch0", "kind": "ethernet", "segment": "net0", "addresses": ["10.0.0.1/24"]}]}
    args = json.dumps({"node": "node01", "plan": plan, "plan_format": 4, "prefixes": ["10.0.0.0/24"]})
    res = _ansible("ansible", "localhost", "-i", "localhost,", "-c", "local", "--check",
                   "-e", "ansible_python_interpreter=%s" % sys.executable, "-m", "beonet_node", "-a", args)
    assert res.returncode != 0
    assert ("node01: plan_format 4 is newer than this beonet_node understands (3); "
            "update the collection") in res.stdout, res.stdout + res.stderr


def test_atomic_write_writes_into_a_device_instead_of_replacing_it():
    import stat
    files.atomic_write("/dev/null", "plan\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not [n for n in os.listdir("/dev") if n.startswith(".null.")]


def test_the_module_gives_beonets_profile_to_a_nic_networkmanager_holds_with_dhcp(
        beonet_node, monkeypatch):
    """NetworkManager backend, a DHCP profile active on a cluster NIC: the module
    activates beonet's profile there (reported in check mode; run after the files
    and the reload otherwise); a NIC already on beonet's profile is left alone."""
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/single-net.yml")))
    n = plan["nodes"]["node01"]
    nic = n["interfaces"][0]["name"]
    params = dict(_module_params(plan, "node01"), backend="networkmanager")
    monkeypatch.setattr(_FakeModule, "get_bin_path", lambda self, name: "/usr/bin/" + name)
    monkeypatch.setattr(beonet_node, "atomic_write", lambda path, text, mode: None)   # nothing on this host
    devices = {"held": "%s:lab-dhcp\nens3:mgmt\n" % nic, "settled": "%s:beonet-%s\n" % (nic, nic)}
    keyfile = "%s/beonet-%s.nmconnection" % (networkmanager.NM, nic)
    written = networkmanager.nm_files(n)[keyfile]
    runs = {}
    for case, same in (("held", False), ("settled", True), ("settled", False)):
        text = devices[case]

        def answer(self, cmd, _text=text, _orig=_FakeModule.run_command, **kw):
            if cmd[1:] == ["-t", "-f", "DEVICE,CONNECTION", "device"]:
                return 0, _text, ""
            return _orig(self, cmd, **kw)
        monkeypatch.setattr(_FakeModule, "run_command", answer)
        # the keyfile on the node: the one beonet writes, or an older one
        live = dict(_blank_node(n), files={keyfile: written if same else written + "# older\n"})
        monkeypatch.setattr(os, "stat", lambda path, *a, _real=os.stat, **kw: os.stat_result(
            (0o100600,) + (0,) * 9) if path == keyfile else _real(path, *a, **kw))
        out, commands = _run_module(beonet_node, monkeypatch, params, live, check_mode=False)
        assert not out.failed, out.result
        runs[case, same] = [" ".join(c) for c in commands]
    up = "/usr/bin/nmcli connection up id beonet-%s" % nic
    assert up in runs["held", False] and runs["held", False].index(up) > runs["held", False].index(
        "/usr/bin/nmcli connection reload")
    # beonet's profile active: left alone, unless its keyfile was just rewritten
    assert up not in runs["settled", True]
    assert up in runs["settled", False]


def test_a_bond_among_its_own_members_and_a_reserved_name_are_refused():
    from beonet.agent.nodeplan import plan_problems

    plan = {"address": "10.0.0.1", "forwarding": False, "routes": [],
            "interfaces": [{"name": "eth1", "kind": "ethernet", "addresses": []},
                           {"name": "bond0", "kind": "bond", "members": ["eth1", "bond0"],
                            "addresses": ["10.0.0.1/24"]},
                           {"name": "lo", "kind": "ethernet", "addresses": []}]}
    found = plan_problems("a", plan)
    assert ("a: plan.interfaces[1].members[1]: 'bond0' is the bond itself: a bond cannot be its own "
            "member") in found
    assert any(p.startswith("a: plan.interfaces[2].name: 'lo' is a name the kernel keeps") for p in found)
