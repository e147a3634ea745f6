"""Which network manager brings a node's cluster NICs up at boot.

Standard library only (runs on the nodes), read-only. ``probe`` reads a
file tree (``/`` on a node, a fake tree in tests) into a ``Snapshot``;
``decide`` is a pure function of the snapshot, the cluster NICs and the
requested backend. Unit enablement is read from the files ``systemctl
enable`` writes (the ``*.wants`` links and ``/dev/null`` masks), so the probe
runs no program.

The backends and the order in which ``auto`` tries them (netplan, NetworkManager,
systemd-networkd, ifupdown) are netbackends' registry: each says how it is detected.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field

from .netbackends import NAMES, by_rank, get, in_words, units
from .netbackends import ifupdown as _ifupdown
from .netbackends import netplan as _netplan
from .netbackends import networkmanager as _nm
from .netbackends.networkmanager import nm_id
from .nodeplan import NodePlan

BACKENDS = NAMES
UNIT_DIRS = ("etc/systemd/system", "run/systemd/system", "lib/systemd/system",
             "usr/lib/systemd/system")
_STANZA = re.compile(r"^\s*(?:auto|allow-[\w-]+|iface|mapping)\s+(.*)$")


@dataclass
class Snapshot:
    """What the probe found on one node (paths are absolute, as on the node)."""
    units: dict[str, str] = field(default_factory=dict)   # unit -> enabled/disabled/masked/absent
    netplan_installed: bool = False
    netplan: dict[str, str] = field(default_factory=dict)        # /etc/netplan/*.yaml -> text
    interfaces: str | None = None                                 # /etc/network/interfaces
    interfaces_d: dict[str, str] = field(default_factory=dict)    # interfaces.d/* -> text
    ifenslave: bool = False
    nm_connections: dict[str, str] = field(default_factory=dict)  # keyfiles -> text


@dataclass
class Decision:
    """The backend chosen for a node, and what settles other managers' claims."""
    backend: str | None                     # None: nothing brings the NICs up at boot
    renderer: str = "networkd"              # netplan's renderer
    found: list[str] = field(default_factory=list)       # what the probe saw, in words
    problems: list[str] = field(default_factory=list)    # refusals, before any change
    unmanage: list[str] = field(default_factory=list)    # NICs NetworkManager must leave
    notes: list[str] = field(default_factory=list)       # claims settled by the backend


def unit_state(root: str, unit: str) -> str:
    """enabled, disabled, masked or absent: from the unit files and ``*.wants`` links."""
    etc = os.path.join(root, "etc/systemd/system")
    if os.path.realpath(os.path.join(etc, unit)) == "/dev/null":
        return "masked"
    if not any(os.path.exists(os.path.join(root, d, unit)) for d in UNIT_DIRS):
        return "absent"
    wants = glob.glob(os.path.join(etc, "*.wants", unit)) + glob.glob(os.path.join(etc, "*.requires", unit))
    return "enabled" if wants else "disabled"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _texts(root: str, pattern: str, skip: str = "beonet") -> dict[str, str]:
    """{node path: text} of the files matching pattern (under root), but beonet's own."""
    out = {}
    for path in sorted(glob.glob(os.path.join(root, pattern.lstrip("/")))):
        text = _read(path)
        if skip not in os.path.basename(path) and text is not None and os.path.isfile(path):
            out["/" + os.path.relpath(path, root)] = text
    return out


def probe(root: str = "/") -> Snapshot:
    """Read the node's network configuration under root (read-only)."""
    def has(paths: tuple[str, ...]) -> bool:
        return any(os.path.exists(os.path.join(root, p.lstrip("/"))) for p in paths)
    return Snapshot(
        units={u: unit_state(root, u) for u in units()},
        netplan_installed=has(_netplan.PROGRAMS),
        netplan=_texts(root, _netplan.FOLDER + "/*.yaml") if has(_netplan.PROGRAMS) else {},
        interfaces=_read(os.path.join(root, _ifupdown.MAIN.lstrip("/"))),
        interfaces_d=_texts(root, _ifupdown.FOLDER + "/*"),
        ifenslave=has(_ifupdown.IFENSLAVE),
        nm_connections=_texts(root, _nm.NM + "/*"))


def netplan_renderer(files: dict[str, str]) -> str:
    """The renderer netplan's files name (the last in file order wins; default networkd)."""
    renderer = "networkd"
    for _path, text in sorted(files.items(), key=lambda kv: os.path.basename(kv[0])):
        for m in re.finditer(r"^\s+renderer:\s*[\"']?(\w+)", text, re.M):
            renderer = "networkmanager" if m.group(1).lower() == "networkmanager" else "networkd"
    return renderer


def ifupdown_claims(files: dict[str, str], nics: list[str]) -> list[str]:
    """'FILE:LINE names NIC' for each ifupdown stanza that names a cluster NIC."""
    out = []
    for path, text in sorted(files.items()):
        for k, line in enumerate(text.splitlines(), 1):
            m = _STANZA.match(line.split("#", 1)[0])
            for nic in (m.group(1).split() if m else []):
                if nic in nics:
                    out.append("%s:%d names %s" % (path, k, nic))
    return out


