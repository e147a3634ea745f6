#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: beonet_verify_live
short_description: Prove every ordered pair of nodes from the nodes' live kernel state
description:
  - Runs on the controller (C(delegate_to=localhost), C(run_once)), reads no node. Takes
    the state each node reported (beonet_verify with I(collect=true)), makes the route
    tables the compiler's proof walks from it, and walks every ordered pair of the plan,
    every branch of every multipath route, by longest-prefix match hop by hop; the node
    must have state, forward on the NIC the packet comes in by, its nftables forward
    filter must pass the pair, its route's next hops must carry packets (a NIC without
    carrier, a neighbour that does not answer, a gateway no node holds do not), and each
    next hop must be one the plan's tables have. Destinations are grouped as the proof
    groups them, so a healthy cluster of 1,024 nodes is proven in seconds.
  - With IPv6 (a dual-stack or IPv6-only plan) each family is walked apart, from the
    node's own tables of it (its C(address6), its IPv6 addresses and routes, IPv6
    forwarding); C(pairs) counts the pairs of both families, and IPv6 findings name the
    family (C(pair) C(node01 -> node02 (IPv6)), each cause after C(IPv6) and a colon).
    A node that sent no usable IPv6 state is named "IPv6 state unreadable" and its IPv6
    pairs are counted in C(unread_pairs).
  - A node whose forward filter holds rules beonet does not write, or which routes by
    policy rules beside the main table, is not judged; the pairs through it are counted
    apart and do not fail the check.
  - A node whose links, addresses or routes could not be read (a command that failed
    twice, a link listing that is empty or lacks NICs its addresses or routes name) is
    named once in I(problems) ("state unreadable", with what failed, and to run verify
    again) and listed in C(unreadable); the pairs to, from and through it are neither
    proven nor mismatched but counted in C(unread_pairs), so the check fails without a
    mismatch row for each of them.
  - Also picks the pairs traceroute checks end to end (I(sample)); with I(prove=false)
    only those, from the plan alone (every node taken as alive), before the nodes are read,
    and each node's one shell command (C(commands), for C(ansible.builtin.raw)) that prints
    its live state and runs its traceroutes (C(ping) first; a differing trace to a target
    that answered is traced twice more, waiting longer). With I(outputs), reads those
    commands' outputs into the states and proves from them (I(mode=live)), and checks each
    node's traces, forwarding, bonds and routes against the plan (C(traced)).
options:
  plan:
    description: The compiled plan (C(beonet_plan_result.plan)).
    type: dict
    required: true
  prefixes:
    description:
      - The topology's prefixes, which beonet's forward filter passes (C(beonet_plan_result.prefixes)).
    type: list
    elements: str
    required: true
  states:
    description:
      - Node name to the C(state) its beonet_verify I(collect=true) returned. A node of the
        plan missing here, or whose state is null or unusable, has no state (dead).
        Required unless I(prove=false).
    type: dict
  prove:
    description: Prove the pairs from I(states); false, pick the traceroute sample only.
    type: bool
    default: true
  outputs:
    description:
      - Node name to the output of its C(commands) entry run with C(ansible.builtin.raw)
        (a node missing here is dead). Replaces I(states).
    type: dict
  mode:
    description:
      - live, traceroute the sample and prove every pair from the states; traceroute, trace
        every pair (above I(max_targets) destinations per source a sample fixed by its name).
    type: str
    choices: [live, traceroute]
    default: live
  paths:
    description: With I(mode=traceroute), the plan's allowed hop lists (C(beonet_plan_result.paths)).
    type: dict
    default: {}
  max_targets:
    description: With I(mode=traceroute), the most destinations traced from one source.
    type: int
    default: 64
  expected:
    description: With I(outputs), the C(expected) the command pick returned.
    type: dict
    default: {}
  unreachable:
    description: With I(outputs), the nodes Ansible could not reach or whose read failed.
    type: list
    elements: str
    default: []
  settle:
    description: Seconds a node waits before reading its neighbours again while one is INCOMPLETE.
    type: float
    default: 3
  keep:
    description: The most mismatch rows returned (every mismatch is counted).
    type: int
    default: 100
  sample:
    description: Pick the pairs for traceroute (a pair of every path length and one through each gateway).
    type: bool
    default: true
