"""The node's persistent network configuration, in the form each manager reads at boot.

Standard library only (runs on the nodes). Four backends, each a pure
function of the node plan returning {path: text}:

* ``networkd``: systemd-networkd ``.netdev``/``.network`` files;
* ``networkmanager``: NetworkManager keyfiles;
* ``netplan``: one file, /etc/netplan/60-beonet.yaml (renderer networkd or
  NetworkManager; beonet runs ``netplan generate`` only, never ``netplan apply``);
* ``ifupdown``: /etc/network/interfaces.d/60-beonet (bonds through ifenslave).

A route with several next hops (``nexthops``) is one multipath route: a
networkd ``[Route]`` with ``MultiPathRoute=`` lines; for NetworkManager (whose
keyfiles cannot hold one: 1.42 installs IPv4 routes with a ``weight`` both
merged and singly, two routes where the plan has one) and netplan with that
renderer, a NetworkManager dispatcher script; for netplan with networkd, a
networkd drop-in for the ``.network`` file netplan generates; for ifupdown,
``up ip route replace ... nexthop ...`` lines.

A bond whose plan turns TSO off gets a udev ``.link`` file (applied when the
bond appears, whichever manager creates it), or the keyfile's ``[ethtool]``
section. IPv6 link-local addressing is left as the OS has it unless the plan
says ``ipv6: false``. ``unmanaged_file`` tells a running NetworkManager to
leave the cluster NICs to another backend. ``stale_paths`` names the files an
earlier plan wrote that this one does not.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from . import frr
from .nodeplan import Interface, NodePlan, Route
from .routes import PROTO, next_hops, planned_key, shell_line

HEADER = "# Ansible managed: written by beonet from the topology plan; do not edit.\n"
NETWORKD = "/etc/systemd/network"
NM = "/etc/NetworkManager/system-connections"
NM_UNMANAGED = "/etc/NetworkManager/conf.d/60-beonet-unmanaged.conf"
NETPLAN = "/etc/netplan/60-beonet.yaml"
IFUPDOWN = "/etc/network/interfaces.d/60-beonet"
RECORD_PATH = "/var/lib/beonet/files"          # the persistent files beonet wrote, one a line
NM_PRIORITY = 50                               # above a DHCP profile's 0 and the auto default's -999
NM_DISPATCHER = "/etc/NetworkManager/dispatcher.d/60-beonet-multipath"
NETPLAN_DROPIN = NETWORKD + "/10-netplan-%s.network.d/60-beonet-multipath.conf"
# The only folders beonet writes or removes files in (the persistent files' second wall).
CONFIG_DIRS = (NETWORKD, "/etc/NetworkManager", "/etc/netplan", "/etc/network/interfaces.d",
               "/etc/sysctl.d", "/etc/nftables.d", "/var/lib/beonet", "/etc/frr")


def config_path_problem(path: str) -> str | None:
    """Why beonet must not write (or remove) path on a node, or None: it must be a
    plain absolute path, inside one of CONFIG_DIRS, with nothing unprintable."""
    if not path.isprintable() or os.path.normpath(path) != path or not path.startswith("/"):
        return "%r is not a plain absolute path" % path
    if not any(path.startswith(d + "/") for d in CONFIG_DIRS):
        return "%s lies outside the network configuration folders" % path
    return None


def _is_bond_member(iface: Interface) -> bool:
    return bool(iface.get("bond"))


def _ipv6(n: NodePlan) -> bool:
    return n.get("ipv6", True)


def _routes(n: NodePlan, iface: Interface) -> list[Route]:
    """The routes written with this NIC: those whose (first) next hop leaves through it."""
    return [r for r in n["routes"] if r["dev"] == iface["name"]]


def _single(routes: list[Route]) -> list[Route]:
    return [r for r in routes if not is_multipath(r)]


def is_multipath(r: Route) -> bool:
    """Whether r has two next hops or more (``len(next_hops(r)) > 1``)."""
    hops = r.get("nexthops")
    return hops is not None and len(hops) > 1


_NETWORKD_ROUTE = "\n[Route]\nDestination=%%s\nGateway=%%s\nPreferredSource=%%s\nProtocol=%d\n" % PROTO


def _networkd_route(r: Route) -> str:
    """A networkd [Route] section; a multipath route names each next hop as ADDR@NIC."""
    if not is_multipath(r):
        return _NETWORKD_ROUTE % (r["to"], r["via"], r["src"])
    return ("\n[Route]\nDestination=%s\nPreferredSource=%s\nProtocol=%d\n%s"
            % (r["to"], r["src"], PROTO,
               "".join("MultiPathRoute=%s@%s\n" % hop for hop in next_hops(r))))


def tso_link_files(n: NodePlan) -> dict[str, str]:
    """udev .link files turning TSO off on the bonds whose plan says so (any manager)."""
    return {"%s/10-beonet-%s.link" % (NETWORKD, i["name"]): HEADER + (
        "[Match]\nOriginalName=%s\n\n[Link]\nTCPSegmentationOffload=false\n"
        "TCP6SegmentationOffload=false\n" % i["name"])
        for i in n["interfaces"] if i["kind"] == "bond" and i.get("tso") is False}


def _networkd_netdev(iface: Interface) -> str:
    return HEADER + (
        "[NetDev]\nName=%s\nKind=bond\n%s%s\n[Bond]\nMode=%s\nMIIMonitorSec=%dms\n"
        % (iface["name"], "MACAddress=%s\n" % iface["mac"] if iface.get("mac") else "",
           "MTUBytes=%d\n" % iface["mtu"] if iface.get("mtu") else "",
           iface["mode"], iface["miimon"]))


def _networkd_network(n: NodePlan, iface: Interface) -> str:
    lines = [HEADER, "[Match]\nName=%s\n\n" % iface["name"]]
    if iface.get("mtu") and iface["kind"] != "bond":
        lines.append("[Link]\nMTUBytes=%d\n\n" % iface["mtu"])
    lines.append("[Network]\n")
    if _is_bond_member(iface):
        lines.append("Bond=%s\n" % iface["bond"])
    else:
        lines.append("IPv6AcceptRA=no\n" if _ipv6(n) else "LinkLocalAddressing=no\nIPv6AcceptRA=no\n")
        for a in iface["addresses"]:
            lines.append("Address=%s\n" % a)
        lines += [_networkd_route(r) if "nexthops" in r else _NETWORKD_ROUTE % (r["to"], r["via"], r["src"])
                  for r in _routes(n, iface)]
    return "".join(lines)


def networkd_files(n: NodePlan) -> dict[str, str]:
    files = {}
    for iface in n["interfaces"]:
        stem = "%s/60-beonet-%s" % (NETWORKD, iface["name"])
        if iface["kind"] == "bond":
            files[stem + ".netdev"] = _networkd_netdev(iface)
        files[stem + ".network"] = _networkd_network(n, iface)
    files.update(tso_link_files(n))
    return files


def _nm_ip(n: NodePlan, iface: Interface) -> str:
    out = ["\n[ipv4]\nmethod=manual\n"]
    for k, a in enumerate(iface["addresses"], 1):
        out.append("address%d=%s\n" % (k, a))
    for k, line in enumerate(_nm_routes(n, iface["name"]), 1):
        out.append(line % (k, k))
    out.append("\n[ipv6]\nmethod=%s\n" % ("link-local" if _ipv6(n) else "disabled"))
    return "".join(out)


def _nm_routes(n: NodePlan, nic: str) -> list[str]:
    """Keyfile route lines ('route%d=...' templates) of the single-path routes
    leaving through nic (the multipath ones are the dispatcher script's)."""
    return ["route%%d=%s,%s\nroute%%d_options=src=%s\n" % (r["to"], r["via"], r["src"])
            for r in n["routes"] if r["dev"] == nic and not is_multipath(r)]


def nm_id(nic: str) -> str:
    """The id of beonet's NetworkManager profile for a NIC or bond."""
    return "beonet-" + nic


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
        if _is_bond_member(iface):
            # master/slave-type: what NetworkManager < 1.46 (Debian 12: 1.42)
            # reads; newer versions read them as aliases of controller/port-type.
            out.append("master=%s\nslave-type=bond\n" % iface["bond"])
        if iface.get("mtu"):
            out.append("\n[ethernet]\nmtu=%d\n" % iface["mtu"])
    if not _is_bond_member(iface):
        out.append(_nm_ip(n, iface))
    return "".join(out)


def nm_files(n: NodePlan) -> dict[str, str]:
    files = {"%s/%s.nmconnection" % (NM, nm_id(i["name"])): _nm_keyfile(n, i) for i in n["interfaces"]}
    files.update(nm_dispatcher_files(n))
    return files


def _yaml_list(items: Iterable[str]) -> str:
    return "[%s]" % ", ".join('"%s"' % x for x in items)


def _netplan_common(n: NodePlan, iface: Interface) -> list[str]:
    """The keys every netplan device of the plan has (8 spaces deep)."""
    pad = " " * 8
    out = [pad + "optional: true\n"]
    if iface.get("mtu"):
        out.append(pad + "mtu: %d\n" % iface["mtu"])
    if _is_bond_member(iface):
        return out
    out += [pad + "dhcp4: false\n", pad + "dhcp6: false\n", pad + "accept-ra: false\n"]
    if not _ipv6(n):
        out.append(pad + "link-local: []\n")
    if iface["addresses"]:
        out.append(pad + "addresses: %s\n" % _yaml_list(iface["addresses"]))
    routes = _single(_routes(n, iface))
    if routes:
        out.append(pad + "routes:\n")
        out += ['%s  - to: "%s"\n%s    via: "%s"\n%s    from: "%s"\n'
                % (pad, r["to"], pad, r["via"], pad, r["src"]) for r in routes]
    return out


def _netplan_bond(n: NodePlan, iface: Interface) -> list[str]:
    pad = " " * 8
    out = ["    %s:\n" % iface["name"], pad + "interfaces: %s\n" % _yaml_list(iface.get("members", []))]
    if iface.get("mac"):
        out.append(pad + 'macaddress: "%s"\n' % iface["mac"])
    out.append(pad + "parameters:\n%s  mode: %s\n%s  mii-monitor-interval: %d\n"
               % (pad, iface["mode"], pad, iface["miimon"]))
    return out + _netplan_common(n, iface)


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
            out += _netplan_common(n, iface)
    if bonds:
        out.append("  bonds:\n")
        for iface in bonds:
            out += _netplan_bond(n, iface)
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
        routes = [r for r in _routes(n, iface) if is_multipath(r)]
        if routes:
            files[NETPLAN_DROPIN % iface["name"]] = HEADER + "".join(_networkd_route(r) for r in routes)
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


def _ifupdown_stanza(n: NodePlan, iface: Interface) -> str:
    name, pad = iface["name"], "    "
    addrs = iface["addresses"]
    out = ["\nauto %s\niface %s inet %s\n" % (name, name, "static" if addrs else "manual")]
    if addrs:
        out.append(pad + "address %s\n" % addrs[0])
    if iface.get("mac"):
        out.append(pad + "hwaddress ether %s\n" % iface["mac"])
    if iface.get("mtu"):
        out.append(pad + "mtu %d\n" % iface["mtu"])
    if iface["kind"] == "bond":
        out.append(pad + "bond-slaves %s\n%sbond-mode %s\n%sbond-miimon %d\n"
                   % (" ".join(iface.get("members", [])), pad, iface["mode"], pad, iface["miimon"]))
    if not _ipv6(n):
        out.append(pad + "up echo 1 > /proc/sys/net/ipv6/conf/%s/disable_ipv6\n" % name)
    out += [pad + "up ip addr replace %s dev %s\n" % (a, name) for a in addrs[1:]]
    out += [pad + "up ip route replace %s via %s dev %s src %s proto %d\n"
            % (r["to"], r["via"], name, r["src"], PROTO) for r in _single(_routes(n, iface))]
    # A multipath route in the stanza of each of its NICs: it is in place once the
    # last of them is up (before that, the next hops not up yet make it fail).
    out += [pad + "up ip route replace %s || true\n" % shell_line(planned_key(r))
            for r in n["routes"] if is_multipath(r) and name in {d for _v, d in next_hops(r)}]
    return "".join(out)


def ifupdown_files(n: NodePlan) -> dict[str, str]:
    """/etc/network/interfaces.d/60-beonet: one ``auto`` stanza per NIC or bond.

    A bond's members are named by its ``bond-slaves`` (ifenslave enslaves
    them), so they have no stanza of their own."""
    stanzas = [_ifupdown_stanza(n, i) for i in n["interfaces"] if not _is_bond_member(i)]
    files = {IFUPDOWN: HEADER + "".join(stanzas)}
    files.update(tso_link_files(n))
    return files


def backend_files(n: NodePlan, backend: str, renderer: str = "networkd") -> dict[str, str]:
    """{path: text} of the network configuration for one backend."""
    if backend == "networkmanager":
        return nm_files(n)
    if backend == "netplan":
        return netplan_files(n, renderer)
    if backend == "ifupdown":
        return ifupdown_files(n)
    return networkd_files(n)


def unmanaged_file(nics: Iterable[str]) -> dict[str, str]:
    """A NetworkManager conf.d file that makes it leave these NICs alone."""
    spec = ",".join("interface-name:%s" % nic for nic in nics)
    return {NM_UNMANAGED: HEADER + "[keyfile]\nunmanaged-devices+=%s\n" % spec} if spec else {}


def stale_paths(recorded: str | None, current: Iterable[str]) -> list[str]:
    """The files an earlier plan wrote (the record's lines) that this plan does not.

    Only beonet's own files (a name holding 'beonet') are ever named, and FRR's two
    files (whose names FRR fixes; the caller removes them only when beonet wrote what
    they hold: frr.written_by_beonet)."""
    keep = set(current)
    return sorted({p.strip() for p in (recorded or "").splitlines()
                   if config_path_problem(p.strip()) is None and p.strip() not in keep
                   and ("beonet" in os.path.basename(p.strip()) or p.strip() in frr.FILES)})


def manager_commands(changed: Iterable[str]) -> list[list[str]]:
    """What tells the network managers that these files changed (they read them at boot):
    NetworkManager reloads its keyfiles and its conf.d; netplan only generates ('netplan
    apply' would touch every NIC, the management one too); FRR reloads its configuration
    (frr.notify)."""
    changed = list(changed)
    commands = []
    if any(f.endswith(".nmconnection") for f in changed):
        commands.append(["nmcli", "connection", "reload"])
    if NM_UNMANAGED in changed:
        commands.append(["nmcli", "general", "reload", "conf"])
    if NETPLAN in changed:
        commands.append(["netplan", "generate"])
    return commands + frr.notify(changed)


def record_text(paths: Iterable[str]) -> str:
    return "".join(p + "\n" for p in sorted(paths))
