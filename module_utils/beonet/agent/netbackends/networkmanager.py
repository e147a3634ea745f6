"""NetworkManager: keyfiles in /etc/NetworkManager/system-connections.

Standard library only (runs on the nodes). A keyfile cannot hold a multipath route
(1.42 installs IPv4 routes with a ``weight`` both merged and singly, two routes where
the plan has one): a dispatcher script puts them in place. IPv6 is ``[ipv6]
method=manual`` with the plan's IPv6 addresses (``[ipv4] method=disabled`` on an
IPv6-only plan). ``unmanaged_file`` tells a running NetworkManager to leave the
cluster NICs to another backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..nodeplan import Interface, NodePlan
from ..routes import next_hops, planned_key, shell_line
from .base import (
    HEADER,
    Backend,
    by_family,
    enabled,
    ipv6,
    ipv6_only,
    is_bond_member,
    is_multipath,
    of_family,
)

if TYPE_CHECKING:
    from ..netmanager import Snapshot

UNIT = "NetworkManager.service"
FOLDER = "/etc/NetworkManager"
NM = FOLDER + "/system-connections"
NM_UNMANAGED = FOLDER + "/conf.d/60-beonet-unmanaged.conf"
NM_PRIORITY = 50                               # above a DHCP profile's 0 and the auto default's -999
NM_DISPATCHER = FOLDER + "/dispatcher.d/60-beonet-multipath"


def nm_id(nic: str) -> str:
    """The id of beonet's NetworkManager profile for a NIC or bond."""
    return "beonet-" + nic


def _nm_routes(n: NodePlan, nic: str, six: bool) -> list[str]:
    """Keyfile route lines (routeN=, with routeN_options=src= where the plan gives a
    source) of the single-path routes of one family (IPv6: six) leaving through nic
    (the multipath ones are the dispatcher script's)."""
    routes = [r for r in of_family(n["routes"], six) if r["dev"] == nic and not is_multipath(r)]
    out = []
    for k, r in enumerate(routes, 1):
        out.append("route%d=%s,%s\n" % (k, r["to"], r["via"]))
        if "src" in r:
            out.append("route%d_options=src=%s\n" % (k, r["src"]))
    return out


def _nm_family(n: NodePlan, iface: Interface, addresses: list[str], six: bool, method: str) -> str:
    """One [ipv4] or [ipv6] section: its method, addresses and single-path routes."""
    out = ["\n[%s]\nmethod=%s\n" % ("ipv6" if six else "ipv4", method)]
    out += ["address%d=%s\n" % (k, a) for k, a in enumerate(addresses, 1)]
    out += _nm_routes(n, iface["name"], six)
    return "".join(out)


def _nm_ip(n: NodePlan, iface: Interface) -> str:
    """[ipv4] (disabled on an IPv6-only plan) and [ipv6]: manual with the plan's IPv6
    addresses (no router advertisement, no SLAAC address; the link-local address stays),
    else link-local only, or disabled with ``ipv6: false``."""
    four, six = by_family(iface["addresses"])
    v4 = _nm_family(n, iface, four, False, "disabled" if ipv6_only(n) else "manual")
    if six:
        return v4 + _nm_family(n, iface, six, True, "manual")
    return v4 + "\n[ipv6]\nmethod=%s\n" % ("link-local" if ipv6(n) else "disabled")


def _nm_keyfile(n: NodePlan, iface: Interface) -> str:
    out = [HEADER, "[connection]\nid=%s\ninterface-name=%s\nautoconnect-priority=%d\n"
           % (nm_id(iface["name"]), iface["name"], NM_PRIORITY)]
    if iface["kind"] == "bond":
        out.append("type=bond\n\n[bond]\nmode=%s\nmiimon=%d\n" % (iface["mode"], iface["miimon"]))
        if iface.get("mac"):
            out.append("\n[ethernet]\ncloned-mac-address=%s\n" % iface["mac"])
        if iface.get("tso") is False:
            out.append("\n[ethtool]\nfeature-tso=false\n")
    else:
        out.append("type=ethernet\n")
        if is_bond_member(iface):
            # master/slave-type: what NetworkManager < 1.46 (Debian 12: 1.42)
            # reads; newer versions read them as aliases of controller/port-type.
            out.append("master=%s\nslave-type=bond\n" % iface["bond"])
        if iface.get("mtu"):
            out.append("\n[ethernet]\nmtu=%d\n" % iface["mtu"])
    if not is_bond_member(iface):
        out.append(_nm_ip(n, iface))
    return "".join(out)


def nm_files(n: NodePlan, renderer: str = "networkd") -> dict[str, str]:
    """One keyfile per NIC or bond (mode 0600), and the multipath dispatcher script."""
    files = {"%s/%s.nmconnection" % (NM, nm_id(i["name"])): _nm_keyfile(n, i) for i in n["interfaces"]}
    files.update(nm_dispatcher_files(n))
    return files


def nm_dispatcher_files(n: NodePlan) -> dict[str, str]:
    """A NetworkManager dispatcher script (mode 0755) that puts the node's multipath
    routes back whenever one of their NICs comes up (the routes through a NIC not
    up yet fail, and are put back when it comes up)."""
    multi = [r for r in n["routes"] if is_multipath(r)]
    if not multi:
        return {}
    nics = sorted({dev for r in multi for _via, dev in next_hops(r)})
    lines = ["ip route replace %s 2>/dev/null || :\n" % shell_line(planned_key(r)) for r in multi]
    return {NM_DISPATCHER: "#!/bin/sh\n" + HEADER + (
        "# NetworkManager runs it with the interface and the action (its profiles\n"
        "# cannot hold a multipath route).\n"
        "case \"$2\" in up) ;; *) exit 0 ;; esac\n"
        "case \"$1\" in %s) ;; *) exit 0 ;; esac\n" % "|".join(nics)) + "".join(lines)}


def unmanaged_file(nics: Iterable[str]) -> dict[str, str]:
    """A NetworkManager conf.d file that makes it leave these NICs alone."""
    spec = ",".join("interface-name:%s" % nic for nic in nics)
    return {NM_UNMANAGED: HEADER + "[keyfile]\nunmanaged-devices+=%s\n" % spec} if spec else {}


def _reload(changed: Sequence[str]) -> list[list[str]]:
    """NetworkManager reloads its keyfiles and its conf.d (the leave-alone file, written
    whichever backend is used)."""
    commands = []
    if any(f.endswith(".nmconnection") for f in changed):
        commands.append(["nmcli", "connection", "reload"])
    if NM_UNMANAGED in changed:
        commands.append(["nmcli", "general", "reload", "conf"])
    return commands


def _mode(path: str) -> int | None:
    """NetworkManager ignores keyfiles that anyone but root can read, and runs dispatcher
    scripts that are executable and only root can write."""
    if path == NM_DISPATCHER:
        return 0o755
    return 0o600 if path.endswith(".nmconnection") else None


def _detect(snap: Snapshot) -> bool:
    return enabled(snap, UNIT)


def _always(renderer: str) -> bool:
    return True


BACKEND = Backend(
    name="networkmanager", title="NetworkManager", unit=UNIT, rank=1, detect=_detect,
    files=nm_files, reload=_reload, folders=(FOLDER,),
    watched=(NM + "/*", FOLDER + "/conf.d/*"), present=("/run/NetworkManager",),
    packages=("network-manager",), uses_networkmanager=_always, mode=_mode)
