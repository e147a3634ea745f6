#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: beonet_node
short_description: Apply one node's beonet plan (persistent files and runtime state)
description:
  - Writes the node's persistent network configuration (systemd-networkd files or
    NetworkManager keyfiles, C(/etc/sysctl.d) forwarding, the nftables ruleset that
    limits forwarding to the topology's prefixes), atomically and only when different.
  - Reads the live state (C(ip -j link/addr/route)) and changes only what differs
    from the plan. Routes it installs carry protocol 250 (C(beonet)) and addresses are
    recorded in C(/var/lib/beonet/addresses);
    those a newer plan drops are removed, and nothing else.
  - Refuses, before any change, a plan that would touch the management interface or
    address, or that names a NIC the node does not have.
  - Turns TCP segmentation offload off on bonds whose plan says C(tso=false) (the
    default for balance-rr), at runtime (SIOCETHTOOL ioctl) and persistently (a
    systemd C(.link) file or the keyfile's C([ethtool]) section).
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
  prefixes:
    description: Every prefix of the topology; forwarding nodes forward only between them.
    type: list
    elements: str
    required: true
  backend:
    description: Persistent configuration backend.
    type: str
    choices: [networkd, networkmanager]
    default: networkd
  management_interface:
    description: The interface Ansible connects through (C(none) when there is none).
    type: str
    default: none
  management_address:
    description: The address Ansible connects to, never touched.
    type: str
    default: ""
  validate_only:
    description: Check the plan against the node and stop (used before any host changes).
    type: bool
    default: false
author:
  - beonet developers
"""

EXAMPLES = r"""
- name: Apply the plan of this node
  beonet_node:
    node: "{{ inventory_hostname }}"
    plan: "{{ beonet_plan_result.plan.nodes[inventory_hostname] }}"
    prefixes: "{{ beonet_plan_result.prefixes }}"
"""

RETURN = r"""
actions:
  description: The ip commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: str
files:
  description: Persistent files written (or that would be written).
  returned: always
  type: list
  elements: str
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet.agent import apply as beonet

FORWARD = "/proc/sys/net/ipv4/ip_forward"


def _json(module, *cmd):
    rc, out, err = module.run_command(list(cmd))
    if rc != 0:
        module.fail_json(msg="%s failed: %s" % (" ".join(cmd), err.strip()))
    return module.from_json(out or "[]")


def _read(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


def _write(module, path, text, mode):
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, 0o755)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".beonet-")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    module.atomic_move(tmp, path)
    # atomic_move gives a new file the default mode (0644 under umask 022);
    # NetworkManager ignores keyfiles readable by anyone but root.
    os.chmod(path, mode)


