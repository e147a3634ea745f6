"""The Ansible side: the local module through ansible-playbook (slow: a few s each)."""

import os
import subprocess
import sys

import pytest
from conftest import ROOT

BIN = os.path.dirname(sys.executable)


def play(*args, inventory="inventories/example/hosts.yml"):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)


def test_dry_run_prints_every_routing_table_without_touching_nodes():
    # The example inventory's hosts are documentation addresses (192.0.2.x):
    # any connection attempt would fail the run, so success proves none was made.
    res = play("playbooks/dry_run.yml")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("forwarding on") == 16
    assert "ip route replace 10.0.1.0/24 via 10.0.128.2 dev enp2s0 src 10.0.0.1 proto 250" in res.stdout
    recap = [line for line in res.stdout.splitlines() if " : ok=" in line]
    assert len(recap) == 16
    assert all("changed=0" in r and "unreachable=0" in r and "failed=0" in r for r in recap)


def test_dry_run_fails_with_every_error_and_file_line_path(tmp_path):
    topo = tmp_path / "bad.yml"
    topo.write_text("name: bad\nfamily: mesh\nmesh:\n  dims: [4, one]\nlink: {mtu: 5}\n")
    res = play("playbooks/dry_run.yml", "-e", "beonet_topology_file=%s" % topo)
    assert res.returncode != 0
    assert "%s:4: mesh.dims[1]: must be an integer from 2 to 1024" % topo in res.stdout
    assert "%s:5: link.mtu: must be an integer from 576 to 65535" % topo in res.stdout


def test_module_rejects_unknown_hosts_and_missing_nic_names(tmp_path):
    inv = tmp_path / "hosts.yml"
    inv.write_text("beonet_nodes:\n  hosts:\n    node-0-0:\n      beonet_interfaces: {eth1: ens3}\n"
                   "    stray:\n")
    res = play("playbooks/dry_run.yml", "-e",
               "beonet_topology_file=%s" % (ROOT / "topologies/routed-mesh.yml"),
               inventory=str(inv))
    assert res.returncode != 0
    assert "host 'stray' is not a node of the topology" in res.stdout
    assert "no physical name for eth2" in res.stdout
    assert "the inventory lacks node 'node-3-3'" in res.stdout


@pytest.mark.parametrize("check", [True, False])
def test_module_writes_plan_once_and_honours_check_mode(tmp_path, check):
    dest = tmp_path / "plan.json"
    args = ["tests/ansible/write_plan.yml", "-e", "beonet_test_dest=%s" % dest,
            "-e", "beonet_test_topology=%s" % (ROOT / "topologies/metanode-testbed.yml")]
    if check:
        res = play(*args, "--check", "--diff", inventory="localhost,")
        assert res.returncode == 0, res.stdout + res.stderr
        assert "changed=True nodes=36" in res.stdout
        assert not dest.exists()
        return
    first = play(*args, inventory="localhost,")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "changed=True nodes=36" in first.stdout and dest.exists()
    second = play(*args, inventory="localhost,")
    assert "changed=False nodes=36" in second.stdout
    assert "changed=0" in second.stdout
