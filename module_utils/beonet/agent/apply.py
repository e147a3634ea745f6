"""Apply one node's plan: what the ``beonet_node`` module runs on each node.

Standard library only (it travels to the node inside the module). Three
parts, each a pure function of the plan and what is live, so they are tested
without a node:

* ``persistent_files``: systemd-networkd ``.netdev``/``.network`` files or
  NetworkManager keyfiles, ``/etc/sysctl.d`` forwarding, the nftables ruleset;
* ``runtime_actions``: the ``ip`` commands that turn the live state (``ip -j
  link/addr/route``) into the plan, touching only what differs. Addresses and
  routes beonet installs carry protocol ``beonet`` (250), addresses are
  recorded in a state file; those that a newer plan drops are removed, and
  nothing else is;
* ``forward_ruleset``: forwarding limited to the topology's prefixes;
* ``offload_actions``: the bonds whose TCP segmentation offload must be turned
  off (read and set with the SIOCETHTOOL ioctl, so no ``ethtool`` binary is
  needed on the node).
"""

import hashlib

PROTO = 250
PROTO_NAME = "beonet"
HEADER = "# Ansible managed: written by beonet from the topology plan; do not edit.\n"
SYSCTL_PATH = "/etc/sysctl.d/90-beonet.conf"
STATE_PATH = "/var/lib/beonet/addresses"       # "ADDR/LEN DEV" lines beonet installed
NFT_PATH = "/etc/nftables.d/beonet.nft"
NETWORKD = "/etc/systemd/network"
NM = "/etc/NetworkManager/system-connections"
SIOCETHTOOL = 0x8946
ETHTOOL_GTSO, ETHTOOL_STSO = 0x1e, 0x1f       # legacy one-feature get/set (all TSO bits)


def _is_bond_member(iface):
    return bool(iface.get("bond"))


def networkd_files(n):
    files = {}
    for iface in n["interfaces"]:
        stem = "%s/60-beonet-%s" % (NETWORKD, iface["name"])
        if iface["kind"] == "bond":
            files[stem + ".netdev"] = HEADER + (
                "[NetDev]\nName=%s\nKind=bond\n%s%s\n[Bond]\nMode=%s\nMIIMonitorSec=%dms\n"
                % (iface["name"], "MACAddress=%s\n" % iface["mac"] if iface.get("mac") else "",
                   "MTUBytes=%d\n" % iface["mtu"] if iface.get("mtu") else "",
                   iface["mode"], iface["miimon"]))
        lines = [HEADER, "[Match]\nName=%s\n\n" % iface["name"]]
        if iface.get("mtu") and iface["kind"] != "bond":
            lines.append("[Link]\nMTUBytes=%d\n\n" % iface["mtu"])
        lines.append("[Network]\n")
        if _is_bond_member(iface):
            lines.append("Bond=%s\n" % iface["bond"])
        else:
            lines.append("LinkLocalAddressing=no\nIPv6AcceptRA=no\n")
            for a in iface["addresses"]:
                lines.append("Address=%s\n" % a)
            for r in n["routes"]:
                if r["dev"] == iface["name"]:
                    lines.append("\n[Route]\nDestination=%s\nGateway=%s\nPreferredSource=%s\n"
                                 "Protocol=%d\n" % (r["to"], r["via"], r["src"], PROTO))
        files[stem + ".network"] = "".join(lines)
        if iface["kind"] == "bond" and iface.get("tso") is False:
            # Offloads of a netdev networkd creates come from a .link file,
            # applied by udev when the bond appears (before 99-default.link).
            files["%s/10-beonet-%s.link" % (NETWORKD, iface["name"])] = HEADER + (
                "[Match]\nOriginalName=%s\n\n[Link]\nTCPSegmentationOffload=false\n"
                "TCP6SegmentationOffload=false\n" % iface["name"])
    return files


