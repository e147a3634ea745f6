"""The labs' bring-up and teardown command sequences, without Docker or QEMU:
the host is a fake that records every command and keeps the resources they
would create. `lab down` must work from the saved state alone (topology file
edited or deleted), remove exactly what `lab up` created, and do nothing twice."""

import hashlib
import json
import os
import shlex
import shutil
import subprocess

import pytest
import yaml
from conftest import ROOT, needs_host

from beonet import cli
from beonet.compiler import pipeline
from beonet.labs import base, faults, hostlimits
from beonet.labs import docker as dlab
from beonet.labs import vm as vmlab
from beonet.labs.base import LabError
from beonet.outputs import plan as render


class FakeDockerHost:
    """Containers, networks, host links and DOCKER-USER rules that the lab's
    commands would create, and the log of those commands."""

    def __init__(self):
        self.log = []
        self.containers = {}      # name -> {"label": lab, "networks": [net, ...]}
        self.networks = {}        # name -> lab label
        self.subnets = {}         # name -> subnet
        self.links = set()
        self.rules = set()

    @staticmethod
    def _mac(cont, net):
        digest = hashlib.sha1(("%s/%s" % (cont, net)).encode()).digest()
        return "02:42:" + ":".join("%02x" % x for x in digest[:4])

    def run(self, cmd, check=True):
        self.log.append(cmd)
        if cmd[:2] == ["docker", "ps"]:
            lab = cmd[-1].split("=", 2)[2]
            return "\n".join(n for n, c in self.containers.items() if c["label"] == lab)
        if cmd[:3] == ["docker", "network", "ls"]:
            want = cmd[-1].split("=", 2)[2] if cmd[-1].count("=") == 2 else None
            return "\n".join(n for n, lab in self.networks.items() if want in (None, lab))
        if cmd[:3] == ["docker", "network", "inspect"]:
            return json.dumps([{"Name": n, "Labels": {dlab.LABEL: lab}, "IPAM": {"Config": (
                [{"Subnet": self.subnets[n]}] if n in self.subnets else [])}}
                               for n, lab in self.networks.items() if n in cmd[3:]])
        if cmd[:3] == ["docker", "network", "create"]:
            self.networks[cmd[-1]] = cmd[cmd.index("--label") + 1].split("=", 1)[1]
            self.subnets[cmd[-1]] = cmd[cmd.index("--subnet") + 1]
        elif cmd[:2] == ["docker", "run"]:
            first = cmd[cmd.index("--network") + 1]
            self.containers[cmd[cmd.index("--name") + 1]] = {
                "label": cmd[cmd.index("--label") + 1].split("=", 1)[1],
                "networks": [] if first == "none" else [first]}
        elif cmd[:3] == ["docker", "network", "connect"]:
            self.containers[cmd[4]]["networks"].append(cmd[3])
        elif cmd[:2] == ["docker", "inspect"] and cmd[2] != "-f":
            nets = self.containers[cmd[2]]["networks"]
            return json.dumps([{"State": {"Pid": list(self.containers).index(cmd[2]) + 100},
                                "NetworkSettings": {"Networks": {
                                    n: {"MacAddress": self._mac(cmd[2], n)} for n in nets}}}])
        elif cmd[:2] == ["docker", "exec"] and cmd[3:] == ["ip", "-j", "link"]:
            cont = self.containers[cmd[2]]
            return json.dumps([{"ifname": "eth%d" % i, "address": self._mac(cmd[2], n)}
                               for i, n in enumerate(cont["networks"])] + cont.get("spares", []))
        elif cmd[:3] == ["docker", "rm", "-f"]:
            self.links -= set(self.containers.pop(cmd[3]).get("host_ends", []))  # veths go with the netns
        elif cmd == ["ip", "-j", "link"]:
            return json.dumps([{"ifindex": 77, "ifname": "veth77"}])
        elif cmd[:3] == ["docker", "inspect", "-f"]:
            return "false" if self.containers[cmd[4]].get("stopped") else "true"
        elif cmd[:2] == ["docker", "kill"]:
            self.containers[cmd[2]]["stopped"] = True
        elif cmd[:2] == ["docker", "start"]:
            self.containers[cmd[2]]["stopped"] = False
        elif cmd[:2] == ["docker", "exec"] and cmd[3:7] == ["ip", "-j", "link", "show"]:
            return json.dumps([{"ifname": cmd[-1], "link_index": 77}])
        elif cmd[:3] == ["ip", "link", "add"] and "netns" in cmd:       # a spare NIC
            self.links.add(cmd[3])
            cont = list(self.containers)[int(cmd[-1]) - 100]
            self.containers[cont].setdefault("host_ends", []).append(cmd[3])
            self.containers[cont].setdefault("spares", []).append(
                {"ifname": cmd[cmd.index("name") + 1], "address": cmd[cmd.index("address") + 1]})
        elif cmd[:3] == ["ip", "link", "add"]:
            self.links.add(cmd[3])
            if "peer" in cmd:
                self.links.add(cmd[-1])
        elif cmd[:3] == ["ip", "link", "del"]:
            self.links.discard(cmd[3])
            if cmd[3].startswith("ua"):          # a veth takes its peer along
                self.links.discard("ub" + cmd[3][2:])
        elif cmd[:2] == ["iptables", "-I"]:
            self.rules.add(tuple(cmd[2:]))
        elif cmd[:2] == ["iptables", "-D"]:
            self.rules.discard(tuple(cmd[2:]))
        return ""

    def ok(self, cmd):
        self.log.append(cmd)
        if cmd[:2] == ["iptables", "-C"]:
            return tuple(cmd[2:]) in self.rules
        if cmd[:3] == ["ip", "link", "show"]:
            return cmd[3] in self.links
        if cmd[:3] == ["docker", "network", "rm"]:
            for n in cmd[3:]:
                del self.networks[n]
                self.subnets.pop(n, None)
        return True


GC1, GC2, GC3 = hostlimits.GC_THRESH
DEFAULTS = {GC1: 128, GC2: 512, GC3: 1024}


class FakeSysctl:
    """The host's /proc/sys (the neighbour table's limits): a dict, and the
    writes made; read-only ones refuse a write as a non-root process would."""

    def __init__(self, values=None, readonly=()):
        self.values = dict(DEFAULTS if values is None else values)
        self.readonly = set(readonly)
        self.writes = []

    def read(self, name):
        return self.values[name]

    def write(self, name, value):
        if name in self.readonly:
            raise PermissionError(13, "Permission denied", "/proc/sys/" + name.replace(".", "/"))
        self.writes.append((name, value))
        self.values[name] = value


def _install(monkeypatch, fake, run_dir):
    """The lab's host commands go to fake, its kernel settings to fake.sysctl
    and the host-wide record of them to run_dir."""
    monkeypatch.setattr(dlab, "_run", fake.run)
    monkeypatch.setattr(faults, "_run", fake.run)
    monkeypatch.setattr(dlab, "_ok", fake.ok)
    monkeypatch.setattr(dlab.time, "sleep", lambda s: None)
    fake.sysctl = FakeSysctl()
    fake.record = run_dir / "host-sysctl.json"
    monkeypatch.setattr(hostlimits, "read_sysctl", fake.sysctl.read)
    monkeypatch.setattr(hostlimits, "write_sysctl", fake.sysctl.write)
    monkeypatch.setattr(hostlimits, "HOST_RECORD", str(fake.record))
    return fake


@pytest.fixture
def host(monkeypatch, tmp_path_factory):
    return _install(monkeypatch, FakeDockerHost(), tmp_path_factory.mktemp("run"))


def _copy(tmp_path, topology, name):
    """A copy of a shipped topology as tmp_path/NAME.yml (the lab's folder name)."""
    path = tmp_path / ("%s.yml" % name)
    shutil.copy(ROOT / "topologies" / topology, path)
    return path


@pytest.fixture
def tree(tmp_path):
    """A copy of switch-tree.yml (root bridge, veth uplinks, DOCKER-USER rule)."""
    return _copy(tmp_path, "switch-tree.yml", "tree")


def _lab_state(host):
    return (dict(host.containers), dict(host.networks), set(host.links), set(host.rules))


def test_docker_up_saves_what_down_needs(host, tree, tmp_path):
    inv = dlab.up(str(tree), str(tmp_path))
    folder = tmp_path / ".lab" / "beonet-tree"
    assert inv == str(folder / "inventory.yml")
    saved = json.loads((folder / base.DOCKER_STATE).read_text())
    assert saved["lab"] == "beonet-switch-tree"      # the lab is named after the topology
    assert sorted(saved["containers"]) == sorted(host.containers)
    assert sorted(saved["networks"]) == sorted(host.networks)
    # The root bridge and the 4 leaf uplinks are the host links the lab made
    # (deleting a veth deletes its peer); the root bridge has a DOCKER-USER rule.
    assert len(saved["links"]) == 5 and set(saved["links"]) <= host.links
    assert [tuple(r) for r in saved["iptables"]] == sorted(host.rules)
    assert len(host.rules) == 1


