"""lab fault --cable and --switch (and --link beside them) on both labs, without
Docker or QEMU: a fake host keeps every container NIC's veth host end and
whether it is up, a fake QEMU monitor the set_link commands. A cut cable takes
both ends of a point-to-point link down and one NIC on a LAN; a switch every
NIC on it; a restore brings back exactly what no other fault holds down;
every refusal changes nothing."""

import json

import pytest
from conftest import ROOT
from test_labs import FakeDockerHost, FakeVmHost, _copy, _install

from beonet import cli
from beonet.labs import base, faults
from beonet.labs import docker as dlab
from beonet.labs import vm as vmlab
from beonet.labs.base import LabError

LAB = "beonet-custom-example"


class CarrierDockerHost(FakeDockerHost):
    """The fake Docker host where each container NIC has its own veth host end
    (h:CONTAINER:NIC), set down and up by `ip link set`."""

    def __init__(self):
        super().__init__()
        self.down = set()

    def _ends(self):
        return ["h:%s:eth%d" % (c, i) for c, v in self.containers.items() for i in range(len(v["networks"]))]

    def run(self, cmd, check=True):
        if cmd == ["ip", "-j", "link"]:
            self.log.append(cmd)
            return json.dumps([{"ifindex": i, "ifname": n} for i, n in enumerate(self._ends(), 1000)])
        if cmd[:2] == ["docker", "exec"] and cmd[3:7] == ["ip", "-j", "link", "show"]:
            self.log.append(cmd)
            return json.dumps([{"ifname": cmd[-1],
                                "link_index": 1000 + self._ends().index("h:%s:%s" % (cmd[2], cmd[-1]))}])
        if cmd[:4] == ["ip", "link", "set", "dev"] and cmd[-1] in ("down", "up"):
            (self.down.add if cmd[-1] == "down" else self.down.discard)(cmd[4])
        return super().run(cmd, check)

    def sets(self):
        """The `ip link set ... down|up` commands run so far."""
        return [c for c in self.log if c[:4] == ["ip", "link", "set", "dev"]]


@pytest.fixture
def carrier(monkeypatch, tmp_path_factory):
    return _install(monkeypatch, CarrierDockerHost(), tmp_path_factory.mktemp("run"))


@pytest.fixture
def custom(tmp_path):
    """A copy of custom-example.yml: a bonded LAN (two channels), a LAN, two
    point-to-point links."""
    return _copy(tmp_path, "custom-example.yml", "custom")


def _state(tmp_path, folder="beonet-custom", name=base.DOCKER_STATE):
    return tmp_path / ".lab" / folder / name


def _without_carrier(host, tmp_path):
    """The NICs (NODE:plan name) whose host end is down."""
    wired = json.loads(_state(tmp_path).read_text())["wired"]
    names = {("%s-%s" % (LAB, node), w["name"]): "%s:%s" % (node, w["logical"])
             for node, ws in wired.items() for w in ws}
    return sorted(names[tuple(end.split(":")[1:])] for end in host.down)


@pytest.fixture
def lab(carrier, custom, tmp_path):
    """The custom example's Docker lab up on the fake host; fault(**kw)."""
    dlab.up(str(custom), str(tmp_path))
    carrier.log.clear()

    def fault(**kw):
        return faults.fault(str(custom), str(tmp_path), None, "docker", **kw)
    return fault


def test_lab_segments_name_each_wire_and_each_lan_made_of_several():
    plan = vmlab.render.plan(vmlab.pipeline.compile_file(str(ROOT / "topologies" / "custom-example.yml")))
    segs = vmlab.layout(plan, "x")["segments"]
    assert sorted(segs) == ["a3--b1", "head--b2", "rack-a", "rack-a-ch0", "rack-a-ch1", "rack-b"]
    assert segs["a3--b1"] == {"kind": "p2p", "nics": ["a3:eth3", "b1:eth2"]}
    assert segs["rack-b"] == {"kind": "switch", "nics": ["b1:eth1", "b2:eth1", "b3:eth1"]}
    assert segs["rack-a-ch1"]["nics"] == ["head:eth2", "a1:eth2", "a2:eth2", "a3:eth2"]
    assert segs["rack-a"]["kind"] == "switch"       # the bonded LAN: both channels
    assert sorted(segs["rack-a"]["nics"]) == sorted(segs["rack-a-ch0"]["nics"] + segs["rack-a-ch1"]["nics"])


