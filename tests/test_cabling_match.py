"""Matching discovered wiring to the plan: mappings from synthesised reports with
scrambled NIC names, every kind of cabling fault, and the two-fault case."""

import copy
import glob
import json
import os
import random
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT, local_play, needs_host
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beonet.cabling import match as cabling
from beonet.cabling.match import Move
from beonet.cabling.sheet import sheet
from beonet.compiler import pipeline
from beonet.outputs import plan as render

TOPOLOGIES = sorted(glob.glob(os.path.join(ROOT, "topologies", "*.yml")))
_COMPILED = {}
_SHEETS = {}


def matched(comp, reports, **kw):
    """cabling.match with the topology's sheet built once."""
    if id(comp) not in _SHEETS:
        _SHEETS[id(comp)] = (comp, sheet(comp))
    return cabling.match(comp, reports, the_sheet=_SHEETS[id(comp)][1], **kw)


def compiled(name):
    if name not in _COMPILED:
        _COMPILED[name] = pipeline.compile_file(os.path.join(ROOT, "topologies", name + ".yml"))
    return _COMPILED[name]


def scramble(comp, rng, extra=2):
    """Random physical names (enpKs0) for every logical NIC of every node."""
    out = {}
    for node in comp.graph.nodes:
        logical = [i.name for i in node.interfaces if i.kind == "ethernet"]
        physical = ["enp%ds0" % k for k in range(len(logical) + extra)]
        rng.shuffle(physical)
        out[node.name] = dict(zip(logical, physical))
    return out


def by_channel(comp, mapping):
    """mapping with each node's NICs listed by the set of physical NICs per network:
    bond channels (one node set) are interchangeable, so compare their wiring."""
    out = set()
    for net in cabling.networks(comp):
        out.add((net.kind, frozenset((n, mapping[n][lg]) for n, lg in net.ends.items())))
    return out


def same_wiring(comp, got, truth):
    """Equal mappings; where networks are interchangeable (bond channels), equal wiring."""
    nets = cabling.networks(comp)
    if len({frozenset(n.ends) for n in nets}) < len(nets):
        return by_channel(comp, got) == by_channel(comp, truth)
    return got == truth


@pytest.mark.parametrize("path", TOPOLOGIES, ids=os.path.basename)
def test_every_family_maps_scrambled_names(path):
    comp = pipeline.compile_file(path)
    truth = scramble(comp, random.Random(path))
    reports = cabling.synthesise(comp, truth, spare=1)
    result = matched(comp, reports)
    assert result.ok, [str(f) for f in result.faults]
    assert same_wiring(comp, result.mapping, truth)
    # with the inventory's mapping at hand, interchangeable channels follow it exactly
    checked = matched(comp, reports, existing=truth)
    assert checked.ok and checked.mapping == truth
    assert all("spare0" in names for names in result.spare.values())


def test_bond_channels_are_the_same_switch_on_every_node():
    comp = compiled("bonded-dual-net")
    truth = scramble(comp, random.Random(3), extra=0)
    reports = cabling.synthesise(comp, truth)
    result = matched(comp, reports)
    wires = {frozenset(d) for d in cabling.domains(cabling.read_reports(reports, truth))}
    for k in ("eth1", "eth2"):
        assert frozenset((n, result.mapping[n][k]) for n in truth) in wires


def test_plan_dict_gives_the_same_networks():
    comp = compiled("custom-example")
    plan = render.plan(comp)
    ours = [(n.name, n.kind, n.ends) for n in cabling.networks(comp)]
    assert [(n.name, n.kind, n.ends) for n in cabling.networks(plan)] == ours
    assert cabling.synthesise(plan) == cabling.synthesise(comp)


# --- faults --------------------------------------------------------------------

def faults(comp, moves=(), mapping=None, existing=None, spare=1, reports=None):
    reports = reports if reports is not None else cabling.synthesise(comp, mapping, spare, moves)
    result = matched(comp, reports, existing=existing)
    assert not result.mapping or not result.faults
    return result.faults


