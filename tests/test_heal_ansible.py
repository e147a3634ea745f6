"""Heal on the Ansible side, on the controller only: the beonet_topology module's
down option, beonet_down through beonet_plan, and playbooks/heal.yml's first play
against an inventory where some hosts cannot be reached (slow: a few s each)."""

import json
import os
import re
import subprocess
import sys

from conftest import ROOT

BIN = os.path.dirname(sys.executable)
HEAL_HOSTS = "tests/ansible/heal/hosts.yml"


def play(*args, inventory="inventories/example/hosts.yml"):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)


def _section(stdout, title):
    """The output of one play, from its PLAY line to the next."""
    start = stdout.index("PLAY [%s]" % title)
    end = stdout.find("PLAY ", start + 5)
    return stdout[start:end if end > 0 else None]


def _hosts_of(section):
    return sorted(set(re.findall(r"^ok: \[([^\]\s]+)", section, re.M)))


def _recap(stdout):
    return {m.group(1): m.group(2) for m in
            re.finditer(r"^(\S+)\s+: (ok=.*)$", stdout, re.M)}


def test_dry_run_with_beonet_down_plans_the_live_nodes():
    # Connection attempts to the documentation addresses would fail the run.
    res = play("playbooks/dry_run.yml", "-e", "beonet_down=node-0-0,node-3-3")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("forwarding on") + res.stdout.count("forwarding off") == 14
    assert "# node-0-0 " not in res.stdout and "# node-3-3 " not in res.stdout
    assert "# node-0-1  address" in res.stdout


def test_module_fails_naming_unknown_down_nodes():
    res = play("playbooks/dry_run.yml", "-e", "beonet_down=node-0-0,nosuch")
    assert res.returncode != 0
    assert "down: no node named 'nosuch' in the topology" in res.stdout


def test_module_fails_when_every_node_is_down():
    every = ["node-%d-%d" % (i, j) for i in range(4) for j in range(4)]
    res = play("playbooks/dry_run.yml", "-e", json.dumps({"beonet_down": every}))
    assert res.returncode != 0
    assert "down: every node of the topology is down: no plan to make" in res.stdout


def test_heal_syntax():
    res = play("playbooks/heal.yml", "--syntax-check")
    assert res.returncode == 0, res.stdout + res.stderr


def test_heal_plans_around_an_unreachable_cut_vertex():
    res = play("playbooks/heal.yml", "--tags", "heal_plan", "-e", '{"beonet_test_dead": ["b"]}',
               inventory=HEAL_HOSTS)
    assert res.returncode == 0, res.stdout + res.stderr
    assert ("msg: 'dead: b; WARNING: the live nodes fall into parts that cannot reach each other:\n"
            "        a | c, d, e'") in res.stdout
    # the apply and verify plays run on the live nodes only
    assert _hosts_of(_section(res.stdout, "Apply the plan of the live nodes")) == ["a", "c", "d", "e"]
    # (the verify play's argument check, tagged always as Ansible's own, runs once: on a live
    # node, whichever of them Ansible picks for run_once)
    once = _hosts_of(_section(res.stdout, "Compile the expected paths"))
    assert len(once) == 1 and once[0] in ("a", "c", "d", "e"), once
    recap = _recap(res.stdout)
    assert "ignored=1" in recap["b"] and all("unreachable=0" in r for r in recap.values())
    assert all("changed=0" in r and "failed=0" in r for r in recap.values())


def test_heal_with_every_node_back_plans_them_all():
    res = play("playbooks/heal.yml", "--tags", "heal_plan", inventory=HEAL_HOSTS)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "msg: 'dead: none (full plan)'" in res.stdout
    assert _hosts_of(_section(res.stdout, "Apply the plan of the live nodes")) == ["a", "b", "c", "d", "e"]


def test_heal_with_a_dead_leaf_has_no_partition():
    res = play("playbooks/heal.yml", "--tags", "heal_plan", "-e", '{"beonet_test_dead": ["c", "e"]}',
               inventory=HEAL_HOSTS)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "msg: 'dead: c, e'" in res.stdout
    assert _hosts_of(_section(res.stdout, "Apply the plan of the live nodes")) == ["a", "b", "d"]


def test_verify_compiles_the_reachable_live_pairs_only():
    res = play("tests/ansible/heal/paths.yml", "--tags", "heal_plan",
               "-e", '{"beonet_test_dead": ["b"]}', inventory=HEAL_HOSTS)
    assert res.returncode == 0, res.stdout + res.stderr
    section = _section(res.stdout, "Compile the expected paths of the live nodes")
    traces = sorted(re.findall(r"(\w) traces \[([\w,]*)\]", section))
    assert traces == [("a", ""), ("c", "d,e"), ("d", "c,e"), ("e", "c,d")]
