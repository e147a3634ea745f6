#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: beonet_discover
short_description: Find how a node's NICs are really cabled (MACs, carrier, layer-2 neighbours)
description:
  - Lists the node's candidate NICs (Ethernet, with a C(/sys/class/net/NIC/device); not
    loopback, not the management NICs, not bridges, bonds, VLANs, tunnels or other
    virtual devices) and reads each one's MAC address and carrier.
  - Unless I(probe_only), sends for I(window) seconds a beacon frame (broadcast,
    EtherType 0x88B5, a small JSON payload naming run, node, NIC and MAC) on every
    candidate NIC every quarter second, and records the beacons of the same run each
    NIC receives. Every node's window must overlap every other's. Where all nodes fit
    in one batch of forks one call does it; otherwise (as C(playbooks/discover.yml)
    does) I(background=true) starts each node's listener and returns at once, and once
    every node is started (and a few seconds more) I(collect=true) stops it and returns
    its report. The background listener ends by itself after I(window) seconds (its
    cap) if it is never collected.
  - A listener running longer than 10 s backs off to one beacon a second (+-20 %) on
    each NIC and reads its sockets twice a second, not once for every frame; so every
    node must listen at once for at least 7.8 s (3 s for a NIC brought up to find its
    carrier, and 4 beacons at that pace), which C(playbooks/discover.yml)'s settle time
    (8 s) gives.
  - I(background=true) first tells every listener of this node still running (an
    earlier run's, never collected) to stop, waits until it has put its NICs back and
    removed its files (20 s at most, else it fails and starts nothing), and returns
    their runs in C(superseded). A listener is known to run by the lock it holds on its
    pid file, never by its pid; no process is killed.
  - Touches no address and never the management NICs. A NIC that was down is brought
    up for the window, with IPv6 off on it so that it gets no link-local address, and
    put back down as it was afterwards, also on error or SIGTERM. It changes nothing
    it does not restore, so it reports C(changed=false) and runs the same in check mode.
  - Needs root and only the standard library of Python 3.8 or later on the node.
options:
  node:
    description: This node's name (the inventory host name), carried in its beacons.
    type: str
    required: true
  run:
    description: Identifier of this discovery run; only beacons of the same run count.
    type: str
    default: ""
  window:
    description:
      - Seconds to send and listen; every node's window must overlap every other's.
        With I(background), the most the listener runs if it is not collected.
    type: float
    default: 10
  management:
    description:
      - NICs never touched. The NICs holding a default route (IPv4 or IPv6) and the
        address of the SSH connection Ansible came in on are added to them.
    type: list
    elements: str
    default: []
  include_virtual:
    description: Admit veth NICs (the Docker lab's NICs are veths).
    type: bool
    default: false
  exclude:
    description: NIC names or shell-style patterns (C(enp9s0*)) left out.
    type: list
    elements: str
    default: []
  probe_only:
    description: Send no beacons; only list the NICs with their MAC and carrier.
    type: bool
    default: false
  background:
    description:
      - Start the listener in the background (its own session, files under
        C(/run/beonet/discover/), named by I(run), which must then be 1 to 64 letters,
        digits, C(_) or C(-)) and return its C(pid) at once, once every earlier listener
        of this node has stopped.
    type: bool
    default: false
  collect:
    description:
      - Stop this node's background listener of I(run), wait for its report (10 s at
        most), remove its files and return it (C(discovery), C(ended), C(listened)).
    type: bool
    default: false
author:
  - beonet developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Discover this node's cabling while every other node does (all in one batch)
  beonet_discover:
    node: "{{ inventory_hostname }}"
    run: "{{ beonet_discover_run }}"
    window: 12

- name: Start listening in the background (more nodes than forks)
  beonet_discover:
    node: "{{ inventory_hostname }}"
    run: "{{ beonet_discover_run }}"
    window: 600
    background: true

- name: Stop listening and collect the report, once every node is started
  beonet_discover:
    node: "{{ inventory_hostname }}"
    run: "{{ beonet_discover_run }}"
    collect: true
  register: beonet_discover_done

- name: List the NICs and their carrier only
  beonet_discover:
    node: "{{ inventory_hostname }}"
    probe_only: true
"""

RETURN = r"""
discovery:
  description:
    - The node's report. C(format) 1; C(node); C(run); C(management) (the NICs left
      alone); C(probe_only); C(nics), one per candidate NIC, sorted by name, with
      C(name), C(mac), C(carrier) (read after it was up), C(was_up) (up before
      discovery) and C(neighbours), each C(node), C(nic), C(mac) of a NIC whose beacon
      it received (the node itself when two of its own NICs meet); C(skipped), each
      C(name) and C(why) (C(loopback), C(management), C(excluded), C(bridge), C(bond),
      C(vlan), C(tun), C(veth (include_virtual admits it)), C(not Ethernet (type N)),
      or the driver of another virtual device).
  returned: success, unless I(background)
  type: dict
pid:
  description: The background listener's process id.
  returned: with I(background)
  type: int
superseded:
  description:
    - The runs whose listeners were still running on this node and were stopped before
      this one started (their reports were never collected; they write none).
  returned: with I(background)
  type: list
  elements: str
ended:
  description:
    - C(stopped) (by I(collect)) or C(cap) (its window ran out first, so it may have
      missed nodes started later).
  returned: with I(collect)
  type: str
listened:
  description: Seconds the background listener sent and listened.
  returned: with I(collect)
  type: float
"""

from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet.agent import discover
from ansible.module_utils.beonet.agent.arguments import escaped_arguments
from ansible.module_utils.beonet.agent.discover_task import ARGUMENT_SPEC, params_problem


def main() -> None:
    refusal = escaped_arguments(basic, "beonet_discover")
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if refusal:
        module.fail_json(msg=refusal, errors=[refusal])
    p = module.params
    problem = params_problem(p)
    if problem:
        module.fail_json(msg=problem, changed=False)
    try:
        if p["background"]:
            started = discover.start_background(p["node"], p["run"], p["window"], p["management"],
                                                p["include_virtual"], p["exclude"])
            module.exit_json(changed=False, pid=started["pid"], superseded=started["superseded"])
        if p["collect"]:
            got = discover.collect_background(p["node"], p["run"])
            module.exit_json(changed=False, discovery=got["discovery"], ended=got["ended"],
                             listened=got["listened"])
        report = discover.discover(p["node"], p["run"], p["window"], p["management"],
                                   p["include_virtual"], p["exclude"], p["probe_only"])
    except discover.DiscoveryError as exc:
        module.fail_json(msg=str(exc), changed=False)
    module.exit_json(changed=False, discovery=report)


if __name__ == "__main__":
    main()
