"""A background discovery collected without Python on the node: agent/discover.py's
collect_command does collect_background's work as one shell command, parse_collected
reads its output back with collect_background's result and errors, and the
beonet_discover action plugin runs it for a collect (the module for anything but a
collect or a background start: tests/test_discover_start.py)."""

import importlib.util
import json
import re
import subprocess

import pytest
from conftest import ROOT, needs_host

from beonet.agent import discover as d

in_a_shell = needs_host("the collect command as a node's POSIX shell runs it (sh, sleep, cat, rm)",
                        "sh", "sleep", "cat", "rm")
REPORT = {"discovery": {"format": 1, "node": "A", "run": "r1", "nics": []}, "ended": "stopped",
          "listened": 12.5}


def _collect(tmp_path, run, wait=1.0):
    """collect_command run by sh on a folder of runs; its output read back."""
    command = d.collect_command("A", run, folder=str(tmp_path), wait=wait)
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True,
                          env={"PATH": "/usr/bin:/bin"})
    return d.parse_collected("A", run, done.stdout, wait=wait)


@in_a_shell
def test_the_shell_collect_returns_the_report_and_removes_the_runs_files(tmp_path):
    (tmp_path / "r1-A.pid").write_text("4242\nr1\nA\n")
    (tmp_path / "r1-A.report").write_text(json.dumps(REPORT))
    assert _collect(tmp_path, "r1") == REPORT
    assert list(tmp_path.iterdir()) == []


@in_a_shell
def test_the_shell_collect_marks_the_run_to_stop_and_waits_for_its_report(tmp_path):
    (tmp_path / "r1-A.pid").write_text("4242\nr1\nA\n")
    # a listener that writes its report once it sees the stop mark
    listener = subprocess.Popen(["sh", "-c", "while [ ! -e r1-A.stop ]; do sleep 0.05; done; "
                                 "[ -s r1-A.stop ] || echo '%s' > r1-A.report" % json.dumps(REPORT)],
                                cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert _collect(tmp_path, "r1", wait=5.0) == REPORT
    listener.wait(timeout=10)
    assert list(tmp_path.iterdir()) == []


@in_a_shell
@pytest.mark.parametrize(("files", "message"), [
    ({}, "^A: no discovery run r1 was started here"),
    ({"r1-A.pid": "1\n"}, "^A: the background discovery of run r1 wrote no report within 0 s$"),
    ({"r1-A.pid": "1\n", "r1-A.report": "{\"form"}, "wrote no report within 0 s$"),
    ({"r1-A.report": json.dumps({"error": "eth1: no such device"})},
     "^A: the background discovery failed: eth1: no such device$"),
])
def test_the_shell_collect_fails_as_the_modules_collect_does(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(d.DiscoveryError, match=message):
        _collect(tmp_path, "r1", wait=0.2)
    assert list(tmp_path.iterdir()) == []
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(d.DiscoveryError, match=message):
        d.collect_background("A", "r1", folder=str(tmp_path), wait=0.2, sleep=lambda s: None)


@pytest.mark.parametrize("output", ["", "something else\n{}", "beonet-discover-collect: what\n{}"])
def test_output_that_is_not_the_commands_is_no_report(output):
    with pytest.raises(d.DiscoveryError, match="wrote no report within 10 s"):
        d.parse_collected("A", "r1", output)


@pytest.mark.parametrize("run", ["../x", "a b", "r'1"])
def test_the_command_needs_a_plain_run_name(run):
    with pytest.raises(d.DiscoveryError, match="run must be 1 to 64 letters, digits"):
        d.collect_command("A", run)


@pytest.mark.parametrize("node", ["a/b", "..", "node\n1", ""])
def test_the_command_refuses_a_node_name_that_cannot_name_a_file(node):
    with pytest.raises(d.DiscoveryError):
        d.collect_command(node, "r1")


def _plugin(monkeypatch, args, done):
    path = ROOT / "action_plugins" / "beonet_discover.py"
    spec = importlib.util.spec_from_file_location("beonet_discover_action", path)
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    action = plugin.ActionModule.__new__(plugin.ActionModule)
    monkeypatch.setattr(plugin.ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    action._task = type("Task", (), {"args": args, "action": "beonet_discover", "check_mode": False,
                                     "diff": False})()
    ran, commands = [], []
    action._execute_module = lambda module_name, task_vars: ran.append(module_name) or {"from": "module"}
    action._low_level_execute_command = lambda cmd, sudoable=True: commands.append(cmd) or done
    action._connection = type("Connection", (), {"_shell": type("Shell", (), {"tmpdir": None})()})()
    action._remove_tmp_path = lambda path: ran.append("removed %s" % path)
    return action, ran, commands


def test_the_plugin_collects_by_one_command_and_returns_what_the_module_would(monkeypatch):
    out = {"rc": 0, "stdout": "beonet-discover-collect: report\n" + json.dumps(REPORT), "stderr": ""}
    action, ran, commands = _plugin(monkeypatch, {"node": "A", "run": "r1", "collect": True}, out)
    assert action.run(task_vars={}) == {"changed": False, **REPORT}
    assert ran == [] and commands == [d.collect_command("A", "r1")]


@pytest.mark.parametrize(("args", "done", "message"), [
    ({"node": "A", "run": "r1", "collect": True}, {"rc": 0, "stdout": "beonet-discover-collect: none\n"},
     "A: no discovery run r1 was started here"),
    ({"node": "A", "run": "r1", "collect": True}, {"rc": 126, "stdout": "", "stderr": "sh: denied"},
     "A: collecting the discovery run r1 failed \\(rc 126\\): sh: denied"),
    ({"node": "A", "run": "../r", "collect": "yes"}, {}, "run must be 1 to 64 letters"),
])
def test_the_plugins_collect_fails_naming_the_node(monkeypatch, args, done, message):
    action, ran, _commands = _plugin(monkeypatch, args, done)
    result = action.run(task_vars={})
    assert result["failed"] is True and result["changed"] is False and ran == []
    assert re.search(message, result["msg"])


@pytest.mark.parametrize("args", [{"node": "A", "run": "r1", "window": 10.0},
                                  {"node": "A", "run": "r1", "collect": True, "stray": 1},
                                  {"node": "A", "run": "r1", "collect": False}])
def test_anything_but_a_plain_collect_or_a_start_runs_the_module(monkeypatch, args):
    action, ran, commands = _plugin(monkeypatch, args, {})
    assert action.run(task_vars={}) == {"from": "module"} and commands == []
    assert ran == ["beonet_discover", "removed None"]
