"""The roles' variables are checked against their argument specs before any task
runs: a wrong value stops the role with the variable's name, and no task of the
role (none of which could run here) is reached."""

import json

import pytest
from conftest import ROOT, local_play

from beonet.compiler import pipeline
from beonet.outputs import plan as render

PLAY = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - name: The role with a wrong variable
      ansible.builtin.include_role:
        name: {role}
      vars:
        {var}: {value}
"""


@pytest.mark.parametrize("role,var,value,message", [
    ("beonet_mpi", "beonet_mpi_stacks", "[openmpi, intelmpi]", "beonet_mpi_stacks"),
    ("beonet_mpi", "beonet_mpi_slots", "many", "beonet_mpi_slots"),
    ("beonet_mpi", "beonet_mpi_run", "perhaps", "beonet_mpi_run"),
    ("beonet_mpi", "beonet_mpi_packages", "{a: 1}", "beonet_mpi_packages"),
    ("beonet_slurm", "beonet_slurm_cpus", "lots", "beonet_slurm_cpus"),
    ("beonet_slurm", "beonet_slurm_etc_hosts", "sometimes", "beonet_slurm_etc_hosts"),
    ("beonet_slurm", "beonet_slurm_wait", "[1, 2]", "beonet_slurm_wait"),
])
def test_a_wrong_role_variable_stops_before_any_task(tmp_path, role, var, value, message):
    (tmp_path / "play.yml").write_text(PLAY.format(role=role, var=var, value=value))
    res = local_play(tmp_path / "play.yml")
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert "Validating arguments against arg spec" in out and message in out, out
    tasks = [line for line in out.splitlines() if line.startswith("TASK [%s : " % role)]
    assert tasks == ["TASK [%s : Validating arguments against arg spec 'main'" % role
                     + tasks[0].split("'main'", 1)[1]], tasks


SLURM_PLAY = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - name: The Slurm role
      ansible.builtin.include_role:
        name: beonet_slurm
      vars:
        beonet_slurm_cpus: 2
        beonet_slurm_packages: [a-package-that-must-not-be-installed]
"""


@pytest.mark.parametrize("extra,message", [
    ({}, "no compiled plan"),
    ({"beonet_slurm_controller": "node-9-9"}, "controller: node-9-9 is not a node of routed-mesh"),
    ({"beonet_slurm_partition": "a b"}, 'partition: "a b": letters, digits'),
])
def test_the_slurm_role_refuses_a_wrong_setting_before_installing_anything(tmp_path, extra, message):
    """The plan and the role's settings are checked on the controller first: a wrong
    one stops the role before its first task that changes a node (the package install)."""
    vars_ = dict(extra)
    if extra:
        vars_["beonet_plan_result"] = {"plan": render.plan(pipeline.compile_file(
            str(ROOT / "topologies/routed-mesh.yml")))}
    (tmp_path / "vars.json").write_text(json.dumps(vars_))
    (tmp_path / "play.yml").write_text(SLURM_PLAY.replace(
        "  gather_facts: false\n", "  gather_facts: false\n  vars_files: [vars.json]\n"))
    res = local_play(tmp_path / "play.yml")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and message in out, out
    assert "Install Slurm" not in out, out