def test_docker_turns_ipv6_on_in_the_containers_only_for_a_plan_with_ipv6(host, tree, tmp_path):
    dlab.up(str(tree), str(tmp_path))
    runs = [c for c in host.log if c[:2] == ["docker", "run"]]
    assert runs and not any("net.ipv6.conf.all.disable_ipv6=0" in c for c in runs)
    dlab.down(str(tree), str(tmp_path))
    data = yaml.safe_load(tree.read_text())
    data["addressing"] = {"ipv6": True}
    tree.write_text(yaml.safe_dump(data))
    host.log.clear()
    dlab.up(str(tree), str(tmp_path))
    runs = [c for c in host.log if c[:2] == ["docker", "run"]]
    assert runs and all(" ".join(dlab.IPV6_ON) in " ".join(c) for c in runs)


def test_docker_faults_stop_start_and_cut_links_from_the_saved_state(host, tree, tmp_path, capsys):
    dlab.up(str(tree), str(tmp_path))
    tree.unlink()
    root = str(tmp_path)
    saved = json.loads((tmp_path / ".lab" / "beonet-tree" / base.DOCKER_STATE).read_text())
    wired = saved["wired"]["node01"]
    assert [(w["logical"], w["rate"]) for w in wired] == [("eth1", 100)]
    assert saved["faults"] == {"nodes": [], "links": [], "cables": [], "switches": []}

    def fault(**kw):
        return faults.fault(str(tree), root, None, "docker", **kw)

    host.log.clear()
    assert fault() == "beonet-switch-tree: nothing is down"
    assert fault(node="node01", action="stop") == "beonet-switch-tree: stopped: node01"
    assert ["docker", "kill", "beonet-switch-tree-node01"] in host.log
    host.log.clear()
    assert fault(node="node01", action="stop") == "beonet-switch-tree: stopped: node01"
    assert ["docker", "kill", "beonet-switch-tree-node01"] not in host.log
    assert "node01 stopped (it already was)" in capsys.readouterr().out
    with pytest.raises(LabError, match="node01 is stopped: start it before changing its links"):
        fault(link="node01:eth1", action="down")
    host.log.clear()
    assert fault(node="node01", action="start") == "beonet-switch-tree: nothing is down"
    assert host.log[1] == ["docker", "start", "beonet-switch-tree-node01"]
    script = host.log[-1][-1]          # the NIC gets its saved name back, no address, its rate
    name = wired[0]["name"]
    assert "ip link set dev bt0 name %s" % name in script and "ip -4 addr flush dev %s" % name in script
    assert "tbf rate 100mbit" in script
    # a cut link: the host end of the NIC's veth (the plan's name or the container's)
    assert fault(link="node02:eth1", action="down") == "beonet-switch-tree: links down: node02:eth1"
    assert host.log[-1] == ["ip", "link", "set", "dev", "veth77", "down"]
    assert fault(link="node02:eth1", action="up") == "beonet-switch-tree: nothing is down"
    assert host.log[-1] == ["ip", "link", "set", "dev", "veth77", "up"]


@pytest.mark.parametrize("kw,message", [
    ({"node": "node01", "link": "node01:eth1", "action": "stop"}, "not both"),
    ({"node": "node01"}, "--node node01 needs --stop or --start"),
    ({"node": "node01", "action": "down"}, "--node node01 needs --stop or --start"),
    ({"link": "node01:eth1", "action": "stop"}, "--link node01:eth1 needs --down or --up"),
    ({"link": "node01", "action": "down"}, "--link: 'node01' is not NODE:NIC"),
    ({"link": "node01:eth9", "action": "down"}, "node01 has no NIC eth9 \\(its NICs: eth"),
    ({"node": "node99", "action": "stop"}, "no node node99 in lab beonet-switch-tree"),
    ({"action": "stop"}, "--stop needs --node"),
    ({"action": "up"}, "--up needs --link"),
])
def test_docker_fault_errors(host, tree, tmp_path, kw, message):
    dlab.up(str(tree), str(tmp_path))
    with pytest.raises(LabError, match=message):
        faults.fault(str(tree), str(tmp_path), None, "docker", **kw)


def test_fault_without_a_lab_or_on_an_old_lab(tmp_path):
    with pytest.raises(LabError, match="no lab in .lab/beonet-x: bring it up first "
                                       "\\(beonet lab up --provider vm\\)"):
        faults.fault("x.yml", str(tmp_path), None, "vm")
    folder = tmp_path / ".lab" / "beonet-x"
    folder.mkdir(parents=True)
    (folder / base.DOCKER_STATE).write_text('{"lab": "old", "provider": "docker"}')
    with pytest.raises(LabError, match="old was built by an older beonet"):
        faults.fault("x.yml", str(tmp_path), None, "docker")


def test_cli_lab_fault_options(monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(faults, "fault", lambda *a, **kw: seen.update(kw, args=a) or "lab: nothing is down")
    cli.main(["lab", "fault", "t.yml", "--node", "n1", "--stop"])
    assert seen["node"] == "n1" and seen["action"] == "stop" and seen["args"][3] == "docker"
    cli.main(["lab", "fault", "t.yml", "--provider", "vm", "--link", "n1:eth1", "--down"])
    assert (seen["link"], seen["action"], seen["args"][3]) == ("n1:eth1", "down", "vm")
    cli.main(["lab", "link", "t.yml", "--provider", "vm", "--node", "n2", "--nic", "eth2", "--state", "up"])
    assert (seen["link"], seen["action"], seen["node"]) == ("n2:eth2", "up", None)
    assert cli.main(["lab", "link", "t.yml", "--node", "n2", "--nic", "eth2", "--state", "up"]) == 2
    assert "link needs --provider vm" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["lab", "fault", "t.yml", "--stop", "--start"])     # one at a time
    assert exc.value.code == 2


def test_docker_down_after_the_topology_was_edited_or_deleted(host, tree, tmp_path):
    before = _lab_state(host)
    dlab.up(str(tree), str(tmp_path))
    text = tree.read_text().replace("name: switch-tree", "name: other-tree")
    tree.write_text(text.replace("nodes_per_leaf: 8", "nodes_per_leaf: 2"))
    dlab.down(str(tree), str(tmp_path))
    assert _lab_state(host) == before
    assert not (tmp_path / ".lab" / "beonet-tree").exists()
    dlab.up(str(tree), str(tmp_path))
    tree.unlink()
    dlab.down(str(tree), str(tmp_path))
    assert _lab_state(host) == before


def test_docker_down_removes_only_what_up_created(host, tree, tmp_path):
    host.containers["other-node"] = {"label": "other", "networks": ["other-net"]}
    host.networks["other-net"] = "other"
    host.links.add("br-mine")
    host.rules.add(("DOCKER-USER", "-i", "br-mine", "-o", "br-mine", "-j", "ACCEPT"))
    before = _lab_state(host)
    dlab.up(str(tree), str(tmp_path), "t1")
    dlab.down(str(tree), str(tmp_path), "t1")
    assert _lab_state(host) == before
    removed = [c for c in host.log if c[:2] in (["docker", "rm"], ["ip", "link"]) and "del" in c
               or c[:2] == ["iptables", "-D"]]
    assert not any("other" in " ".join(c) or "br-mine" in c for c in removed)


