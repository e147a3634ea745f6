#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: beonet_verify
short_description: Check a node's live paths, forwarding and bonds against its beonet plan
description:
  - Runs C(traceroute -n) from this node to each target and compares the hop
    addresses with the compiler's expected hop list. Reads the forwarding state and,
    where the plan has bonds, C(/proc/net/bonding). Changes nothing.
options:
  node:
    description: This node's name in the plan.
    type: str
    required: true
  plan:
    description: This node's plan.
    type: dict
    required: true
  targets:
    description: Destination node name to its address.
    type: dict
    required: true
  expected:
    description: Destination node name to the expected list of hop addresses.
    type: dict
    required: true
  parallel:
    description: Traceroutes run at once.
    type: int
    default: 8
author:
  - beonet developers
"""

EXAMPLES = r"""
- name: Verify the paths from this node
  beonet_verify:
    node: "{{ inventory_hostname }}"
    plan: "{{ beonet_plan_result.nodes[inventory_hostname] }}"
    targets: "{{ beonet_verify_targets }}"
    expected: "{{ beonet_plan_result.paths[inventory_hostname] }}"
"""

RETURN = r"""
mismatches:
  description: Pairs whose traceroute differs from the plan (pair, expected, seen).
  returned: always
  type: list
  elements: dict
checked:
  description: Number of pairs traced.
  returned: always
  type: int
problems:
  description: Forwarding or bond states that differ from the plan.
  returned: always
  type: list
  elements: str
"""

from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet import verify


def main():
    module = AnsibleModule(
        argument_spec={
            "node": {"type": "str", "required": True},
            "plan": {"type": "dict", "required": True},
            "targets": {"type": "dict", "required": True},
            "expected": {"type": "dict", "required": True},
            "parallel": {"type": "int", "default": 8},
        },
        supports_check_mode=True,
    )
    p = module.params
    name = p["node"]
    hops_max = max([len(v) for v in p["expected"].values()] + [1]) + 2

    def trace(item):
        dst, addr = item
        rc, out, err = module.run_command(["traceroute", "-n", "-N", "1", "-q", "1", "-w", "1",
                                           "-m", str(hops_max), addr])
        if rc != 0:
            return dst, ["error: %s" % err.strip()]
        return dst, verify.parse_traceroute(out)

    with ThreadPoolExecutor(max_workers=max(1, p["parallel"])) as pool:
        seen = dict(pool.map(trace, sorted(p["targets"].items())))
    mismatches = []
    for dst in sorted(seen):
        want = p["expected"].get(dst, [])
        if not verify.compare(want, seen[dst]):
            mismatches.append({"pair": "%s -> %s" % (name, dst), "expected": want,
                               "seen": seen[dst]})
    problems = []
    with open("/proc/sys/net/ipv4/ip_forward", encoding="utf-8") as fh:
        fwd = fh.read().strip() == "1"
    if fwd != p["plan"]["forwarding"]:
        problems.append("%s: forwarding is %s, the plan says %s"
                        % (name, "on" if fwd else "off", "on" if p["plan"]["forwarding"] else "off"))
    for iface in p["plan"]["interfaces"]:
        if iface["kind"] != "bond":
            continue
        try:
            with open("/proc/net/bonding/%s" % iface["name"], encoding="utf-8") as fh:
                mode, members = verify.bond_state(fh.read())
        except OSError:
            problems.append("%s: bond %s does not exist" % (name, iface["name"]))
            continue
        if not mode or iface["mode"] not in mode.replace("load balancing (round-robin)", "balance-rr"):
            problems.append("%s: %s mode is %s, the plan says %s" % (name, iface["name"], mode, iface["mode"]))
        for m in iface["members"]:
            if members.get(m) != "up":
                problems.append("%s: %s member %s is %s" % (name, iface["name"], m, members.get(m, "absent")))
    module.exit_json(changed=False, mismatches=mismatches, checked=len(seen), problems=problems)


if __name__ == "__main__":
    main()
