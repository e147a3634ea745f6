"""beonet_node's confirmed push: apply arms a checkpoint only when something changes,
a failure after arming rolls back at once, confirm passes or rolls back on the local
check, preflight refuses a change still waiting and shows an earlier rollback. In
process, on a simulated node; the checkpoints in a temporary folder."""

import json
import os

import pytest
import test_node_preflight
from test_node import _blank_node, _Exit, _FakeModule, _run_module, _simulate, beonet_node  # noqa: F401

from beonet.outputs import plan as render

lib, single = test_node_preflight.lib, test_node_preflight.single      # the fixtures
NEIGHBOURS = [{"nic": "eth1", "address": "10.0.0.2"}]


def _params(plan, **more):
    params = {"node": "node01", "plan": plan["nodes"]["node01"], "plan_format": plan["beonet"]["plan_format"],
              "prefixes": render.prefixes(plan), "backend": "networkd"}
    params.update(more)
    return params


@pytest.fixture()
def armed(lib, monkeypatch):
    """Record what apply saves and arms instead of starting a waiter."""
    got = {"events": []}

    def save(saved, folder=None):
        got["saved"] = saved
        return "/checkpoint/sub"
    monkeypatch.setattr(lib.checkpoint, "save", save)
    monkeypatch.setattr(lib.checkpoint, "arm",
                        lambda sub, timeout, roll_back: got.update(arm=(sub, timeout)) or 4242)
    monkeypatch.setattr(lib.checkpoint.restore, "copy_of", lambda path: got["events"].append("copy"))
    monkeypatch.setattr(lib, "atomic_write", lambda path, text, mode: got["events"].append("write"))
    return got


def test_apply_saves_what_it_touches_and_arms_the_waiter_before_any_change(lib, monkeypatch, single, armed):
    plan, n = single
    out, commands = _run_module(lib, monkeypatch, _params(plan, confirm_timeout=120), _blank_node(n),
                                check_mode=False)
    assert not out.failed, out.result
    assert armed["arm"] == ("/checkpoint/sub", 120) and out.result["armed"] == 4242
    saved = armed["saved"]
    assert saved["node"] == "node01" and saved["scope"] == ["eth1"]
    assert set(saved["live"]) == {"links", "addrs", "routes", "forwarding", "nft_table", "tso", "sysctls"}
    assert lib.backends.RECORD_PATH in saved["files"] and lib.beonet.SYSCTL_PATH in saved["files"]
    events = armed["events"]
    assert "write" in events and "copy" not in events[events.index("write"):], "a file was written first"


def test_a_node_with_nothing_to_change_arms_nothing(lib, monkeypatch, single, armed):
    plan, n = single
    live = _blank_node(n)
    _simulate(live, lib.beonet.actions_on_blank_node(n, "node01"), render.prefixes(plan))
    files = lib.beonet.persistent_files(n, render.prefixes(plan), "networkd")
    files[lib.backends.RECORD_PATH] = lib.backends.record_text(files)
    files[lib.beonet.STATE_PATH] = lib.beonet.installed_addresses(n)
    live["installed"], live["files"] = lib.beonet.installed_addresses(n).splitlines(), files
    monkeypatch.setattr(lib.os, "stat",
                        lambda path: os.stat_result((0o100000 | lib.beonet.file_mode(path),) + (0,) * 9))
    out, _commands = _run_module(lib, monkeypatch, _params(plan, confirm_timeout=120), live, check_mode=False)
    assert not out.failed and not out.result["changed"], out.result
    assert "arm" not in armed and "saved" not in armed


def test_a_failure_after_arming_rolls_the_node_back_at_once(lib, monkeypatch, single, armed):
    plan, n = single
    asked = []
    monkeypatch.setattr(lib.checkpoint, "roll_back_now",
                        lambda why, roll_back: asked.append(why)
                        or {"why": why, "files": ["/a"], "commands": []})
    fail = _FakeModule.run_command

    def run_command(self, cmd, **kw):
        if cmd[:3] == ["ip", "addr", "add"]:
            self.commands.append(list(cmd))
            return 2, "", "RTNETLINK answers: File exists"
        return fail(self, cmd, **kw)
    monkeypatch.setattr(_FakeModule, "run_command", run_command)
    out, _commands = _run_module(lib, monkeypatch, _params(plan, confirm_timeout=120), _blank_node(n),
                                 check_mode=False)
    assert out.failed and "rolled back (1 files, 0 commands)" in out.result["msg"]
    assert asked and "ip addr add" in asked[0] and out.result["rolled_back"]["files"] == ["/a"]


def _pending(lib, tmp_path, boot="boot-1", pid=None):
    """A checkpoint saved by an earlier apply; its waiter is this process (alive) or, on
    another boot, gone."""
    sub = lib.checkpoint.save({"node": "node01", "live": {}, "files": {}, "scope": []})
    with open(lib.checkpoint.paths(sub)["waiter"], "w") as fh:
        json.dump({"pid": pid or os.getpid(), "boot": boot, "deadline": 2e9}, fh)
    return sub