def test_docker_tree_segments_are_its_leaf_switches_and_its_lan(carrier, tmp_path):
    tree = _copy(tmp_path, "switch-tree.yml", "tree")
    dlab.up(str(tree), str(tmp_path))
    segs = json.loads(_state(tmp_path, "beonet-tree").read_text())["segments"]
    leaves = sorted(s for s in segs if s != "net0")
    assert leaves == ["leaf0", "leaf1", "leaf2", "leaf3"]
    assert all(segs[s]["kind"] == "switch" and len(segs[s]["nics"]) == 8 for s in leaves)
    assert sorted(segs["net0"]["nics"]) == sorted(n for s in leaves for n in segs[s]["nics"])
    carrier.log.clear()
    out = faults.fault(str(tree), str(tmp_path), None, "docker", switch="leaf2", action="down")
    assert out == "beonet-switch-tree: switches down: leaf2"
    assert len(carrier.down) == 8 and len(carrier.sets()) == 8


def test_a_cut_p2p_cable_takes_both_ends_down(lab, carrier, tmp_path, capsys):
    assert lab(cable="a3:eth3", action="down") == LAB + ": cables cut: a3:eth3"
    assert _without_carrier(carrier, tmp_path) == ["a3:eth3", "b1:eth2"]
    assert "cable a3:eth3 down: a3:eth3, b1:eth2 lost carrier" in capsys.readouterr().out
    # a second cut (either end's NIC, by the plan's name) changes nothing and says so
    carrier.log.clear()
    assert lab(cable="a3:eth3", action="down") == LAB + ": cables cut: a3:eth3"
    assert carrier.sets() == [] and "(it already was)" in capsys.readouterr().out
    assert lab(cable="a3:eth3", action="up") == LAB + ": nothing is down"
    assert carrier.down == set() and len(carrier.sets()) == 2


def test_a_cut_lan_cable_takes_only_that_nic_down(lab, carrier, tmp_path):
    assert lab(cable="b1:eth1", action="down") == LAB + ": cables cut: b1:eth1"
    assert _without_carrier(carrier, tmp_path) == ["b1:eth1"]
    lab(cable="b1:eth1", action="up")
    assert carrier.down == set()


def test_the_container_name_of_a_nic_is_the_same_cable(lab, carrier, tmp_path):
    """A NIC named by the container's name (one no plan NIC of the node has)."""
    wired = json.loads(_state(tmp_path).read_text())["wired"]["a3"]
    w = next(w for w in wired if w["name"] not in {v["logical"] for v in wired})
    lab(cable="a3:" + w["logical"], action="down")
    assert lab(cable="a3:" + w["name"], action="up") == LAB + ": nothing is down"
    assert carrier.down == set()


def test_a_switch_down_takes_every_member_down_and_up_restores_exactly(lab, carrier, tmp_path, capsys):
    assert lab(switch="rack-b", action="down") == LAB + ": switches down: rack-b"
    assert _without_carrier(carrier, tmp_path) == ["b1:eth1", "b2:eth1", "b3:eth1"]
    # a cable already dark with its switch: recorded, nothing run
    carrier.log.clear()
    lab(cable="b2:eth1", action="down")
    lab(link="b3:eth1", action="down")
    assert carrier.sets() == []
    assert lab() == LAB + ": links down: b3:eth1; cables cut: b2:eth1; switches down: rack-b"
    capsys.readouterr()
    lab(switch="rack-b", action="up")          # the cut cable and link stay down
    assert _without_carrier(carrier, tmp_path) == ["b2:eth1", "b3:eth1"]
    assert "b1:eth1 have carrier again; b2:eth1, b3:eth1 down by another fault" in capsys.readouterr().out
    lab(cable="b2:eth1", action="up")
    lab(link="b3:eth1", action="up")
    assert carrier.down == set() and lab() == LAB + ": nothing is down"


