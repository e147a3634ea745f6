"""ifupdown: /etc/network/interfaces.d/60-beonet, bonds through ifenslave.

Standard library only (runs on the nodes). A multipath route is an ``up ip route
replace ... nexthop ...`` line in the stanza of each of its NICs. IPv6 addresses
and routes are in an ``inet6 static`` stanza of the NIC (the only one on an
IPv6-only plan).
"""

from __future__ import annotations

import re
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
    no_reload,
    of_family,
    single,
    tso_link_files,
)

if TYPE_CHECKING:
    from ..netmanager import Snapshot

UNIT = "networking.service"
MAIN = "/etc/network/interfaces"
FOLDER = "/etc/network/interfaces.d"
IFUPDOWN = FOLDER + "/60-beonet"
IFENSLAVE = ("/sbin/ifenslave", "/usr/sbin/ifenslave", "/etc/network/if-pre-up.d/ifenslave")
# inet6 static: no router advertisement, no SLAAC address, no duplicate address detection
# (``ip -6 addr add ... nodad``: the address is usable at once, for the routes after it).
_INET6 = "    accept_ra 0\n    autoconf 0\n    dad-attempts 0\n"
_SOURCES = re.compile(r"^\s*(?:source\s+(?:/etc/network/)?interfaces\.d/\*|"
                      r"source-directory\s+(?:/etc/network/)?interfaces\.d/?)\s*$")


def _stanza(n: NodePlan, iface: Interface) -> str:
    """The NIC's ``auto`` stanza: ``inet`` (``inet6`` on an IPv6-only plan) with the link's
    options, then on a dual-stack plan an ``inet6 static`` one for its IPv6 addresses."""
    name, pad = iface["name"], "    "
    four, six = by_family(iface["addresses"])
    first = "inet6" if ipv6_only(n) else "inet"
    addrs = six if first == "inet6" else four
    out = ["\nauto %s\niface %s %s %s\n" % (name, name, first, "static" if addrs else "manual")]
    if addrs:
        out.append(pad + "address %s\n" % addrs[0])
        if first == "inet6":
            out.append(_INET6)
    if iface.get("mac"):
        out.append(pad + "hwaddress ether %s\n" % iface["mac"])
    if iface.get("mtu"):
        out.append(pad + "mtu %d\n" % iface["mtu"])
    if iface["kind"] == "bond":
        out.append(pad + "bond-slaves %s\n%sbond-mode %s\n%sbond-miimon %d\n"
                   % (" ".join(iface.get("members", [])), pad, iface["mode"], pad, iface["miimon"]))
    if not ipv6(n):
        out.append(pad + "up echo 1 > /proc/sys/net/ipv6/conf/%s/disable_ipv6\n" % name)
    out += _up_lines(n, name, addrs, first == "inet6")
    if first == "inet" and six:
        out.append("\niface %s inet6 static\n%saddress %s\n%s" % (name, pad, six[0], _INET6))
        out += _up_lines(n, name, six, True)
    return "".join(out)


def _up_lines(n: NodePlan, name: str, addrs: list[str], six: bool) -> list[str]:
    """A stanza's ``up`` lines for one family: its other addresses (IPv6 ones without
    duplicate address detection), then its routes leaving through the NIC."""
    pad = "    "
    out = [pad + "up ip addr replace %s dev %s%s\n" % (a, name, " nodad" if six else "") for a in addrs[1:]]
    routes = of_family(n["routes"], six)
    out += [pad + "up ip route replace %s\n" % shell_line(planned_key(r))
            for r in single(routes) if r["dev"] == name]
    # A multipath route in the stanza of each of its NICs: it is in place once the
    # last of them is up (before that, the next hops not up yet make it fail).
    out += [pad + "up ip route replace %s || true\n" % shell_line(planned_key(r))
            for r in routes if is_multipath(r) and name in {d for _v, d in next_hops(r)}]
    return out


def ifupdown_files(n: NodePlan, renderer: str = "networkd") -> dict[str, str]:
    """/etc/network/interfaces.d/60-beonet: one ``auto`` stanza per NIC or bond.

    A bond's members are named by its ``bond-slaves`` (ifenslave enslaves
    them), so they have no stanza of their own."""
    stanzas = [_stanza(n, i) for i in n["interfaces"] if not is_bond_member(i)]
    files = {IFUPDOWN: HEADER + "".join(stanzas)}
    files.update(tso_link_files(n))
    return files


def sources_interfaces_d(text: str | None) -> bool:
    """Whether /etc/network/interfaces (text) reads the files of interfaces.d."""
    return text is not None and any(_SOURCES.match(line) for line in text.splitlines())


def _problems(node: str, snap: Snapshot, bonds: bool) -> list[str]:
    problems = []
    if not sources_interfaces_d(snap.interfaces):
        problems.append("%s: %s does not read %s (add the line 'source %s/*')"
                        % (node, MAIN, FOLDER, FOLDER))
    if bonds and not snap.ifenslave:
        problems.append("%s: the plan's bonds need ifupdown's bonding support: install the "
                        "ifenslave package" % node)
    return problems


def _detect(snap: Snapshot) -> bool:
    """/etc/network/interfaces exists and networking.service is enabled."""
    return snap.interfaces is not None and enabled(snap, UNIT)


BACKEND = Backend(
    name="ifupdown", title="ifupdown", unit=UNIT, rank=3, detect=_detect,
    files=ifupdown_files, reload=no_reload, folders=(FOLDER,), watched=(MAIN, FOLDER + "/*"),
    present=IFENSLAVE, packages=("ifupdown", "ifenslave"), problems=_problems)