def nm_files(n):
    files = {}
    for iface in n["interfaces"]:
        path = "%s/beonet-%s.nmconnection" % (NM, iface["name"])
        out = [HEADER, "[connection]\nid=beonet-%s\ninterface-name=%s\n" % (iface["name"], iface["name"])]
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
            out.append("\n[ipv4]\nmethod=manual\n")
            for k, a in enumerate(iface["addresses"], 1):
                out.append("address%d=%s\n" % (k, a))
            k = 0
            for r in n["routes"]:
                if r["dev"] == iface["name"]:
                    k += 1
                    out.append("route%d=%s,%s\nroute%d_options=src=%s\n"
                               % (k, r["to"], r["via"], k, r["src"]))
            out.append("\n[ipv6]\nmethod=disabled\n")
        files[path] = "".join(out)
    return files


def forward_ruleset(prefixes):
    """nftables: a forwarding node forwards only between the topology's prefixes."""
    nets = ", ".join(prefixes)
    body = ("table inet beonet {\n"
            "\tcomment \"beonet-ruleset %s\"\n"
            "\tset cluster {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = { %s }\n\t}\n"
            "\tchain forward {\n\t\ttype filter hook forward priority 0; policy drop;\n"
            "\t\tip saddr @cluster ip daddr @cluster accept\n\t}\n}\n")
    digest = hashlib.sha256((body + nets).encode()).hexdigest()[:16]
    text = ("%stable inet beonet\ndelete table inet beonet\n" % HEADER
            + body % (digest, nets))
    return digest, text


def persistent_files(n, prefixes, backend):
    files = networkd_files(n) if backend == "networkd" else nm_files(n)
    files[SYSCTL_PATH] = HEADER + "net.ipv4.ip_forward = %d\n" % (1 if n["forwarding"] else 0)
    if n["forwarding"]:
        files[NFT_PATH] = forward_ruleset(prefixes)[1]
    return files


def route_key(to, via, dev, src):
    return (to, via, dev, src)


def runtime_actions(n, node, links, addrs, routes, installed=()):
    """Commands (argv lists) that turn the live state into node plan n.

    links, addrs, routes: parsed ``ip -j link``, ``ip -j addr`` and
    ``ip -j route show table main`` output; installed: the "ADDR/LEN DEV"
    addresses an earlier run installed (the state file). Returns (actions,
    problems)."""
    problems = []
    actions = []
    by_name = {l["ifname"]: l for l in links}
    for iface in n["interfaces"]:
        if iface["kind"] == "ethernet" and iface["name"] not in by_name:
            problems.append("%s: no NIC named %s (plan segment %s)" % (node, iface["name"], iface["segment"]))
    if problems:
        return [], problems
    for iface in n["interfaces"]:
        if iface["kind"] != "bond":
            continue
        name = iface["name"]
        live = by_name.get(name)
        mac = iface.get("mac")
        if live is None:
            actions.append(["ip", "link", "add", name] + (["address", mac] if mac else [])
                           + ["type", "bond", "mode", iface["mode"], "miimon", str(iface["miimon"])])
        elif mac and live.get("address", "").lower() != mac:
            actions.append(["ip", "link", "set", "dev", name, "address", mac])
        for m in iface["members"]:
            if by_name[m].get("master") != name:
                actions.append(["ip", "link", "set", m, "down"])
                actions.append(["ip", "link", "set", m, "master", name])
    for iface in n["interfaces"]:
        live = by_name.get(iface["name"], {})
        if iface.get("mtu") and live.get("mtu") != iface["mtu"] and not iface.get("bond"):
            actions.append(["ip", "link", "set", "dev", iface["name"], "mtu", str(iface["mtu"])])
        if "UP" not in live.get("flags", []):
            actions.append(["ip", "link", "set", "dev", iface["name"], "up"])
    want_addr = {(a, i["name"]) for i in n["interfaces"] for a in i["addresses"]}
    have = {}
    for entry in addrs:
        for info in entry.get("addr_info", []):
            if info.get("family") == "inet":
                have[("%s/%d" % (info["local"], info["prefixlen"]), entry["ifname"])] = info
    for key in sorted(want_addr - set(have)):
        actions.append(["ip", "addr", "add", key[0], "dev", key[1]])
    ours = {tuple(x.split(" ", 1)) for x in installed}
    for key in sorted(have):
        if key not in want_addr and key in ours:
            actions.append(["ip", "addr", "del", key[0], "dev", key[1]])
    want = {route_key(r["to"], r["via"], r["dev"], r["src"]) for r in n["routes"]}
    live_routes = {}
    for r in routes:
        to = r["dst"] if "/" in r["dst"] else r["dst"] + "/32"
        key = route_key(to, r.get("gateway"), r.get("dev"), r.get("prefsrc"))
        ours = str(r.get("protocol")) in (str(PROTO), PROTO_NAME)
        # NetworkManager cannot set a route protocol (1.42 has no 'protocol'
        # attribute): the planned routes it restores from our keyfiles at boot
        # come back as 'static'. Such a route, equal to a planned one, is in place.
        if ours or (key in want and str(r.get("protocol")) in ("static", "4")):
            live_routes[key] = ours
    for key in sorted(k for k, ours in live_routes.items() if ours and k not in want):
        actions.append(["ip", "route", "del", key[0], "via", key[1], "dev", key[2],
                        "proto", str(PROTO)])
    for key in sorted(want - set(live_routes)):
        actions.append(["ip", "route", "replace", key[0], "via", key[1], "dev", key[2],
                        "src", key[3], "proto", str(PROTO)])
    return actions, problems


