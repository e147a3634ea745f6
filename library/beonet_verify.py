#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: beonet_verify
short_description: Check a node's live paths, forwarding and bonds against its beonet plan
description:
  - Runs C(traceroute -n) from this node to each target and compares the hop
    addresses with the compiler's expected hop list. Reads the forwarding state and,
    where the plan has bonds, C(/proc/net/bonding) and their TCP segmentation
    offload. Reads the live routing
    table and reports every planned route that is missing and every route
    through a gateway on a plan interface that the plan does not have.
    Changes nothing.
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
    description: Destination node name to its address (empty with I(trace=false)).
    type: dict
    default: {}
  expected:
    description: Destination node name to the expected list of hop addresses.
    type: dict
    default: {}
  trace:
    description: Run the traceroutes; with C(false) only the state is read.
    type: bool
    default: true
  parallel:
    description: Traceroutes run at once.
    type: int
    default: 8
author:
  - beonet developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Verify the paths from this node
  beonet_verify:
    node: "{{ inventory_hostname }}"
    plan: "{{ beonet_plan_result.plan.nodes[inventory_hostname] }}"
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
  description: Forwarding, bond states and routes that differ from the plan.
  returned: always
  type: list
  elements: str
route_diff:
  description: Unified diff from the planned routes to the live ones (empty when equal).
  returned: always
  type: list
  elements: str
"""

import json
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet.agent import apply as beonet_node
from ansible.module_utils.beonet.agent import verify


def main():
    module = AnsibleModule(
        argument_spec={
            "node": {"type": "str", "required": True},
            "plan": {"type": "dict", "required": True},
            "targets": {"type": "dict", "default": {}},
            "expected": {"type": "dict", "default": {}},
            "trace": {"type": "bool", "default": True},
            "parallel": {"type": "int", "default": 8},
        },
        supports_check_mode=True,
    )
    p = module.params
    name = p["node"]
    hops_max = max([len(v) for v in p["expected"].values()] + [1]) + 2

    def trace(item, wait=1):
        dst, addr = item
        rc, out, err = module.run_command(["traceroute", "-n", "-N", "1", "-q", "1",
                                           "-w", str(wait), "-m", str(hops_max), addr])
        if rc != 0:
            return dst, ["error: %s" % err.strip()]
        return dst, verify.parse_traceroute(out)

    seen = {}
    if p["trace"]:
        with ThreadPoolExecutor(max_workers=max(1, p["parallel"])) as pool:
            seen = dict(pool.map(trace, sorted(p["targets"].items())))
    # A probe lost on a busy machine reads as '*' or an empty trace: trace a
    # differing pair again (up to twice, waiting longer) before calling it a mismatch.
    for _ in range(2):
        again = [(d, p["targets"][d]) for d in sorted(seen)
                 if not verify.compare(p["expected"].get(d, []), seen[d])]
        for item in again:
            seen[item[0]] = trace(item, wait=3)[1]
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
    for bond, tso in sorted(beonet_node.live_tso(p["plan"]).items()):
        if tso:
            problems.append("%s: %s has TCP segmentation offload on, the plan says off" % (name, bond))
    rc, out, err = module.run_command(["ip", "-j", "-4", "route", "show", "table", "main"])
    if rc != 0:
        module.fail_json(msg="%s: ip route failed: %s" % (name, err.strip()))
    route_problems, route_diff = verify.route_problems(name, p["plan"], json.loads(out or "[]"))
    problems += route_problems
    module.exit_json(changed=False, mismatches=mismatches, checked=len(seen), problems=problems,
                     route_diff=route_diff)


if __name__ == "__main__":
    main()
