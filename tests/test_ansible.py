"""The Ansible side: the local module through ansible-playbook (slow: a few s each)."""

import json
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


# site.yml's flow, with a stand-in beonet_node that records its calls -------------

STUB_NODE = '''#!/usr/bin/python
import os
from ansible.module_utils.basic import AnsibleModule

KEYS = ("node", "plan", "plan_format", "prefixes", "backend", "management_interface",
        "management_address", "supported_os", "include_virtual", "down", "preflight", "validate_only",
        "confirm_timeout", "confirm", "neighbours", "fingerprint")


def listed(name):
    return os.environ.get(name, "").split(",")


def main():
    m = AnsibleModule(argument_spec={k: {"type": "raw"} for k in KEYS}, supports_check_mode=True)
    node, pre, confirm = m.params["node"], bool(m.params["preflight"]), bool(m.params["confirm"])
    asked = sorted(t["address"] for t in m.params["neighbours"] or [])
    what = "preflight" if pre else "confirm %d" % len(asked) if confirm else "apply"
    with open(os.environ["BEONET_STUB_LOG"], "a") as fh:
        fh.write("%s %s%s\\n" % (node, what, " check" if m.check_mode else ""))
    if pre and node in listed("BEONET_STUB_REFUSE"):
        m.fail_json(msg="%s: refused by the stand-in" % node)
    if pre:
        left = "orphaned" if node in listed("BEONET_STUB_ORPHANED") else "none"
        m.exit_json(changed=False, in_sync=node in listed("BEONET_STUB_SYNCED"), checkpoint={"state": left})
    if confirm and node in listed("BEONET_STUB_ROLLBACK"):
        m.fail_json(msg="%s: rolled back: %s: no answer from 10.0.0.2 on eth1" % (node, node))
    if confirm:
        m.exit_json(changed=False, confirmed=True, asked=m.params["neighbours"])
    armed = {"armed": 1} if float(m.params["confirm_timeout"] or 0) > 0 and not m.check_mode else {}
    m.exit_json(changed=True, **armed)


main()
'''


def site(tmp_path, *args, refuse="", synced="", rollback="", orphaned=""):
    """site.yml on nodes a, b, c (local connection) with the stand-in beonet_node; its calls."""
    (tmp_path / "lib").mkdir(exist_ok=True)
    (tmp_path / "lib/beonet_node.py").write_text(STUB_NODE)
    (tmp_path / "topo.yml").write_text("name: st\nfamily: custom\ncustom:\n  nodes: [a, b, c]\n"
                                       "  links: [{ends: [a, b]}, {ends: [b, c]}]\n")
    (tmp_path / "hosts.yml").write_text(
        "beonet_nodes:\n  vars:\n    ansible_connection: local\n"
        "    ansible_python_interpreter: %s\n    beonet_topology_file: %s\n"
        "  hosts: {a: {}, b: {}, c: {}}\n" % (sys.executable, tmp_path / "topo.yml"))
    log = tmp_path / "calls.log"
    log.write_text("")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LIBRARY="%s:%s" % (tmp_path / "lib", ROOT / "library"),
               BEONET_STUB_LOG=str(log), BEONET_STUB_REFUSE=refuse, BEONET_STUB_SYNCED=synced,
               BEONET_STUB_ROLLBACK=rollback, BEONET_STUB_ORPHANED=orphaned)
    if not any("beonet_node_fast" in a for a in args):       # the fast path would read this machine
        args = ("-e", "beonet_node_fast_path=false") + args
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                          "playbooks/site.yml", *args], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=False)
    return res, sorted(log.read_text().splitlines())


def test_site_applies_only_where_the_node_is_out_of_sync(tmp_path):
    res, calls = site(tmp_path, synced="a,c")
    assert res.returncode == 0, res.stdout + res.stderr
    assert calls == ["a preflight", "b apply", "b confirm 2", "b preflight", "c preflight"]
    assert "Gathering Facts" not in res.stdout


