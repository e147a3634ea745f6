"""A change that undoes itself unless confirmed: the restore commands (restore.py),
the checkpoint's protocol and its waiter (checkpoint.py), the local check, and the
beonet_node module's confirm, apply and preflight around them. Hermetic: temporary
folders, synthetic `ip -j` state; the waiter is a real detached process whose
rollback is a stand-in."""

import json
import os
import time

import pytest

from beonet.agent import checkpoint, restore

BOND = {"ifname": "bond0", "flags": ["BROADCAST", "MASTER", "UP"], "mtu": 9000}


def _link(name, up=True, mtu=1500, master=None):
    link = {"ifname": name, "flags": ["BROADCAST"] + (["UP"] if up else []), "mtu": mtu}
    if master:
        link["master"] = master
    return link


def _addrs(**by_dev):
    return [{"ifname": dev, "addr_info": [
        {"family": "inet", "local": a.split("/")[0], "prefixlen": int(a.split("/")[1]), "scope": "global",
         "broadcast": "10.0.0.255"} for a in addrs] + [
        {"family": "inet6", "local": "fe80::1", "prefixlen": 64, "scope": "link"}]}
            for dev, addrs in by_dev.items()]


KERNEL_ROUTE = {"dst": "10.0.0.0/24", "dev": "eth1", "protocol": "kernel", "scope": "link",
                "prefsrc": "10.0.0.1"}
STATIC = {"dst": "10.9.0.0/16", "gateway": "10.0.0.254", "dev": "eth1", "protocol": "static", "metric": 100}
MULTI = {"dst": "10.0.3.4", "protocol": "beonet", "prefsrc": "10.0.0.1",
         "nexthops": [{"gateway": "10.0.0.2", "dev": "eth1", "weight": 1},
                      {"gateway": "10.0.128.2", "dev": "eth2", "weight": 2, "flags": ["onlink"]}]}
ADDED = {"dst": "10.0.5.0/24", "gateway": "10.0.0.3", "dev": "eth1", "protocol": "beonet",
         "prefsrc": "10.0.0.1"}


def _state(links, addrs, routes, forwarding="0", nft=None):
    return {"links": links, "addrs": addrs, "routes": routes, "forwarding": forwarding, "nft_table": nft,
            "tso": {}, "sysctls": {}}


# -- restore.py ----------------------------------------------------------------------------

def test_addresses_added_are_removed_and_those_removed_come_back_as_they_were():
    saved = _addrs(eth1=["10.0.0.1/24"], eth9=["192.168.9.1/24"])
    now = _addrs(eth1=["10.1.0.1/24"], eth9=[])
    assert restore.address_actions(saved, now, ["eth1"]) == [
        ["ip", "addr", "del", "10.1.0.1/24", "dev", "eth1"],
        ["ip", "addr", "add", "10.0.0.1/24", "broadcast", "10.0.0.255", "dev", "eth1"]]


def test_routes_come_back_with_every_attribute_and_the_kernels_are_left_alone():
    saved, now = [KERNEL_ROUTE, STATIC, MULTI], [dict(KERNEL_ROUTE, prefsrc="10.1.0.1"), ADDED]
    assert restore.route_actions(saved, now) == [
        ["ip", "route", "replace", "10.0.3.4", "proto", "beonet", "src", "10.0.0.1",
         "nexthop", "via", "10.0.0.2", "dev", "eth1",
         "nexthop", "via", "10.0.128.2", "dev", "eth2", "weight", "2", "onlink"],
        ["ip", "route", "replace", "10.9.0.0/16", "via", "10.0.0.254", "dev", "eth1", "proto", "static",
         "metric", "100"],
        ["ip", "route", "del", "10.0.5.0/24", "via", "10.0.0.3", "dev", "eth1", "proto", "beonet",
         "src", "10.0.0.1"]]


def test_a_route_whose_place_a_restored_one_takes_is_not_deleted_after_it():
    changed = dict(STATIC, gateway="10.0.0.9")
    assert restore.route_actions([STATIC], [changed]) == [
        ["ip", "route", "replace", "10.9.0.0/16", "via", "10.0.0.254", "dev", "eth1", "proto", "static",
         "metric", "100"]]


def test_a_bond_the_change_made_is_deleted_and_members_mtu_and_state_put_back():
    saved = [_link("eth1", mtu=1500), _link("eth2", up=False), _link("eth3", master="bond9"),
             dict(BOND, ifname="bond9")]
    now = [_link("eth1", mtu=9000, master="bond0"), _link("eth2", up=True), _link("eth3"),
           dict(BOND, ifname="bond9"), BOND]
    assert restore.link_actions(saved, now, ["eth1", "eth2", "eth3", "bond0", "bond9"]) == [
        ["ip", "link", "del", "bond0"],
        ["ip", "link", "set", "eth1", "mtu", "1500"],
        ["ip", "link", "set", "eth3", "down"], ["ip", "link", "set", "eth3", "master", "bond9"],
        ["ip", "link", "set", "eth2", "down"], ["ip", "link", "set", "eth3", "up"]]


