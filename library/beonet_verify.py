#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: beonet_verify
short_description: Check a node's live paths, forwarding and bonds against its beonet plan
description:
  - Pings each target once (1 s), then runs C(traceroute -n -I -N 1 -q 1 -w 1) from this
    node to each target, at most two hops beyond the longest allowed hop list, and
    compares the hop addresses with the pair's allowed hop lists (any of them is right).
    A target that answers no ping costs seconds, not the default 30 hops of 5 s; ICMP
    echo probes of one pair all follow one branch of a multipath route. A differing pair
    whose target answered is traced twice more, waiting longer, before it counts.
  - Reads the forwarding state and,
    where the plan has bonds, C(/proc/net/bonding) and their TCP segmentation
    offload. Reads the live routing
    table and reports every planned route that is missing and every route
    through a gateway on a plan interface that the plan does not have.
    Changes nothing.
  - With I(summarise=true), reads no node and sorts every node's results (run once,
    on the controller) into nodes dead or unreachable, pairs broken through a dead
    gateway or one with forwarding off, pairs that arrive by another path and pairs
    that do not arrive.
  - With I(collect=true), reads, and changes nothing, what decides this node's IPv4
    and IPv6 forwarding and returns it as C(state), for the beonet_verify_live module
    on the controller, which proves every ordered pair from all nodes' states. One call
    runs C(ip -j) (links, IPv4 and IPv6 addresses, the main tables' routes with every
    next hop, neighbours, policy rules, C(ip -j -6 netconf)) and C(nft -j list ruleset)
    and reads the forwarding sysctls. A neighbour the kernel marks FAILED or INCOMPLETE
    is asked once more (one C(ping) echo request out of its NIC, all at once, at most
    1 s) and the table read again, then once more after I(settle) seconds while one is
    still resolving; a FAILED entry is what the kernel remembers of an earlier failure,
    and it asks again as soon as traffic goes that way. Configuration is never changed.
options:
  node:
    description: This node's name in the plan (required unless I(summarise=true) or I(collect=true)).
    type: str
  plan:
    description: This node's plan (required unless I(summarise=true) or I(collect=true)).
    type: dict
  collect:
    description:
      - Return this node's live forwarding state (C(state)). Alone, only that; with
        I(node) and I(plan), read first, then the node's traces and checks as usual, in
        the same call.
    type: bool
    default: false
  settle:
    description: With I(collect), seconds to wait before reading neighbours again while one is INCOMPLETE.
    type: float
    default: 3
  targets:
    description: Destination node name to its address (empty with I(trace=false)).
    type: dict
    default: {}
  expected:
    description:
      - Destination node name to the pair's allowed hop lists (C(paths[SRC]) of the
        plan, format 2), the preferred first.
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
  summarise:
    description: Summarise every node's results (I(results)) instead of reading this node.
    type: bool
    default: false
  results:
    description: With I(summarise), host name to that host's registered beonet_verify result.
    type: dict
    default: {}
  unreachable:
    description: With I(summarise), the hosts Ansible could not reach or whose verify failed.
    type: list
    elements: str
    default: []
  nodes:
    description: With I(summarise), the plan's C(nodes) (addresses are named by node).
    type: dict
    default: {}
author:
  - beonet developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read this node's live forwarding state (for beonet_verify_live)
  beonet_verify:
    collect: true
  register: beonet_verify_state

- name: Verify the paths from this node
  beonet_verify:
    node: "{{ inventory_hostname }}"
    plan: "{{ beonet_plan_result.plan.nodes[inventory_hostname] }}"
    targets: "{{ beonet_verify_targets }}"
    expected: "{{ beonet_plan_result.paths[inventory_hostname] }}"
  register: beonet_verify_result

