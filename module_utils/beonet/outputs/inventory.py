"""Map each node's logical NIC names to the host's physical names.

An inventory host may set ``beonet_interfaces: {eth1: ens4, eth2: ens5}``;
without it the logical names are used as they are. Every topology node must
be an inventory host, every logical NIC of a host with a map must be mapped,
and no NIC may map to the management interface.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

from ..compiler.errors import Problems
from ..compiler.load import parse_yaml, read_text
from ..compiler.model import Graph

HostVars = dict[str, dict[str, Any]]

VAR = "beonet_interfaces"


def read_inventory(path: str) -> tuple[HostVars, Problems]:
    """Return ({host: vars}, problems) using ansible-inventory (any format)."""
    problems = Problems(path)
    problems.stage = "inventory"
    beside = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")
    exe = beside if os.path.exists(beside) else shutil.which("ansible-inventory")
    if not os.path.exists(path):
        problems.add("", "no such inventory")
        return {}, problems
    if not exe:
        problems.add("", "ansible-inventory is not installed (run `make setup`)")
        return {}, problems
    proc = subprocess.run([exe, "-i", path, "--list"], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        problems.add("", "ansible-inventory failed: %s" % proc.stderr.strip().splitlines()[-1:])
        return {}, problems
    data = json.loads(proc.stdout)
    hosts: HostVars = dict(data.get("_meta", {}).get("hostvars", {}))
    for group, body in data.items():
        if group != "_meta" and isinstance(body, dict):
            for h in body.get("hosts", []):
                hosts.setdefault(h, {})
    return hosts, problems


def management_of(hosts: HostVars) -> str | None:
    """The inventory's beonet_management_interface, when every host that sets it
    agrees (as the beonet_topology module receives it); otherwise None, and the
    topology's own management interface applies."""
    values = {str(v["beonet_management_interface"]) for v in hosts.values()
              if "beonet_management_interface" in v}
    return values.pop() if len(values) == 1 else None


def _lines(path: str) -> dict[str, int]:
    if not path or not path.endswith((".yml", ".yaml")) or not os.path.isfile(path):
        return {}
    text, _unreadable = read_text(path)   # not UTF-8 or too big: no line numbers
    if text is None:
        return {}
    _data, lines, _problems = parse_yaml(text, path)
    return lines


def _key(lines: dict[str, int], host: str, *rest: str) -> tuple[str, int | None]:
    """The inventory's own key path for a host variable, and its line."""
    tail = ".".join(("hosts", host) + rest)
    for path, line in lines.items():
        if path.endswith(tail):
            return path, line
    for path, line in lines.items():
        if path.endswith(".".join(("hosts", host))):
            return path + "." + ".".join(rest) if rest else path, line
    return tail, None


def physical_names(graph: Graph, hosts: HostVars, file: str, management: str | None = None
                   ) -> tuple[dict[str, dict[str, str]], Problems]:
    """Return ({node: {logical: physical}}, Problems). management overrides the
    topology's management interface ("none": Ansible uses no NIC, as in labs)."""
    management = graph.management if management is None else management
    lines = _lines(file)
    problems = Problems(file, lines)
    problems.stage = "inventory"
    out: dict[str, dict[str, str]] = {}
    for node in graph.nodes:
        if node.name not in hosts:
            problems.add("hosts.%s" % node.name, "the inventory lacks node '%s' of the topology"
                         % node.name, file=file)
            continue
        names = hosts[node.name].get(VAR)
        if names is None:
            continue
        path, line = _key(lines, node.name, VAR)
        if not isinstance(names, dict):
            problems.add(path, "must be a mapping of logical to physical NIC names",
                         file=file, line=line)
            continue
        mapping: dict[str, str] = {}
        used: dict[str, str] = {}
        for iface in node.interfaces:
            if iface.kind != "ethernet":
                continue
            phys = names.get(iface.name)
            if not phys:
                problems.add(path, "no physical name for %s (on segment %s)"
                             % (iface.name, iface.segment.name), file=file, line=line)
                continue
            if phys == management:
                problems.add("%s.%s" % (path, iface.name), "%s is the management interface, "
                             "which beonet never touches" % phys, file=file, line=line)
            if phys in used:
                problems.add("%s.%s" % (path, iface.name), "%s is already used for %s"
                             % (phys, used[phys]), file=file, line=line)
            used[phys] = iface.name
            mapping[iface.name] = phys
        out[node.name] = mapping
    return out, problems
