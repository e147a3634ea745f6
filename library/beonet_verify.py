#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

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
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet.agent import apply as beonet_node
from ansible.module_utils.beonet.agent import verify
from ansible.module_utils.beonet.agent.files import read_text


def _trace_all(module: AnsibleModule) -> dict[str, list[str]]:
    """{destination: hops seen}, a differing pair traced again before it counts."""
    p = module.params
    hops_max = max([len(v) for v in p["expected"].values()] + [1]) + 2

    def trace(item: tuple[str, str], wait: int = 1) -> tuple[str, list[str]]:
        dst, addr = item
        rc, out, err = module.run_command(["traceroute", "-n", "-N", "1", "-q", "1",
                                           "-w", str(wait), "-m", str(hops_max), addr])
        if rc != 0:
            return dst, ["error: %s" % err.strip()]
        return dst, verify.parse_traceroute(out)

    seen: dict[str, list[str]] = {}
    if p["trace"]:
        with ThreadPoolExecutor(max_workers=max(1, p["parallel"])) as pool:
            seen = dict(pool.map(trace, sorted(p["targets"].items())))
    # A probe lost on a busy machine reads as '*' or an empty trace: trace a
    # differing pair again (up to twice, waiting longer) before calling it a mismatch.
    for _attempt in range(2):
        again = [(d, p["targets"][d]) for d in sorted(seen)
                 if not verify.compare(p["expected"].get(d, []), seen[d])]
        for item in again:
            seen[item[0]] = trace(item, wait=3)[1]
    return seen


def _state_problems(module: AnsibleModule, name: str, plan: dict[str, Any]) -> list[str]:
    """Forwarding, bonds and bond offloads against the plan."""
    problems = []
    fwd = verify.forwarding_problem(name, read_text("/proc/sys/net/ipv4/ip_forward") or "",
                                    plan["forwarding"])
    problems += [fwd] if fwd else []
    for iface in plan["interfaces"]:
        if iface["kind"] == "bond":
            text = read_text("/proc/net/bonding/%s" % iface["name"])
            problems += verify.bond_problems(name, iface, text)
    for bond, tso in sorted(beonet_node.live_tso(plan).items()):
        if tso:
            problems.append("%s: %s has TCP segmentation offload on, the plan says off" % (name, bond))
    return problems


def main() -> None:
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
    seen = _trace_all(module)
    mismatches = []
    for dst in sorted(seen):
        want = p["expected"].get(dst, [])
        if not verify.compare(want, seen[dst]):
            mismatches.append({"pair": "%s -> %s" % (name, dst), "expected": want,
                               "seen": seen[dst]})
    problems = _state_problems(module, name, p["plan"])
    rc, out, err = module.run_command(["ip", "-j", "-4", "route", "show", "table", "main"])
    if rc != 0:
        module.fail_json(msg="%s: ip route failed: %s" % (name, err.strip()))
    route_problems, route_diff = verify.route_problems(name, p["plan"], json.loads(out or "[]"))
    problems += route_problems
    module.exit_json(changed=False, mismatches=mismatches, checked=len(seen), problems=problems,
                     route_diff=route_diff)


if __name__ == "__main__":
    main()