def test_a_bonded_lan_down_takes_both_channels_down(lab, carrier, tmp_path):
    lab(switch="rack-a", action="down")
    assert _without_carrier(carrier, tmp_path) == sorted(
        "%s:eth%d" % (n, k) for n in ("a1", "a2", "a3", "head") for k in (1, 2))
    lab(switch="rack-a", action="up")
    assert carrier.down == set()


def test_a_stopped_node_cannot_be_cut_and_gets_its_cuts_back_when_started(lab, carrier, tmp_path):
    lab(cable="head:eth3", action="down")                # head--b2
    lab(node="b2", action="stop")
    before = _state(tmp_path).read_text()
    carrier.log.clear()
    for kw in ({"switch": "rack-b", "action": "down"}, {"cable": "b2:eth1", "action": "down"},
               {"cable": "head:eth3", "action": "up"}, {"link": "b2:eth1", "action": "down"}):
        with pytest.raises(LabError, match="b2 is stopped: start it before changing its links"):
            lab(**kw)
    assert carrier.sets() == [] and _state(tmp_path).read_text() == before
    carrier.down.clear()               # the killed container's veths went with it
    assert lab(node="b2", action="start") == LAB + ": cables cut: head:eth3"
    assert _without_carrier(carrier, tmp_path) == ["b2:eth2"]      # its end of the cut cable
    lab(cable="head:eth3", action="up")
    assert carrier.down == set()


def test_lab_down_works_whatever_is_down(lab, carrier, custom, tmp_path):
    lab(switch="rack-a", action="down")
    lab(cable="a3:eth3", action="down")
    lab(node="b3", action="stop")
    dlab.down(str(custom), str(tmp_path))
    assert carrier.containers == {} and carrier.networks == {}
    assert not (tmp_path / ".lab" / "beonet-custom").exists()


@pytest.mark.parametrize("kw,message", [
    ({"switch": "rack-z", "action": "down"},
     "no switch or segment rack-z in lab beonet-custom-example \\(its switches and segments: "
     "a3--b1, head--b2, rack-a, rack-a-ch0, rack-a-ch1, rack-b\\)"),
    ({"cable": "z9:eth1", "action": "down"}, "no node z9 in lab beonet-custom-example \\(its nodes: head, "),
    ({"cable": "b1:eth7", "action": "down"}, "b1 has no NIC eth7 \\(its NICs: "),
    ({"cable": "b1", "action": "down"}, "--cable: 'b1' is not NODE:NIC"),
    ({"cable": "b1:eth1", "switch": "rack-b", "action": "down"}, "not both --cable and --switch"),
    ({"link": "b1:eth1", "cable": "b1:eth1", "action": "down"}, "not both --link and --cable"),
    ({"node": "b1", "switch": "rack-b", "action": "stop"}, "not both --node and --switch"),
    ({"cable": "b1:eth1"}, "--cable b1:eth1 needs --down or --up"),
    ({"switch": "rack-b"}, "--switch rack-b needs --down or --up"),
    ({"switch": "rack-b", "action": "stop"}, "--switch rack-b needs --down or --up"),
    ({"action": "down"}, "--down needs --link, --cable or --switch"),
])
def test_cable_and_switch_errors_change_nothing(lab, carrier, tmp_path, kw, message):
    lab(cable="a3:eth3", action="down")
    before = _state(tmp_path).read_text()
    carrier.log.clear()
    with pytest.raises(LabError, match=message):
        lab(**kw)
    assert carrier.sets() == [] and _state(tmp_path).read_text() == before


def test_an_older_record_still_loads(lab, carrier, tmp_path):
    """A record from before cables and switches: what is down is read, links
    are cut; --cable and --switch ask for the lab to be brought up again."""
    path = _state(tmp_path)
    record = json.loads(path.read_text())
    del record["segments"]
    record["faults"] = {"nodes": [], "links": ["b1:eth1"]}
    path.write_text(json.dumps(record))
    assert lab() == LAB + ": links down: b1:eth1"
    assert lab(link="b2:eth1", action="down") == LAB + ": links down: b1:eth1, b2:eth1"
    for kw in ({"cable": "b1:eth1"}, {"switch": "rack-b"}):
        with pytest.raises(LabError, match="built by an older beonet: take it down and up again "
                                           "to use lab fault --(cable|switch)"):
            lab(action="down", **kw)