- name: Tell dead nodes from broken paths
  beonet_verify:
    summarise: true
    nodes: "{{ beonet_plan_result.plan.nodes }}"
    results: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts
         | map('extract', hostvars, 'beonet_verify_result'))) }}
    unreachable: "{{ ansible_play_hosts_all | difference(ansible_play_hosts) }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
mismatches:
  description:
    - Pairs whose traceroute is on none of the allowed hop lists (pair, source, destination,
      expected (the allowed hop lists), seen).
  returned: always
  type: list
  elements: dict
checked:
  description: Number of pairs traced.
  returned: always
  type: int
targets:
  description: The destinations pinged and traced.
  returned: always
  type: list
  elements: str
silent:
  description: The destinations that answered no ping.
  returned: always
  type: list
  elements: str
forwarding:
  description: Whether this node forwards (live), or null with I(summarise).
  returned: always
  type: bool
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
dead:
  description:
    - With I(summarise), nodes Ansible could not reach, and nodes that answered no source's
      ping and reached none of their own targets.
  returned: when summarise
  type: list
  elements: str
broken:
  description:
    - With I(summarise), pairs that stop where an allowed hop list goes on through a dead
      node or one with forwarding off (mismatch rows with C(through)).
  returned: when summarise
  type: list
  elements: dict
other_path:
  description: With I(summarise), pairs that reach the destination on no allowed hop list.
  returned: when summarise
  type: list
  elements: dict
lost:
  description: With I(summarise), other pairs that do not reach the destination.
  returned: when summarise
  type: list
  elements: dict
dead_pairs:
  description: With I(summarise), the number of differing pairs to or from a dead node.
  returned: when summarise
  type: int
summary:
  description: With I(summarise), the diagnosis as text lines.
  returned: when summarise
  type: list
  elements: str
state:
  description:
    - With I(collect), this node's live forwarding state (links, addrs, routes, neigh, sysctl,
      rules, filter, errors; see module_utils/beonet/agent/collect.py).
  returned: when collect
  type: dict