def test_links_outside_the_scope_are_never_touched():
    assert restore.link_actions([_link("eth0")], [_link("eth0", up=False)], ["eth1"]) == []
    assert restore.address_actions(_addrs(eth0=["10.0.0.1/24"]), _addrs(eth0=[]), ["eth1"]) == []


def test_forwarding_goes_off_before_the_filter_goes_and_on_after_it_comes():
    off = restore.actions(_state([], [], [], "0", None), _state([], [], [], "1", "table"), [], "/x")
    assert off[:2] == [["sysctl", "-w", "net.ipv4.ip_forward=0"],
                       ["nft", "delete", "table", "inet", "beonet"]]
    on = restore.actions(_state([], [], [], "1", "old"), _state([], [], [], "0", "new"), [], "/x")
    assert on[:2] == [["nft", "-f", "/x"], ["sysctl", "-w", "net.ipv4.ip_forward=1"]]
    assert restore.nft_text("table inet beonet {}\n").startswith(
        "table inet beonet\ndelete table inet beonet\n")


def test_removals_come_first_and_are_only_deletions():
    saved = _state([_link("eth1")], _addrs(eth1=["10.0.0.1/24"]), [STATIC])
    now = _state([_link("eth1", master="bond0"), BOND], _addrs(eth1=["10.1.0.1/24"]), [ADDED])
    assert [a[:3] for a in restore.removals(saved, now, ["eth1", "bond0"])] == [
        ["ip", "route", "del"], ["ip", "addr", "del"], ["ip", "link", "del"]]


def test_removals_take_the_ipv6_deletions_too():
    added6 = dict(ADDED, dst="fd00:1::/64", gateway="fd00::3", prefsrc="fd00::1")
    saved = _state([_link("eth1")], _addrs(eth1=["10.0.0.1/24"]), [STATIC])
    now = _state([_link("eth1")], _addrs(eth1=["10.0.0.1/24", "fd00::1/64"]), [STATIC, added6])
    assert [a[:4] for a in restore.removals(saved, now, ["eth1"])] == [
        ["ip", "-6", "route", "del"], ["ip", "-6", "addr", "del"]]


def test_sysctls_and_offloads_are_written_back_where_they_were_read():
    saved = dict(_state([], [], []), sysctls={"net.ipv4.fib_multipath_use_neigh": "0", "x": None},
                 tso={"bond0": True, "bond1": None})
    out = restore.actions(saved, _state([], [], []), [], "/x")
    assert ["sysctl", "-w", "net.ipv4.fib_multipath_use_neigh=0"] in out
    assert ["ethtool", "-K", "bond0", "tso", "on"] in out and not any("bond1" in a for a in out)


def test_files_come_back_byte_for_byte_with_their_mode_or_go(tmp_path):
    kept, made = tmp_path / "kept.conf", tmp_path / "made.conf"
    kept.write_bytes(b"old \xff\n")
    kept.chmod(0o640)
    copies = restore.copies([str(kept), str(made)])
    kept.write_text("new\n")
    kept.chmod(0o644)
    made.write_text("beonet's\n")
    assert restore.put_back(str(kept), copies[str(kept)]) and restore.put_back(str(made), copies[str(made)])
    assert kept.read_bytes() == b"old \xff\n" and kept.stat().st_mode & 0o777 == 0o640 and not made.exists()
    assert not restore.put_back(str(kept), copies[str(kept)])


# -- checkpoint.py: the protocol -----------------------------------------------------------

@pytest.fixture()
def folder(tmp_path, monkeypatch):
    boot = tmp_path / "boot_id"
    boot.write_text("boot-1\n")
    monkeypatch.setattr(checkpoint, "BOOT_ID", str(boot))
    return str(tmp_path / "checkpoint")


