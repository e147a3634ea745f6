"""beonet_node's preflight call: the OS family, the plan's NICs, the management
defaults (what facts gave before) and in_sync, whether applying would change nothing."""

import copy
import os
import types

import pytest
from conftest import ROOT
from test_node import _blank_node, _Exit, _FakeModule, _simulate, beonet_node  # noqa: F401 (fixture)

from beonet.agent import apply as node
from beonet.agent import nodeplan, preflight
from beonet.compiler import pipeline
from beonet.outputs import plan as render

DEBIAN = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nID=debian\n'


def test_os_family_reads_id_then_id_like():
    assert preflight.os_family(DEBIAN) == "Debian"
    assert preflight.os_family('NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n') == "Debian"
    assert preflight.os_family('NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\n') == "RedHat"
    assert preflight.os_family("ID=opensuse-leap\nID_LIKE=\"suse opensuse\"\n") == "Suse"
    assert preflight.os_family("ID=arch\n") == "Archlinux"
    assert preflight.os_family("ID=mint-like\nID_LIKE=ubuntu\n") == "Debian"
    assert preflight.os_family('NAME="Alpine Linux"\nID=alpine\n') == "Alpine Linux"
    assert preflight.os_family(None) == "an unknown OS (no /etc/os-release)"


def test_os_problem_keeps_the_roles_message():
    assert preflight.os_problem("n1", "Debian", ["Debian", "RedHat"]) is None
    assert preflight.os_problem("n1", "Alpine Linux", ["Debian", "RedHat"]) == (
        "n1: Alpine Linux is not supported (supported: Debian, RedHat)")


def test_nic_problem_names_missing_and_dead_nics_with_their_logical_names():
    n = {"interfaces": [
        {"name": "ens3", "kind": "ethernet", "segment": "a--b", "logical": "eth1", "addresses": []},
        {"name": "ens4", "kind": "ethernet", "segment": "sw0", "addresses": []},
        {"name": "bond0", "kind": "bond", "segment": "sw1", "addresses": [], "members": ["ens5"]}]}
    assert preflight.nic_problem("b", n, [{"name": "ens3", "carrier": True},
                                          {"name": "ens4", "carrier": True}]) is None
    assert preflight.nic_problem("b", n, [{"name": "ens4", "carrier": False}]) == (
        "b: ens3 (eth1 on a--b) is not there; ens4 (ens4 on sw0) has no carrier. "
        "Check the cables against the cabling sheet (beonet export TOPOLOGY cabling), "
        "or run playbooks/discover.yml to find where they go.")


def test_a_point_to_point_nic_facing_a_dead_node_may_lack_carrier():
    """With nodes down (heal), the live end of a link to a dead node has no carrier;
    a NIC on a switch, or facing a live node, still must."""
    n = {"interfaces": [
        {"name": "eth2", "kind": "ethernet", "segment": "a--b", "addresses": ["10.9.0.0/31"],
         "peer": {"node": "b", "interface": "eth2"}},
        {"name": "eth1", "kind": "ethernet", "segment": "sw0", "addresses": ["10.0.0.1/24"]}]}
    nics = [{"name": "eth2", "carrier": False}, {"name": "eth1", "carrier": True}]
    assert preflight.nic_problem("a", n, nics, down=["b"]) is None
    assert "eth2 (eth2 on a--b) has no carrier" in preflight.nic_problem("a", n, nics, down=["c"])
    assert "eth1 (eth1 on sw0) has no carrier" in preflight.nic_problem(
        "a", n, [{"name": "eth2", "carrier": True}, {"name": "eth1", "carrier": False}], down=["b"])


def test_default_ipv4_reads_ip_route_get():
    out = '[{"dst":"8.8.8.8","gateway":"192.168.1.1","dev":"ens2","prefsrc":"192.168.1.7","flags":[]}]'
    assert preflight.default_ipv4(out) == ("ens2", "192.168.1.7")
    assert preflight.default_ipv4("") == ("none", "")
    assert preflight.default_ipv4("not json") == ("none", "")


# The module in process, on a fake file tree ----------------------------------

@pytest.fixture()
def lib(beonet_node):  # noqa: F811 (the fixture of test_node)
    return beonet_node


@pytest.fixture()
def single():
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/single-net.yml")))
    return plan, plan["nodes"]["node01"]


def _tree(lib, monkeypatch, tmp_path, live, os_release=DEBIAN, carrier=True):
    """Files the module writes land in a dict; the node is a Debian with the plan's NICs."""
    tree = {}
    monkeypatch.setattr(lib, "NODE_ROOT", str(tmp_path))
    monkeypatch.setattr(lib, "atomic_write", lambda path, text, mode=0o644: tree.__setitem__(path, text))
    monkeypatch.setattr(lib, "read_text", lambda path: live["forwarding"] if path == lib.beonet.FORWARD
                        else tree.get(path))
    stat = types.SimpleNamespace(stat=lambda path: types.SimpleNamespace(
        st_mode=0o100000 | node.file_mode(path)), path=os.path, unlink=tree.pop, chmod=lambda *_: None)
    monkeypatch.setattr(lib, "os", stat)
    monkeypatch.setattr(lib, "_os_release", lambda: os_release)
    nics = [{"name": link["ifname"], "carrier": carrier} for link in live["links"] if link["ifname"] != "lo"]
    monkeypatch.setattr(lib.discover, "discover", lambda *a, **k: {"nics": nics})
    monkeypatch.setattr(lib.beonet, "live_tso", lambda n: dict(live["tso"]))
    return tree