# ------------------------------------------------------------------ VM lab

@pytest.fixture
def vmcustom(monkeypatch, custom, tmp_path):
    """The custom example's VM lab up on a fake host; (fault, the monitor commands sent)."""
    fake = FakeVmHost(vmlab.render.plan(vmlab.pipeline.compile_file(str(custom))))
    (tmp_path / "proc").mkdir()
    monkeypatch.setattr(vmlab, "PROC", str(tmp_path / "proc"))
    for name, value in (("_run", fake.run), ("ssh", fake.ssh), ("_stop", fake.stop),
                        ("_alive", lambda pid: pid in fake.alive), ("_check_host", lambda images: None),
                        ("_netns_exists", lambda n: n in fake.netns), ("_wait_ssh", lambda *a: None)):
        monkeypatch.setattr(vmlab, name, value)
    sent = []
    monkeypatch.setattr(vmlab, "monitor", lambda state, node, command: sent.append((node, command)) or "")
    vmlab.up(str(custom), str(tmp_path))

    def fault(**kw):
        return faults.fault(str(custom), str(tmp_path), None, "vm", **kw)
    return fault, sent


def test_vm_fault_refuses_a_wrong_setting_before_a_node_is_touched(vmcustom, monkeypatch, tmp_path):
    fault, sent = vmcustom
    state = sorted((tmp_path / ".lab").glob("*/" + base.VM_STATE))
    before = [p.read_text() for p in state]
    stopped = []
    monkeypatch.setattr(vmlab, "stop_node", lambda *a: stopped.append(a) or True)
    monkeypatch.setenv("BEONET_VM_BOOT_TIMEOUT", "0")
    for action in ("stop", "start"):
        with pytest.raises(base.LabUsageError, match="BEONET_VM_BOOT_TIMEOUT"):
            fault(node="b2", action=action)
    assert stopped == [] and sent == [] and [p.read_text() for p in state] == before


def test_vm_cable_and_switch_are_set_link_on_each_nic(vmcustom):
    fault, sent = vmcustom
    assert fault(cable="b2:eth2", action="down") == LAB + ": cables cut: b2:eth2"
    assert sorted(sent) == [("b2", "set_link eth2 off"), ("head", "set_link eth3 off")]
    sent.clear()
    fault(cable="b2:eth1", action="down")                       # rack-b: a LAN
    assert sent == [("b2", "set_link eth1 off")]
    sent.clear()
    fault(switch="rack-b", action="down")
    assert sorted(sent) == [("b1", "set_link eth1 off"), ("b3", "set_link eth1 off")]
    sent.clear()
    fault(switch="rack-b", action="up")
    assert sorted(sent) == [("b1", "set_link eth1 on"), ("b3", "set_link eth1 on")]
    with pytest.raises(LabError, match="--cable b2:mgmt: the NIC is on no segment of the plan"):
        fault(cable="b2:mgmt", action="down")
    with pytest.raises(LabError, match="b2 has no NIC eth9 \\(plan NICs: eth1, eth2, mgmt\\)"):
        fault(cable="b2:eth9", action="down")


def test_cli_passes_cable_and_switch(monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(faults, "fault", lambda *a, **kw: seen.update(kw, args=a) or "lab: nothing is down")
    cli.main(["lab", "fault", "t.yml", "--cable", "n1:eth1", "--down"])
    assert (seen["cable"], seen["switch"], seen["action"]) == ("n1:eth1", None, "down")
    cli.main(["lab", "fault", "t.yml", "--provider", "vm", "--switch", "s1", "--up"])
    assert (seen["cable"], seen["switch"], seen["action"], seen["args"][3]) == (None, "s1", "up", "vm")


def test_cli_fault_error_exits_1_and_says_why(custom, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["lab", "fault", str(custom), "--switch", "rack-b", "--down"]) == 1
    assert "beonet lab: no lab in .lab/beonet-custom: bring it up first" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["lab", "fault", str(custom), "--switch", "rack-b", "--down", "--up"])
    assert exc.value.code == 2