def main():
    module = AnsibleModule(
        argument_spec={
            "node": {"type": "str", "required": True},
            "plan": {"type": "dict", "required": True},
            "prefixes": {"type": "list", "elements": "str", "required": True},
            "backend": {"type": "str", "choices": ["networkd", "networkmanager"],
                        "default": "networkd"},
            "management_interface": {"type": "str", "default": "none"},
            "management_address": {"type": "str", "default": ""},
            "validate_only": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    n, name = p["plan"], p["node"]
    mgmt_if, mgmt_addr = p["management_interface"], p["management_address"]
    problems = []
    for iface in n["interfaces"]:
        names = [iface["name"]] + iface.get("members", [])
        if mgmt_if != "none" and mgmt_if in names:
            problems.append("%s: the plan would change %s, the interface Ansible connects "
                            "through" % (name, mgmt_if))
        for a in iface["addresses"]:
            if mgmt_addr and a.split("/")[0] == mgmt_addr:
                problems.append("%s: the plan would add %s, the address Ansible connects to"
                                % (name, mgmt_addr))
    if any(i["kind"] == "bond" for i in n["interfaces"]) and not os.path.exists(
            "/sys/class/net/bonding_masters"):
        modinfo = module.get_bin_path("modinfo")
        rc = module.run_command([modinfo, "bonding"])[0] if modinfo else 1
        if rc != 0:
            problems.append("%s: this kernel has no bonding driver (no "
                            "/sys/class/net/bonding_masters, no bonding module); the plan's "
                            "bonds need a VM or bare metal" % name)
    links = _json(module, "ip", "-j", "link")
    addrs = _json(module, "ip", "-j", "addr")
    routes = _json(module, "ip", "-j", "route", "show", "table", "main")
    installed = (_read(beonet.STATE_PATH) or "").splitlines()
    actions, more = beonet.runtime_actions(n, name, links, addrs, routes, installed)
    problems.extend(more)
    if problems:
        module.fail_json(msg="; ".join(problems), problems=problems, changed=False)
    if p["validate_only"]:
        module.exit_json(changed=False, actions=[" ".join(a) for a in actions], files=[])

    result = {"changed": False, "actions": [" ".join(a) for a in actions], "files": []}
    diffs = []
    backend = "networkd" if p["backend"] == "networkd" else "networkmanager"
    for path, text in sorted(beonet.persistent_files(n, p["prefixes"], backend).items()):
        old = _read(path)
        if old == text:
            continue
        result["files"].append(path)
        diffs.append({"before_header": path, "after_header": path,
                      "before": old or "", "after": text})
        if not module.check_mode:
            _write(module, path, text, 0o600 if path.endswith(".nmconnection") else 0o644)
    for path in sorted(beonet.persistent_files(n, p["prefixes"], backend)):
        want_mode = 0o600 if path.endswith(".nmconnection") else 0o644
        if path not in result["files"] and os.path.exists(path) and \
                os.stat(path).st_mode & 0o777 != want_mode:
            result["files"].append(path)
            if not module.check_mode:
                os.chmod(path, want_mode)
    want = "1" if n["forwarding"] else "0"
    now = (_read(FORWARD) or "").strip()
    if now != want:
        result["actions"].insert(0, "sysctl -w net.ipv4.ip_forward=%s" % want)
        if not module.check_mode:
            with open(FORWARD, "w", encoding="utf-8") as fh:
                fh.write(want + "\n")
    digest, ruleset = beonet.forward_ruleset(p["prefixes"])
    rc, listed, _ = module.run_command(["nft", "list", "table", "inet", "beonet"])
    present = rc == 0
    if n["forwarding"] and ("beonet-ruleset %s" % digest) not in listed:
        result["actions"].append("nft -f %s" % beonet.NFT_PATH)
        if not module.check_mode:
            rc, _, err = module.run_command(["nft", "-f", "-"], data=ruleset)
            if rc:
                module.fail_json(msg="nft: %s" % err.strip(), **result)
    elif not n["forwarding"] and present:
        result["actions"].append("nft delete table inet beonet")
        if not module.check_mode:
            module.run_command(["nft", "delete", "table", "inet", "beonet"], check_rc=True)
    if actions and not module.check_mode:
        for cmd in actions:
            rc, _, err = module.run_command(cmd)
            if rc:
                msg = "%s failed: %s" % (" ".join(cmd), err.strip())
                if "type bond" in " ".join(cmd) and "nknown device type" in err:
                    msg = ("%s: this kernel has no bonding driver (%s); bonds need a VM "
                           "or bare metal" % (name, err.strip()))
                module.fail_json(msg=msg, **result)
    # Bond offloads, once the bonds exist (in check mode a bond still to be
    # created counts as a change).
    for cmd in beonet.offload_actions(n, beonet.live_tso(n)):
        result["actions"].append(" ".join(cmd))
        if not module.check_mode:
            try:
                beonet.set_tso(cmd[2], False)
                off = not beonet.get_tso(cmd[2])
            except OSError as exc:
                module.fail_json(msg="%s: %s failed: %s" % (name, " ".join(cmd), exc), **result)
            if not off:
                module.fail_json(msg="%s: %s did not turn TSO off (the kernel keeps it on)"
                                 % (name, " ".join(cmd)), **result)
    if backend == "networkmanager" and any(f.endswith(".nmconnection") for f in result["files"]) \
            and not module.check_mode:
        # Let a running NetworkManager know the keyfiles (it reads them at boot),
        # after the live changes: a profile it activates at once then finds its
        # bond and addresses in place instead of racing 'ip link add'.
        nmcli = module.get_bin_path("nmcli")
        if nmcli:
            rc, _, err = module.run_command([nmcli, "connection", "reload"])
            if rc:
                module.fail_json(msg="nmcli connection reload: %s" % err.strip(), **result)
    state = beonet.installed_addresses(n)
    if _read(beonet.STATE_PATH) != state and not module.check_mode:
        _write(module, beonet.STATE_PATH, state, 0o644)
    result["changed"] = bool(result["actions"] or result["files"])
    if module._diff:
        after = beonet.plan_routes_text(n)
        diffs.insert(0, {"before_header": "%s routes (proto beonet)" % name,
                         "after_header": "%s routes (plan)" % name,
                         "before": beonet.routes_text(routes), "after": after})
        result["diff"] = [d for d in diffs if d["before"] != d["after"]]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
