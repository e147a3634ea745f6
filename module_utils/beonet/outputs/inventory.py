"""Map each node's logical NIC names to the host's physical names.

An inventory host may set ``beonet_interfaces: {eth1: ens4, eth2: ens5}``;
without it the logical names are used as they are. Every topology node must
be an inventory host, every logical NIC of a host with a map must be mapped
to an interface name (``agent/names.py``), and no NIC may map to the
management interface.

Inventories are read with ``ansible-inventory`` (any format Ansible reads),
within bounds: the YAML files of the inventory are first checked for size,
nesting and alias expansion by beonet's own loader, and ``ansible-inventory``
runs with a time, memory and output limit. An inventory Ansible cannot parse
is an error (Ansible itself would only warn and go on with no hosts).
"""

from __future__ import annotations

import glob
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
from typing import Any

from ..agent import procs
from ..agent.names import ifname_problem, shown
from ..compiler.errors import Problem, Problems
from ..compiler.load import read_text
from ..compiler.model import Graph
from ..gate.yamltext import MAX_DEPTH, bounds_problems, flow_depth, parse_yaml

HostVars = dict[str, dict[str, Any]]

VAR = "beonet_interfaces"
MANAGEMENT = "beonet_management_interface"
MAX_BYTES = 16 * 1024 * 1024         # the inventory's YAML files, each
MAX_FILES = 10_000                   # YAML files read beside it (host_vars, group_vars)
TIMEOUT_S = 10.0                     # ansible-inventory, plus TIMEOUT_PER_MIB per MiB read,
TIMEOUT_PER_MIB = 25.0               # at most TIMEOUT_MAX_S (8,192 hosts: 0.75 MiB, 14 s)
TIMEOUT_MAX_S = 60.0
MEMORY = 4 * 1024 ** 3               # ansible-inventory's address space
OUTPUT = 512 * 1024 ** 2             # ansible-inventory's JSON
_YAML = (".yml", ".yaml")


def _ansible_inventory() -> str | None:
    beside = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")
    return beside if os.path.exists(beside) else shutil.which("ansible-inventory")


def inventory_files(path: str) -> tuple[list[str], list[str]]:
    """(files, special): the files Ansible reads for the inventory at path (itself,
    or the files of its folder, and the host_vars and group_vars beside it), without
    following links to folders; and what stands there but is no regular file or
    folder (a pipe or device Ansible would block on). At most MAX_FILES + 1 files."""
    base = path if os.path.isdir(path) else os.path.dirname(path) or "."
    files: list[str] = []
    special: list[str] = []
    tops = [path] if not os.path.isdir(path) else [os.path.join(path, n) for n in sorted(os.listdir(path))]
    for top in tops:
        (files if os.path.isfile(top) else special if not os.path.isdir(top) else []).append(top)
    for sub in ("host_vars", "group_vars"):
        for folder, dirs, names in os.walk(os.path.join(base, sub)):
            dirs.sort()
            for name in sorted(names):
                full = os.path.join(folder, name)
                (files if os.path.isfile(full) else special).append(full)
            if len(files) > MAX_FILES:
                return files, special
    return files, special


def _in_vars(name: str) -> bool:
    """Whether name lies in a host_vars or group_vars folder (whose files are YAML
    or JSON whatever their extension; an inventory folder's may be INI or scripts)."""
    parts = name.split(os.sep)
    return "host_vars" in parts[:-1] or "group_vars" in parts[:-1]


def _is_json(name: str, text: str) -> bool:
    """Whether a vars file is read as JSON (a .json file that parses; Ansible reads
    any other as YAML, whatever its name)."""
    if not name.endswith(".json"):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _check_files(path: str, problems: Problems) -> int:
    """Bounds of every file the inventory is made of (problems added); their total size."""
    files, special = inventory_files(path)
    for name in special:
        problems.add("", "a pipe, socket or device where Ansible would read a file", file=name)
    if len(files) > MAX_FILES:
        problems.add("", "more than %d files in the inventory and its host_vars and group_vars"
                     % MAX_FILES)
        return 0
    total = 0
    for name in files:
        text, unreadable = read_text(name, MAX_BYTES, "an inventory file")
        if text is None:
            problems.items.extend(unreadable.items)
            continue
        total += len(text)
        if name.endswith(".json") and flow_depth(text) > MAX_DEPTH:
            problems.add("", "JSON nesting deeper than %d levels" % MAX_DEPTH, file=name)
        elif name.endswith(_YAML) or _in_vars(name) and not _is_json(name, text):
            problems.items.extend(bounds_problems(text, name, MAX_BYTES, "an inventory file").items)
    return total