def _named(files: dict[str, str], nics: list[str], pattern: str) -> list[str]:
    """'FILE names NIC' for each file where pattern % NIC matches."""
    return ["%s names %s" % (path, nic) for path, text in sorted(files.items()) for nic in nics
            if re.search(pattern % re.escape(nic), text, re.M)]


def _seen(snap: Snapshot) -> list[str]:
    found = ["%s %s" % (unit, state) for unit, state in sorted(snap.units.items())]
    if snap.netplan_installed:
        found.append("netplan installed, %d file(s) in %s" % (len(snap.netplan), _netplan.FOLDER))
    found.append("%s %s" % (_ifupdown.MAIN, "present" if snap.interfaces is not None else "absent"))
    return found


def auto_backend(snap: Snapshot) -> str | None:
    """What brings NICs up at boot on this node (None: nothing): the first backend,
    in the registry's order of detection, that detects itself."""
    return next((b.name for b in by_rank() if b.detect(snap)), None)


def _claims(node: str, snap: Snapshot, d: Decision, nics: list[str]) -> None:
    """Settle other managers' claims on the cluster NICs (into d)."""
    for claim in ifupdown_claims(dict(snap.interfaces_d, **(
            {_ifupdown.MAIN: snap.interfaces} if snap.interfaces is not None else {})), nics):
        d.problems.append("%s: %s: ifupdown manages that NIC; remove the stanza (never two "
                          "managers on one NIC)" % (node, claim))
    netplan = snap.netplan if snap.netplan_installed else {}      # inert without netplan
    for claim in _named(netplan, nics, r"^\s+[\"']?%s[\"']?\s*:"):
        d.problems.append("%s: %s: netplan manages that NIC (cloud-init writes such files: "
                          "remove it and set cloud-init's network config to disabled)" % (node, claim))
    nm_backend = d.backend is not None and get(d.backend).uses_networkmanager(d.renderer)
    if _nm.BACKEND.detect(snap) and not nm_backend:
        d.unmanage = list(nics)
    elif nm_backend:
        d.notes += ["%s: %s: beonet's profile takes precedence (autoconnect-priority)" % (node, c)
                    for c in _named(snap.nm_connections, nics, r"^interface-name=%s\s*$")]


def decide(node: str, snap: Snapshot, nics: list[str], bonds: bool,
           requested: str = "auto") -> Decision:
    """The backend for this node and the problems that stop the run before any change.

    nics: every cluster NIC of the plan (bonds and their members); bonds:
    whether the plan has bonds; requested: ``auto`` or one of ``BACKENDS``."""
    backend = auto_backend(snap) if requested == "auto" else get(requested).name
    d = Decision(backend, netplan_renderer(snap.netplan), _seen(snap))
    if backend is None:
        d.problems.append(
            "%s: nothing would bring the cluster NICs up at boot (found: %s); enable a network "
            "manager (for example 'systemctl enable systemd-networkd') or set beonet_node_backend "
            "to %s" % (node, "; ".join(d.found), in_words()))
        return d
    d.problems += get(backend).problems(node, snap, bonds)
    _claims(node, snap, d, nics)
    return d


def nm_devices(text: str) -> dict[str, str]:
    """{device: active connection ('' for none)} from ``nmcli -t -f DEVICE,CONNECTION device``
    (terse output: a ':' inside a field is written '\\:')."""
    out = {}
    for line in text.splitlines():
        fields = [f.replace("\\:", ":").replace("\\\\", "\\")
                  for f in re.split(r"(?<!\\):", line, maxsplit=1)]
        if len(fields) == 2 and fields[0]:
            out[fields[0]] = "" if fields[1] == "--" else fields[1]
    return out


def nm_takeovers(n: NodePlan, active: dict[str, str],
                 changed: frozenset[str] = frozenset()) -> list[str]:
    """The ids of beonet's profiles to activate now: one for each NIC or bond of the plan
    that NetworkManager lists without beonet's profile active: held by another profile
    (a DHCP profile, or the external connection NetworkManager makes, named after the
    device, for one configured by hand) or by none; bonds and plain NICs before bond
    members. Activating beonet's profile settles the claim at once; at boot its
    autoconnect-priority settles it.

    A profile of ``changed`` (its keyfile was rewritten) that is active is activated
    again, as are the members of a bond activated again: NetworkManager keeps what it
    installed from the old keyfile (routes among them) until then."""
    ifaces = sorted(n["interfaces"], key=lambda i: bool(i.get("bond")))
    again = {i["name"] for i in ifaces if nm_id(i["name"]) in changed}
    again |= {i["name"] for i in ifaces if i.get("bond") in again}
    return [nm_id(i["name"]) for i in ifaces
            if active.get(i["name"]) is not None
            and (active[i["name"]] != nm_id(i["name"]) or i["name"] in again)]
