"""netplan: one file, /etc/netplan/60-beonet.yaml, for its networkd or NetworkManager renderer.

Standard library only (runs on the nodes). beonet runs ``netplan generate`` only,
never ``netplan apply`` (which would touch every NIC, the management one too).
netplan cannot write a multipath route: with NetworkManager, its dispatcher script
puts them in place; with networkd, a drop-in for the ``.network`` file netplan
generates for the NIC.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..nodeplan import Interface, NodePlan
from .base import (
    HEADER,
    NETWORKD,
    Backend,
    ipv6,
    ipv6_only,
    is_bond_member,
    is_multipath,
    nic_routes,
    single,
    tso_link_files,
)
from .networkd import route_section
from .networkmanager import nm_dispatcher_files

if TYPE_CHECKING:
    from ..netmanager import Snapshot

FOLDER = "/etc/netplan"
NETPLAN = FOLDER + "/60-beonet.yaml"
NETPLAN_DROPIN = NETWORKD + "/10-netplan-%s.network.d/60-beonet-multipath.conf"
PROGRAMS = ("/usr/sbin/netplan", "/sbin/netplan", "/usr/bin/netplan")
# For NetworkManager, netplan writes ipv4.method=link-local on a device without an IPv4
# address (an IPv4 link-local address on an IPv6-only NIC); its keyfile passthrough
# (netplan 0.102 and later) turns IPv4 off instead.
_NO_IPV4 = 'networkmanager:\n          passthrough:\n            ipv4.method: "disabled"\n'


def _yaml_list(items: Iterable[str]) -> str:
    return "[%s]" % ", ".join('"%s"' % x for x in items)


def _common(n: NodePlan, iface: Interface, renderer: str) -> list[str]:
    """The keys every netplan device of the plan has (8 spaces deep)."""
    pad = " " * 8
    out = [pad + "optional: true\n"]
    if iface.get("mtu"):
        out.append(pad + "mtu: %d\n" % iface["mtu"])
    if is_bond_member(iface):
        return out
    out += [pad + "dhcp4: false\n", pad + "dhcp6: false\n", pad + "accept-ra: false\n"]
    if not ipv6(n):
        out.append(pad + "link-local: []\n")
    if iface["addresses"]:
        out.append(pad + "addresses: %s\n" % _yaml_list(iface["addresses"]))
    if renderer == "networkmanager" and ipv6_only(n):
        out.append(pad + _NO_IPV4)
    routes = single(nic_routes(n, iface))
    if routes:
        out.append(pad + "routes:\n")
        out += ['%s  - to: "%s"\n%s    via: "%s"\n%s'
                % (pad, r["to"], pad, r["via"], '%s    from: "%s"\n' % (pad, r["src"]) if "src" in r else "")
                for r in routes]
    return out


def _bond(n: NodePlan, iface: Interface, renderer: str) -> list[str]:
    pad = " " * 8
    out = ["    %s:\n" % iface["name"], pad + "interfaces: %s\n" % _yaml_list(iface.get("members", []))]
    if iface.get("mac"):
        out.append(pad + 'macaddress: "%s"\n' % iface["mac"])
    out.append(pad + "parameters:\n%s  mode: %s\n%s  mii-monitor-interval: %d\n"
               % (pad, iface["mode"], pad, iface["miimon"]))
    return out + _common(n, iface, renderer)


def netplan_files(n: NodePlan, renderer: str = "networkd") -> dict[str, str]:
    """/etc/netplan/60-beonet.yaml (mode 0600), for renderer networkd or networkmanager."""
    out = [HEADER, "network:\n  version: 2\n  renderer: %s\n"
           % ("NetworkManager" if renderer == "networkmanager" else "networkd")]
    ethernets = [i for i in n["interfaces"] if i["kind"] != "bond"]
    bonds = [i for i in n["interfaces"] if i["kind"] == "bond"]
    if ethernets:
        out.append("  ethernets:\n")
        for iface in ethernets:
            out.append("    %s:\n" % iface["name"])
            out += _common(n, iface, renderer)
    if bonds:
        out.append("  bonds:\n")
        for iface in bonds:
            out += _bond(n, iface, renderer)
    files = {NETPLAN: "".join(out)}
    files.update(tso_link_files(n))
    if renderer == "networkmanager":
        files.update(nm_dispatcher_files(n))
    else:
        files.update(netplan_dropins(n))
    return files


def netplan_dropins(n: NodePlan) -> dict[str, str]:
    """networkd drop-ins adding the multipath routes (netplan cannot write them) to the
    .network file netplan generates for each NIC, /run/systemd/network/10-netplan-NIC.network."""
    files = {}
    for iface in n["interfaces"]:
        routes = [r for r in nic_routes(n, iface) if is_multipath(r)]
        if routes:
            files[NETPLAN_DROPIN % iface["name"]] = HEADER + "".join(route_section(r) for r in routes)
    return files


def _reload(changed: Sequence[str]) -> list[list[str]]:
    """netplan only generates ('netplan apply' would touch every NIC)."""
    return [["netplan", "generate"]] if NETPLAN in changed else []


def _mode(path: str) -> int | None:
    """netplan warns of files that anyone but root can read."""
    return 0o600 if path == NETPLAN else None


def _detect(snap: Snapshot) -> bool:
    """netplan is installed and /etc/netplan holds a configuration."""
    return snap.netplan_installed and bool(snap.netplan)


def _renders_for_networkmanager(renderer: str) -> bool:
    return renderer == "networkmanager"


BACKEND = Backend(
    name="netplan", title="netplan", unit=None, rank=0, detect=_detect,
    files=netplan_files, reload=_reload, folders=(FOLDER,), watched=(FOLDER + "/*.yaml",),
    present=PROGRAMS, packages=("netplan.io",), uses_networkmanager=_renders_for_networkmanager,
    mode=_mode)