def test_site_rolls_out_leaves_first_and_stops_at_the_batch_with_a_rolled_back_node(tmp_path):
    """a - b - c: b forwards, so the order is a, c, then b; one node a batch; c is rolled
    back: the run fails naming it and b is never touched."""
    res, _calls = site(tmp_path, "-e", "beonet_serial=1", rollback="c")
    order = (tmp_path / "calls.log").read_text().splitlines()
    assert res.returncode != 0 and "c: rolled back: c: no answer from 10.0.0.2 on eth1" in res.stdout
    # b is not on the plan yet when a and c confirm: neither asks it
    assert order[3:] == ["a apply", "a confirm 0", "c apply", "c confirm 0"], order


def test_site_confirms_every_node_of_a_batch_asking_only_neighbours_on_the_plan(tmp_path):
    res, calls = site(tmp_path, "-e", "beonet_serial=2", synced="b")
    assert res.returncode == 0, res.stdout + res.stderr
    # b was in sync: a and c ask it
    assert calls == ["a apply", "a confirm 1", "a preflight", "b preflight", "c apply", "c confirm 1",
                     "c preflight"]


def test_site_one_refusal_stops_every_node_before_any_change(tmp_path):
    res, calls = site(tmp_path, refuse="c")
    assert res.returncode != 0
    assert "c: refused by the stand-in" in res.stdout
    assert calls == ["a preflight", "b preflight", "c preflight"]


def test_site_in_check_mode_still_reports_what_would_change(tmp_path):
    res, calls = site(tmp_path, "--check", "--diff", synced="b")
    assert res.returncode == 0, res.stdout + res.stderr
    assert calls == ["a apply check", "a preflight check", "b preflight check",
                     "c apply check", "c preflight check"]


def test_site_confirms_a_change_a_reboot_left_unconfirmed_without_applying_again(tmp_path):
    res, calls = site(tmp_path, synced="a,b,c", orphaned="b")
    assert res.returncode == 0, res.stdout + res.stderr
    assert calls == ["a preflight", "b confirm 2", "b preflight", "c preflight"]


def test_site_takes_a_node_the_fast_path_finds_unchanged_as_in_sync_without_the_module(tmp_path):
    """The fast path's command stands in: node a prints its own token and a matching SHA,
    b and c a stale fingerprint; only b and c are checked by the module."""
    fake = ("{{ ('echo ' ~ beonet_node_token ~ ' 5ha; echo 5ha') if inventory_hostname == 'a' "
            "else 'echo none; echo 5ha' }}")
    res, calls = site(tmp_path, "-e", json.dumps({"beonet_node_fast_command": fake}), synced="b,c")
    assert res.returncode == 0, res.stdout + res.stderr
    assert calls == ["b preflight", "c preflight"]


def test_site_checks_in_full_a_node_whose_fast_read_does_not_end_in_time(tmp_path):
    """Node b's fast-path read hangs past beonet_node_fast_timeout: b gets the module's
    full check, a (found unchanged) does not, and the run goes on."""
    fake = ("{{ ('echo ' ~ beonet_node_token ~ ' 5ha; echo 5ha') if inventory_hostname == 'a' "
            "else ('sleep 30' if inventory_hostname == 'b' else 'echo none; echo 5ha') }}")
    extra = {"beonet_node_fast_command": fake, "beonet_node_fast_timeout": 2}
    res, calls = site(tmp_path, "-e", json.dumps(extra), synced="b,c")
    assert res.returncode == 0, res.stdout + res.stderr
    assert calls == ["b preflight", "c preflight"]
    assert "b: the fast path's read did not answer within 2 s: checked in full" in res.stderr


def test_site_with_the_confirm_timeout_zero_applies_without_confirming(tmp_path):
    res, calls = site(tmp_path, "-e", "beonet_confirm_timeout=0", synced="a,c")
    assert res.returncode == 0, res.stdout + res.stderr
    assert calls == ["a preflight", "b apply", "b preflight", "c preflight"]