def test_docker_second_down_is_a_no_op(host, tree, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dlab.up(str(tree), str(tmp_path))
    assert cli.main(["lab", "down", str(tree)]) == 0
    host.log.clear()
    capsys.readouterr()
    assert cli.main(["lab", "down", str(tree)]) == 0
    assert host.log == []
    out = capsys.readouterr().out
    assert "nothing to do, no lab state in .lab/beonet-tree (0 containers, 0 networks)" in out


def test_docker_up_takes_the_saved_lab_down_first(host, tree, tmp_path):
    dlab.up(str(tree), str(tmp_path))
    first = _lab_state(host)
    dlab.up(str(tree), str(tmp_path))
    assert _lab_state(host)[:2] == first[:2]
    assert host.links == first[2] and host.rules == first[3]


def test_docker_up_command_sequence(host, tree, tmp_path, monkeypatch):
    """A tree lab: look for an old lab, networks, containers, the root bridge
    with its DOCKER-USER rule, shaped veth uplinks, then the NICs per node
    (one container at a time: in plan order)."""
    monkeypatch.setenv("BEONET_LAB_WORKERS", "1")
    dlab.up(str(tree), str(tmp_path))
    kinds = []
    for c in host.log:
        k = " ".join(c[:3])
        if not kinds or kinds[-1] != k:
            kinds.append(k)
    assert kinds[:6] == ["docker ps -aq", "docker image inspect", "docker network ls",
                         "docker network create", "docker run -d", "ip link add"]
    bridge_add = next(i for i, c in enumerate(host.log) if c[-2:] == ["type", "bridge"])
    assert [c[:2] for c in host.log[bridge_add + 1:bridge_add + 4]] == [
        ["ip", "link"], ["iptables", "-C"], ["iptables", "-I"]]
    shaped = [c[2] for c in host.log if c[:2] == ["sh", "-c"]]
    assert len(shaped) == 8 and all("tbf rate 1000mbit" in c for c in shaped)
    assert host.log[-1][:3] == ["docker", "exec", "beonet-switch-tree-node32"]
    assert "tbf rate 100mbit" in host.log[-1][-1]


def test_docker_down_of_a_vm_lab_folder_is_refused(host, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / ".lab" / "x"
    folder.mkdir(parents=True)
    (folder / base.VM_STATE).write_text("{}")
    assert cli.main(["lab", "down", "gone.yml", "--name", "x"]) == 1
    assert "--provider vm" in capsys.readouterr().err
    assert host.log == []


def test_a_state_folder_without_a_record_is_refused(tmp_path):
    (tmp_path / "f").mkdir()
    with pytest.raises(LabError, match="has no state.json"):
        base.load_state(str(tmp_path / "f"), base.DOCKER_STATE)
    (tmp_path / "f" / base.DOCKER_STATE).write_text("{")
    with pytest.raises(LabError, match="unreadable lab state"):
        base.load_state(str(tmp_path / "f"), base.DOCKER_STATE)


@pytest.mark.parametrize("text,message", [
    ("[]", "not a lab's state (a mapping with the lab's name), but a list"),
    ('{"lab": 1, "nodes": {}}', "not a lab's state (a mapping with the lab's name), "
     "but a mapping of lab, nodes"),
    ('{"lab": "l", "lab": "m", "nodes": {}}', "the key 'lab' is given twice"),
    ('{"lab": NaN}', "NaN is not a JSON value"),
    ("[" * 5000, "nests deeper than 16 levels"),
])
def test_a_lab_state_of_the_wrong_shape_is_refused(tmp_path, text, message):
    (tmp_path / base.DOCKER_STATE).write_text(text)
    with pytest.raises(LabError) as caught:
        base.load_state(str(tmp_path), base.DOCKER_STATE)
    assert message in str(caught.value)


def test_a_lab_state_that_is_a_pipe_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / base.DOCKER_STATE)
    with pytest.raises(LabError, match="a pipe, socket or device, not a file"):
        base.load_state(str(tmp_path), base.DOCKER_STATE)


def test_state_folder_comes_from_the_name_or_the_file_name():
    assert base.state_dir("/r", "a/b/mesh.yml") == "/r/.lab/beonet-mesh"
    assert base.state_dir("/r", "a/b/mesh.yml", "my lab") == "/r/.lab/my-lab"


def test_docker_inventory_uses_the_docker_connection(host, tree, tmp_path):
    inv = json.loads(open(dlab.up(str(tree), str(tmp_path))).read())
    v = inv["beonet_nodes"]["vars"]
    assert v["ansible_connection"] == "community.docker.docker"    # no SSH, no host keys
    assert v["beonet_lab"] == "beonet-switch-tree"
    hosts = inv["beonet_nodes"]["hosts"]
    assert len(hosts) == 32
    assert hosts["node01"]["ansible_host"] == "beonet-switch-tree-node01"
    assert hosts["node01"]["beonet_interfaces"] == {"eth1": "eth0"}


def test_cli_lab_down_without_state_exits_0(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(hostlimits, "HOST_RECORD", str(tmp_path / "run" / "host-sysctl.json"))
    cli.main(["lab", "down", "missing.yml"])
    assert "nothing to do" in capsys.readouterr().out


# ------------------------------------------------------------------ scrambled wiring

@pytest.fixture
def testbed(tmp_path):
    path = tmp_path / "testbed.yml"
    shutil.copy(ROOT / "topologies" / "metanode-testbed.yml", path)
    return path


def _wiring(tmp_path, folder="beonet-testbed"):
    return json.loads((tmp_path / ".lab" / folder / dlab.WIRING).read_text())


def test_scrambled_lab_looks_like_a_new_cluster(host, testbed, tmp_path):
    """Realistic names unrelated to the plan, one or two spare NICs per node,
    no mapping in the inventory, the truth in wiring.json."""
    inv = json.loads(open(dlab.up(str(testbed), str(tmp_path), wiring="scrambled", seed=3)).read())
    v = inv["all"]["vars"]                 # localhost's play writes the mapping: group all
    assert v["beonet_discover_include_virtual"] is True
    assert v["beonet_host_vars_dir"] == str(tmp_path / ".lab" / "beonet-testbed" / "host_vars")
    assert all(set(h) == {"ansible_host"} for h in inv["beonet_nodes"]["hosts"].values())
    truth = _wiring(tmp_path)
    assert truth["moved"] == [] and len(truth["nodes"]) == 36
    kinds = set()
    for node, t in truth["nodes"].items():
        names = [n["name"] for n in t["nics"]]
        assert len(set(names)) == len(names) and not {"eth1", "eth2"} & set(names)
        assert all(len(n) <= 15 for n in names)
        assert sorted(t["mapping"]) == ["eth1", "eth2"]
        spares = [n for n in t["nics"] if n["logical"] is None]
        assert 1 <= len(spares) <= 2 and all(n["segment"] is None for n in spares)
        kinds.update(name[:3] for name in names)
        # A container NIC is named as recorded, found by its MAC.
        live = {n["address"]: n for n in host.containers["beonet-metanode-testbed-" + node]
                .get("spares", [])}
        assert all(n["mac"] in live for n in spares)
    assert kinds >= {"enp", "ens", "eno", "enx", "eth"}
    enx = [n for t in truth["nodes"].values() for n in t["nics"] if n["name"].startswith("enx")]
    assert all(n["name"] == "enx" + n["mac"].replace(":", "") for n in enx)


def test_scrambled_rename_goes_through_temporary_names(host, testbed, tmp_path):
    dlab.up(str(testbed), str(tmp_path), wiring="scrambled")
    script = next(c[-1] for c in host.log if c[:3] == ["docker", "exec", "beonet-metanode-testbed-node01"]
                  and c[3:5] == ["sh", "-c"])
    nics = _wiring(tmp_path)["nodes"]["node01"]["nics"]
    lines = script.splitlines()
    first = [i for i, line in enumerate(lines) if " name bt" in line and "&&" in line]
    final = [i for i, line in enumerate(lines) if line.startswith("ip link set dev bt")]
    assert len(first) == len(final) == len(nics) and max(first) < min(final)
    for n in nics:
        assert ("ip link set dev %s up" % n["name"] in lines) == n["up"]


def test_scrambled_wiring_is_drawn_from_the_seed(testbed):
    plan = dlab.render.plan(dlab.pipeline.compile_file(str(testbed)))
    nets = base.networks(plan, "lab")
    same = [dlab.scramble(plan, nets, "lab", 2, 7) for _ in range(2)]
    assert same[0] == same[1]
    assert dlab.scramble(plan, nets, "lab", 2, 8) != same[0]
    orders = {tuple(n["logical"] for n in nics) for nics in same[0][0].values()}
    assert len(orders) > 3                      # the NICs are attached in random order


def test_miswire_moves_one_p2p_and_one_switch_cable(host, testbed, tmp_path):
    dlab.up(str(testbed), str(tmp_path), wiring="scrambled", miswire=2, seed=5)
    truth = _wiring(tmp_path)
    p2p, switch = truth["moved"]
    nodes = truth["nodes"]
    assert p2p["kind"] == "p2p" and switch["kind"] == "switch"
    # The p2p cable left its planned NIC (now without carrier) for a spare NIC
    # of a node that is not its far end.
    left = next(n for n in nodes[p2p["node"]]["nics"] if n["name"] == p2p["name"])
    assert left["logical"] == p2p["nic"] and left["segment"] is None and not left["carrier"]
    spare = next(n for n in nodes[p2p["to_node"]]["nics"] if n["name"] == p2p["to_name"])
    assert spare["logical"] is None and spare["segment"] == p2p["segment"]
    assert p2p["to_node"] not in (p2p["far_node"], p2p["node"])
    moved = next(n for n in nodes[switch["node"]]["nics"] if n["name"] == switch["name"])
    assert moved["segment"] == switch["to"] != switch["from"] and switch["to"].startswith("group")
    assert len({p2p["node"], p2p["far_node"], p2p["to_node"], switch["node"]}) == 4
    # Each moved cable carries the cabling sheet's label.
    assert switch["cable"].startswith("sw-%s:" % switch["from"])
    assert p2p["cable"] == p2p["segment"]
    # The spare carrying the moved cable is a Docker NIC of the p2p link.
    to = host.containers["beonet-metanode-testbed-" + p2p["to_node"]]
    assert "beonet-metanode-testbed-" + p2p["segment"] in to["networks"]


def test_scrambled_lab_goes_down_from_state(host, testbed, tmp_path):
    before = _lab_state(host)
    dlab.up(str(testbed), str(tmp_path), wiring="scrambled", miswire=1)
    saved = json.loads((tmp_path / ".lab" / "beonet-testbed" / base.DOCKER_STATE).read_text())
    spares = [link for link in saved["links"] if link.startswith("bx")]
    assert spares and set(spares) <= host.links
    host_vars = tmp_path / ".lab" / "beonet-testbed" / "host_vars" / "node01"
    host_vars.mkdir(parents=True)                  # what discovery writes
    (host_vars / "beonet_interfaces.yml").write_text("beonet_interfaces: {}\n")
    testbed.unlink()
    dlab.down(str(testbed), str(tmp_path))
    assert _lab_state(host) == before
    assert not (tmp_path / ".lab" / "beonet-testbed").exists()


def test_plan_wiring_is_unchanged(host, testbed, tmp_path):
    inv = json.loads(open(dlab.up(str(testbed), str(tmp_path))).read())
    assert inv["beonet_nodes"]["hosts"]["node01"]["beonet_interfaces"] == {"eth1": "eth0", "eth2": "eth1"}
    # the pre-flight lists the lab's veths too
    assert inv["all"]["vars"]["beonet_discover_include_virtual"] is True
    assert not (tmp_path / ".lab" / "beonet-testbed" / dlab.WIRING).exists()
    assert not any(c[:3] == ["ip", "link", "add"] for c in host.log)


def test_miswire_errors(host, tmp_path, testbed, capsys, monkeypatch):
    single = tmp_path / "single.yml"
    shutil.copy(ROOT / "topologies" / "single-net.yml", single)
    with pytest.raises(LabError, match="--miswire 1: only 0 cables of single-net can be moved"):
        dlab.up(str(single), str(tmp_path), wiring="scrambled", miswire=1)
    with pytest.raises(LabError, match="--miswire needs --wiring scrambled"):
        dlab.up(str(testbed), str(tmp_path), miswire=1)
    assert host.log == []                          # nothing was built
    monkeypatch.chdir(tmp_path)
    assert cli.main(["lab", "up", str(testbed), "--miswire", "2"]) == 2
    assert "beonet lab: --miswire needs --wiring scrambled" in capsys.readouterr().err


def test_cli_passes_the_wiring_options(monkeypatch):
    seen = {}
    monkeypatch.setattr(dlab, "up", lambda *a: seen.update(args=a))
    assert cli.main(["lab", "up", "t.yml", "--wiring", "scrambled", "--miswire", "2", "--seed", "9"]) == 0
    assert seen == {"args": ("t.yml", os.getcwd(), None, "scrambled", 2, 9)}


# ------------------------------------------------------------------ the VM lab

class FakeVmHost:
    """Namespaces, QEMU processes (pid files) and the commands of the VM lab."""

    def __init__(self, plan):
        self.log = []
        self.netns = set()
        self.alive = set()
        self.stopped = []
        self.plan = plan

    def run(self, cmd, check=True, stdin=None):
        self.log.append(cmd)
        if cmd[0] == "ssh-keygen":
            key = cmd[cmd.index("-f") + 1]
            for path in (key, key + ".pub"):
                with open(path, "w") as fh:
                    fh.write("ssh-ed25519 AAAAKEY test\n")
        elif cmd[:3] == ["ip", "netns", "add"]:
            self.netns.add(cmd[3])
        elif cmd[:3] == ["ip", "netns", "del"]:
            self.netns.discard(cmd[3])
        elif "qemu-system-x86_64" in cmd:
            pid = 40000 + len(self.alive) + len(self.stopped)
            with open(cmd[cmd.index("-pidfile") + 1], "w") as fh:
                fh.write("%d\n" % pid)
            self.alive.add(pid)
        return ""

    def ssh(self, netns, state, address, command, timeout=30):
        assert command == "ip -j link" and netns in self.netns
        vm = next(vm for vm in vmlab.layout(self.plan, netns)["vms"].values()
                  if vm["mgmt_address"] == address)
        macs = [vm["mgmt_mac"]] + [n["mac"] for n in vm["nics"]]
        return json.dumps([{"ifname": "ens%d" % (16 + k), "address": m} for k, m in enumerate(macs)])

    def stop(self, pids):
        self.stopped += pids
        self.alive -= set(pids)


@pytest.fixture
def bonded(tmp_path):
    path = tmp_path / "bonded.yml"
    shutil.copy(ROOT / "topologies" / "bonded-dual-net-4.yml", path)
    return path


@pytest.fixture
def vmhost(monkeypatch, bonded, tmp_path):
    plan = vmlab.render.plan(vmlab.pipeline.compile_file(str(bonded)))
    fake = FakeVmHost(plan)
    (tmp_path / "proc").mkdir()
    monkeypatch.setattr(vmlab, "PROC", str(tmp_path / "proc"))     # no QEMU process left over
    monkeypatch.setattr(vmlab, "_run", fake.run)
    monkeypatch.setattr(vmlab, "ssh", fake.ssh)
    monkeypatch.setattr(vmlab, "_stop", fake.stop)
    monkeypatch.setattr(vmlab, "_alive", lambda pid: pid in fake.alive)
    monkeypatch.setattr(vmlab, "_netns_exists", lambda n: n in fake.netns)
    monkeypatch.setattr(vmlab, "_check_host", lambda images: None)
    monkeypatch.setattr(vmlab, "_wait_ssh", lambda *a: None)
    return fake


def test_vm_up_command_sequence_and_saved_state(vmhost, bonded, tmp_path):
    vmlab.up(str(bonded), str(tmp_path), node_images={"node04": "networkmanager"})
    assert [c[0] for c in vmhost.log[:3]] == ["ssh-keygen", "ip", "ip"]
    assert vmhost.log[1] == ["ip", "netns", "add", "beonet-bonded-dual-net-4"]
    assert vmhost.log[2][:5] == ["ip", "netns", "exec", "beonet-bonded-dual-net-4", "sh"]
    assert [c[0] for c in vmhost.log[3::2]] == ["qemu-img"] * 4
    assert [c[4] for c in vmhost.log[4::2]] == ["qemu-system-x86_64"] * 4
    saved = json.loads((tmp_path / ".lab" / "beonet-bonded" / base.VM_STATE).read_text())
    assert saved["lab"] == saved["netns"] == "beonet-bonded-dual-net-4"
    n4 = saved["nodes"]["node04"]
    assert (n4["image"], n4["nics"], n4["address"]) == ("networkmanager", ["eth1", "eth2"], "198.18.0.13")
    assert n4["qemu"] == vmhost.log[10][4:], "the saved QEMU command is the one that booted it"
    assert saved["faults"] == {"nodes": [], "links": [], "cables": [], "switches": []}


def test_vm_up_boots_as_many_vms_at_a_time_as_it_is_told(vmhost, bonded, tmp_path, monkeypatch):
    waits: list[tuple[list[str], int]] = []
    monkeypatch.setenv("BEONET_VM_BOOT_PARALLEL", "3")
    monkeypatch.setattr(vmlab, "_wait_ssh", lambda netns, state, lay, key, t0, timeout: waits.append(
        (sorted(lay["vms"]), sum(c[4:5] == ["qemu-system-x86_64"] for c in vmhost.log))))
    vmlab.up(str(bonded), str(tmp_path))
    # each wave waits for SSH after its own VMs started and before the next one starts
    assert waits == [(["node01", "node02", "node03"], 3), (["node04"], 4)]


WRONG_NUMBERS = ["0", "-1", "abc", "nan", "1e9", "99999", "9" * 400, "9" * 5000, "2\n", "２", "2\u2028",
                 "../2", " 2", "0x10"]


@pytest.mark.parametrize("name", sorted(vmlab.SETTINGS))
@pytest.mark.parametrize("text", WRONG_NUMBERS)
def test_vm_up_refuses_a_wrong_setting_before_anything_starts(vmhost, bonded, tmp_path, monkeypatch,
                                                              name, text):
    monkeypatch.setenv(name, text)
    with pytest.raises(vmlab.LabUsageError, match="^%s: .* is not a whole number from" % name) as exc:
        vmlab.up(str(bonded), str(tmp_path))
    assert "\n" not in str(exc.value) and "\u2028" not in str(exc.value)
    assert len(str(exc.value)) < 200                        # the text is shown, not the whole of it
    assert vmhost.log == [] and not vmhost.netns            # nothing made on the host


def test_vm_settings_wrong_together_are_named_together(monkeypatch):
    monkeypatch.setenv("BEONET_VM_MEMORY", "64")
    monkeypatch.setenv("BEONET_VM_BOOT_TIMEOUT", "soon")
    with pytest.raises(vmlab.LabUsageError) as exc:
        vmlab.settings()
    assert str(exc.value) == ("BEONET_VM_MEMORY: '64' is not a whole number from 192 to 65536; "
                              "BEONET_VM_BOOT_TIMEOUT: 'soon' is not a whole number from 10 to 86400")


def test_vm_settings_given_reach_qemu_and_the_boot_wait(vmhost, bonded, tmp_path, monkeypatch):
    for name, value in (("BEONET_VM_MEMORY", "512"), ("BEONET_VM_TB_CACHE", "64"),
                        ("BEONET_VM_BOOT_TIMEOUT", "77")):
        monkeypatch.setenv(name, value)
    timeouts = []
    monkeypatch.setattr(vmlab, "_wait_ssh", lambda *a: timeouts.append(a[-1]))
    vmlab.up(str(bonded), str(tmp_path))
    qemu = [c for c in vmhost.log if c[4:5] == ["qemu-system-x86_64"]]
    assert qemu and all(c[c.index("-m") + 1] == "512" and "tcg,tb-size=64" in c for c in qemu)
    assert timeouts and set(timeouts) == {77}


def test_vm_inventory_carries_its_own_ssh_options(vmhost, bonded, tmp_path):
    """Host key checking may be on in ansible.cfg: the lab's inventory turns it
    off for its throwaway VMs, and every SSH user of it (Ansible, `ansible -m
    shell` in the scripts) gets the options from ansible_ssh_common_args."""
    inv = json.loads(open(vmlab.up(str(bonded), str(tmp_path))).read())
    v = inv["beonet_nodes"]["vars"]
    args = shlex.split(v["ansible_ssh_common_args"])
    opts = [args[i + 1] for i, a in enumerate(args) if a == "-o"]
    assert "StrictHostKeyChecking=no" in opts and "UserKnownHostsFile=/dev/null" in opts
    assert any(o.startswith("ProxyCommand=ip netns exec beonet-bonded-dual-net-4 ") for o in opts)
    assert v["ansible_connection"] == "ssh"
    assert v["ansible_ssh_private_key_file"] == str(tmp_path / ".lab" / "beonet-bonded" / "id_ed25519")
    assert inv["beonet_nodes"]["hosts"]["node02"]["beonet_interfaces"] == {"eth1": "ens17",
                                                                          "eth2": "ens18"}


def test_vm_down_after_the_topology_was_edited_or_deleted(vmhost, bonded, tmp_path):
    vmlab.up(str(bonded), str(tmp_path))
    pids = set(vmhost.alive)
    assert len(pids) == 4
    bonded.write_text(bonded.read_text().replace("node", "host"))
    vmlab.down(str(bonded), str(tmp_path))
    assert set(vmhost.stopped) == pids and not vmhost.alive and not vmhost.netns
    assert not (tmp_path / ".lab" / "beonet-bonded").exists()
    shutil.copy(ROOT / "topologies" / "bonded-dual-net-4.yml", bonded)
    vmlab.up(str(bonded), str(tmp_path), "v")
    bonded.unlink()
    vmlab.down(str(bonded), str(tmp_path), "v")
    assert len(vmhost.stopped) == 8 and not vmhost.alive and not vmhost.netns
    assert list((tmp_path / ".lab").iterdir()) == []


def test_vm_second_down_is_a_no_op(vmhost, bonded, tmp_path, capsys):
    vmlab.up(str(bonded), str(tmp_path))
    vmlab.down(str(bonded), str(tmp_path))
    vmhost.log.clear()
    capsys.readouterr()
    vmlab.down(str(bonded), str(tmp_path))
    assert vmhost.log == [] and len(vmhost.stopped) == 4
    assert "nothing to do, no lab state in .lab/beonet-bonded (0 QEMU processes)" in capsys.readouterr().out


def test_vm_down_without_state_removes_what_an_interrupted_run_left(vmhost, bonded, tmp_path,
                                                                    capsys, monkeypatch):
    """The state folder is gone (a run cut off, a deleted clone) but the namespace and a
    QEMU process started from that folder are left: down finds them by the lab's name."""
    monkeypatch.setattr(vmlab, "_orphans", lambda state: [41000] if state.endswith("/mol-x") else [])
    vmhost.netns |= {"mol-x", "beonet-bonded-dual-net-4"}
    vmlab.down(str(bonded), str(tmp_path), "mol-x")
    assert "mol-x" not in vmhost.netns and vmhost.stopped == [41000]
    assert "namespace mol-x and 1 QEMU processes left by an interrupted run removed" in \
        capsys.readouterr().out
    vmlab.down(str(bonded), str(tmp_path))          # no name: the topology's lab name
    assert vmhost.netns == set()
    bonded.write_text("nodes: [")                   # a broken topology names no lab
    vmlab.down(str(bonded), str(tmp_path))
    assert "nothing to do, no lab state in .lab/beonet-bonded (0 QEMU processes)" in \
        capsys.readouterr().out


def test_vm_orphans_are_qemu_processes_started_from_the_folder(tmp_path, monkeypatch):
    """A process whose command line names qemu-system and a file in the folder is found;
    one naming another folder is not, nor another program (processes of a fake /proc)."""
    state = tmp_path / ".lab" / "mol-x"
    proc = tmp_path / "proc"
    for pid, argv in ((41000, ["qemu-system-x86_64", str(state / "n.qcow2")]),
                      (41001, ["qemu-system-x86_64", str(tmp_path / ".lab" / "mol-xy" / "n.qcow2")]),
                      (41002, ["sleep", str(state / "n.qcow2")])):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (proc / "self").mkdir()
    monkeypatch.setattr(vmlab, "PROC", str(proc))
    assert vmlab._orphans(str(state)) == [41000]


def test_vm_link_and_node_faults_work_from_the_saved_state(vmhost, bonded, tmp_path, monkeypatch):
    sent = []
    monkeypatch.setattr(vmlab, "monitor", lambda state, node, command: sent.append((node, command)) or "")
    vmlab.up(str(bonded), str(tmp_path))
    bonded.unlink()
    root = str(tmp_path)

    def fault(**kw):
        return faults.fault(str(bonded), root, kw.pop("label", None), "vm", **kw)

    assert fault(link="node02:eth1", action="down") == "beonet-bonded-dual-net-4: links down: node02:eth1"
    assert sent == [("node02", "set_link eth1 off")]
    with pytest.raises(LabError, match="no node node09 in lab beonet-bonded-dual-net-4 "
                                       "\\(its nodes: node01, node02, node03, node04\\)"):
        fault(link="node09:eth1", action="down")
    with pytest.raises(LabError, match="node02 has no NIC eth7 \\(plan NICs: eth1, eth2, mgmt\\)"):
        fault(link="node02:eth7", action="down")
    with pytest.raises(LabError, match="no lab in .lab/other"):
        fault(label="other", link="node02:eth1", action="down")
    # a dead node: QEMU ended; started again from the saved command, SSH awaited
    vmhost.alive.update({1234})
    monkeypatch.setattr(vmlab, "_pid", lambda state, node: 1234 if node == "node03" else None)
    monkeypatch.setattr(vmlab, "_port_open", lambda netns, address: True)
    assert fault(node="node03", action="stop").endswith("stopped: node03; links down: node02:eth1")
    assert vmhost.stopped[-1] == 1234
    vmhost.alive.discard(1234)
    vmhost.log.clear()
    assert fault(node="node03", action="start") == "beonet-bonded-dual-net-4: links down: node02:eth1"
    saved = json.loads((tmp_path / ".lab" / "beonet-bonded" / base.VM_STATE).read_text())
    assert vmhost.log == [["ip", "netns", "exec", "beonet-bonded-dual-net-4",
                           *saved["nodes"]["node03"]["qemu"]]]
    assert fault(link="node02:eth1", action="up") == "beonet-bonded-dual-net-4: nothing is down"
    assert sent[-1] == ("node02", "set_link eth1 on")


def test_vm_down_of_a_docker_lab_folder_is_refused(tmp_path):
    folder = tmp_path / ".lab" / "x"
    folder.mkdir(parents=True)
    (folder / base.DOCKER_STATE).write_text("{}")
    with pytest.raises(LabError, match="a Docker lab: take it down with `beonet lab down`"):
        vmlab.down("gone.yml", str(tmp_path), "x")


def test_a_lab_is_not_built_over_another_kind_of_lab(host, vmhost, tree, bonded, tmp_path):
    dlab.up(str(tree), str(tmp_path), "same")
    with pytest.raises(LabError, match="holds state.json: a Docker lab: take it down with "
                                       "`beonet lab down` \\(no --provider vm\\) first"):
        vmlab.up(str(bonded), str(tmp_path), "same")
    dlab.down(str(tree), str(tmp_path), "same")
    vmlab.up(str(bonded), str(tmp_path), "same")
    with pytest.raises(LabError, match="holds vm.json: a VM lab"):
        dlab.up(str(tree), str(tmp_path), "same")


# ------------------------------------------------------------------ shared media

class LinkedDockerHost(FakeDockerHost):
    """The fake host where every container NIC's veth shows its host end
    (veth77), and the ifb devices the lab creates through a shell."""

    def run(self, cmd, check=True):
        out = super().run(cmd, check)
        if cmd[:2] == ["docker", "exec"] and cmd[3:] == ["ip", "-j", "link"]:
            return json.dumps([dict(link, link_index=77) for link in json.loads(out)])
        if cmd[:2] == ["sh", "-ec"] and " type ifb" in cmd[2]:
            self.links.add(cmd[2].split()[3])
        return out


@pytest.fixture
def linked(monkeypatch, tmp_path_factory):
    return _install(monkeypatch, LinkedDockerHost(), tmp_path_factory.mktemp("run"))


@pytest.fixture
def hub(tmp_path):
    """A copy of hub-and-switch.yml: a shared segment (hub) and a switched one."""
    return _copy(tmp_path, "hub-and-switch.yml", "hub")


def test_docker_shared_segment_goes_through_one_medium(linked, hub, tmp_path):
    dlab.up(str(hub), str(tmp_path))
    ifb = base.short("beonet-hub-and-switch", "hub", "bm")
    create = ["sh", "-ec", "ip link add %s type ifb\nip link set %s mtu 1500 up\n%s"
              % (ifb, ifb, base.tbf(ifb, 100))]
    assert create in linked.log
    assert linked.log.index(create) < next(i for i, c in enumerate(linked.log) if c[:2] == ["docker", "run"])
    host_ends = [c[2] for c in linked.log if c[:2] == ["sh", "-ec"] and c != create]
    mtu = "ip link set dev veth77 mtu 1500\n"
    redirect = mtu + "\n".join(base.port_commands("veth77", ifb))
    # per node: the hub port through the medium, the switch port shaped
    assert host_ends.count(redirect) == 4
    assert host_ends.count(mtu + base.tbf("veth77", 100)) == 4 and len(host_ends) == 8
    inside = [c[-1] for c in linked.log if c[:2] == ["docker", "exec"] and c[-2] == "-c"]
    assert all(s.count("tbf rate 100mbit burst 3125") == 2 for s in inside)
    saved = json.loads((tmp_path / ".lab" / "beonet-hub" / base.DOCKER_STATE).read_text())
    assert ifb in saved["links"]
    assert [(w["logical"], w["ifb"], w["mtu"]) for w in saved["wired"]["n1"]] == [
        ("eth1", ifb, 1500), ("eth2", None, 1500)]
    dlab.down(str(hub), str(tmp_path))
    assert ifb not in linked.links and ["ip", "link", "del", ifb] in linked.log


def test_docker_restarted_node_rejoins_the_medium(linked, hub, tmp_path):
    dlab.up(str(hub), str(tmp_path))
    faults.fault(str(hub), str(tmp_path), None, "docker", node="n2", action="stop")
    linked.log.clear()
    faults.fault(str(hub), str(tmp_path), None, "docker", node="n2", action="start")
    ifb = base.short("beonet-hub-and-switch", "hub", "bm")
    mtu = "ip link set dev veth77 mtu 1500"
    assert ["sh", "-ec", "\n".join([mtu] + base.port_commands("veth77", ifb))] in linked.log
    assert ["sh", "-ec", "\n".join([mtu, base.tbf("veth77", 100)])] in linked.log


def test_docker_medium_left_by_an_interrupted_run_is_replaced(linked, hub, tmp_path):
    ifb = base.short("beonet-hub-and-switch", "hub", "bm")
    linked.links.add(ifb)
    dlab.up(str(hub), str(tmp_path))
    assert ["ip", "link", "del", ifb] in linked.log


def test_docker_host_end_carries_the_planned_mtu():
    nic = {"rate": 100, "mtu": 9000, "ifb": None}
    assert dlab._host_end("veth9", nic) == ["ip link set dev veth9 mtu 9000", base.tbf("veth9", 100, 9000)]
    assert dlab._host_end("veth9", dict(nic, rate=None)) == ["ip link set dev veth9 mtu 9000"]
    assert dlab._host_end("veth9", dict(nic, ifb="bm1"))[1:] == base.port_commands("veth9", "bm1")


# ------------------------------------------------------------------ underlay subnets

def _metagraph(groups, per_group):
    """{network: containers} of a meta-graph lab with C=1: a LAN per group and
    a point-to-point network per pair of nodes."""
    lans = {"lab-group%d" % g: per_group for g in range(groups)}
    links = {"lab-node%04d--node%04d" % (k, k + 1): 2 for k in range(groups * per_group // 2)}
    return {**lans, **links}


def _spans(subnets):
    return sorted(dlab._span(s) for s in subnets.values())


def test_subnet_size_counts_the_containers_and_three_more():
    assert [dlab.subnet_size(n) for n in (0, 1, 2, 5, 6, 13, 32, 61, 62)] == [4, 4, 8, 8, 16, 16, 64, 64, 128]


def test_networks_are_sized_aligned_and_packed_in_the_lab_16():
    first = dlab.UNDERLAY + (7 << 16)
    members = _metagraph(32, 32)                 # 1,024 nodes: 32 LANs, 512 links
    subnets = dlab.allocate(members, first)
    assert len(subnets) == 544
    assert {s.split("/")[1] for n, s in subnets.items() if "group" in n} == {"26"}
    assert {s.split("/")[1] for n, s in subnets.items() if "--" in n} == {"29"}
    spans = _spans(subnets)
    assert all(lo % (hi - lo) == 0 for lo, hi in spans)                       # aligned on their size
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))                # no overlap
    assert spans[0][0] == first and spans[-1][1] == first + 32 * 64 + 512 * 8  # packed, no gap


def test_allocation_is_deterministic():
    members = _metagraph(4, 9)
    shuffled = dict(sorted(members.items(), key=lambda kv: hashlib.sha1(kv[0].encode()).digest()))
    assert dlab.allocate(members, dlab.UNDERLAY) == dlab.allocate(shuffled, dlab.UNDERLAY)
    # largest first, then by name
    subnets = dlab.allocate({"b": 2, "a": 2, "c": 29}, dlab.UNDERLAY)
    assert subnets == {"c": "100.64.0.0/27", "a": "100.64.0.32/29", "b": "100.64.0.40/29"}


def test_allocation_keeps_a_kept_network_and_avoids_taken_subnets():
    taken = {"a": "100.64.0.8/29", "other": "100.64.0.32/27", "small": "100.64.1.0/30"}
    subnets = dlab.allocate({"a": 2, "b": 2, "c": 29, "small": 2}, dlab.UNDERLAY, taken)
    assert subnets["a"] == "100.64.0.8/29"                    # the engine kept it: reused
    assert subnets["small"] != "100.64.1.0/30"                # too small for 2 containers: not reused
    # packed after what is taken (a gap before it is not filled again: kept networks are rare)
    assert (subnets["c"], subnets["b"], subnets["small"]) == ("100.64.0.64/27", "100.64.0.96/29",
                                                              "100.64.0.104/29")
    spans = _spans({**subnets, "other": taken["other"], "old": taken["small"]})
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def test_networks_that_do_not_fit_the_16_are_refused():
    links = {"l%05d" % k: 2 for k in range(8192)}
    assert len(dlab.allocate(links, dlab.UNDERLAY)) == 8192           # exactly 65,536 addresses
    links["l99999"] = 2
    with pytest.raises(LabError, match="8193 networks .* need 65544 underlay addresses, more than the "
                                       "/16 100.64.0.0 holds \\(65536\\).* at most 8192"):
        dlab.allocate(links, dlab.UNDERLAY)


def test_docker_lab_networks_get_their_sized_subnets(host, testbed, tmp_path):
    dlab.up(str(testbed), str(tmp_path), "t1")
    dlab.up(str(testbed), str(tmp_path), "t2")
    mine = {n: s for n, s in host.subnets.items() if host.networks[n] == "t1"}
    assert {s.split("/")[1] for n, s in mine.items() if "group" in n} == {"28"}     # 9 nodes + 3
    assert {s.split("/")[1] for n, s in mine.items() if "--" in n} == {"29"}
    spans = _spans(host.subnets)                         # both labs: never overlapping
    assert len(spans) == 44 and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert len({s.split(".")[1] for s in host.subnets.values()}) == 2       # a /16 each


def test_docker_lab_reuses_a_network_the_engine_kept(host, testbed, tmp_path, capsys):
    host.networks["t1-group0"], host.subnets["t1-group0"] = "t1", "100.73.0.16/28"
    dlab.up(str(testbed), str(tmp_path), "t1")
    assert "reusing network t1-group0" in capsys.readouterr().out
    assert not any(c[:3] == ["docker", "network", "create"] and c[-1] == "t1-group0" for c in host.log)
    assert host.subnets["t1-group0"] == "100.73.0.16/28"
    assert all(s.startswith("100.73.") for s in host.subnets.values())     # the lab's /16
    assert all(a[1] <= b[0] for a, b in zip(_spans(host.subnets), _spans(host.subnets)[1:]))


def test_docker_lab_refuses_a_kept_network_too_small(host, testbed, tmp_path):
    host.networks["t1-group0"], host.subnets["t1-group0"] = "t1", "100.73.0.16/29"
    with pytest.raises(LabError, match="network t1-group0, which the engine kept, has "
                                       "100.73.0.16/29: too small for its 9 containers"):
        dlab.up(str(testbed), str(tmp_path), "t1")
    assert not any(c[:2] == ["docker", "run"] or c[:3] == ["docker", "network", "create"] for c in host.log)


def test_docker_lab_too_big_for_its_16_fails_before_creating_anything(host, testbed, tmp_path,
                                                                       monkeypatch):
    monkeypatch.setattr(dlab, "subnet_size", lambda containers: 4096)   # 22 networks of 4,096
    host.sysctl.values = {GC1: 8, GC2: 16, GC3: 32}                     # so the lab raises them
    with pytest.raises(LabError, match="lab t1: 22 networks .* more than the /16"):
        dlab.up(str(testbed), str(tmp_path), "t1")
    assert not any(c[:2] == ["docker", "run"] or c[:3] == ["docker", "network", "create"] for c in host.log)
    assert not (tmp_path / ".lab" / "t1").exists()
    assert host.sysctl.values == {GC1: 8, GC2: 16, GC3: 32} and not host.record.exists()   # put back


# ------------------------------------------------------------------ containers in parallel

def test_each_runs_every_job_and_names_every_failure(monkeypatch):
    monkeypatch.setenv("BEONET_LAB_WORKERS", "3")
    ran = []

    def job(k):
        ran.append(k)
        if k in (2, 5):
            raise LabError("docker run failed: no space")
        if k == 7:
            raise KeyError("02:42:00:00:00:07")
        return k * k

    jobs = {"c%d" % k: (lambda k=k: job(k)) for k in range(10)}
    with pytest.raises(LabError) as exc:
        dlab._each("starting", jobs)
    assert str(exc.value) == ("starting failed on 3 of 10 containers: c2: docker run failed: no space; "
                              "c5: docker run failed: no space; c7: KeyError: '02:42:00:00:00:07'")
    assert sorted(ran) == list(range(10))
    del jobs["c2"], jobs["c5"], jobs["c7"]
    assert list(dlab._each("starting", jobs).items()) == [("c%d" % k, k * k) for k in (0, 1, 3, 4, 6, 8, 9)]


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_workers_from_the_environment(monkeypatch, value):
    monkeypatch.setenv("BEONET_LAB_WORKERS", value)
    with pytest.raises(LabError, match="BEONET_LAB_WORKERS=%s: not a number" % value):
        dlab._workers()
    monkeypatch.setenv("BEONET_LAB_WORKERS", "3")
    assert dlab._workers() == 3
    monkeypatch.delenv("BEONET_LAB_WORKERS")
    assert dlab._workers() == dlab.WORKERS == 8


@pytest.mark.parametrize("wiring", ["plan", "scrambled"])
def test_parallel_lab_is_the_same_as_the_sequential_one(monkeypatch, testbed, tmp_path, tmp_path_factory,
                                                        wiring):
    """State record, inventory and wiring truth do not depend on the workers."""
    out = []
    for workers in ("1", "8"):
        fake = _install(monkeypatch, FakeDockerHost(), tmp_path_factory.mktemp("run"))
        monkeypatch.setenv("BEONET_LAB_WORKERS", workers)
        root = tmp_path / workers
        root.mkdir()
        dlab.up(str(testbed), str(root), "t", wiring=wiring, miswire=2 if wiring == "scrambled" else 0)
        folder = root / ".lab" / "t"
        files = {f.name: f.read_text().replace(str(root), "ROOT") for f in sorted(folder.iterdir())}
        out.append((files, sorted(fake.containers), fake.subnets))
    assert out[0] == out[1]


class FailingDockerHost(FakeDockerHost):
    """A host where two containers do not start."""

    def run(self, cmd, check=True):
        if cmd[:2] == ["docker", "run"] and cmd[cmd.index("--name") + 1] in ("t-node05", "t-node30"):
            self.log.append(cmd)
            raise LabError("docker run -d --name failed: no space left on device")
        return super().run(cmd, check)


def test_containers_that_fail_to_start_are_named_together(monkeypatch, testbed, tmp_path, tmp_path_factory):
    fake = _install(monkeypatch, FailingDockerHost(), tmp_path_factory.mktemp("run"))
    with pytest.raises(LabError, match="^starting failed on 2 of 36 containers: t-node05: docker run -d "
                                       "--name failed: no space left on device; t-node30: "):
        dlab.up(str(testbed), str(tmp_path), "t")
    assert len(fake.containers) == 34                 # the others were started all the same
    dlab.down(str(testbed), str(tmp_path), "t")       # and the saved state takes them down
    assert not fake.containers and not fake.networks and fake.sysctl.values == DEFAULTS


# ------------------------------------------------------------------ the host's neighbour table

def test_neighbour_need_is_every_node_times_its_neighbours():
    def need(name):
        return hostlimits.neighbour_need(render.plan(pipeline.compile_file(str(ROOT / "topologies" / name))))
    assert need("metanode-testbed.yml") == 4 * 9 * 8 + 18 * 2        # 4 LANs of 9, 18 links
    assert need("switch-tree.yml") == 32 * 31                        # one LAN over 4 leaf switches
    assert need("bonded-dual-net.yml") == 16 * 15                    # the bond's LAN, not its channels
    assert need("benchmarks/lab-metagraph-128.yml") == 8 * 16 * 15 + 64 * 2


def test_limits_wanted_and_never_lowered():
    assert hostlimits.wanted(4096) == {GC1: 1152, GC2: 4608, GC3: 9216}      # need + 1/8, 1 : 4 : 8
    assert hostlimits.wanted(324) == {GC1: 113, GC2: 452, GC3: 904}          # a 36-node lab: defaults hold it
    assert hostlimits.targets(DEFAULTS, 324) == DEFAULTS
    assert hostlimits.targets(DEFAULTS, 4096) == {GC1: 1152, GC2: 4608, GC3: 9216}
    assert hostlimits.targets({GC1: 9000, GC2: 600, GC3: 20000}, 4096) == {GC1: 9000, GC2: 9000, GC3: 20000}


def _gc(fake):
    return tuple(fake.sysctl.values[k] for k in (GC1, GC2, GC3))


def test_docker_lab_raises_the_neighbour_table_and_puts_it_back(host, tree, tmp_path, capsys):
    dlab.up(str(tree), str(tmp_path), "t1")                 # 32 nodes on one LAN: 992 entries
    assert _gc(host) == (280, 1120, 2240)
    assert host.sysctl.writes == [(GC3, 2240), (GC2, 1120), (GC1, 280)]     # highest first
    saved = json.loads((tmp_path / ".lab" / "t1" / base.DOCKER_STATE).read_text())
    assert saved["host_limits"] == {"need": 992, "total": 992, "found": DEFAULTS,
                                    "set": {GC1: 280, GC2: 1120, GC3: 2240}}
    assert "net.ipv4.neigh.default.gc_thresh3 1024 -> 2240" in capsys.readouterr().out
    record = json.loads(host.record.read_text())
    assert record["original"] == DEFAULTS and list(record["holders"]) == [str(tmp_path / ".lab" / "t1")]
    host.sysctl.writes.clear()
    dlab.down(str(tree), str(tmp_path), "t1")
    assert _gc(host) == (128, 512, 1024) and not host.record.exists()
    assert host.sysctl.writes == [(GC1, 128), (GC2, 512), (GC3, 1024)]      # lowest first
    assert "gc_thresh3 put back to 1024" in capsys.readouterr().out


@pytest.mark.parametrize("first_down", ["t1", "t2"])
def test_two_labs_keep_the_true_originals(host, tree, tmp_path, first_down):
    dlab.up(str(tree), str(tmp_path), "t1")
    dlab.up(str(tree), str(tmp_path), "t2")                 # both labs' entries: 1,984
    assert _gc(host) == (558, 2232, 4464)
    saved = json.loads((tmp_path / ".lab" / "t2" / base.DOCKER_STATE).read_text())
    assert saved["host_limits"]["found"] == {GC1: 280, GC2: 1120, GC3: 2240}  # what t1 had set
    assert json.loads(host.record.read_text())["original"] == DEFAULTS       # the true ones
    dlab.down(str(tree), str(tmp_path), first_down)
    assert _gc(host) == (558, 2232, 4464)                   # the other lab is up: never lowered
    dlab.down(str(tree), str(tmp_path), {"t1": "t2", "t2": "t1"}[first_down])
    assert _gc(host) == (128, 512, 1024) and not host.record.exists()


def test_a_small_lab_changes_nothing_but_holds_a_bigger_ones_limits(host, tree, hub, tmp_path):
    dlab.up(str(hub), str(tmp_path), "small")
    assert host.sysctl.writes == [] and _gc(host) == (128, 512, 1024)
    dlab.up(str(tree), str(tmp_path), "big")               # 24 + 992 entries
    assert _gc(host) == (286, 1144, 2288)
    dlab.down(str(tree), str(tmp_path), "big")
    assert _gc(host) == (286, 1144, 2288)                   # the small lab is still up
    dlab.down(str(hub), str(tmp_path), "small")
    assert _gc(host) == (128, 512, 1024) and not host.record.exists()


def test_limits_high_enough_are_left_alone_even_read_only(host, tree, tmp_path):
    host.sysctl.values = {GC1: 4096, GC2: 8192, GC3: 16384}
    host.sysctl.readonly = {GC1, GC2, GC3}
    dlab.up(str(tree), str(tmp_path))
    dlab.down(str(tree), str(tmp_path))
    assert host.sysctl.writes == [] and _gc(host) == (4096, 8192, 16384)


def test_limits_that_cannot_be_raised_are_refused_before_anything_is_created(host, tree, tmp_path):
    host.sysctl.readonly = {GC2}                            # gc_thresh3 is written first, then put back
    with pytest.raises(LabError) as exc:
        dlab.up(str(tree), str(tmp_path), "t1")
    msg = str(exc.value)
    assert "net.ipv4.neigh.default.gc_thresh2 is 512, the lab needs 1120" in msg
    assert "net.ipv4.neigh.default.gc_thresh3 is 1024, the lab needs 2240" in msg
    assert "Permission denied" in msg
    assert ("sysctl -w net.ipv4.neigh.default.gc_thresh1=280 net.ipv4.neigh.default.gc_thresh2=1120 "
            "net.ipv4.neigh.default.gc_thresh3=2240") in msg
    assert host.log == [] and not (tmp_path / ".lab" / "t1").exists()
    assert host.sysctl.writes == [(GC3, 2240), (GC3, 1024)] and _gc(host) == (128, 512, 1024)
    assert not host.record.exists()


def test_a_limit_changed_since_is_left_as_it_is(host, tree, tmp_path, capsys):
    dlab.up(str(tree), str(tmp_path))
    host.sysctl.values[GC3] = 50000                         # someone else raised it further
    dlab.down(str(tree), str(tmp_path))
    assert _gc(host) == (128, 512, 50000)
    assert "gc_thresh3 left at 50000 (changed since the lab set 2240)" in capsys.readouterr().out


def test_a_lab_gone_without_down_does_not_hold_the_limits(host, tree, hub, tmp_path, monkeypatch):
    """An interrupted `lab up` (its process ended, no state record) is dropped."""
    dlab.up(str(tree), str(tmp_path), "gone")
    record = json.loads(host.record.read_text())
    record["holders"][str(tmp_path / ".lab" / "gone")]["pid"] = 999999999
    host.record.write_text(json.dumps(record))
    base.remove_state(str(tmp_path / ".lab" / "gone"))
    monkeypatch.setattr(hostlimits, "alive", lambda pid: pid != 999999999)
    dlab.up(str(hub), str(tmp_path), "small")
    dlab.down(str(hub), str(tmp_path), "small")
    assert _gc(host) == (128, 512, 1024) and not host.record.exists()


def _interrupt(*args):
    raise KeyboardInterrupt


def test_an_interrupted_up_leaves_the_limits_to_its_down(host, tree, tmp_path, monkeypatch):
    monkeypatch.setattr(dlab, "_start_containers", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        dlab.up(str(tree), str(tmp_path))
    assert _gc(host) == (280, 1120, 2240)                   # the saved state's lab still holds them
    dlab.down(str(tree), str(tmp_path))
    assert _gc(host) == (128, 512, 1024) and not host.record.exists() and not host.containers


def test_up_stopped_before_its_state_is_saved_puts_the_limits_back(host, tree, tmp_path, monkeypatch):
    monkeypatch.setattr(dlab, "_lab_subnets", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        dlab.up(str(tree), str(tmp_path))
    assert _gc(host) == (128, 512, 1024) and not host.record.exists()
    # killed there (no `finally` ran): `lab down` finds no state and puts them back all the same
    hostlimits.acquire(str(tmp_path / ".lab" / "beonet-tree"), "beonet-switch-tree", 992)
    assert _gc(host) == (280, 1120, 2240)
    dlab.down(str(tree), str(tmp_path))
    assert _gc(host) == (128, 512, 1024) and not host.record.exists()


def test_a_host_record_that_cannot_be_kept_is_a_lab_error(host, tree, tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setattr(hostlimits, "HOST_RECORD", str(tmp_path / "file" / "host-sysctl.json"))
    with pytest.raises(LabError, match="gc_thresh3 is 1024, the lab needs 2240; they cannot be raised "
                                       "from here \\(cannot keep the host's record .* needs root\\)"
                                       "\\. As root run `sysctl -w "):
        dlab.up(str(tree), str(tmp_path))            # not root: the settings it needs are named
    host.sysctl.values = {GC1: 4096, GC2: 8192, GC3: 16384}
    with pytest.raises(LabError, match="^cannot keep the host's record .* a Docker lab needs root$"):
        dlab.up(str(tree), str(tmp_path))
    host.record.write_text("{not json")
    monkeypatch.setattr(hostlimits, "HOST_RECORD", str(host.record))
    with pytest.raises(LabError, match="host-sysctl.json: unreadable"):
        dlab.up(str(tree), str(tmp_path))
    assert host.log == [] and host.sysctl.writes == []


def _plan_of(family, params, engine):
    text = json.dumps({"name": "t", "family": family, family: params, "routing": {"engine": engine}})
    return render.plan(pipeline.compile_text(text, "t.yml"))


@pytest.mark.parametrize("engine,env,image", [
    ("static", {}, "beonet-node:trixie-2"),
    ("frr", {}, "beonet-node-frr:trixie-2"),
    ("frr", {"BEONET_SUITE": "bookworm"}, "beonet-node-frr:bookworm-2"),
    ("frr", {"BEONET_IMAGE_VARIANT": "frr"}, "beonet-node-frr:trixie-2"),
    ("static", {"BEONET_IMAGE_VARIANT": "mpi"}, "beonet-node-mpi:trixie-3"),
    ("frr", {"BEONET_IMAGE_VARIANT": "mpi"}, "beonet-node-mpi:trixie-3"),      # it has FRR too
    ("frr", {"BEONET_IMAGE": "mine:1", "BEONET_IMAGE_VARIANT": "mpi"}, "mine:1"),
])
def test_the_node_image_follows_the_routing_engine(engine, env, image):
    assert dlab.node_image(_plan_of("mesh", {"dims": [2, 2]}, engine), env) == image


@pytest.mark.parametrize("engine,variant,message", [
    ("static", "bogus", "BEONET_IMAGE_VARIANT=bogus: not one of frr, mpi"),
])
def test_a_node_image_variant_that_cannot_serve_is_refused(engine, variant, message):
    with pytest.raises(LabError, match=message):
        dlab.image_variant(_plan_of("mesh", {"dims": [2, 2]}, engine), {"BEONET_IMAGE_VARIANT": variant})


@pytest.fixture
def frr_mesh(tmp_path, monkeypatch):
    """A 2x2 mesh with routing.engine frr, no image chosen by the environment."""
    for name in ("BEONET_IMAGE", "BEONET_IMAGE_VARIANT", "BEONET_SUITE"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "frr.yml"
    path.write_text(json.dumps({"name": "frr", "family": "mesh", "mesh": {"dims": [2, 2]},
                                "routing": {"engine": "frr"}}))
    return str(path)


def test_an_frr_topologys_lab_runs_the_frr_image(host, frr_mesh, tmp_path):
    dlab.up(frr_mesh, str(tmp_path))
    runs = [cmd for cmd in host.log if cmd[:3] == ["docker", "run", "-d"]]
    assert len(runs) == 4
    assert all(cmd[-3:] == ["beonet-node-frr:trixie-2", "sleep", "infinity"] for cmd in runs)
    assert ["docker", "image", "inspect", "beonet-node-frr:trixie-2"] in host.log


def test_a_missing_frr_image_names_its_build_command(host, frr_mesh, tmp_path, monkeypatch):
    monkeypatch.setattr(dlab, "_ok", lambda cmd: cmd[:3] != ["docker", "image", "inspect"] and host.ok(cmd))
    with pytest.raises(LabError, match="beonet-node-frr:trixie-2 missing: run scripts/build-image.sh frr"):
        dlab.up(frr_mesh, str(tmp_path))


def test_the_image_a_topologys_lab_needs_is_named_for_build_image(frr_mesh, capsys):
    """make demo builds what the chosen topology needs: `beonet lab image` names the
    argument of scripts/build-image.sh for every shipped topology."""
    for path in sorted((ROOT / "topologies").glob("*.yml")):
        frr = "engine: frr" in path.read_text()
        assert dlab.needed_variant(str(path), {}) == ("frr" if frr else "node"), path.name
    assert dlab.needed_variant(frr_mesh, {}) == "frr"
    mesh = str(ROOT / "topologies/routed-mesh.yml")
    assert dlab.needed_variant(mesh, {"BEONET_IMAGE_VARIANT": "mpi"}) == "mpi"
    assert cli.main(["lab", "image", frr_mesh]) == 0
    assert capsys.readouterr().out == "frr\n"


@needs_host("build-image.sh's check of its argument in the machine's bash (it touches nothing first)", "bash")
def test_build_image_refuses_a_variant_it_does_not_know():
    res = subprocess.run(["bash", str(ROOT / "scripts/build-image.sh"), "fr"], capture_output=True, text=True,
                         timeout=30, env={"PATH": "/usr/bin:/bin", "BEONET_IMAGE": "x:1"})
    assert res.returncode == 2 and "unknown image variant 'fr'" in res.stderr