def test_two_faults_name_exactly_the_two_cables():
    """metanode-testbed: one p2p cable moved to a wrong node, one switch cable moved
    to another group's switch: exactly those two cables, and no mapping."""
    comp = compiled("metanode-testbed")
    moves = [Move("node10", "node01--node10", to_node="node21"),
             Move("node07", "group0", to_network="group2")]
    reports = cabling.synthesise(comp, scramble(comp, random.Random(7)), spare=1, moves=moves)
    result = matched(comp, reports)
    assert result.mapping == {}
    assert sorted(f.kind for f in result.faults) == ["moved-p2p", "moved-switch"]
    assert sorted(f.cable for f in result.faults) == ["node01--node10", "sw-group0:07"]
    moved = {f.kind: f for f in result.faults}
    text = moved["moved-p2p"].text
    assert text.startswith("node01 enp") and " reaches node21 spare0; " in text
    assert text.endswith("the sheet puts cable node01--node10 between node01 and node10")
    assert moved["moved-switch"].text.endswith(
        "reaches switch sw-group2; the sheet puts it on sw-group0 port 7 (cable sw-group0:07)")
    assert {"switch": "sw-group0", "port": 7} in moved["moved-switch"].ends


def test_switch_cable_moved_between_bond_channels():
    comp = compiled("bonded-dual-net")
    found = faults(comp, [Move("node05", "net0-ch1", to_network="net0-ch0")])
    assert [f.kind for f in found] == ["moved-switch"]
    assert found[0].text == ("node05 eth2 reaches switch sw-net0-ch0; the sheet puts it on "
                             "sw-net0-ch1 port 5 (cable sw-net0-ch1:05)")


def test_unplugged_p2p_cable_is_one_fault():
    comp = compiled("metanode-testbed")
    found = faults(comp, [Move("node10", "node01--node10")], spare=0)
    assert [(f.kind, f.cable) for f in found] == [("no-carrier", "node01--node10")]
    assert found[0].text == "node01's p2p NIC to node10 has no carrier (no carrier on eth2)"
    assert "plug in or replace cable node01--node10" in found[0].fix


def test_no_carrier_names_the_mapped_nic():
    comp = compiled("metanode-testbed")
    truth = scramble(comp, random.Random(1), extra=0)
    found = faults(comp, [Move("node03", "group0")], mapping=truth, existing=truth, spare=0)
    nic = truth["node03"]["eth1"]
    assert [f.text for f in found] == ["node03 %s (its NIC on switch sw-group0) has no carrier"
                                       % nic]
    assert found[0].fix == "plug node03 %s into sw-group0 port 3 (cable sw-group0:03)" % nic


def test_silent_switch():
    comp = compiled("metanode-testbed")
    members = ["node%02d" % k for k in range(19, 28)]
    found = faults(comp, [Move(n, "group2") for n in members])
    assert [f.kind for f in found] == ["silent-switch"]
    assert "switch sw-group2 carries nothing: none of its 9 nodes" in found[0].text


def test_extra_cable_into_a_switch():
    comp = compiled("metanode-testbed")
    reports = cabling.synthesise(comp, spare=1)
    spare = next(n for n in reports["node02"]["nics"] if n["name"] == "spare0")
    other = next(n for n in reports["node30"]["nics"] if n["name"] == "eth1")
    spare["neighbours"].append({"node": "node30", "nic": "eth1", "mac": other["mac"]})
    found = faults(comp, reports=reports)
    assert [f.kind for f in found] == ["extra"]
    assert found[0].text == ("node02 spare0 reaches switch sw-group3, where the sheet has no "
                             "cable from node02")


def test_swapped_nics_against_the_inventory():
    comp = compiled("metanode-testbed")
    wired = {"node12": {"eth1": "enp4s0", "eth2": "enp3s0"}}
    inventory = {"node12": {"eth1": "enp3s0", "eth2": "enp4s0"}}
    found = faults(comp, mapping=wired, existing=inventory)
    assert [f.text for f in found] == ["node12 enp3s0 and enp4s0 are swapped"]
    assert "{eth1: enp4s0, eth2: enp3s0}" in found[0].fix


def test_wrong_name_in_the_inventory():
    comp = compiled("routed-mesh")
    inventory = {"node-0-0": {"eth1": "eth1", "eth2": "enp9s0"}}
    found = faults(comp, existing=inventory)
    assert [f.kind for f in found] == ["mapping"]
    assert found[0].text == ("node-0-0 maps eth2 to enp9s0, but the cable the sheet puts on "
                             "eth2 reaches eth2")


