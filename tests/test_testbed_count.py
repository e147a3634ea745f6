"""The testbed scenario's TCP counter (molecule/testbed/count.yml): with static routes it
counts what leaves from any address but the node's cluster address (a rule per IP family
the plan has); with FRR what leaves
by any NIC but lo and the node's cluster NICs (a bond by its own name)."""

import json
import os
import subprocess
import sys

import yaml
from conftest import ROOT, ansible_render

BIN = os.path.dirname(sys.executable)


def _compile(topology: str) -> dict:
    return json.loads(subprocess.run([os.path.join(BIN, "beonet"), "compile", topology], cwd=ROOT,
                                     capture_output=True, text=True, check=True).stdout)


def _render(plan: dict, node: str, by: str) -> object:
    """The counter's nft match, as count.yml's task renders it for NODE of PLAN."""
    task = yaml.safe_load((ROOT / "molecule/testbed/count.yml").read_text())[0]["tasks"][1]
    return ansible_render("{{ beonet_testbed_match }}", {**task["vars"], "beonet_testbed_count_by": by,
                                                         "beonet_testbed_node": plan["nodes"][node]})


def test_static_counts_any_source_but_the_cluster_address():
    plan = _compile("topologies/metanode-testbed.yml")
    assert _render(plan, "node36", "address") == \
        [f"ip saddr != {plan['nodes']['node36']['address']} ip saddr != 127.0.0.0/8"]


def test_each_ip_family_of_the_plan_has_its_rule():
    dual = _compile("molecule/cabling/metagraph-12-dual.yml")["nodes"]["node12"]
    assert _render({"nodes": {"node12": dual}}, "node12", "address") == [
        f"ip saddr != {dual['address']} ip saddr != 127.0.0.0/8",
        f"ip6 saddr != {dual['address6']} ip6 saddr != ::1"]
    only = _compile("molecule/routed-mesh/mesh-ipv6-only.yml")["nodes"]["node-3-3"]
    assert _render({"nodes": {"node-3-3": only}}, "node-3-3", "address") == \
        [f"ip6 saddr != {only['address6']} ip6 saddr != ::1"]


def test_frr_counts_any_nic_but_lo_and_the_cluster_nics():
    assert _render(_compile("topologies/metanode-testbed-frr.yml"), "node36", "interface") == \
        ['oifname != { "lo", "eth1", "eth2" }']


def test_a_bond_counts_by_its_own_name_too():
    [match] = _render(_compile("topologies/bonded-dual-net.yml"), "node01", "interface")
    assert match.startswith('oifname != { "lo", "eth1", "eth2"') and '"bond0"' in match, match
