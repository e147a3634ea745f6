#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: beonet_node
short_description: Apply one node's beonet plan (persistent files and runtime state)
description:
  - Writes the node's persistent network configuration in the form the node's network
    manager reads at boot (systemd-networkd files, NetworkManager keyfiles, a netplan
    file or an ifupdown C(interfaces.d) file), C(/etc/sysctl.d) forwarding (and, with
    failover, neighbour-aware multipath and the cluster NICs' neighbour timers) and the
    nftables ruleset that limits forwarding to the topology's prefixes, atomically and
    only when different. The files it wrote are recorded in C(/var/lib/beonet/files);
    those a newer plan no longer produces are removed.
  - With C(backend=auto), detects the manager that brings the cluster NICs up at boot
    (netplan, NetworkManager, systemd-networkd, ifupdown) and refuses, before any change,
    a node where none would. A running NetworkManager is told to leave the cluster NICs
    when another backend is used; when it is the backend, a cluster NIC it holds with
    another profile (DHCP, say) is given beonet's profile at once (C(nmcli connection up)).
    An ifupdown stanza or a netplan file of another tool naming a cluster NIC is refused
    by name.
  - With netplan, runs C(netplan generate) only (never C(netplan apply)).
  - Reads the live state (C(ip -j link/addr/route)) and changes only what differs
    from the plan. Routes it installs carry protocol 250 (C(beonet)), a route with
    several next hops as one multipath route, and addresses are
    recorded in C(/var/lib/beonet/addresses);
    those a newer plan drops are removed, and nothing else.
  - IPv6 (the plan's C(addressing.ipv6)) alike, with C(ip -6) (routes read with
    C(ip -j -6 route)); IPv6 addresses are added without duplicate address detection
    (C(nodad), as the plan gives each address once, and a tentative address would refuse
    the routes whose source it is). A forwarding node turns on
    C(net.ipv6.conf.all.forwarding), after giving C(accept_ra=2) to every NIC outside
    the plan that accepts router advertisements (the management interface keeps them).
  - Refuses, before any change, a plan of a format it does not understand, and a
    plan that would touch the management interface or address, or that names a
    NIC the node does not have.
  - Turns TCP segmentation offload off on bonds whose plan says C(tso=false) (the
    default for balance-rr), at runtime (SIOCETHTOOL ioctl) and persistently (a
    systemd C(.link) file or the keyfile's C([ethtool]) section).
  - Runs its commands in the order C(beonet routes) prints them for a blank node
    (forwarding sysctl, nftables ruleset, bonds, MTUs, links up, addresses, routes,
    failover sysctls, bond offloads).
  - Supports check mode and diff mode (routing table and files).
options:
  node:
    description: The node's name in the plan.
    type: str
    required: true
  plan:
    description: The node's plan (C(nodes[NAME]) of the plan, with physical NIC names).
    type: dict
    required: true
  plan_format:
    description:
      - The plan's format (C(beonet.plan_format) of the whole plan). A plan of
        another format than this module's (2) is refused before any change.
    type: int
    required: true
  prefixes:
    description:
      - Every prefix of the topology; forwarding nodes forward only between them.
      - IPv4 or IPv6; the IPv6 prefixes the node's own plan routes to are added to them.
    type: list
    elements: str
    required: true
  backend:
    description:
      - Persistent configuration backend; C(auto) detects the node's network manager.
    type: str
    choices: [auto, networkd, networkmanager, netplan, ifupdown]
    default: auto
  management_interface:
    description:
      - The interface Ansible connects through (C(none) when there is none). C(auto) is
        the interface of the node's IPv4 route to 8.8.8.8 (Ansible's C(default_ipv4) fact),
        C(none) without one.
    type: str
    default: none
  management_address:
    description:
      - The address Ansible connects to, never touched. C(auto) is the source address of
        the node's IPv4 route to 8.8.8.8, empty without one.
    type: str
    default: ""
  validate_only:
    description: Check the plan against the node and stop, changing nothing.
    type: bool
    default: false
  preflight:
    description:
      - Check everything before any host changes and change nothing (run it on every node
        in a play with C(any_errors_fatal), then apply only where I(in_sync) is false).
      - Besides what I(validate_only) checks, refuses an OS family not in I(supported_os)
        (read from C(/etc/os-release)) and a node where a NIC of the plan is missing or has
        no carrier (the NICs are probed as C(beonet_discover) with I(probe_only) does), and
        returns I(in_sync), whether applying the plan would change nothing.
    type: bool
    default: false
  supported_os:
    description: OS families (as Ansible's C(os_family) fact names them) I(preflight) accepts.
    type: list
    elements: str
    default: [Debian, RedHat, Archlinux, Suse]
  down:
    description:
      - With I(preflight), the dead nodes of a plan compiled with nodes down (the plan's
        C(down)). A point-to-point NIC whose peer is one of them may lack carrier.
    type: list
    elements: str
    default: []
  include_virtual:
    description: With I(preflight), count veth NICs as NICs (the Docker lab's NICs are veths).
    type: bool
    default: false
  confirm_timeout:
    description:
      - Seconds a change waits for its confirmation (I(confirm)) before the node rolls it back
        by itself; 0 applies without a checkpoint.
      - Before changing anything the node saves what it is about to change (the files, byte
        for byte, and the live links, addresses, routes, forwarding, sysctls, nftables table
        and TSO) in C(/var/lib/beonet/checkpoint) and starts a waiter process of its own that
        restores them unless confirmed; it survives the controller disappearing, not a reboot.
        Nothing is armed when there is nothing to change.
    type: float
    default: 0
  confirm:
    description:
      - Confirm this node's pending change, or roll it back at once when the node fails its
        local check (every command of its plan in place; each of I(neighbours) answers an echo
        request on its NIC). Fails, naming the node and why, when the change is rolled back.
      - A change left unconfirmed by a reboot is checked and confirmed (or restored) the same way.
    type: bool
    default: false
  fingerprint:
    description:
      - With I(preflight) (the node found in sync) or I(confirm) (the change confirmed), store
        this token with the SHA-256 of the node's state in C(/run/beonet/fingerprint). A later
        run that finds the same line by one shell command knows the node is in sync without
        this module (the role's fast path). Empty, nothing is stored.
    type: str
    default: ""
  fast_command:
    description:
      - The fast path (read by beonet's action plugin of this module's name, which strips it
        before the module runs; the module itself ignores it). A shell command run on the node
        first, without Python; when its output is the line I(fingerprint) stored and the node's
        state now, the task returns C(in_sync) and C(fast) without starting the module.
      - The compile gives each node's command (C(fast) in the beonet_topology result).
    type: str
  fast_timeout:
    description:
      - Seconds the I(fast_command) may take (1 to 99999); a node that does not answer in time
        gets the module's full check.
    type: int
    default: 60
  neighbours:
    description: With I(confirm), the planned neighbours to ask.
    type: list
    elements: dict
    default: []
    suboptions:
      nic:
        description: The cluster NIC to ask through.
        type: str
        required: true
      address:
        description: The neighbour's address on that NIC's segment.
        type: str
        required: true
author:
  - beonet developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Apply the plan of this node
  beonet_node:
    node: "{{ inventory_hostname }}"
    plan: "{{ beonet_plan_result.plan.nodes[inventory_hostname] }}"
    plan_format: "{{ beonet_plan_result.plan.beonet.plan_format }}"
    prefixes: "{{ beonet_plan_result.prefixes }}"
"""

RETURN = r"""
actions:
  description: The commands run (or, in check mode, that would run), in order.
  returned: always
  type: list
  elements: str
files:
  description: Persistent files written (or that would be written).
  returned: always
  type: list
  elements: str
removed:
  description: Files an earlier plan wrote that this one does not, removed (or that would be).
  returned: always
  type: list
  elements: str
backend:
  description: The backend used (C(netplan/networkd) or C(netplan/networkmanager) for netplan).
  returned: always
  type: str
notes:
  description: Other managers' claims on cluster NICs that beonet's files take precedence over.
  returned: always
  type: list
  elements: str
in_sync:
  description: Whether applying the plan would change nothing (no command, file, removal or record).
  returned: with preflight
  type: bool
checkpoint:
  description:
    - With I(preflight), the node's checkpoint, C(state) C(none), C(pending) (a change waits for
      its confirmation; refused) or C(orphaned) (a change left unconfirmed by a reboot).
  returned: with preflight
  type: dict
frr_installed:
  description: With routing.engine frr in the plan, whether FRR's daemons are installed on the node.
  returned: with routing.engine frr
  type: bool
rolled_back:
  description: What a rollback did (C(why), C(at), C(files), C(commands), C(errors), C(left)).
  returned: when a change of this node was rolled back
  type: dict
confirmed:
  description: With I(confirm), whether a pending change was confirmed.
  returned: with confirm
  type: bool
fast:
  description: The node was found as it was when last in sync by I(fast_command); the module did not run.
  returned: when the fast path found the node in sync
  type: bool
fast_read:
  description: Why the full check ran although I(fast_command) was given (it did not answer in time).
  returned: when the fast path's command did not answer
  type: str
"""

import os
from typing import Any

from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet.agent import apply as beonet
from ansible.module_utils.beonet.agent import (
    backends,
    checkpoint,
    discover,
    fast,
    frr,
    names,
    netmanager,
    nodeplan,
    preflight,
    probe,
)
from ansible.module_utils.beonet.agent.arguments import escaped_arguments
from ansible.module_utils.beonet.agent.files import atomic_write, read_text
from ansible.module_utils.beonet.agent.netbackends import networkmanager

NODE_ROOT = "/"          # where the network managers' files are read (a fake tree in tests)
ARGUMENT_SPEC = {
    "node": {"type": "str", "required": True},
    "plan": {"type": "dict", "required": True},
    "plan_format": {"type": "int", "required": True},
    "prefixes": {"type": "list", "elements": "str", "required": True},
    "backend": {"type": "str", "choices": ["auto", *netmanager.BACKENDS], "default": "auto"},
    "management_interface": {"type": "str", "default": "none"},
    "management_address": {"type": "str", "default": ""},
    "validate_only": {"type": "bool", "default": False},
    "preflight": {"type": "bool", "default": False},
    "supported_os": {"type": "list", "elements": "str",
                     "default": ["Debian", "RedHat", "Archlinux", "Suse"]},
    "include_virtual": {"type": "bool", "default": False},
    "down": {"type": "list", "elements": "str", "default": []},
    "confirm_timeout": {"type": "float", "default": 0},
    "confirm": {"type": "bool", "default": False},
    "fingerprint": {"type": "str", "default": "", "no_log": False},
    # the action plugin's (the fast path); the module ignores them
    "fast_command": {"type": "str"},
    "fast_timeout": {"type": "int", "default": 60},
    "neighbours": {"type": "list", "elements": "dict", "default": [],
                   "options": {"nic": {"type": "str", "required": True},
                               "address": {"type": "str", "required": True}}},
}


def _json(module: AnsibleModule, *cmd: str) -> Any:
    rc, out, err = module.run_command(list(cmd))
    if rc != 0:
        module.fail_json(msg="%s failed: %s" % (" ".join(cmd), err.strip()))
    return module.from_json(out or "[]")


def _bonding_driver(module: AnsibleModule) -> bool:
    """Whether the kernel has the bonding driver, loaded or as a module."""
    if os.path.exists("/sys/class/net/bonding_masters"):
        return True
    modinfo = module.get_bin_path("modinfo")
    return bool(modinfo) and module.run_command([modinfo, "bonding"])[0] == 0


def _routes6(module: AnsibleModule, n: nodeplan.NodePlan) -> Any:
    """The main table's IPv6 routes; none where the kernel has no IPv6 and the plan none."""
    cmd = ["ip", "-j", "-6", "route", "show", "table", "main"]
    rc, out, _err = module.run_command(cmd)
    if rc != 0 and not beonet.has_ipv6(n):
        return []
    return _json(module, *cmd)


def _live_state(module: AnsibleModule, n: nodeplan.NodePlan) -> beonet.LiveState:
    rc, listed, _err = module.run_command(["nft", "list", "table", "inet", "beonet"])
    links = _json(module, "ip", "-j", "link")
    return {"links": links,
            "addrs": _json(module, "ip", "-j", "addr"),
            "routes": _json(module, "ip", "-j", "route", "show", "table", "main") + _routes6(module, n),
            "installed": (read_text(beonet.STATE_PATH) or "").splitlines(),
            "forwarding": read_text(beonet.FORWARD) or "",
            "nft_table": listed if rc == 0 else None,
            "tso": beonet.live_tso(n),
            "sysctls": beonet.live_sysctls(n, read_text, [str(link.get("ifname")) for link in links]),
            **_frr_live(n)}


def _frr_live(n: nodeplan.NodePlan) -> dict[str, Any]:
    """FRR's part of the live state, read where the plan runs FRR or beonet's FRR
    configuration is on the node (a plan that leaves FRR)."""
    conf = read_text(os.path.join(NODE_ROOT, frr.FRR_CONF.lstrip("/")))
    here = "routing" in n or frr.ours(conf)
    runs = here and frr.running(os.path.join(NODE_ROOT, "proc"), frr.watched(n))
    return {"frr_conf": conf, "frr_running": runs, "systemd": here and frr.systemd_runs(NODE_ROOT)}


def _cluster_nics(n: nodeplan.NodePlan) -> list[str]:
    return sorted({name for i in n["interfaces"] for name in [i["name"]] + i.get("members", [])})


def _management(module: AnsibleModule) -> tuple[str, str]:
    """The management interface and address, "auto" read from the node's IPv4 route to
    8.8.8.8 (what Ansible's default_ipv4 fact holds)."""
    iface, addr = module.params["management_interface"], module.params["management_address"]
    if "auto" in (iface, addr):
        rc, out, _err = module.run_command(["ip", "-j", "-4", "route", "get", preflight.ROUTE_PROBE])
        found = preflight.default_ipv4(out if rc == 0 else "")
        iface = found[0] if iface == "auto" else iface
        addr = found[1] if addr == "auto" else addr
    return iface, addr


def _os_release() -> str | None:
    for path in preflight.OS_RELEASE:
        text = read_text(os.path.join(NODE_ROOT, path.lstrip("/")))
        if text is not None:
            return text
    return None


def _node_problems(module: AnsibleModule, n: nodeplan.NodePlan) -> list[str]:
    """preflight: the node's OS family, then the plan's NICs (present, with carrier)."""
    p = module.params
    family = preflight.os_family(_os_release())
    problem = preflight.os_problem(p["node"], family, p["supported_os"])
    if problem:
        return [problem]
    mgmt = [m for m in [p["management_interface"]] if m not in ("none", "")]
    try:
        report = discover.discover(p["node"], "", 1.0, mgmt, p["include_virtual"], probe_only=True)
    except discover.DiscoveryError as exc:
        return [str(exc)]
    problem = preflight.nic_problem(p["node"], n, report["nics"], p["down"])
    return [problem] if problem else []


def _param_problems(p: dict[str, Any]) -> list[str]:
    """The parameters checked before anything is read or built from them."""
    name = p["node"]
    problems = nodeplan.plan_problems(name, p["plan"])
    if p["management_interface"] not in ("none", "auto", ""):
        why = names.ifname_problem(p["management_interface"])
        problems += ["%s: management_interface: %s" % (name, why)] if why else []
    for k, prefix in enumerate(p["prefixes"]):
        why = nodeplan.network_problem(prefix)
        problems += ["%s: prefixes[%d]: %s" % (name, k, why)] if why else []
    problems += ["%s: down[%d]: %s" % (name, k, why) for k, why in
                 enumerate(names.node_name_problem(d) for d in p["down"]) if why]
    if not 0 <= p["confirm_timeout"] <= checkpoint.MAX_TIMEOUT:      # NaN fails both
        problems.append("%s: confirm_timeout must be 0 to %d seconds, not %s"
                        % (name, checkpoint.MAX_TIMEOUT, p["confirm_timeout"]))
    for k, t in enumerate(p["neighbours"]):
        why = names.ifname_problem(t["nic"])
        why = why or nodeplan.address_problem(t["address"])
        problems += ["%s: neighbours[%d]: %s" % (name, k, why)] if why else []
    return problems


def _checked_actions(module: AnsibleModule) -> tuple[list[list[str]], beonet.LiveState,
                                                     netmanager.Decision]:
    """The plan checked against the node (refused before any change), what to run, and
    the backend that brings the cluster NICs up at boot."""
    p = module.params
    n, name = p["plan"], p["node"]
    problem = nodeplan.plan_format_problem(name, p["plan_format"])
    refused = [problem] if problem else _param_problems(p)
    if refused:
        module.fail_json(msg="; ".join(refused), problems=refused, changed=False)
    bonding = not beonet.has_bonds(n) or _bonding_driver(module)
    problems = beonet.refusals(n, name, p["management_interface"], p["management_address"], bonding)
    if p["preflight"]:
        problems += _node_problems(module, n)
    decision = netmanager.decide(name, netmanager.probe(NODE_ROOT), _cluster_nics(n),
                                 beonet.has_bonds(n), p["backend"])
    problems += decision.problems
    live = _live_state(module, n)
    actions, more = beonet.node_actions(n, name, p["prefixes"], live)
    problems += more
    if problems:
        module.fail_json(msg="; ".join(problems), problems=problems, changed=False,
                         found=decision.found)
    return actions, live, decision


def _files(n: nodeplan.NodePlan, prefixes: list[str], d: netmanager.Decision,
           live: beonet.LiveState) -> dict[str, str]:
    """Every persistent file of this node: the backend's, and NetworkManager's leave-alone file."""
    files = beonet.persistent_files(n, prefixes, d.backend or "networkd", d.renderer,
                                    sysctls=live["sysctls"])
    files.update(networkmanager.unmanaged_file(d.unmanage))
    return files


def _remove(path: str) -> None:
    os.unlink(path)


def _stale(files: dict[str, str], result: dict[str, Any], diffs: list[dict[str, str]]) -> bool:
    """The files an earlier plan wrote that this one does not (to remove), and whether
    the record of this plan's files is to be written."""
    recorded = read_text(backends.RECORD_PATH)
    for path in backends.stale_paths(recorded, files):
        old = read_text(path)
        if old is None or not frr.written_by_beonet(path, old):
            continue
        result["removed"].append(path)
        diffs.append({"before_header": path, "after_header": path + " (removed)",
                      "before": old, "after": ""})
    return recorded != backends.record_text(files)


def _write(module: AnsibleModule, path: str, text: str | None, mode: int,
           result: dict[str, Any]) -> None:
    """Write text to path atomically (None: only set the mode)."""
    try:
        if text is None:
            os.chmod(path, mode)
        else:
            atomic_write(path, text, mode)
    except OSError as exc:
        module.fail_json(msg="%s: writing %s failed: %s" % (module.params["node"], path, exc),
                         **result)


def _differing(files: dict[str, str], result: dict[str, Any], diffs: list[dict[str, str]]) -> None:
    """The persistent files that differ, or whose mode does (result["files"])."""
    for path, text in sorted(files.items()):
        old = read_text(path)
        if old != text:
            diffs.append({"before_header": path, "after_header": path,
                          "before": old or "", "after": text})
        elif os.stat(path).st_mode & 0o777 == beonet.file_mode(path):
            continue
        result["files"].append(path)


def _put_files(module: AnsibleModule, files: dict[str, str], result: dict[str, Any], record: bool) -> None:
    """Write the files that differ (or fix their mode), remove the stale ones, write the record."""
    for path in result["files"]:
        text = files[path]
        _write(module, path, text if read_text(path) != text else None, beonet.file_mode(path), result)
    for path in result["removed"]:
        try:
            _remove(path)
        except OSError as exc:
            module.fail_json(msg="%s: removing %s failed: %s" % (module.params["node"], path, exc), **result)
    if record:
        _write(module, backends.RECORD_PATH, backends.record_text(files), 0o644, result)


def _run(module: AnsibleModule, actions: list[list[str]], result: dict[str, Any]) -> None:
    def run(cmd: list[str]) -> tuple[int, str]:
        rc, _out, err = module.run_command(cmd)
        return rc, err

    error = beonet.apply_actions(module.params["node"], actions, run)
    if error:
        module.fail_json(msg=error, **result)


def _tell_managers(module: AnsibleModule, result: dict[str, Any]) -> None:
    """Let the managers know the files that changed (backends.manager_commands).

    After the live changes: a profile NetworkManager activates at once then finds
    its bond and addresses in place instead of racing 'ip link add'."""
    for cmd in backends.manager_commands(result["files"] + result["removed"]):
        path = module.get_bin_path(cmd[0])
        if path:
            rc, _out, err = module.run_command([path] + cmd[1:])
            if rc:
                module.fail_json(msg="%s: %s: %s" % (module.params["node"], " ".join(cmd),
                                                     err.strip()), **result)


def _nm_takeovers(module: AnsibleModule, n: nodeplan.NodePlan, d: netmanager.Decision,
                  written: list[str] | None = None) -> list[list[str]]:
    """nmcli commands activating beonet's profile on each cluster NIC that NetworkManager
    holds with another profile, or with beonet's profile from a keyfile since rewritten
    (among the files written); NetworkManager backend only; read-only here."""
    nmcli = module.get_bin_path("nmcli")
    if d.backend != "networkmanager" or not nmcli:
        return []
    rc, out, _err = module.run_command([nmcli, "-t", "-f", "DEVICE,CONNECTION", "device"])
    if rc:
        return []                       # NetworkManager not running: boot settles it
    changed = frozenset(os.path.basename(f)[:-len(".nmconnection")]
                        for f in written or [] if f.endswith(".nmconnection"))
    return [[nmcli, "connection", "up", "id", profile]
            for profile in netmanager.nm_takeovers(n, netmanager.nm_devices(out), changed)]


def _route_diff(name: str, n: nodeplan.NodePlan, live: beonet.LiveState) -> dict[str, str]:
    return {"before_header": "%s routes (proto beonet)" % name,
            "after_header": "%s routes (plan)" % name,
            "before": beonet.routes_text(live["routes"]), "after": beonet.plan_routes_text(n)}


def _preflight_exit(module: AnsibleModule, result: dict[str, Any], in_sync: bool) -> None:
    """preflight's answer: whether the node is in sync, and its checkpoint (a change still
    waiting for its confirmation is refused; a rollback not reported yet is shown)."""
    checked = dict(result, changed=False, in_sync=in_sync, checkpoint=checkpoint.status())
    if checked["checkpoint"]["state"] == "pending":
        msg = ("%s: a change of an earlier run waits for its confirmation; the node rolls it back by itself "
               "in %s s (run again after that)" % (module.params["node"], checked["checkpoint"]["left"]))
        module.fail_json(msg=msg, problems=[msg], changed=False)
    if checked["checkpoint"]["state"] == "orphaned":
        module.warn("%s: a change was left unconfirmed (the node restarted, or its rollback timer was "
                    "killed); the confirm step checks it, then confirms it or restores the state saved "
                    "before it"
                    % module.params["node"])
    if in_sync and checked["checkpoint"]["state"] == "none":
        _remember(module)
    earlier = checkpoint.peek_result()
    if earlier:
        checked["rolled_back"] = earlier
        module.warn("%s was rolled back at %s: %s"
                    % (module.params["node"], earlier.get("at"), earlier.get("why")))
    module.exit_json(**checked)


def _remember(module: AnsibleModule) -> None:
    """Store the fingerprint of the node as it is now, found in sync (fast.py); not in check
    mode, not without a token. A fingerprint that cannot be stored only costs the fast path."""
    token = module.params["fingerprint"]
    if not token or module.check_mode:
        return
    sha = fast.dump_sha(module.params["plan"])
    try:
        atomic_write(fast.FINGERPRINT, "%s %s\n" % (token, sha) if sha else "none\n", mode=0o600,
                     durable=False)
    except OSError:
        pass


def _scope(n: nodeplan.NodePlan, live: beonet.LiveState) -> list[str]:
    """The links a change may touch: the plan's, and those of addresses an earlier plan installed."""
    return sorted(set(_cluster_nics(n)) | {line.split()[-1] for line in live["installed"] if line.split()})


def _arm(module: AnsibleModule, live: beonet.LiveState, files: dict[str, str],
         result: dict[str, Any]) -> None:
    """Save what the change touches and start the node's rollback waiter; from here on a
    failure rolls the node back at once (the failure says so)."""
    p = module.params
    n, name = p["plan"], p["node"]
    touched = set(files) | set(backends.stale_paths(read_text(backends.RECORD_PATH), files))
    saved = checkpoint.checkpoint_of(name, dict(live), touched | {backends.RECORD_PATH, beonet.STATE_PATH},
                                     _scope(n, live))
    try:
        state = checkpoint.status()["state"]
        if state == "pending":
            module.fail_json(msg="%s: a change of an earlier run waits for its confirmation" % name, **result)
        sub = checkpoint.current()
        older = checkpoint.claim(sub) if state == "orphaned" and sub else None
        sub = checkpoint.save(checkpoint.merged(older, saved) if older else saved)
        result["armed"] = checkpoint.arm(sub, p["confirm_timeout"], checkpoint.roll_back)
    except (OSError, checkpoint.CheckpointError) as exc:
        module.fail_json(msg="%s: the checkpoint could not be armed, nothing was changed: %s" % (name, exc),
                         **result)
    fail = module.fail_json

    def failed(msg: str, **kwargs: Any) -> None:
        back = checkpoint.roll_back_now(msg, checkpoint.roll_back)
        kwargs["rolled_back"] = back
        counts = (len(back.get("files", [])), len(back.get("commands", [])))
        fail(msg="%s; rolled back (%d files, %d commands)" % ((msg,) + counts), **kwargs)
    module.fail_json = failed


def _neighbours(module: AnsibleModule) -> list[tuple[str, str]]:
    return [(str(t["address"]), str(t["nic"])) for t in module.params["neighbours"]]


def _confirm(module: AnsibleModule) -> None:
    """Confirm the pending change if the node passes its local check, else roll it back."""
    p = module.params
    n, name = p["plan"], p["node"]
    refused = _param_problems(p)
    if refused:
        module.fail_json(msg="; ".join(refused), problems=refused, changed=False)
    if checkpoint.status()["state"] == "none" or module.check_mode:
        earlier = None if module.check_mode else checkpoint.take_result()
        if earlier:
            module.warn("%s was rolled back at %s: %s" % (name, earlier.get("at"), earlier.get("why")))
        module.exit_json(changed=False, confirmed=False, **({"rolled_back": earlier} if earlier else {}))
    live = _live_state(module, n)
    left, problems = beonet.node_actions(n, name, p["prefixes"], live)
    problems += checkpoint.check_problems(name, left, _neighbours(module), probe.ping_all)
    if problems:
        back = checkpoint.roll_back_now("; ".join(problems), checkpoint.roll_back)
    else:
        back = checkpoint.confirm()
    if back is None:
        _remember(module)
        module.exit_json(changed=False, confirmed=True)
    module.fail_json(msg="%s: rolled back: %s" % (name, back.get("why")), rolled_back=back, confirmed=False,
                     changed=True)


def main() -> None:
    refusal = escaped_arguments(basic, "beonet_node")
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if refusal:
        module.fail_json(msg=refusal, errors=[refusal])
    p = module.params
    n, name = p["plan"], p["node"]
    if p["confirm"]:
        _confirm(module)
    p["management_interface"], p["management_address"] = _management(module)
    actions, live, decision = _checked_actions(module)
    takeovers = _nm_takeovers(module, n, decision)
    backend = decision.backend or "networkd"
    result: dict[str, Any] = {
        "changed": False, "files": [],
        "actions": [" ".join(a) for a in beonet.leave_actions(n, live) + actions + takeovers],
        "removed": [],
        "backend": backend + ("/" + decision.renderer if backend == "netplan" else ""),
        "notes": decision.notes}
    if "routing" in n:
        result["frr_installed"] = frr.installed(NODE_ROOT, frr.watched(n))
    if p["validate_only"]:
        module.exit_json(**result)
    write = not (module.check_mode or p["preflight"])
    diffs: list[dict[str, str]] = []
    files = _files(n, p["prefixes"], decision, live)
    _differing(files, result, diffs)
    record_stale = _stale(files, result, diffs)
    result["changed"] = bool(result["actions"] or result["files"] or result["removed"])
    state = beonet.installed_addresses(n)
    state_stale = live["installed"] != state.splitlines()
    if p["preflight"]:
        _preflight_exit(module, result, not (result["changed"] or record_stale or state_stale))
    if write and p["confirm_timeout"] > 0 and (result["changed"] or record_stale or state_stale):
        _arm(module, live, files, result)       # before anything is written
    if write:
        _run(module, beonet.leave_actions(n, live), result)     # while FRR's files are there
        _put_files(module, files, result, record_stale)
        _run(module, actions, result)
        _tell_managers(module, result)
        # read again once the NICs are configured and the keyfiles reloaded: what holds
        # them now (NetworkManager's own external connections included) is taken over
        _run(module, _nm_takeovers(module, n, decision, result["files"]) or takeovers, result)
        if state_stale:
            _write(module, beonet.STATE_PATH, state, 0o644, result)
    if module._diff:
        diffs.insert(0, _route_diff(name, n, live))
        result["diff"] = [d for d in diffs if d["before"] != d["after"]]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