def offload_actions(n, live_tso):
    """Commands for the bonds whose plan turns TSO off and whose live TSO is not off.

    live_tso: {bond: True, False, or None when the bond does not exist yet}. The
    module applies them with ``set_tso``; the text is the equivalent ethtool command."""
    return [["ethtool", "-K", i["name"], "tso", "off"] for i in n["interfaces"]
            if i["kind"] == "bond" and i.get("tso") is False and live_tso.get(i["name"]) is not False]


def _ethtool_value(dev, cmd, value=0):
    """One legacy SIOCETHTOOL get/set of a struct ethtool_value {u32 cmd; u32 data}."""
    import array
    import fcntl
    import socket
    import struct
    buf = array.array("B", struct.pack("=II", cmd, value))
    ifreq = struct.pack("16sP", dev.encode()[:15], buf.buffer_info()[0]).ljust(40, b"\0")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifreq)
    return struct.unpack("=II", buf.tobytes())[1]


def get_tso(dev):
    """Whether TCP segmentation offload is on (OSError when there is no such device)."""
    return bool(_ethtool_value(dev, ETHTOOL_GTSO))


def set_tso(dev, on):
    _ethtool_value(dev, ETHTOOL_STSO, 1 if on else 0)


def live_tso(n):
    """{bond: live TSO} for the bonds whose plan turns TSO off (None: no such device)."""
    out = {}
    for i in n["interfaces"]:
        if i["kind"] == "bond" and i.get("tso") is False:
            try:
                out[i["name"]] = get_tso(i["name"])
            except OSError:
                out[i["name"]] = None
    return out


def installed_addresses(n):
    """State-file text recording the addresses this plan installs."""
    return "".join("%s %s\n" % (a, i["name"]) for i in n["interfaces"] for a in i["addresses"])


def routes_text(routes, only_beonet=True):
    """Comparable text of a routing table (for --diff)."""
    lines = []
    for r in routes:
        if only_beonet and str(r.get("protocol")) not in (str(PROTO), PROTO_NAME):
            continue
        to = r["dst"] if "/" in r["dst"] or r["dst"] == "default" else r["dst"] + "/32"
        lines.append("%s via %s dev %s src %s" % (to, r.get("gateway"), r.get("dev"), r.get("prefsrc")))
    return "\n".join(sorted(lines)) + ("\n" if lines else "")


def plan_routes_text(n):
    lines = ["%s via %s dev %s src %s" % (r["to"], r["via"], r["dev"], r["src"])
             for r in n["routes"]]
    return "\n".join(sorted(lines)) + ("\n" if lines else "")