def test_missing_and_malformed_reports():
    comp = compiled("routed-mesh")
    reports = cabling.synthesise(comp)
    del reports["node-3-3"]
    reports["node-0-1"] = {"format": 2, "node": "node-0-1", "nics": []}
    reports["node-0-2"] = "not a report"
    reports["node-0-3"]["nics"].append({"carrier": True})
    found = faults(comp, reports=reports)
    texts = [f.text for f in found if f.kind == "report"]
    assert "no discovery report for node-3-3" in texts
    assert "the discovery report of node-0-2 has no list of nics" in texts
    assert any(t.startswith("the discovery report of node-0-1 is of format 2") for t in texts)
    assert "the discovery report of node-0-3 has no name in nics[2]" in texts


def test_one_mac_on_two_nodes_of_one_segment_is_a_cabling_fault():
    """Cloned VMs: node02's NIC on the LAN holds node01's MAC address."""
    comp = compiled("single-net")
    reports = cabling.synthesise(comp)
    mine = {nic["name"]: nic for nic in reports["node01"]["nics"]}["eth1"]
    theirs = {nic["name"]: nic for nic in reports["node02"]["nics"]}["eth1"]
    theirs["mac"] = mine["mac"].upper()
    result = matched(comp, reports)
    assert result.mapping == {}
    assert [(f.kind, str(f)) for f in result.faults] == [(
        "duplicate-mac", "node01 eth1 and node02 eth1 hold one MAC address, %s, on one segment: give "
        "each NIC a MAC address of its own (a cloned VM keeps its template's) and run "
        "playbooks/discover.yml again" % mine["mac"].lower())]
    assert result.faults[0].ends == [{"node": "node01", "nic": "eth1"}, {"node": "node02", "nic": "eth1"}]


def test_one_mac_on_two_segments_is_no_fault():
    """routed-mesh: node-0-0 and node-2-2 share no segment."""
    comp = compiled("routed-mesh")
    reports = cabling.synthesise(comp)
    here = [nic for nic in reports["node-0-0"]["nics"] if nic["neighbours"]][0]
    there = [nic for nic in reports["node-2-2"]["nics"] if nic["neighbours"]][0]
    near = {n["node"] for n in there["neighbours"]} | {"node-2-2"}
    assert not {n["node"] for n in here["neighbours"]} & near
    there["mac"] = here["mac"]
    assert matched(comp, reports).ok


def test_management_and_skipped_nics_do_not_join_domains():
    comp = compiled("single-net")
    reports = cabling.synthesise(comp)
    for host, report in reports.items():
        report["nics"].append({"name": "eth0", "carrier": True, "neighbours": [
            {"node": other, "nic": "eth0"} for other in reports if other != host]})
        report["management"] = ["eth0"]
    result = matched(comp, reports)
    assert result.ok and result.mapping["node01"] == {"eth1": "eth1"}


@settings(max_examples=80, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1),
       name=st.sampled_from(["metanode-testbed", "metanode-fig2", "routed-mesh",
                             "custom-example", "switch-tree", "bonded-dual-net"]),
       spare=st.integers(0, 2))
def test_random_scramble_maps_back_to_the_truth(seed, name, spare):
    comp = compiled(name)
    truth = scramble(comp, random.Random(seed), extra=spare)
    reports = cabling.synthesise(comp, truth, spare=spare)
    order = list(reports.items())
    random.Random(seed).shuffle(order)
    for _host, report in order:
        random.Random(seed).shuffle(report["nics"])
    result = matched(comp, dict(order))
    assert result.ok and same_wiring(comp, result.mapping, truth)


@settings(max_examples=100, deadline=None, database=None)
@given(data=st.data())
def test_damaged_reports_never_raise(data):
    comp = compiled("custom-example")
    reports = json.loads(json.dumps(cabling.synthesise(comp, spare=1)))
    junk = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4),
                        lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.sampled_from(["name", "node", "nic", "carrier",
                                                           "neighbours", "nics"]), inner,
                                          max_size=3), max_leaves=8)
    host = data.draw(st.sampled_from(sorted(reports)))
    key = data.draw(st.sampled_from(["nics", "management", "skipped", "format", "node"]))
    damaged = copy.deepcopy(reports)
    damaged[host][key] = data.draw(junk)
    result = matched(comp, damaged)
    assert result.ok or result.faults


def test_synthesise_refuses_impossible_moves():
    comp = compiled("metanode-testbed")
    with pytest.raises(ValueError, match="node21 has no spare NIC"):
        cabling.synthesise(comp, moves=[Move("node10", "node01--node10", to_node="node21")])
    with pytest.raises(ValueError, match="node30 has no NIC on group0"):
        cabling.synthesise(comp, moves=[Move("node30", "group0")])


