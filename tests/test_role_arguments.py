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


@pytest.mark.parametrize("var,value", [
    ("beonet_mpi_hosts_file", "{a: 1}"), ("beonet_mpi_hosts_file", "etc/hosts"),
    ("beonet_mpi_hosts_file", "/etc/../root/x"), ("beonet_mpi_hosts_file", "/etc//hosts"),
    ("beonet_mpi_hosts_file", '"/etc/ho\\nsts"'), ("beonet_mpi_mca_file", '"/etc/x\\u2028y"'),
    ("beonet_mpi_dir", "/etc/beonet/mpi/"), ("beonet_mpi_prte_file", "[a]"),
])
def test_the_mpi_roles_paths_on_the_nodes_are_plain_absolute_paths(tmp_path, var, value):
    # the module refuses them before the role's first task that changes a node
    (tmp_path / "play.yml").write_text(PLAY.format(role="beonet_mpi", var=var, value=value))
    res = local_play(tmp_path / "play.yml")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and ("beonet mpi: %s: " % var) in out, out
    assert "is not a plain absolute path" in out, out
    assert "Install Open MPI" not in out, out


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


PLAN_PLAY = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - name: The plan role as the playbooks import it
      ansible.builtin.import_role:
        name: beonet_plan
        rolespec_validate: false
      vars:
        beonet_plan_topology: {topology}
        beonet_plan_group: all
        {var}: {value}
"""


@pytest.mark.parametrize("var,value", [("beonet_plan_verify_max_targets", "many"),
                                       ("beonet_plan_verify", "sometimes"), ("beonet_plan_paths", "perhaps")])
def test_the_plan_role_checks_its_arguments_once_before_the_compile(tmp_path, var, value):
    """The playbooks leave out Ansible's check on every host; the role's first task
    checks the same spec once, and a wrong value stops it before the compile."""
    play = PLAN_PLAY.format(topology=ROOT / "topologies/routed-mesh.yml", var=var, value=value)
    (tmp_path / "play.yml").write_text(play)
    res = local_play(tmp_path / "play.yml")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and var in out, out
    tasks = [line.split(" : ", 1)[1] for line in out.splitlines() if line.startswith("TASK [beonet_plan : ")]
    assert len(tasks) == 1, out
    assert tasks[0].startswith("Check the arguments against meta/argument_specs.yml, once"), out
    assert "Validating arguments against arg spec" not in out, out