def test_confirm_with_nothing_waiting_changes_nothing(lib, monkeypatch, single):
    plan, n = single
    out, _ = _run_module(lib, monkeypatch, _params(plan, confirm=True), _blank_node(n), check_mode=False)
    assert not out.failed and out.result == {"changed": False, "confirmed": False}


def test_confirm_passes_when_the_plan_is_in_place_and_the_neighbours_answer(lib, monkeypatch, single,
                                                                            tmp_path):
    plan, n = single
    sub = _pending(lib, tmp_path)
    live = _blank_node(n)
    _simulate(live, lib.beonet.actions_on_blank_node(n, "node01"), render.prefixes(plan))
    monkeypatch.setattr(lib.probe, "ping_all", lambda targets, wait=1: set(targets))
    out, _ = _run_module(lib, monkeypatch, _params(plan, confirm=True, neighbours=NEIGHBOURS), live,
                         check_mode=False)
    assert not out.failed and out.result == {"changed": False, "confirmed": True}, out.result
    assert not os.path.exists(sub)


def test_confirm_rolls_back_a_node_whose_neighbour_does_not_answer_and_says_why(lib, monkeypatch, single,
                                                                               tmp_path):
    plan, n = single
    _pending(lib, tmp_path, boot="an earlier boot")
    live = _blank_node(n)
    _simulate(live, lib.beonet.actions_on_blank_node(n, "node01"), render.prefixes(plan))
    monkeypatch.setattr(lib.probe, "ping_all", lambda targets, wait=1: set())
    monkeypatch.setattr(lib.checkpoint, "roll_back",
                        lambda saved, why: {"why": why, "files": [], "commands": []})
    out, _ = _run_module(lib, monkeypatch, _params(plan, confirm=True, neighbours=NEIGHBOURS), live,
                         check_mode=False)
    assert out.failed and out.result["msg"] == "node01: rolled back: node01: no answer from 10.0.0.2 on eth1"
    assert lib.checkpoint.status() == {"state": "none"}


def test_preflight_says_when_a_change_was_left_unconfirmed(lib, monkeypatch, single, tmp_path):
    plan, n = single
    _pending(lib, tmp_path, boot="an earlier boot")
    warned = []
    fake = _FakeModule(lib, _params(plan, preflight=True), _blank_node(n))
    fake.warn = warned.append
    with pytest.raises(_Exit) as exc:
        lib._preflight_exit(fake, {"changed": False}, True)
    assert not exc.value.failed and exc.value.result["checkpoint"] == {"state": "orphaned"}
    assert warned and "left unconfirmed" in warned[0]


def test_preflight_refuses_a_node_whose_earlier_change_still_waits(lib, monkeypatch, single, tmp_path):
    plan, n = single
    _pending(lib, tmp_path)
    fake = _FakeModule(lib, _params(plan, preflight=True), _blank_node(n))
    with pytest.raises(_Exit) as exc:
        lib._preflight_exit(fake, {"changed": False}, True)
    assert exc.value.failed and "waits for its confirmation" in exc.value.result["msg"]


def test_preflight_shows_an_earlier_rollback_and_leaves_it_for_the_run(lib, monkeypatch, single, tmp_path):
    plan, n = single
    sub = lib.checkpoint.save({"node": "node01"})
    lib.checkpoint.claim(sub)
    lib.checkpoint.finish(sub, {"rolled_back": True, "why": "not confirmed within 120 s", "at": "then"})
    warned = []
    fake = _FakeModule(lib, _params(plan, preflight=True), _blank_node(n))
    fake.warn = warned.append
    with pytest.raises(_Exit) as exc:
        lib._preflight_exit(fake, {"changed": False}, True)
    assert not exc.value.failed and exc.value.result["rolled_back"]["why"] == "not confirmed within 120 s"
    assert warned == ["node01 was rolled back at then: not confirmed within 120 s"]
    assert lib.checkpoint.peek_result() is not None


@pytest.mark.parametrize("bad", [{"confirm_timeout": float("nan")}, {"confirm_timeout": -1},
                                 {"confirm_timeout": 1e12},
                                 {"confirm": True,
                                  "neighbours": [{"nic": "../eth1", "address": "10.0.0.2"}]},
                                 {"confirm": True, "neighbours": [{"nic": "eth1\nx", "address": "10.0.0.2"}]},
                                 {"confirm": True,
                                  "neighbours": [{"nic": "eth1", "address": "10.0.0.2/../x"}]}])
def test_hostile_confirm_parameters_are_refused_before_anything(lib, monkeypatch, single, bad):
    plan, n = single
    out, commands = _run_module(lib, monkeypatch, _params(plan, **bad), _blank_node(n), check_mode=False)
    assert out.failed and not out.result.get("changed") and "node01: " in out.result["msg"]
    assert not any(c[:2] not in (["ip", "-j"], ["nft", "list"]) for c in commands)