def test_cabling_doc_has_the_walkthrough_and_discovery_heading():
    text = open(os.path.join(ROOT, "docs", "cabling.md"), encoding="utf-8").read()
    assert "## Discovery" in text and "beonet cabling" in text


# --- the site.yml pre-flight, in a network namespace of its own ------------------

PREFLIGHT = """- name: The first play of site.yml
  hosts: beonet_nodes
  gather_facts: false
  any_errors_fatal: true
  roles: [beonet_plan, beonet_preflight]
"""


def _ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def netns(tmp_path):
    """A namespace holding one veth pair (bcpfa <-> bcpfb): nodes a and b's p2p link."""
    name = "bcpf%d" % os.getpid()
    if _ip("netns", "add", name).returncode:
        pytest.skip("ip netns add failed: needs root and a writable /run/netns")
    try:
        for args in (["link", "add", "bcpfa", "type", "veth", "peer", "name", "bcpfb"],
                     ["link", "set", "bcpfa", "up"], ["link", "set", "bcpfb", "up"]):
            assert _ip("netns", "exec", name, "ip", *args).returncode == 0
        (tmp_path / "topo.yml").write_text("name: pf\nfamily: custom\ncustom:\n"
                                           "  nodes: [a, b]\n  links: [{ends: [a, b]}]\n")
        (tmp_path / "pre.yml").write_text(PREFLIGHT)
        yield name
    finally:
        _ip("netns", "del", name)


