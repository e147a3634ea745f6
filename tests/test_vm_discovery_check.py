"""The VM scenarios' discovery check (molecule/vm-bonded/prepare.yml): a bond's channels
may be found exchanged, alike on every node of their LAN, and nothing else passes."""

import copy
import json
import os
import subprocess
import sys

import yaml
from conftest import ROOT

BIN = os.path.dirname(sys.executable)
WIRED = {
    "node-networkd": {"eth1": "ens4", "eth2": "ens5"},
    "node-netplan": {"eth1": "ens4", "eth2": "ens5", "eth3": "ens6", "eth4": "ens7"},
    "node-ifupdown": {"eth1": "ens4", "eth2": "ens5", "eth3": "ens6"},
    "node-nm": {"eth1": "ens4"},
}


def _cases() -> dict[str, dict]:
    both = copy.deepcopy(WIRED)   # core's channels exchanged on both of its nodes
    both["node-networkd"] = {"eth1": "ens5", "eth2": "ens4"}
    both["node-netplan"].update({"eth1": "ens5", "eth2": "ens4"})
    one = copy.deepcopy(WIRED)    # exchanged on one node only: channel 0 is two switches
    one["node-networkd"] = {"eth1": "ens5", "eth2": "ens4"}
    across = copy.deepcopy(WIRED)  # a NIC of bond0 found on bond1's LAN
    across["node-netplan"].update({"eth2": "ens6", "eth3": "ens5"})
    missing = copy.deepcopy(WIRED)
    del missing["node-ifupdown"]["eth3"]
    unknown = copy.deepcopy(WIRED)  # found on a NIC the lab did not wire
    unknown["node-nm"] = {"eth1": "ens9"}
    return {"wired": copy.deepcopy(WIRED), "both": both, "one": one, "across": across,
            "missing": missing, "unknown": unknown}


def test_channels_exchanged_alike_pass_and_every_other_mismatch_fails(tmp_path):
    check = yaml.safe_load((ROOT / "molecule/vm-bonded/prepare.yml").read_text())[1]["tasks"][2]
    seen = check["vars"]["beonet_molecule_seen"].replace(
        "hostvars[h].beonet_interfaces", "beonet_test_wired[h]")
    plan = subprocess.run([os.path.join(BIN, "beonet"), "compile", "topologies/backends-chain.yml"],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout
    tasks = [{"name": name, "ansible.builtin.assert": {"that": check["ansible.builtin.assert"]["that"],
                                                       "quiet": True},
              "ignore_errors": True, "register": "r_" + name,
              "vars": {"beonet_molecule_match": {"mapping": found}, "beonet_molecule_seen": seen}}
             for name, found in _cases().items()]
    tasks.append({"name": "results", "ansible.builtin.debug": {
        "msg": "{{ {" + ", ".join(f"'{n}': r_{n}.failed | default(false)" for n in _cases())
               + "} }}"}})
    (tmp_path / "pb.yml").write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False, "tasks": tasks,
        "vars": {"beonet_molecule_nodes": list(WIRED), "beonet_test_wired": WIRED,
                 "beonet_molecule_plan": json.loads(plan)}}]))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local",
                          str(tmp_path / "pb.yml")], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=False)
    last = json.loads(res.stdout)["plays"][0]["tasks"][-1]
    failed = last["hosts"]["localhost"]["msg"]
    assert failed == {"wired": False, "both": False, "one": True, "across": True,
                      "missing": True, "unknown": True}, res.stdout