def _timeout(size: int) -> float:
    fixed = os.environ.get("BEONET_INVENTORY_TIMEOUT")
    if fixed:
        try:
            return max(1.0, float(fixed))
        except ValueError:
            pass
    return min(TIMEOUT_MAX_S, TIMEOUT_S + TIMEOUT_PER_MIB * size / 1024 ** 2)


def _limits() -> None:               # in the child, before ansible-inventory starts
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT, OUTPUT))


def _why_failed(stderr: str) -> tuple[str, str | None, int | None]:
    """Ansible's own reason an inventory failed, with the file and line it names."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip()]
    reason = next((lines[k + 1] for k, x in enumerate(lines[:-1]) if x == "<<< caused by >>>"),
                  None)
    reason = reason or next((x for x in reversed(lines) if "ERROR" in x), None)
    reason = reason or (lines[-1] if lines else "no reason given")
    for x in lines:
        if x.startswith("Origin: "):
            where = x[len("Origin: "):].rsplit(":", 2)
            if len(where) == 3 and where[1].isdigit():
                return reason, where[0], int(where[1])
    return reason, None, None


def _run(exe: str, path: str, timeout: float, problems: Problems) -> str | None:
    """ansible-inventory --list within its limits: its JSON, or None (problems say why)."""
    env = dict(os.environ, ANSIBLE_INVENTORY_UNPARSED_FAILED="True",
               ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED="True", ANSIBLE_NOCOLOR="1")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        code = procs.wait(procs.start([exe, "-i", path, "--list"], out, err, env, _limits), timeout)
        if code is None:                      # the time was up: nothing of it is left running
            problems.add("", "ansible-inventory took more than %d s to read it (a script that "
                         "hangs, or a very large inventory: BEONET_INVENTORY_TIMEOUT=SECONDS "
                         "allows more)" % timeout)
            return None
        err.seek(max(0, err.seek(0, os.SEEK_END) - 65536))
        stderr = err.read().decode("utf-8", "replace")
        if code == -signal.SIGXFSZ:
            problems.add("", "ansible-inventory wrote more than %d MiB" % (OUTPUT // 1024 ** 2))
            return None
        if code != 0:
            reason, file, line = _why_failed(stderr)
            if "MemoryError" in stderr or code < 0:
                reason = "ansible-inventory ran out of its %d GiB of memory" % (MEMORY // 1024 ** 3)
            problems.items.append(Problem("not an inventory Ansible can read: %s" % reason, "",
                                          file or path, line, "inventory"))
            return None
        out.seek(0)
        return out.read().decode("utf-8", "replace")


def _hostvars(text: str, problems: Problems) -> HostVars:
    try:
        data = json.loads(text)
    except ValueError as exc:
        problems.add("", "ansible-inventory printed something that is not JSON: %s" % exc)
        return {}
    if not isinstance(data, dict):
        problems.add("", "ansible-inventory printed no inventory")
        return {}
    meta = data.get("_meta", {})
    hostvars = meta.get("hostvars", {}) if isinstance(meta, dict) else {}
    hosts: HostVars = {h: v for h, v in hostvars.items() if isinstance(v, dict)}
    for group, body in data.items():
        if group != "_meta" and isinstance(body, dict) and isinstance(body.get("hosts"), list):
            for h in body["hosts"]:
                if isinstance(h, str):
                    hosts.setdefault(h, {})
    return hosts


def read_inventory(path: str) -> tuple[HostVars, Problems]:
    """Return ({host: vars}, problems) using ansible-inventory (any format)."""
    problems = Problems(path)
    problems.stage = "inventory"
    if not path:
        problems.add("", "no inventory given (an empty name)")
        return {}, problems
    if not os.path.exists(path):
        problems.add("", "no such inventory")
        return {}, problems
    exe = _ansible_inventory()
    if not exe:
        problems.add("", "ansible-inventory is not installed (run `make setup`)")
        return {}, problems
    size = _check_files(path, problems)
    if problems:
        return {}, problems
    text = _run(exe, path, _timeout(size), problems)
    return ({} if text is None else _hostvars(text, problems)), problems


def management_of(hosts: HostVars) -> str | None:
    """The inventory's beonet_management_interface, when every host that sets it
    agrees (as the beonet_topology module receives it); otherwise None, and the
    topology's own management interface applies. Values that are not interface
    names count for nothing here: physical_names refuses them."""
    values = {v[MANAGEMENT] for v in hosts.values()
              if ifname_problem(v.get(MANAGEMENT, None)) is None}
    return values.pop() if len(values) == 1 else None


class _Where:
    """Where a host variable is set: the inventory's own YAML, or a host_vars
    file beside it (with its line)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines = _lines(file)
        self.base = file if os.path.isdir(file) else os.path.dirname(file) or "."

    def find(self, host: str, *rest: str) -> tuple[str, str, int | None]:
        """(file, key path, line) of hosts.HOST.REST..."""
        tail = ".".join(("hosts", host) + rest)
        folder = os.path.join(self.base, "host_vars")     # Ansible reads these over the inventory's
        for name in [os.path.join(folder, host + ext) for ext in _YAML] + \
                sorted(glob.glob(os.path.join(glob.escape(folder), glob.escape(host), "*"))):
            lines = _lines(name)
            if ".".join(rest) in lines:
                return name, ".".join(rest), lines[".".join(rest)]
        for path, line in self.lines.items():
            if path.endswith(tail):
                return self.file, path, line
        for path, line in self.lines.items():
            if path.endswith(".".join(("hosts", host))):
                return self.file, ".".join((path,) + rest), line
        return self.file, tail, None


