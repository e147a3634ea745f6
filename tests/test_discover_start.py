"""A background discovery started without the module: agent/bundle.py carries agent
modules to a node as one ``python3 -I -S -c`` command, agent/discover_task.py starts
the listener that way (discover.start_background in that small process) and reads
its output back into the module's result or error, and the beonet_discover action
plugin checks the arguments as the module does and runs it."""

import json
import re
import shlex
import subprocess
import sys

import pytest
from test_discover_collect import _plugin, in_a_shell

from beonet.agent import bundle, discover_task
from beonet.agent import discover as d

PARAMS = {"node": "A", "run": "r1", "window": 300.0, "management": ["eth9"], "include_virtual": False,
          "exclude": ["ib*"], "probe_only": False, "background": True, "collect": False}


def _python(command, tmp_path):
    """The command run with this venv's Python standing for the node's python3."""
    argv = shlex.split(command)
    assert argv[0] == "python3" and len(argv) == 5
    return subprocess.run([sys.executable] + argv[1:], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={})


def test_a_bundle_loads_the_modules_as_a_package_and_runs_main_with_its_arguments(tmp_path):
    main = ("d=sys.modules['beonet_agent.discover']\n"
            "print(json.dumps([d.run_problem(A['run']), d.__package__, 'site' in sys.modules,"
            " sorted(k for k in sys.modules if k.startswith('beonet'))]))\n")
    command = bundle.command(discover_task.MODULES, main, {"run": "a b"})
    assert command.startswith("python3 -I -S -c '")
    (tmp_path / "json.py").write_text("raise SystemExit('the caller\\'s folder was on the path')\n")
    done = _python(command, tmp_path)
    assert done.returncode == 0, done.stderr
    problem, package, site, loaded = json.loads(done.stdout)
    assert problem.startswith("run must be 1 to 64 letters") and package == "beonet_agent"
    assert site is False and loaded == ["beonet_agent"] + ["beonet_agent.%s" % m for m in sorted(
        discover_task.MODULES)]


@in_a_shell
def test_the_bundled_start_leaves_a_listener_that_the_shell_collect_stops(tmp_path):
    """start_background in the bundled process (its discover() swapped for one that
    waits to be told to stop): the pid comes back, and the collect gets the report."""
    fake = ("d=sys.modules['beonet_agent.discover']\n"
            "def f(node, run, window, management, include_virtual, exclude, stop):\n"
            " import time\n"
            " t=time.monotonic()\n"
            " while not stop() and time.monotonic()-t<20: time.sleep(0.02)\n"
            " return {'format':1,'node':node,'run':run,'nics':[]}\n"
            "d.discover=f\n")
    args = {"node": "A", "run": "r1", "cap": 30.0, "folder": str(tmp_path / "run")}
    done = _python(bundle.command(discover_task.MODULES, fake + discover_task._START, args), tmp_path)
    started = discover_task.parse_started("A", "r1", done.returncode, done.stdout, done.stderr)
    assert started["pid"] > 0 and started["superseded"] == []
    collect = d.collect_command("A", "r1", folder=str(tmp_path / "run"), wait=5.0)
    out = subprocess.run(["sh", "-c", collect], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin"}).stdout
    got = d.parse_collected("A", "r1", out)
    assert got["discovery"] == {"format": 1, "node": "A", "run": "r1", "nics": []}
    assert got["ended"] == "stopped"


def test_the_start_command_carries_the_modules_arguments_and_refuses_names_for_no_file():
    command = discover_task.start_command(PARAMS, "/usr/bin/python3")
    assert command.startswith("/usr/bin/python3 -I -S -c ")
    with pytest.raises(d.DiscoveryError, match="run must be 1 to 64 letters"):
        discover_task.start_command(dict(PARAMS, run="../x"))
    with pytest.raises(d.DiscoveryError, match="is not a name"):
        discover_task.start_command(dict(PARAMS, node="a/b"))
    with pytest.raises(d.DiscoveryError, match="^A: window must be more than 0"):
        discover_task.start_command(dict(PARAMS, window=3601.0))


@pytest.mark.parametrize(("rc", "stdout", "stderr", "message"), [
    (0, '%s{"error": "A: the listener of run r0 still runs"}\n' % discover_task.STARTED, "",
     "^A: the listener of run r0 still runs$"),
    (127, "", "sh: 1: python3: not found", r"^A: the background listener of run r1 could not be started "
     r"\(rc 127\): sh: 1: python3: not found$"),
    (1, "", "Traceback ...\nSyntaxError: invalid syntax", r"\(rc 1\): Traceback ...\nSyntaxError"),
    (0, "%s{\"pid\": \"x\"}\n" % discover_task.STARTED, "", r"\(rc 0\): beonet-discover-started"),
    (0, "", "", r"\(rc 0\): no output$"),
])
def test_a_start_that_did_not_start_is_an_error_naming_the_node(rc, stdout, stderr, message):
    with pytest.raises(d.DiscoveryError, match=message):
        discover_task.parse_started("A", "r1", rc, stdout, stderr)


def test_the_plugin_starts_by_one_command_with_the_inventorys_python(monkeypatch):
    out = {"rc": 0, "stdout": '%s{"pid": 42, "superseded": ["r0"]}\n' % discover_task.STARTED, "stderr": ""}
    args = {k: v for k, v in PARAMS.items() if k not in ("probe_only", "collect")}
    action, ran, commands = _plugin(monkeypatch, args, out)
    action._templar = type("Templar", (), {"template": lambda self, v: v})()
    vars_ = {"ansible_python_interpreter": "/opt/py/bin/python3"}
    assert action.run(task_vars=vars_) == {"changed": False, "pid": 42, "superseded": ["r0"]}
    assert ran == [] and commands == [discover_task.start_command(PARAMS, "/opt/py/bin/python3")]
    commands.clear()
    action.run(task_vars={"ansible_python_interpreter": "auto_silent"})
    assert commands[0].startswith("python3 -I -S -c ")
    commands.clear()                     # a path with a space or a shell word stays one word
    action.run(task_vars={"ansible_python_interpreter": "/opt/my py/python3; rm -rf /"})
    assert shlex.split(commands[0])[:2] == ["/opt/my py/python3; rm -rf /", "-I"]


@pytest.mark.parametrize(("args", "message"), [
    (dict(PARAMS, window="long"), "argument 'window' is of type"),
    (dict(PARAMS, node="a/b"), "^node: "),
    (dict(PARAMS, collect=True), "^background and collect are mutually exclusive$"),
    (dict(PARAMS, stray=1), "Unsupported parameters for \\(beonet_discover\\) module: stray"),
    (dict(PARAMS, window=0.0), "window must be more than 0"),
    (dict(PARAMS, window=float("nan")), "window must be more than 0"),
    (dict(PARAMS, window=1e308), "window must be more than 0"),
    (dict(PARAMS, node=".."), "^node: "),
    (dict(PARAMS, node="node\n1"), "^node: "),
    (dict(PARAMS, run="../etc"), "run must be 1 to 64 letters"),
    (dict(PARAMS, run="r\n1"), "run must be 1 to 64 letters"),
    (dict(PARAMS, exclude={"a": 1}), "argument 'exclude' is of type"),
])
def test_the_plugins_start_refuses_what_the_module_refuses_before_any_command(monkeypatch, args, message):
    action, ran, commands = _plugin(monkeypatch, args, {})
    action._templar = type("Templar", (), {"template": lambda self, v: v})()
    result = action.run(task_vars={})
    assert result["failed"] is True and result["changed"] is False, result
    assert ran == [] and commands == []
    assert re.search(message, result["msg"]), result["msg"]