author:
  - beonet developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read each node's live forwarding state
  beonet_verify:
    collect: true
  register: beonet_verify_state

- name: Prove every ordered pair from it
  beonet_verify_live:
    plan: "{{ beonet_plan_result.plan }}"
    prefixes: "{{ beonet_plan_result.prefixes }}"
    states: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts
         | map('extract', hostvars, ['beonet_verify_state', 'state']))) }}
  delegate_to: localhost
  run_once: true
  register: beonet_verify_live
"""

RETURN = r"""
pairs:
  description: The ordered pairs the plan routes.
  returned: when prove
  type: int
proven:
  description: Pairs each of whose branches arrives on the plan's next hops only.
  returned: when prove
  type: int
mismatched:
  description: Pairs that do not arrive, or arrive by a path the plan does not have.
  returned: when prove
  type: int
unjudged:
  description: Pairs through a node whose filter or policy routing beonet cannot judge (and nothing wrong).
  returned: when prove
  type: int
dead_pairs:
  description: Pairs to or from a node without state.
  returned: when prove
  type: int
unread_pairs:
  description:
    - Pairs to, from or through a node whose state could not be read (C(unreadable)),
      neither proven nor mismatched. C(proven), C(mismatched), C(unjudged), C(dead_pairs)
      and C(unread_pairs) add up to C(pairs).
  returned: when prove
  type: int
walked:
  description: Pairs walked one by one (the others were proven by their class at once).
  returned: when prove
  type: int
dead:
  description: The nodes without state (Ansible could not reach them, or their state was unusable).
  returned: when prove
  type: list
  elements: str
unreadable:
  description:
    - The nodes whose links, addresses or routes could not be read; each is named in
      I(problems) with what failed. Verify again.
  returned: when prove
  type: list
  elements: str
mismatches:
  description:
    - The first I(keep) mismatches (pair, source, destination, expected (the plan's allowed
      hop lists), seen (the branch that shows it, as traceroute would), why, kind; an IPv6
      pair's also family, C(IPv6)).
  returned: when prove
  type: list
  elements: dict
problems:
  description:
    - Live state that differs from the plan beyond the routes (NICs down, addresses, filters),
      and the nodes whose state could not be read.
  returned: when prove
  type: list
  elements: str
unjudged_nodes:
  description: Forwarding nodes whose filter or policy routing is not judged, and why.
  returned: when prove
  type: list
  elements: str
summary:
  description: The diagnosis as text lines, grouped by cause.
  returned: when prove
  type: list
  elements: str
report:
  description: >-
    What a failed verify prints: the pairs not as planned (pair | allowed hop lists | seen), the
    first 40 of them, then the state problems, the first 40 named and the rest counted by node.
    Every string a node sent is shown escaped, on one line, here and in every other key.
  returned: when prove
  type: list
  elements: str
sample:
  description: >-
    Source to destination to allowed hop lists of the pairs for traceroute; a destination
    traced over IPv6 is named with C( (IPv6)) after it.
  returned: when prove or mode is live
  type: dict
sampled:
  description: The number of pairs in I(sample).
  returned: when prove or mode is live
  type: int
commands:
  description: With I(prove=false), node name to the shell command for C(ansible.builtin.raw).
  returned: when prove is false
  type: dict
expected:
  description: With I(prove=false), source to destination to the allowed hop lists it traces.
  returned: when prove is false
  type: dict
traced:
  description:
    - With I(outputs), the traces and node checks (checked, mismatches, problems, the diagnosis
      as summary lines, dead, seconds).
  returned: when outputs
  type: dict
seconds:
  description: How long the proof took on the controller.
  returned: success
  type: float
"""

from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet.agent.arguments import escaped_arguments
from ansible.module_utils.beonet.controller import TaskFailed
from ansible.module_utils.beonet.livestate.task import ARGUMENT_SPEC, prove_task


def main() -> None:
    refusal = escaped_arguments(basic, "beonet_verify_live")
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if refusal:
        module.fail_json(msg=refusal, errors=[refusal])
    try:
        result = prove_task(module.params, module.check_mode, module._diff)
    except TaskFailed as exc:
        module.fail_json(msg=exc.msg, **exc.extra)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