def _until(predicate, seconds=5.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _recording(tmp_path):
    mark = tmp_path / "rolled-back"

    def roll_back(saved, why):
        mark.write_text(json.dumps({"node": saved.get("node"), "why": why}))
        return {"rolled_back": True, "why": why, "files": [], "commands": [], "errors": [], "left": []}
    return roll_back, mark


def test_a_confirmed_change_leaves_no_waiter_and_no_file(folder, tmp_path):
    roll_back, mark = _recording(tmp_path)
    sub = checkpoint.save({"node": "n1"}, folder)
    pid = checkpoint.arm(sub, 30, roll_back)
    assert checkpoint.status(folder)["state"] == "pending" and 0 < checkpoint.status(folder)["left"] <= 30
    assert checkpoint.confirm(folder) is None
    assert _until(lambda: not checkpoint.procs.alive(pid)), "the waiter is still running"
    assert not mark.exists() and not os.path.exists(sub) and checkpoint.status(folder) == {"state": "none"}
    assert os.listdir(folder) == []


def test_a_change_not_confirmed_in_time_is_rolled_back_by_the_waiter_alone(folder, tmp_path):
    roll_back, mark = _recording(tmp_path)
    sub = checkpoint.save({"node": "n1"}, folder)
    checkpoint.arm(sub, 0.3, roll_back)
    assert _until(mark.exists)
    assert json.loads(mark.read_text())["why"] == "not confirmed within 0.3 s"
    assert _until(lambda: checkpoint.peek_result(folder) is not None)
    assert checkpoint.take_result(folder)["why"] == "not confirmed within 0.3 s"
    assert checkpoint.status(folder) == {"state": "none"} and checkpoint.take_result(folder) is None


def test_confirming_after_the_deadline_reports_the_rollback(folder, tmp_path):
    roll_back, mark = _recording(tmp_path)
    checkpoint.arm(checkpoint.save({"node": "n1"}, folder), 0.2, roll_back)
    assert _until(mark.exists)
    assert checkpoint.confirm(folder, wait=5)["why"] == "not confirmed within 0.2 s"


def test_a_rollback_asked_for_is_done_by_the_waiter_with_the_reason(folder, tmp_path):
    roll_back, mark = _recording(tmp_path)
    checkpoint.arm(checkpoint.save({"node": "n1"}, folder), 60, roll_back)
    got = checkpoint.roll_back_now("n1: no answer from 10.0.0.2 on eth1", roll_back, folder, wait=10)
    assert got["why"] == "n1: no answer from 10.0.0.2 on eth1"
    assert json.loads(mark.read_text())["node"] == "n1" and checkpoint.status(folder) == {"state": "none"}


def test_an_old_waiter_never_acts_on_a_newer_change(folder, tmp_path):
    roll_back, mark = _recording(tmp_path)
    checkpoint.arm(checkpoint.save({"node": "first"}, folder), 0.6, roll_back)
    assert checkpoint.confirm(folder) is None
    checkpoint.save({"node": "second"}, folder)          # armed later; the first waiter's deadline passes
    time.sleep(1.2)
    assert not mark.exists() and checkpoint.status(folder)["state"] == "orphaned"


def test_a_checkpoint_whose_waiter_is_gone_is_orphaned_and_rolled_back_by_the_caller(folder, tmp_path):
    roll_back, mark = _recording(tmp_path)
    sub = checkpoint.save({"node": "n1"}, folder)
    with open(checkpoint.paths(sub)["waiter"], "w") as fh:
        json.dump({"pid": os.getpid(), "boot": "another boot", "deadline": time.time() + 60}, fh)
    assert checkpoint.status(folder) == {"state": "orphaned"}
    assert checkpoint.roll_back_now("rebooted before the confirmation", roll_back, folder)["why"] \
        == "rebooted before the confirmation"
    assert mark.exists() and checkpoint.status(folder) == {"state": "none"}


def test_the_confirm_timeout_is_checked_before_anything_starts(folder):
    sub = checkpoint.save({}, folder)
    for bad in (0, -1, checkpoint.MAX_TIMEOUT + 1):
        with pytest.raises(checkpoint.CheckpointError, match="confirm timeout"):
            checkpoint.arm(sub, bad, lambda saved, why: {})


def test_an_orphaned_checkpoint_keeps_what_was_there_before_the_unconfirmed_change():
    older = {"live": {"routes": ["old"]}, "files": {"/a": {"data": "b2xk"}}, "scope": ["eth1"]}
    newer = {"live": {"routes": ["new"]}, "files": {"/a": {"data": "bmV3"}, "/b": None}, "scope": ["eth2"]}
    got = checkpoint.merged(older, newer)
    assert got["live"] == {"routes": ["old"]} and got["files"] == {"/a": {"data": "b2xk"}, "/b": None}
    assert got["scope"] == ["eth1", "eth2"]


# -- the local check -----------------------------------------------------------------------

def test_the_local_check_names_what_is_not_in_place_and_who_does_not_answer():
    asked = []

    def ping(targets):
        asked.append(list(targets))
        return {("10.0.0.2", "eth1")} if len(asked) > 1 else set()
    problems = checkpoint.check_problems("n1", [["ip", "route", "replace", "10.0.1.0/24"]],
                                         [("10.0.0.2", "eth1"), ("10.0.128.2", "eth2")], ping)
    assert problems == ["n1: the plan is not in place, 1 command(s) still needed "
                        "(ip route replace 10.0.1.0/24)",
                        "n1: no answer from 10.0.128.2 on eth2"]
    assert len(asked) == checkpoint.PING_ROUNDS and asked[-1] == [("10.0.128.2", "eth2")]


def test_the_local_check_passes_when_every_neighbour_answers_and_says_when_it_cannot_ask():
    assert checkpoint.check_problems("n1", [], [("10.0.0.2", "eth1")], lambda t: set(t)) == []
    assert checkpoint.check_problems("n1", [], [("10.0.0.2", "eth1")], lambda t: None) == [
        "n1: no ping on the node: its neighbours cannot be asked"]
    many = [("10.0.0.%d" % k, "eth1") for k in range(12)]
    assert checkpoint.check_problems("n1", [], many, lambda t: set())[0].endswith("and 4 more")