def _lines(path: str) -> dict[str, int]:
    if not path or not path.endswith(_YAML) or not os.path.isfile(path):
        return {}
    text, _unreadable = read_text(path, MAX_BYTES, "an inventory file")
    if text is None:
        return {}
    _data, lines, _problems = parse_yaml(text, path, MAX_BYTES, "an inventory file")
    return lines


def _names(problems: Problems, where: _Where, host: str, names: Any) -> dict[str, Any] | None:
    """The host's beonet_interfaces if it is a mapping of interface names (problems otherwise)."""
    if not isinstance(names, dict):
        file, path, line = where.find(host, VAR)
        problems.add(path, "host %s: must be a mapping of logical to physical NIC names, not %s"
                     % (host, shown(names)), file=file, line=line)
        return None
    good = True
    for logical, phys in names.items():
        why = ifname_problem(phys)
        if why is not None:
            file, path, line = where.find(host, VAR, str(logical))
            problems.add(path, "host %s: %s" % (host, why), file=file, line=line)
            good = False
    return names if good else None


def _management(problems: Problems, where: _Where, host: str, value: Any) -> None:
    why = ifname_problem(value)
    if why is not None:
        file, path, line = where.find(host, MANAGEMENT)
        problems.add(path, "host %s: %s" % (host, why), file=file, line=line)


def _mapping(problems: Problems, where: _Where, node: Any, names: dict[str, Any],
             management: str | None) -> dict[str, str]:
    """{logical: physical} of one node, every NIC mapped once, never the management NIC."""
    mapping: dict[str, str] = {}
    used: dict[str, str] = {}
    bonds = {i.name for i in node.interfaces if i.kind == "bond"}
    nics = sorted(i.name for i in node.interfaces if i.kind == "ethernet")
    for logical in sorted(set(map(str, names)) - set(nics)):
        file, path, line = where.find(node.name, VAR, logical)
        problems.add(path, "host %s: maps %s, a NIC the plan does not give this node (its NICs: %s)"
                     % (node.name, shown(logical), ", ".join(nics) or "none"), file=file, line=line)
    for iface in node.interfaces:
        if iface.kind != "ethernet":
            continue
        phys = names.get(iface.name)
        if not phys:
            file, path, line = where.find(node.name, VAR)
            problems.add(path, "no physical name for %s (on segment %s)"
                         % (iface.name, iface.segment.name), file=file, line=line)
            continue
        file, path, line = where.find(node.name, VAR, iface.name)
        if phys == management:
            problems.add(path, "%s is the management interface, which beonet never touches"
                         % phys, file=file, line=line)
        if phys in used:
            problems.add(path, "%s is already used for %s" % (phys, used[phys]), file=file, line=line)
        if phys in bonds:
            problems.add(path, "%s is the name of a bond of this node: a bond cannot be its own member"
                         % phys, file=file, line=line)
        used[phys] = iface.name
        mapping[iface.name] = phys
    return mapping


def physical_names(graph: Graph, hosts: HostVars, file: str, management: str | None = None
                   ) -> tuple[dict[str, dict[str, str]], Problems]:
    """Return ({node: {logical: physical}}, Problems). management overrides the
    topology's management interface ("none": Ansible uses no NIC, as in labs)."""
    management = graph.management if management is None else management
    where = _Where(file)
    problems = Problems(file, where.lines)
    problems.stage = "inventory"
    out: dict[str, dict[str, str]] = {}
    for node in graph.nodes:
        if node.name not in hosts:
            problems.add("hosts.%s" % node.name, "the inventory lacks node '%s' of the topology"
                         % node.name, file=file)
            continue
        if MANAGEMENT in hosts[node.name]:
            _management(problems, where, node.name, hosts[node.name][MANAGEMENT])
        if hosts[node.name].get(VAR) is None:
            continue
        names = _names(problems, where, node.name, hosts[node.name][VAR])
        if names is not None:
            out[node.name] = _mapping(problems, where, node, names, management)
    return out, problems
