"""Slurm's whole slurm.conf and cgroup.conf from the plan, the Slurm version read from
`slurmd -V` and the files that version reads, and the beonet_slurm module."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, golden

from beonet.compiler import pipeline
from beonet.outputs import export, slurm
from beonet.outputs import plan as render

TOPOLOGIES = ["routed-mesh", "switch-tree", "metanode-testbed", "custom-example"]
# Every key slurm_conf() writes is one of Slurm 24.11's slurm.conf options
# (src/common/read_config.c of slurm-24-11-5-1, slurm_conf_options[]).
SLURM_2411_KEYS = {"ClusterName", "SlurmctldHost", "SlurmUser", "AuthType", "ProctrackType", "TaskPlugin",
                   "JobAcctGatherType", "MpiDefault", "TopologyPlugin", "SelectType",
                   "SelectTypeParameters", "ReturnToService", "StateSaveLocation", "SlurmdSpoolDir",
                   "SlurmctldPidFile", "SlurmdPidFile", "SlurmctldLogFile", "SlurmdLogFile", "NodeName",
                   "PartitionName"}


def _plan(name):
    return render.plan(pipeline.compile_file(str(ROOT / "topologies" / ("%s.yml" % name))))


def _settings(text):
    """slurm.conf lines as (key, value) pairs, comments and blank lines left out."""
    return [tuple(line.split("=", 1)) for line in text.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_slurm_conf(name):
    golden(ROOT / "tests/golden" / ("%s.slurm-conf" % name), slurm.slurm_conf(_plan(name)))


def test_cgroup_conf():
    golden(ROOT / "tests/golden/routed-mesh.cgroup-conf", slurm.cgroup_conf(_plan("routed-mesh")))


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_slurm_conf_keys_are_slurm_options_and_each_is_set_once(name):
    pairs = _settings(slurm.slurm_conf(_plan(name)))
    keys = [k for k, _ in pairs]
    assert set(keys) <= SLURM_2411_KEYS
    once = [k for k in keys if k not in ("NodeName", "PartitionName")]
    assert len(once) == len(set(once))


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_every_daemon_is_reached_at_its_cluster_address(name):
    plan = _plan(name)
    conf = dict(pair for pair in _settings(slurm.slurm_conf(plan)) if pair[0] != "NodeName")
    first = next(iter(plan["nodes"]))
    assert conf["SlurmctldHost"] == "%s(%s)" % (first, plan["nodes"][first]["address"])
    nodes = [line for line in slurm.slurm_conf(plan).splitlines() if line.startswith("NodeName=")]
    assert nodes == [line for line in slurm.nodes(plan).splitlines() if line.startswith("NodeName=")]
    assert len(nodes) == len(plan["nodes"])


def test_plugins_need_no_cgroup():
    conf = dict(_settings(slurm.slurm_conf(_plan("switch-tree"))))
    assert conf["ProctrackType"] == "proctrack/linuxproc"
    assert conf["TaskPlugin"] == "task/none"
    assert conf["JobAcctGatherType"] == "jobacct_gather/none"
    assert conf["TopologyPlugin"] == "topology/tree"
    assert "CgroupPlugin=disabled" in slurm.cgroup_conf(_plan("switch-tree")).splitlines()


def test_controller_partition_and_cpus_as_asked():
    plan = _plan("routed-mesh")
    text = slurm.slurm_conf(plan, controller="node-2-3", partition="batch", slots={"node-0-1": 8})
    assert "SlurmctldHost=node-2-3(10.0.3.3)" in text.splitlines()
    assert "PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP" in text.splitlines()
    assert "NodeName=node-0-1 NodeAddr=10.0.1.1 CPUs=8" in text.splitlines()
    assert "NodeName=node-0-0 NodeAddr=10.0.0.1 CPUs=1" in text.splitlines()


@pytest.mark.parametrize("controller, partition, message", [
    ("node-9-9", "all", "controller: node-9-9 is not a node of routed-mesh (nodes: "),
    ("", "a b", 'partition: "a b": letters, digits'),
    ("", "", 'partition: "": letters, digits'),
])
def test_bad_controller_or_partition_is_refused(controller, partition, message):
    with pytest.raises(slurm.SlurmError) as exc:
        slurm.slurm_conf(_plan("routed-mesh"), controller=controller, partition=partition)
    assert str(exc.value).startswith(message)


@pytest.mark.parametrize("name, cluster", [
    ("routed-mesh", "routed-mesh"),
    ("Lab.Cluster_2", "lab_cluster_2"),
    ("A" + "b" * 62, "a" + "b" * 39),
])
def test_cluster_name_is_as_slurm_keeps_it(name, cluster):
    assert slurm.cluster_name(name) == cluster
    assert len(slurm.cluster_name(name)) <= 40


@pytest.mark.parametrize("text, version", [
    ("slurm 24.11.5\n", (24, 11, 5)),
    ("slurm-wlm 24.11.5\n", (24, 11, 5)),           # Debian 13's slurmd
    ("slurm 25.05.0-0rc1", (25, 5, 0)),
    ("slurm 22.05", (22, 5, 0)),
    ("  slurm 26.05.1\nmore", (26, 5, 1)),
])
def test_slurm_version_from_slurmd(text, version):
    assert slurm.slurm_version(text) == version


@pytest.mark.parametrize("text", ["", "slurm", "24.11.5", "bash: slurmd: command not found",
                                  "slurm version unknown", "slurmctld 24.11.5"])
def test_a_version_that_does_not_parse_is_an_error(text):
    with pytest.raises(slurm.SlurmError) as exc:
        slurm.slurm_version(text)
    assert str(exc.value) == ("slurmd -V: no Slurm version in %s (expected e.g. 'slurm 24.11.5')"
                              % json.dumps(text.strip()))


@pytest.mark.parametrize("version, topology, cgroup", [
    ((22, 5, 9), "topology.conf", False),
    ((24, 5, 0), "topology.conf", True),
    ((24, 11, 5), "topology.conf", True),
    ((25, 5, 0), "topology.yaml", True),
    ((26, 5, 1), "topology.yaml", True),
])
def test_files_a_version_reads(version, topology, cgroup):
    assert slurm.topology_file(version) == topology
    files = slurm.files_for(version)
    assert files == {"slurm.conf": True, "topology.conf": topology == "topology.conf",
                     "topology.yaml": topology == "topology.yaml", "cgroup.conf": cgroup}


def test_node_files_by_each_answer():
    out = slurm.node_files({"a": "slurm-wlm 24.11.5\n", "b": "slurm 25.05.1", "c": ""})
    assert out["a"] == {"version": "24.11.5", "files": slurm.files_for((24, 11, 5))}
    assert out["b"]["version"] == "25.05.1" and out["b"]["files"]["topology.yaml"]
    assert out["c"] == {"version": "", "files": {}}


def test_node_files_name_every_node_whose_answer_does_not_parse():
    with pytest.raises(slurm.SlurmError) as exc:
        slurm.node_files({"a": "slurm 24.11.5", "b": "oops", "c": "slurm x"})
    assert str(exc.value).splitlines() == [
        "b: slurmd -V: no Slurm version in \"oops\" (expected e.g. 'slurm 24.11.5')",
        "c: slurmd -V: no Slurm version in \"slurm x\" (expected e.g. 'slurm 24.11.5')"]


def _module(tmp_path, args, check=False):
    """The beonet_slurm module through ansible-playbook on localhost: (process, result)."""
    plan = _plan("switch-tree")
    (tmp_path / "vars.json").write_text(json.dumps({"p": plan, "a": args}))
    out = tmp_path / "result.json"
    (tmp_path / "play.yml").write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
        "    - beonet_slurm: \"{{ a | combine({'action': 'plan', 'plan': p}) }}\"\n"
        "      register: r\n"
        "    - ansible.builtin.copy: {content: '{{ r | to_json }}', dest: %s}\n"
        "      check_mode: false\n" % out)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
           "-e", "@%s" % (tmp_path / "vars.json"), "-e", "ansible_python_interpreter=" + sys.executable,
           str(tmp_path / "play.yml")] + (["--check"] if check else [])
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return res, (json.loads(out.read_text()) if out.exists() else None), plan


@pytest.mark.parametrize("check", [False, True])
def test_module_returns_the_files(tmp_path, check):
    res, r, plan = _module(tmp_path, {"controller": "node02", "slots": {"node01": 2},
                                      "versions": {"node01": "slurm-wlm 24.11.5", "node02": "slurm 25.05.2"}},
                           check=check)
    assert res.returncode == 0, res.stdout + res.stderr
    assert r["changed"] is False
    assert r["controller"] == "node02" and r["cluster_name"] == "switch-tree"
    assert r["slurm_conf"] == slurm.slurm_conf(plan, "node02", "all", {"node01": 2})
    assert r["topology_conf"] == slurm.topology_conf(plan)
    assert r["topology_yaml"] == slurm.topology_yaml(plan)
    assert r["cgroup_conf"] == slurm.cgroup_conf(plan)
    assert r["etc_hosts"] == export.hosts(plan)
    assert r["nodes"] == {"node01": {"version": "24.11.5", "files": slurm.files_for((24, 11, 5))},
                          "node02": {"version": "25.05.2", "files": slurm.files_for((25, 5, 2))}}


def test_module_fails_on_a_version_it_cannot_read(tmp_path):
    res, r, _ = _module(tmp_path, {"versions": {"node01": "slurmd: error: oops"}})
    assert res.returncode != 0 and r is None
    assert "beonet slurm: node01: slurmd -V: no Slurm version in" in res.stdout


@pytest.mark.parametrize("slots, message", [
    ({"node-0-0": 0, "node-1-1": "2"}, "CPUs of node-0-0, node-1-1: a whole number of 1 or more"),
    ({"node-0-0": True}, "CPUs of node-0-0: a whole number of 1 or more"),
    (0, "CPUs of every node: a whole number of 1 or more"),
])
def test_bad_cpus_are_refused(slots, message):
    with pytest.raises(slurm.SlurmError) as exc:
        slurm.slurm_conf(_plan("routed-mesh"), slots=slots)
    assert str(exc.value) == message