def _call(lib, monkeypatch, params, live, check_mode):
    fake = _FakeModule(lib, params, live, check_mode)
    monkeypatch.setattr(lib, "AnsibleModule", lambda **_: fake)
    with pytest.raises(_Exit) as exc:
        lib.main()
    return exc.value, fake.commands


def _params(plan, n, **more):
    return dict({"node": "node01", "plan": n, "plan_format": nodeplan.PLAN_FORMAT,
                 "prefixes": render.prefixes(plan), "backend": "networkd"}, **more)


def test_preflight_on_a_blank_node_is_out_of_sync_and_changes_nothing(lib, monkeypatch,
                                                                      tmp_path, single):
    plan, n = single
    live = _blank_node(n)
    tree = _tree(lib, monkeypatch, tmp_path, live)
    out, commands = _call(lib, monkeypatch, _params(plan, n, preflight=True), live, False)
    assert not out.failed and out.result["in_sync"] is False and out.result["changed"] is False
    assert out.result["actions"] and out.result["files"]       # what the apply would do
    assert tree == {} and "diff" not in out.result
    assert all(c[:2] in (["ip", "-j"], ["nft", "list"]) for c in commands), commands


def test_in_sync_is_exactly_an_apply_that_would_change_nothing(lib, monkeypatch,
                                                               tmp_path, single):
    """Apply on a blank node, then the node as the commands left it: preflight says
    in_sync, and the apply in check mode would change nothing; the bookkeeping files
    beonet keeps count too (a lost address record means out of sync)."""
    plan, n = single
    live = _blank_node(n)
    tree = _tree(lib, monkeypatch, tmp_path, live)
    applied, _ = _call(lib, monkeypatch, _params(plan, n), live, False)
    assert not applied.failed and applied.result["changed"]
    _simulate(live, [a.split() for a in applied.result["actions"]], render.prefixes(plan))
    check, _ = _call(lib, monkeypatch, _params(plan, n, preflight=True), live, False)
    assert check.result["in_sync"] is True and not check.result["actions"], check.result
    again, _ = _call(lib, monkeypatch, _params(plan, n), live, True)
    assert again.result["changed"] is False and again.result["diff"] == []
    del tree[node.STATE_PATH]
    stale, _ = _call(lib, monkeypatch, _params(plan, n, preflight=True), copy.deepcopy(live), True)
    assert stale.result["in_sync"] is False


def test_preflight_refuses_an_unsupported_os_before_reading_the_node(lib, monkeypatch,
                                                                     tmp_path, single):
    plan, n = single
    live = _blank_node(n)
    _tree(lib, monkeypatch, tmp_path, live, os_release='NAME="Alpine Linux"\nID=alpine\n')
    out, _ = _call(lib, monkeypatch, _params(plan, n, preflight=True), live, True)
    assert out.failed and out.result["changed"] is False
    assert out.result["problems"] == [
        "node01: Alpine Linux is not supported (supported: Debian, RedHat, Archlinux, Suse)"]


def test_preflight_refuses_a_nic_without_carrier(lib, monkeypatch, tmp_path, single):
    plan, n = single
    live = _blank_node(n)
    _tree(lib, monkeypatch, tmp_path, live, carrier=False)
    out, _ = _call(lib, monkeypatch, _params(plan, n, preflight=True), live, True)
    nic = n["interfaces"][0]
    assert out.failed and out.result["problems"] == [
        "node01: %s (%s on %s) has no carrier. %s" % (nic["name"], nic.get("logical", nic["name"]),
                                                      nic["segment"], preflight.CABLES)]


def test_auto_management_comes_from_the_route_ansible_reads(lib, monkeypatch, tmp_path,
                                                           single):
    """management_interface/address auto: the node's route to 8.8.8.8 (as the default_ipv4
    fact), so a plan touching the NIC Ansible comes through is refused without facts."""
    plan, n = single
    live = _blank_node(n)
    _tree(lib, monkeypatch, tmp_path, live)
    nic = n["interfaces"][0]["name"]
    answer = '[{"dst":"8.8.8.8","dev":"%s","prefsrc":"192.0.2.9"}]' % nic

    def run_command(self, cmd, _orig=_FakeModule.run_command, **kw):
        if cmd[:4] == ["ip", "-j", "-4", "route"]:
            return 0, answer, ""
        return _orig(self, cmd, **kw)
    monkeypatch.setattr(_FakeModule, "run_command", run_command)
    params = _params(plan, n, preflight=True, management_interface="auto", management_address="auto")
    out, _ = _call(lib, monkeypatch, params, live, True)
    assert out.failed
    assert "node01: the plan would change %s, the interface Ansible connects through" % nic \
        in out.result["problems"]
