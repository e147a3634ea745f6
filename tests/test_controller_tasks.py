"""beonet_topology and beonet_verify_live run on the controller: their action plugins call
the module's body in the controller's Python when the connection is local, with the
module's argument checks and the module's result; elsewhere they run the module."""

import importlib.util
import json

import pytest
from conftest import ROOT

from beonet import controller
from beonet.livestate import task as live_task
from beonet.outputs import topology_task

TOPOLOGY = str(ROOT / "topologies/routed-mesh.yml")


def _compile(args, check=False, diff=False):
    return controller.run("beonet_topology", topology_task.ARGUMENT_SPEC, topology_task.compile_task, args,
                          check, diff)


def _plugin(name):
    path = ROOT / "action_plugins" / ("%s.py" % name)
    spec = importlib.util.spec_from_file_location(name + "_action", path)
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    return plugin


class _Task:
    check_mode = False
    diff = False

    def __init__(self, action, args):
        self.action, self.args = action, args


class _Connection:
    def __init__(self, transport):
        self.transport = transport
        self._shell = type("Shell", (), {"tmpdir": "/tmp/ansible-tmp-1"})()


def _action(name, args, transport, monkeypatch):
    """The plugin's ActionModule on a fake task and connection; the module run recorded."""
    plugin = _plugin(name)
    monkeypatch.setattr(plugin.ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    action = plugin.ActionModule.__new__(plugin.ActionModule)
    action._task, action._connection = _Task(name, args), _Connection(transport)
    ran = []
    action._execute_module = lambda module_name, task_vars: ran.append(module_name) or {"from": "module"}
    action._remove_tmp_path = lambda path: ran.append("removed %s" % path)
    return plugin, action, ran


def test_a_local_compile_runs_in_place_and_gives_the_modules_result(monkeypatch):
    _plugin_mod, action, ran = _action("beonet_topology", {"topology": TOPOLOGY}, "local", monkeypatch)
    result = action.run(task_vars={})
    assert ran == []
    assert result["changed"] is False and "failed" not in result
    expected = topology_task.compile_task(
        controller.ArgumentSpecValidator(topology_task.ARGUMENT_SPEC).validate(
            {"topology": TOPOLOGY}).validated_parameters, False, False)
    assert json.dumps(result, sort_keys=True) == json.dumps(expected, sort_keys=True)


@pytest.mark.parametrize(("transport", "missing"), [("ssh", None), ("community.docker.docker", None),
                                                     ("local", "PyYAML (No module named 'yaml')")])
def test_elsewhere_or_without_the_libraries_the_module_runs(monkeypatch, transport, missing):
    plugin, action, ran = _action("beonet_topology", {"topology": TOPOLOGY}, transport, monkeypatch)
    monkeypatch.setattr(plugin.topology, "IMPORT_ERROR", missing)
    assert action.run(task_vars={}) == {"from": "module"}
    assert ran == ["beonet_topology", "removed /tmp/ansible-tmp-1"]    # its remote folder too


@pytest.mark.parametrize(("args", "message"), [
    ({}, "missing required arguments: topology"),
    ({"topology": TOPOLOGY, "stray": 1}, "Unsupported parameters for (beonet_topology) module: stray"),
    ({"topology": TOPOLOGY, "verify": "ping"}, "value of verify must be one of: live, traceroute"),
])
def test_arguments_are_checked_as_the_module_checks_them(monkeypatch, args, message):
    _plugin_mod, action, ran = _action("beonet_topology", args, "local", monkeypatch)
    result = action.run(task_vars={})
    assert result["failed"] is True and message in result["msg"], result
    assert ran == []


def test_a_compile_error_fails_with_every_error(tmp_path):
    topo = tmp_path / "bad.yml"
    topo.write_text("name: bad\nfamily: mesh\nmesh: {dims: [2, 0]}\n")
    result = _compile({"topology": str(topo)})
    assert result["failed"] is True and result["msg"].startswith("beonet: ")
    assert result["errors"] and all(str(topo) in e for e in result["errors"])


@pytest.mark.parametrize("check", [True, False])
def test_the_plan_file_is_written_once_and_check_mode_writes_nothing(tmp_path, check):
    dest = tmp_path / "plan.json"
    args = {"topology": TOPOLOGY, "dest": str(dest)}
    first = _compile(args, check, True)
    assert first["changed"] is True and first["diff"]["before"] == ""
    assert dest.exists() is not check
    if not check:
        again = _compile(args, False, True)
        assert again["changed"] is False and "diff" not in again


def test_the_live_proof_refuses_nothing_to_prove(monkeypatch):
    args = {"plan": {}, "prefixes": []}
    _plugin_mod, action, ran = _action("beonet_verify_live", args, "local", monkeypatch)
    result = action.run(task_vars={})
    assert result == {"failed": True, "changed": False,
                      "msg": "beonet_verify_live: states or outputs is required unless prove is false"}
    assert ran == [] and live_task.IMPORT_ERROR is None


def test_every_way_of_running_the_playbooks_finds_the_action_plugins():
    """ansible.cfg and every Molecule scenario that points Ansible at the modules point it
    at their action plugins too (else the modules still run, slower)."""
    import configparser

    import yaml
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "ansible.cfg")
    assert cfg["defaults"]["action_plugins"] == "./action_plugins"
    for path in sorted((ROOT / "molecule").glob("*/molecule.yml")):
        env = yaml.safe_load(path.read_text())["ansible"].get("env", {})
        if "ANSIBLE_LIBRARY" in env:
            assert env.get("ANSIBLE_ACTION_PLUGINS") == "${MOLECULE_PROJECT_DIRECTORY}/action_plugins", path
    plugins = ROOT / "action_plugins"
    assert (plugins / "beonet_verify_live.py").resolve() == plugins / "beonet_topology.py"


def test_each_nodes_digest_follows_what_its_check_is_asked(tmp_path):
    """The fast path's token: a node's digest changes with its plan, the prefixes or the
    down nodes, and with nothing else (another node's own routes)."""
    base = _compile({"topology": TOPOLOGY})
    again = _compile({"topology": TOPOLOGY})
    assert base["digests"] == again["digests"] and set(base["digests"]) == set(base["plan"]["nodes"])
    assert len(set(base["digests"].values())) == len(base["digests"])
    down = _compile({"topology": TOPOLOGY, "down": ["node-1-1"]})
    assert all(down["digests"][n] != base["digests"][n] for n in down["digests"])
    plan = json.loads(json.dumps(base["plan"]))
    plan["nodes"]["node-0-0"]["routes"] = []
    other = topology_task._digests(plan, base["prefixes"], base["agent"])
    changed = {n for n in other if other[n] != base["digests"][n]}
    assert changed == {"node-0-0"}
    assert topology_task._digests(base["plan"], base["prefixes"][1:], base["agent"]) != base["digests"]


@pytest.mark.parametrize("mode", ["live", "traceroute"])
def test_results_in_place_are_what_a_module_would_return(mode):
    """No JSON round trip in place: the results must be plain JSON already (no tuple, no
    set, no key but a string), as the module's would be after it."""
    compiled = _compile({"topology": str(ROOT / "topologies/metanode-testbed-frr.yml"),
                         "paths": mode == "traceroute", "verify": mode})
    picked = controller.run("beonet_verify_live", live_task.ARGUMENT_SPEC, live_task.prove_task,
                            {"plan": compiled["plan"], "prefixes": compiled["prefixes"], "prove": False,
                             "mode": mode, "paths": compiled.get("paths", {})}, False, False)
    for result in compiled, picked:
        assert "failed" not in result
        assert json.loads(json.dumps(result)) == result
