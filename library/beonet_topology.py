#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: beonet_topology
short_description: Compile a beonet topology into per-host network plans
description:
  - "Runs on the controller (use C(delegate_to: localhost) and C(run_once))."
  - Loads and validates a topology file, builds the graph, assigns addresses,
    computes static routes, proves them by walking every pair, and returns the
    plan of every node with its C(ip route) dry-run text.
  - Bad input fails the task with every error of the failing stage, each naming
    the file, line and key path. Nothing is written and no node is touched.
options:
  topology:
    description: Path of the topology YAML file.
    type: path
    required: true
  hosts:
    description:
      - Inventory hosts that should make up the cluster. When given, every topology
        node must be one of them and every one of them a topology node.
    type: list
    elements: str
  interfaces:
    description:
      - "Physical NIC names per host, C({host: {logical: physical}}), usually each
        host's C(beonet_interfaces) variable. A host given here must map every
        logical NIC of its node."
    type: dict
    default: {}
  management:
    description:
      - The interface Ansible connects through, overriding the topology's
        C(management.interface); C(none) when Ansible uses no NIC (the Docker lab).
    type: str
  down:
    description:
      - Nodes that are dead. The plan is compiled for the other (live) nodes
        only; addresses stay those of the full plan, routes avoid the down nodes
        and the proof covers every live pair that can reach each other.
      - Live pairs that cannot reach each other are no error; the plan lists them
        in C(partition) (and the live nodes by component in C(components)).
      - A name that is no node of the topology, or every node down, fails the task.
    type: list
    elements: str
    default: []
  paths:
    description:
      - Also return the allowed C(traceroute -n) hop lists of every ordered pair, one per
        branch of multipath routes, the preferred first, at most 16.
    type: bool
    default: false
  verify:
    description:
      - For verify.yml, also return what it needs before it reads the nodes (C(verify)). In
        mode C(live) the pairs traceroute checks end to end (a pair of every path length and
        one through each gateway), in mode C(traceroute) every pair of I(paths) (which must
        be true; above I(max_targets) destinations per source a sample fixed by its name);
        and each node's one shell command for C(ansible.builtin.raw) that prints its live
        state and runs its traceroutes (see beonet_verify_live).
    type: str
    choices: [live, traceroute]
  max_targets:
    description: With I(verify=traceroute), the most destinations traced from one source.
    type: int
    default: 64
  dest:
    description:
      - Write the plan as JSON to this file on the controller, atomically and only
        when the content differs (reports changed). Honors check mode and diff.
    type: path
author:
  - beonet developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Compile the cluster topology
  beonet_topology:
    topology: "{{ playbook_dir }}/../topologies/routed-mesh.yml"
    hosts: "{{ ansible_play_hosts_all }}"
  delegate_to: localhost
  run_once: true
  register: beonet

- name: Show one host's routing table
  ansible.builtin.debug:
    msg: "{{ beonet.routes_text[inventory_hostname] }}"
"""

RETURN = r"""
plan:
  description: The whole plan (topology, nodes, segments, metrics; see docs/plan.md).
  returned: success
  type: dict
routes_text:
  description: Per-host dry run as C(ip) commands, keyed by node name.
  returned: success
  type: dict
prefixes:
  description: Every network prefix of the topology (what forwarding nodes may forward between).
  returned: success
  type: list
  elements: str
paths:
  description:
    - "Allowed traceroute hop lists, C({src: {dst: [[addr, ...], ...]}}), the preferred
      branch first, when I(paths=true)."
    - With I(down), the live pairs that can reach each other only.
  returned: when paths is true
  type: dict
fast:
  description:
    - For each node, the shell command that tells whether the node is as it was when its
      check last found it in sync (the role's fast path, one C(raw) call instead of the module).
  returned: success
  type: dict
agent:
  description:
    - SHA-256 of the node agent's code; part of the fast path's token, so that a node found
      in sync by another version of the agent is checked in full.
  returned: success
  type: str
digests:
  description:
    - For each node, SHA-256 of what its check is asked that the plan decides (its plan, the
      prefixes, the plan format, the down nodes, the agent's digest); the role's fast-path
      token adds the role's parameters to it.
  returned: success
  type: dict
rolling:
  description:
    - What a rolling, confirmed push needs (docs/changing.md). C(order) the nodes in the order
      their changes roll out (leaves, then gateways); C(neighbours), for each node, the
      neighbours it asks before its change is confirmed (C(nic), C(address), C(node)).
  returned: success
  type: dict
settle:
  description:
    - For each node routed by FRR, the shell command (for C(ansible.builtin.raw), after
      C(T=SECONDS;)) that waits at most T seconds until its routing has settled (every OSPF
      neighbour Full, every BFD session up, OSPF's routes in the kernel as many as the plan
      learns and unchanged for 2 s, each with its source address; where some lack it, the
      node forms its adjacencies again, once); its last line says how it ended.
  returned: success
  type: dict
verify:
  description:
    - With I(verify), C(expected) (source to destination to the allowed hop lists it traces),
      C(commands) (node to its raw command) and, in mode C(live), C(sample) and C(sampled).
  returned: when verify is given
  type: dict
live:
  description: The nodes of the plan (all of them unless I(down) is given), in plan order.
  returned: success
  type: list
  elements: str
errors:
  description: Every error of the failing stage, as text.
  returned: failure
  type: list
  elements: str
"""

from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet.agent.arguments import escaped_arguments
from ansible.module_utils.beonet.controller import TaskFailed
from ansible.module_utils.beonet.outputs.topology_task import ARGUMENT_SPEC, compile_task


def main() -> None:
    refusal = escaped_arguments(basic, "beonet_topology")
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if refusal:
        module.fail_json(msg=refusal, errors=[refusal])
    try:
        result = compile_task(module.params, module.check_mode, module._diff)
    except TaskFailed as exc:
        module.fail_json(msg=exc.msg, **exc.extra)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