def test_mpi_module_gives_each_launcher_its_own_ssh_parameter(tmp_path):
    """Open MPI 4's launcher reads plm_rsh_args (openmpi-mca-params.conf), Open MPI 5's
    PRRTE plm_ssh_args (prte-mca-params.conf); each node gets its own MPICH file."""
    import json

    from test_benchmarks import expected_paths

    from beonet.compiler import pipeline
    from beonet.outputs import mpi
    from beonet.outputs import plan as render
    compiled = pipeline.compile_file(str(ROOT / "topologies/custom-example.yml"))
    plan = render.plan(compiled)
    (tmp_path / "plan.json").write_text(json.dumps({"p": plan, "paths": expected_paths(compiled, plan)}))
    out = tmp_path / "result.json"
    (tmp_path / "play.yml").write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
        "    - beonet_mpi: {action: plan, plan: '{{ p }}', paths: '{{ paths }}',\n"
        "                   ssh_args: '-o BatchMode=yes'}\n"
        "      register: r\n"
        "    - ansible.builtin.copy: {content: '{{ r | to_json }}', dest: %s}\n" % out)
    res = play("-e", "@%s" % (tmp_path / "plan.json"), "-e", "ansible_python_interpreter=" + sys.executable,
               str(tmp_path / "play.yml"), inventory="localhost,")
    assert res.returncode == 0, res.stdout + res.stderr
    r = json.loads(out.read_text())
    assert r["mca"].endswith("plm_rsh_args = -o BatchMode=yes\n") and "plm_ssh_args" not in r["mca"]
    assert r["prte_mca"] == mpi.prte_mca(plan) + "plm_ssh_args = -o BatchMode=yes\n"
    assert r["prte_mca_by_name"] == mpi.prte_mca(plan, by_name=True) + "plm_ssh_args = -o BatchMode=yes\n"
    assert r["prte_by_name_problem"] == mpi.cluster_nic_names(plan)[1]
    assert r["mpich_env"] == mpi.mpich_env_files(plan)


@pytest.mark.parametrize("extra", [
    ["-e", "beonet_serial=0"], ["-e", "beonet_serial=101%"], ["-e", "beonet_serial=abc"],
    ["-e", "beonet_serial=-1"], ["-e", '{"beonet_serial": [1, 2]}'], ["-e", "beonet_serial=1;reboot"],
    ["-e", "beonet_batch_check=/nonexistent/check.yml"],
])
def test_site_refuses_a_bad_batch_size_or_batch_check_before_any_node_is_read(tmp_path, extra):
    res, calls = site(tmp_path, *extra)
    assert res.returncode != 0 and calls == [], res.stdout + res.stderr
    assert "beonet_serial must be a number of nodes" in res.stdout


@pytest.mark.parametrize("value", [0, "abc", -5, "nan", 1e12, 100000, 2.5, "1\nreboot", "../60", [1, 2]])
def test_site_refuses_a_bad_fast_path_timeout_before_any_node_is_read(tmp_path, value):
    res, calls = site(tmp_path, "-e", json.dumps({"beonet_node_fast_timeout": value}))
    assert res.returncode != 0 and calls == [], res.stdout + res.stderr
    assert "beonet_node_fast_timeout must be whole seconds (1 to 99999)" in res.stdout


def test_site_takes_a_batch_check_file_that_exists(tmp_path):
    check = tmp_path / "check.yml"
    check.write_text("- name: A check of ours\n  ansible.builtin.debug:\n    msg: batch checked\n")
    res, calls = site(tmp_path, "-e", "beonet_serial=50%", "-e", "beonet_batch_check=%s" % check, synced="b")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("batch checked") == 2 and "a apply" in calls and "c apply" in calls


@pytest.mark.parametrize("value", ["abc", 0, 100000, -1, "nan", "1\nreboot", "../60", 1e12])
def test_the_node_check_refuses_a_bad_fast_timeout_without_reading_the_node(tmp_path, value):
    (tmp_path / "pb.yml").write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - beonet_node:\n        node: a\n"
        "        plan: {}\n        plan_format: 3\n        prefixes: []\n        preflight: true\n"
        "        fast_command: touch %s\n        fast_timeout: %s\n" % (tmp_path / "read", json.dumps(value)))
    res = play(str(tmp_path / "pb.yml"), "-c", "local", inventory="a,")
    assert res.returncode != 0
    assert "fast_timeout must be whole seconds (1 to 99999), not" in res.stdout
    assert not (tmp_path / "read").exists()
