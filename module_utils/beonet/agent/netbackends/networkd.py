"""systemd-networkd: ``.netdev``/``.network`` files in /etc/systemd/network.

Standard library only (runs on the nodes). A multipath route is a ``[Route]``
section with ``MultiPathRoute=`` lines (one per next hop, ADDR@NIC). An IPv6
address is an ``[Address]`` section without duplicate address detection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..nodeplan import Interface, NodePlan, Route
from ..routes import PROTO, next_hops
from .base import (
    HEADER,
    NETWORKD,
    Backend,
    by_family,
    enabled,
    ipv6,
    is_bond_member,
    is_multipath,
    nic_routes,
    no_reload,
    tso_link_files,
)

if TYPE_CHECKING:
    from ..netmanager import Snapshot

UNIT = "systemd-networkd.service"
_ROUTE = "\n[Route]\nDestination=%%s\nGateway=%%s\n%%sProtocol=%d\n" % PROTO
# An IPv6 address without duplicate address detection (the kernel's nodad): usable at once,
# as beonet adds it live, so its routes are not held back while it is tentative.
_ADDRESS6 = "\n[Address]\nAddress=%s\nDuplicateAddressDetection=none\n"


def route_section(r: Route) -> str:
    """A networkd [Route] section; a multipath route names each next hop as ADDR@NIC."""
    if not is_multipath(r):
        return _ROUTE % (r["to"], r["via"], _source(r))
    return ("\n[Route]\nDestination=%s\n%sProtocol=%d\n%s"
            % (r["to"], _source(r), PROTO,
               "".join("MultiPathRoute=%s@%s\n" % hop for hop in next_hops(r))))


def _source(r: Route) -> str:
    """The PreferredSource line; none where the plan gives no src (see agent.nodeplan.Route)."""
    return "PreferredSource=%s\n" % r["src"] if "src" in r else ""


def _netdev(iface: Interface) -> str:
    return HEADER + (
        "[NetDev]\nName=%s\nKind=bond\n%s%s\n[Bond]\nMode=%s\nMIIMonitorSec=%dms\n"
        % (iface["name"], "MACAddress=%s\n" % iface["mac"] if iface.get("mac") else "",
           "MTUBytes=%d\n" % iface["mtu"] if iface.get("mtu") else "",
           iface["mode"], iface["miimon"]))


def _network(n: NodePlan, iface: Interface) -> str:
    lines = [HEADER, "[Match]\nName=%s\n\n" % iface["name"]]
    if iface.get("mtu") and iface["kind"] != "bond":
        lines.append("[Link]\nMTUBytes=%d\n\n" % iface["mtu"])
    lines.append("[Network]\n")
    if is_bond_member(iface):
        lines.append("Bond=%s\n" % iface["bond"])
    else:
        lines.append("IPv6AcceptRA=no\n" if ipv6(n) else "LinkLocalAddressing=no\nIPv6AcceptRA=no\n")
        four, six = by_family(iface["addresses"])
        lines += ["Address=%s\n" % a for a in four]
        lines += [_ADDRESS6 % a for a in six]
        lines += [route_section(r) for r in nic_routes(n, iface)]
    return "".join(lines)


def networkd_files(n: NodePlan, renderer: str = "networkd") -> dict[str, str]:
    """One ``.network`` file per NIC or bond, a ``.netdev`` per bond, the TSO ``.link`` files."""
    files = {}
    for iface in n["interfaces"]:
        stem = "%s/60-beonet-%s" % (NETWORKD, iface["name"])
        if iface["kind"] == "bond":
            files[stem + ".netdev"] = _netdev(iface)
        files[stem + ".network"] = _network(n, iface)
    files.update(tso_link_files(n))
    return files


def _detect(snap: Snapshot) -> bool:
    return enabled(snap, UNIT)


BACKEND = Backend(
    name="networkd", title="systemd-networkd", unit=UNIT, rank=2, detect=_detect,
    files=networkd_files, reload=no_reload, folders=(NETWORKD,), watched=(), present=(),
    packages=())