"""

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet.agent import apply as beonet_node
from ansible.module_utils.beonet.agent import collect, diagnose, verify
from ansible.module_utils.beonet.agent.arguments import escaped_arguments
from ansible.module_utils.beonet.agent.files import read_text

ARGUMENT_SPEC = {
    "node": {"type": "str"},
    "plan": {"type": "dict"},
    "targets": {"type": "dict", "default": {}},
    "expected": {"type": "dict", "default": {}},
    "trace": {"type": "bool", "default": True},
    "parallel": {"type": "int", "default": 8},
    "summarise": {"type": "bool", "default": False},
    "results": {"type": "dict", "default": {}},
    "unreachable": {"type": "list", "elements": "str", "default": []},
    "nodes": {"type": "dict", "default": {}},
    "collect": {"type": "bool", "default": False},
    "settle": {"type": "float", "default": 3.0},
}


def _pool_map(module: AnsibleModule, fn: Any, items: list[Any]) -> list[Any]:
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=max(1, module.params["parallel"])) as pool:
        return list(pool.map(fn, items))


def _silent(module: AnsibleModule) -> list[str]:
    """The targets that answer no ping within 1 s (none when ping is not installed)."""
    ping = module.get_bin_path("ping")
    if not ping:
        return []

    def quiet(item: tuple[str, str]) -> bool:
        return module.run_command([ping, "-n", "-q", "-c", "1", "-W", "1", item[1]])[0] != 0

    items = sorted(module.params["targets"].items())
    return [dst for (dst, _addr), q in zip(items, _pool_map(module, quiet, items)) if q]


def _trace_all(module: AnsibleModule, silent: list[str]) -> dict[str, list[str]]:
    """{destination: hops seen}. A differing pair whose target answered the ping is traced
    again (up to twice, waiting longer) before it counts: a probe lost on a busy machine
    reads as '*'. A silent target is traced once, every probe at once (where its path
    stops tells why; past that point every probe waits out its time together)."""
    p = module.params
    hops_max = verify.longest_path(p["expected"]) + 2

    def trace(item: tuple[str, str], wait: int = 1) -> tuple[str, list[str]]:
        dst, addr = item
        at_once = hops_max if dst in silent else 1
        rc, out, err = module.run_command(verify.traceroute_command(addr, hops_max, wait, at_once))
        if rc != 0:
            return dst, ["error: %s" % err.strip()]
        return dst, verify.parse_traceroute(out)

    seen: dict[str, list[str]] = dict(_pool_map(module, trace, sorted(p["targets"].items())))
    for _attempt in range(2):
        again = [(d, p["targets"][d]) for d in sorted(seen) if d not in silent
                 and not verify.on_allowed_path(p["expected"].get(d), seen[d])]
        for item in again:
            seen[item[0]] = trace(item, wait=3)[1]
    return seen


def _summarise(module: AnsibleModule) -> None:
    p = module.params
    out = diagnose.summarise(p["results"], p["unreachable"], p["nodes"])
    module.exit_json(changed=False, mismatches=[], checked=0, targets=[], silent=[], forwarding=None,
                     problems=[], route_diff=[], summary=out.pop("lines"), **out)


def _runner(module: AnsibleModule) -> Any:
    """argv -> (rc, stdout, stderr); a program the node lacks exits 127 and says so."""
    def run(argv: list[str]) -> tuple[int, str, str]:
        path = module.get_bin_path(argv[0])
        if path is None:
            return 127, "", "%s is not installed" % argv[0]
        rc, out, err = module.run_command([path] + argv[1:])
        return rc, out, err
    return run


def _collected(module: AnsibleModule) -> dict[str, Any]:
    return collect.collect(_runner(module), read_text, max(0.0, module.params["settle"]),
                           ask=collect.ask_neighbours)


def _ipv6_routes(module: AnsibleModule, result: dict[str, Any]) -> None:
    """The node's IPv6 table against its plan's IPv6 routes, added to the result's
    problems and route diff (node_result compares the IPv4 table)."""
    errors: list[str] = []
    name, plan = module.params["node"], module.params["plan"]
    routes = collect.needed(_runner(module), ["ip", "-j", "-6", "route", "show", "table", "main"], errors)
    if routes is None:
        result["problems"].append(verify.routes_unread(name, errors, True))
        return
    # under FRR, OSPFv3's next hops are link-local: this node alone can match them by device only
    problems, diff = verify.route_problems(name, plan, routes, True, by_device="routing" in plan)
    result["problems"] += problems
    result["route_diff"] += diff


def main() -> None:
    refusal = escaped_arguments(basic, "beonet_verify")
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if refusal:
        module.fail_json(msg=refusal, errors=[refusal])
    p = module.params
    if p["summarise"]:
        _summarise(module)
    state = _collected(module) if p["collect"] else None
    if state is not None and p["node"] is None and p["plan"] is None:
        module.exit_json(changed=False, mismatches=[], checked=0, targets=[], silent=[], forwarding=None,
                         problems=[], route_diff=[], state=state)
    missing = [k for k in ("node", "plan") if p[k] is None]
    if missing:
        module.fail_json(msg="summarise and collect are False but all of the following are missing: %s"
                         % ", ".join(missing))
    name = p["node"]
    silent = _silent(module) if p["trace"] else []
    seen = _trace_all(module, silent) if p["trace"] else {}
    errors: list[str] = []
    routes = collect.needed(_runner(module), ["ip", "-j", "-4", "route", "show", "table", "main"], errors)
    result = verify.node_result(name, p["plan"], p["expected"], seen, silent, read_text,
                                beonet_node.live_tso(p["plan"]), routes, errors)
    if "address6" in p["plan"]:
        _ipv6_routes(module, result)
    extra = {} if state is None else {"state": state}
    module.exit_json(changed=False, **result, **extra)


if __name__ == "__main__":
    main()