def preflight(tmp_path, ns, b_nic="bcpfb", *extra):
    hosts = {"beonet_nodes": {"vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "beonet_topology_file": str(tmp_path / "topo.yml"),
        "beonet_discover_include_virtual": True},
        "hosts": {"a": {"beonet_interfaces": {"eth1": "bcpfa"}},
                  "b": {"beonet_interfaces": {"eth1": b_nic}}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(hosts))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    cmd = ["ip", "netns", "exec", ns, os.path.join(os.path.dirname(sys.executable),
                                                   "ansible-playbook"),
           "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "pre.yml"), *extra]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)


in_namespaces = needs_host("the preflight play between network namespaces (a veth pair)", "ip", netns=True)


@in_namespaces
def test_preflight_passes_and_matches_the_discovery_file(tmp_path, netns):
    comp = pipeline.compile_file(str(tmp_path / "topo.yml"))
    wired = {"a": {"eth1": "bcpfa"}, "b": {"eth1": "bcpfb"}}
    (tmp_path / "beonet-discovery.json").write_text(json.dumps(cabling.synthesise(comp, wired)))
    res = preflight(tmp_path, netns)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ok: [a -> localhost]" in res.stdout.split("Match the discovered cabling")[1]


@in_namespaces
def test_preflight_stops_every_node_for_one_missing_nic(tmp_path, netns):
    res = preflight(tmp_path, netns, "bcpfz")
    assert res.returncode != 0
    assert "b: bcpfz (eth1 on a--b) is not there" in res.stdout
    assert "Match the discovered cabling" not in res.stdout


@in_namespaces
def test_preflight_fails_on_a_cabling_fault_in_check_mode(tmp_path, netns):
    comp = pipeline.compile_file(str(tmp_path / "topo.yml"))
    wired = {"a": {"eth1": "enp7s0"}, "b": {"eth1": "bcpfb"}}
    (tmp_path / "beonet-discovery.json").write_text(json.dumps(cabling.synthesise(comp, wired)))
    res = preflight(tmp_path, netns, "bcpfb", "--check")
    assert res.returncode != 0
    assert "a maps eth1 to bcpfa, but the cable the sheet puts on eth1 reaches enp7s0" in res.stdout


# --- the beonet_cabling module and the CLI ---------------------------------------

MODULE_PLAY = """- name: beonet_cabling on the controller
  hosts: localhost
  gather_facts: false
  vars:
    topo: {topo}
    good: "{{{{ lookup('file', '{good}') | from_json }}}}"
    bad: "{{{{ lookup('file', '{bad}') | from_json }}}}"
  tasks:
    - name: Check mode writes nothing
      beonet_cabling: {{topology: "{{{{ topo }}}}", discovered: "{{{{ good }}}}", host_vars_dir: {hv}}}
      check_mode: true
      register: checked
    - name: Write
      beonet_cabling: {{topology: "{{{{ topo }}}}", discovered: "{{{{ good }}}}", host_vars_dir: {hv},
                       report: {report}}}
      register: first
    - name: Again
      beonet_cabling: {{topology: "{{{{ topo }}}}", discovered: "{{{{ good }}}}", host_vars_dir: {hv}}}
      register: second
    - name: A fault
      beonet_cabling: {{topology: "{{{{ topo }}}}", discovered: "{{{{ bad }}}}", host_vars_dir: {hv}}}
      register: faulty
      ignore_errors: true
    - name: Keep the results
      ansible.builtin.copy:
        dest: {out}
        mode: "0644"
        content: "{{{{ [checked.changed, checked.written | length, first.changed,
                   first.written | length, second.changed, faulty.failed, faulty.msg] | to_json }}}}"
"""


def test_module_writes_host_vars_once_and_fails_on_faults(tmp_path):
    comp = compiled("routed-mesh")
    truth = scramble(comp, random.Random(5), extra=0)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(cabling.synthesise(comp, truth)))
    bad.write_text(json.dumps(cabling.synthesise(
        comp, truth, moves=[Move("node-1-1", "d0-1", to_network="d0-2")])))
    hv, report = tmp_path / "host_vars", tmp_path / "cabling.md"
    (tmp_path / "play.yml").write_text(MODULE_PLAY.format(
        topo=os.path.join(ROOT, "topologies", "routed-mesh.yml"), good=good, bad=bad, hv=hv,
        report=report, out=tmp_path / "out.json"))
    res = local_play(tmp_path / "play.yml")
    assert res.returncode == 0, res.stdout + res.stderr
    got = json.loads((tmp_path / "out.json").read_text())
    assert got[:6] == [True, 16, True, 16, False, True]
    assert "1 fault(s)" in got[6]
    assert "node-1-1 %s reaches switch sw-d0-2" % truth["node-1-1"]["eth1"] in got[6]
    written = yaml.safe_load((hv / "node-2-3" / "beonet_interfaces.yml").read_text())
    assert written == {"beonet_interfaces": truth["node-2-3"]}
    assert "Every node is cabled as the sheet says." in report.read_text()


def run_cli(*argv):
    from beonet import cli
    try:
        return cli.main(list(argv))
    except SystemExit as exc:
        return exc.code


def test_cli_prints_the_mapping_or_the_faults(tmp_path, capsys):
    topo = os.path.join(ROOT, "topologies", "metanode-testbed.yml")
    comp = compiled("metanode-testbed")
    truth = scramble(comp, random.Random(2), extra=0)
    good = tmp_path / "d.json"
    good.write_text(json.dumps(cabling.synthesise(comp, truth)))
    assert run_cli("cabling", topo, "--discovered", str(good), "--host-vars",
                   str(tmp_path / "hv")) == 0
    assert yaml.safe_load(capsys.readouterr().out)["node07"] == {"beonet_interfaces": truth["node07"]}
    assert yaml.safe_load((tmp_path / "hv" / "node07" / cabling.VAR_FILE).read_text()) == {
        "beonet_interfaces": truth["node07"]}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(cabling.synthesise(comp, truth, moves=[Move("node07", "group0")])))
    assert run_cli("cabling", topo, "--discovered", str(bad), "--report",
                   str(tmp_path / "r.md"), "--host-vars", str(tmp_path / "hv2")) == 1
    assert not (tmp_path / "hv2").exists()
    err = capsys.readouterr().err
    assert "node07's NIC on switch sw-group0 has no carrier" in err
    assert "1 cabling fault" in (tmp_path / "r.md").read_text()
    (tmp_path / "junk.json").write_text("[1, 2]")
    assert run_cli("cabling", topo, "--discovered", str(tmp_path / "junk.json")) == 2
    assert "must hold an object" in capsys.readouterr().err


def test_host_vars_folder_is_refused_beside_a_host_file(tmp_path, capsys):
    topo = os.path.join(ROOT, "topologies", "single-net.yml")
    comp = compiled("single-net")
    disc = tmp_path / "d.json"
    disc.write_text(json.dumps(cabling.synthesise(comp)))
    (tmp_path / "hv").mkdir()
    (tmp_path / "hv" / "node03.yml").write_text("ansible_host: 192.0.2.3\n")
    assert run_cli("cabling", topo, "--discovered", str(disc), "--host-vars",
                   str(tmp_path / "hv")) == 2
    assert "node03.yml" in capsys.readouterr().err
    assert not (tmp_path / "hv" / "node01").exists()
