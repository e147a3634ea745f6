"""Apply one node's plan: what the ``beonet_node`` module runs on each node.

Standard library only (it travels to the node inside the module). Each part
is a pure function of the plan and what is live, so it is tested without a
node:

* ``persistent_files``: the network configuration for the node's backend
  (netbackends/: systemd-networkd, NetworkManager, netplan or ifupdown),
  ``/etc/sysctl.d`` forwarding and failover settings, the nftables ruleset;
* ``node_actions``: every command that turns the live state into the plan, in
  the order the module runs them, touching only what differs: forwarding
  (``forwarding_actions``), the ``ip`` commands (``runtime_actions``: links,
  bonds, MTUs, addresses, routes, multipath routes among them), the failover
  sysctls (``failover_actions``: neighbour-aware multipath and the neighbour
  timers of the cluster NICs) and bond offloads (``offload_actions``).
  Addresses and routes beonet installs carry protocol ``beonet`` (250),
  addresses are recorded in a state file; those that a newer plan drops are
  removed, and nothing else is. IPv6 link-local addresses and routes
  (fe80::/10) are the OS's and never looked at;
* ``actions_on_blank_node``: the same list for a node as it comes (the dry run
  prints it);
* ``run_action``: carries out one command (sysctls are written to /proc and
  TSO is set with the SIOCETHTOOL ioctl, so neither ``sysctl`` nor ``ethtool``
  is needed on the node);
* ``forward_ruleset``: forwarding limited to the topology's prefixes.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypedDict

from . import frr, verify
from .backends import backend_files, config_path_problem
from .names import whole_file_problem
from .netbackends import BACKENDS
from .netbackends.base import HEADER
from .nodeplan import Interface, NodePlan, forwards_ipv4, unsafe_text
from .routes import (
    PROTO,
    aggregate,
    canonical,
    delete_command,
    distinct_destinations,
    in_order,
    live_key,
    planned_key,
    replace_command,
    route_text,
    same_key,
)
from .verify import is_link_local

if TYPE_CHECKING:
    IpJson = list[dict[str, Any]]              # parsed `ip -j ...` output
    Action = list[str]                         # one command, as argv
    Runner = Callable[[list[str]], "tuple[int, str]"]   # argv -> (rc, stderr)

PROTO_NAME = "beonet"
FORWARD = verify.FORWARD                      # the forwarding sysctl
SYSCTL_PATH = "/etc/sysctl.d/90-beonet.conf"
STATE_PATH = "/var/lib/beonet/addresses"       # "ADDR/LEN DEV" lines beonet installed
NFT_PATH = "/etc/nftables.d/beonet.nft"
SIOCETHTOOL = 0x8946
ETHTOOL_GTSO, ETHTOOL_STSO = 0x1e, 0x1f       # legacy one-feature get/set (all TSO bits)
BLANK_MTU = 1500                              # an Ethernet NIC's MTU as it comes


class LiveState(TypedDict):
    """What the module reads on the node before it changes anything."""
    links: IpJson                # ip -j link
    addrs: IpJson                # ip -j addr
    routes: IpJson               # ip -j route show table main
    installed: list[str]         # the state file's "ADDR/LEN DEV" lines
    forwarding: str              # /proc/sys/net/ipv4/ip_forward ("" when unreadable)
    nft_table: str | None        # `nft list table inet beonet` (None: no such table)
    tso: dict[str, bool | None]  # live_tso()
    sysctls: dict[str, str | None]   # live_sysctls(): the failover keys' live values
    frr_running: bool            # FRR's daemons run (frr.running; read where FRR is or was planned)
    frr_conf: str | None         # /etc/frr/frr.conf as it is (None: none; read likewise)
    systemd: bool                # systemd is the init (FRR is started through it)


def _set(name: str, kind: str) -> str:
    """A set of prefixes, its elements left to fill (%s)."""
    return "\tset %s {\n\t\ttype %s\n\t\tflags interval\n\t\telements = { %%s }\n\t}\n" % (name, kind)


def forward_ruleset(prefixes: Iterable[str]) -> tuple[str, str]:
    """nftables: a forwarding node forwards only between the topology's prefixes.

    The table is of the ``inet`` family: set ``cluster`` holds the IPv4 prefixes,
    ``cluster6`` the IPv6 ones, each with its rule, the latter only when there is an
    IPv6 prefix and the former unless there are only IPv6 ones (a plan without IPv6
    gives the ruleset it always gave). Returns (digest, ruleset text); the digest is in
    the table's comment, so ``nft list table inet beonet`` tells whether this ruleset
    is loaded."""
    given = list(prefixes)
    four = ", ".join(p for p in given if ":" not in p)
    six = ", ".join(p for p in given if ":" in p)
    sets, rules, elements = "", "", []
    if four or not six:
        sets, rules = _set("cluster", "ipv4_addr"), "\t\tip saddr @cluster ip daddr @cluster accept\n"
        elements.append(four)
    if six:
        sets += _set("cluster6", "ipv6_addr")
        rules += "\t\tip6 saddr @cluster6 ip6 daddr @cluster6 accept\n"
        elements.append(six)
    body = ("table inet beonet {\n"
            "\tcomment \"beonet-ruleset %s\"\n" + sets
            + "\tchain forward {\n\t\ttype filter hook forward priority 0; policy drop;\n" + rules
            + "\t}\n}\n")
    digest = hashlib.sha256((body + "; ".join(elements)).encode()).hexdigest()[:16]
    text = ("%stable inet beonet\ndelete table inet beonet\n" % HEADER
            + body % tuple([digest] + elements))
    return digest, text


def has_ipv6(n: NodePlan) -> bool:
    """Whether the plan gives the node IPv6 addresses (addressing.ipv6)."""
    return any(":" in a for i in n["interfaces"] for a in i["addresses"])


@functools.lru_cache(maxsize=1 << 16)      # the same prefixes recur on every node of a build
def _span6(text: str, strict: bool = True) -> tuple[int, int] | None:
    """An IPv6 network's text (strict: no host bits), or an interface address's
    network, as its first address and the one past its last; None: not IPv6."""
    net = ipaddress.ip_network(text) if strict else ipaddress.ip_interface(text).network
    if not isinstance(net, ipaddress.IPv6Network):
        return None
    return int(net.network_address), int(net.network_address) + net.num_addresses


def cluster_prefixes(n: NodePlan, prefixes: Iterable[str]) -> list[str]:
    """The prefixes the forward filter passes: those given (the topology's, IPv4 as
    given), and the IPv6 prefixes of the node's own plan: its NICs' networks, the
    destinations of its routes (static or learned) and its IPv6 loopback, so the filter
    passes every IPv6 destination the node routes to, merged into the fewest prefixes."""
    given = list(prefixes)
    six = [_span6(p) for p in given if ":" in p]
    six += [_span6(a, False) for i in n["interfaces"] for a in i["addresses"] if ":" in a]
    six += [_span6(r["to"]) for r in list(n["routes"]) + list(n.get("learned", [])) if ":" in r["to"]]
    loop6 = n.get("routing", {}).get("loopback6")
    six += [_span6(loop6, False)] if loop6 else []
    merged = aggregate([x for x in six if x is not None], 128)
    return [p for p in given if ":" not in p] + [_net6_text(*x) for x in merged]


@functools.lru_cache(maxsize=1 << 16)      # most nodes' merged prefixes are the same few
def _net6_text(start: int, plen: int) -> str:
    return str(ipaddress.IPv6Network((start, plen)))


def persistent_files(n: NodePlan, prefixes: Iterable[str], backend: str,
                     renderer: str = "networkd", checked: bool = False,
                     sysctls: dict[str, str | None] | None = None) -> dict[str, str]:
    """{path: text} of the node's persistent configuration.

    backend: networkd, networkmanager, netplan or ifupdown (backends.py);
    renderer: netplan's (networkd or networkmanager); sysctls: the live ones
    (live_sysctls: which NICs keep accepting router advertisements once IPv6
    forwarding is on; None: no NIC is known). A plan holding a control
    character is refused, unless checked: the caller has checked every name the
    plan is made of (a build, once for all its nodes)."""
    unsafe = None if checked else unsafe_text(n)
    if unsafe is not None:
        raise ValueError("the plan holds a control character at %s" % unsafe)
    files = backend_files(n, backend, renderer)
    files.update(frr.frr_files(n))
    files[SYSCTL_PATH] = HEADER + "net.ipv4.ip_forward = %d\n" % (1 if forwards_ipv4(n) else 0) + "".join(
        "%s = %s\n" % kv for kv in forwarding6_sysctls(n, sysctls or {}) + ipv6_nic_sysctls(n)
        + failover_sysctls(n))
    if n["forwarding"]:
        files[NFT_PATH] = forward_ruleset(cluster_prefixes(n, prefixes))[1]
    for path in files:
        why = config_path_problem(path) or whole_file_problem(files[path], path)
        if why is not None:
            raise ValueError(why)
    return files


def file_mode(path: str) -> int:
    """The mode of a file beonet writes: the backend's that wrote it, else 0644."""
    for b in BACKENDS.values():
        mode = b.mode(path)
        if mode is not None:
            return mode
    return 0o644


def _missing_nics(n: NodePlan, node: str, by_name: dict[str, dict[str, Any]]) -> list[str]:
    return ["%s: no NIC named %s (plan segment %s)" % (node, i["name"], i["segment"])
            for i in n["interfaces"] if i["kind"] == "ethernet" and i["name"] not in by_name]


def _bond_actions(n: NodePlan, by_name: dict[str, dict[str, Any]]) -> list[Action]:
    """Create the missing bonds (or give them their planned MAC), then enslave the members."""
    actions = []
    for iface in (i for i in n["interfaces"] if i["kind"] == "bond"):
        name, mac = iface["name"], iface.get("mac")
        live = by_name.get(name)
        if live is None:
            actions.append(["ip", "link", "add", name] + (["address", mac] if mac else [])
                           + ["type", "bond", "mode", iface["mode"], "miimon", str(iface["miimon"])])
        elif mac and live.get("address", "").lower() != mac:
            actions.append(["ip", "link", "set", "dev", name, "address", mac])
        for m in iface.get("members", []):
            if by_name[m].get("master") != name:
                actions.append(["ip", "link", "set", m, "down"])
                actions.append(["ip", "link", "set", m, "master", name])
    return actions


def _link_actions(n: NodePlan, by_name: dict[str, dict[str, Any]]) -> list[Action]:
    """MTUs (a bond member takes its bond's) and links up."""
    actions = []
    for iface in n["interfaces"]:
        # Only a bond can be missing here: 'ip link add' makes it down, with MTU 1500.
        live = by_name.get(iface["name"], {"flags": [], "mtu": BLANK_MTU})
        mtu = iface.get("mtu")
        if mtu and live.get("mtu") != mtu and not iface.get("bond"):
            actions.append(["ip", "link", "set", "dev", iface["name"], "mtu", str(mtu)])
        if "UP" not in live.get("flags", []):
            actions.append(["ip", "link", "set", "dev", iface["name"], "up"])
    return actions


def live_addresses(addrs: IpJson) -> set[tuple[str, str]]:
    """{("ADDR/LEN", dev)} of the IPv4 and IPv6 addresses in ``ip -j addr`` output, but
    the OS's link-local ones."""
    have = set()
    for entry in addrs:
        for info in entry.get("addr_info", []):
            if info.get("family") in ("inet", "inet6") and not is_link_local(info.get("local", "")):
                have.add(("%s/%d" % (info["local"], info["prefixlen"]), entry["ifname"]))
    return have


def address_command(verb: str, address: str, dev: str) -> Action:
    """``ip addr add|del ADDR/LEN dev DEV``; an IPv6 address is added with ``nodad``.

    Duplicate address detection is skipped on purpose: the plan gives every address of a
    segment once (the compiler proves it), so DAD could only find a conflict the plan
    rules out, and until it ends (a second or more) the address is tentative, and the
    kernel refuses a route whose ``src`` is a tentative address: the routes that follow
    would fail. Waiting for DAD instead would cost that time on every NIC and node."""
    if ":" not in address:
        return ["ip", "addr", verb, address, "dev", dev]
    return ["ip", "-6", "addr", verb, address, "dev", dev] + (["nodad"] if verb == "add" else [])


def _address_actions(n: NodePlan, addrs: IpJson, installed: Iterable[str]) -> list[Action]:
    """Add the planned addresses; remove those an earlier plan installed and this one drops."""
    want = {(canonical(a), i["name"]) for i in n["interfaces"] for a in i["addresses"]}
    have = live_addresses(addrs)
    ours = {(canonical(a), dev) for a, _sep, dev in (x.partition(" ") for x in installed)}
    actions = [address_command("add", a, dev) for a, dev in sorted(want - have)]
    actions += [address_command("del", a, dev) for a, dev in sorted(have)
                if (a, dev) not in want and (a, dev) in ours]
    return actions


def _route_actions(n: NodePlan, routes: IpJson) -> list[Action]:
    """Remove the beonet routes the plan drops; add (replace) the planned ones missing.

    A multipath route is compared by its set of next hops (routes.py), so a
    single-path route where a multipath one is planned (or the other way round)
    is replaced.
    A route of ours to a destination the plan routes elsewhere is not deleted
    first: ``ip route replace`` takes its place without a gap."""
    planned = [planned_key(r) for r in n["routes"]]
    if not routes and distinct_destinations(planned):
        # a blank node (the dry run): every planned route, in order (as below, sooner)
        return [replace_command(k) for k in in_order(planned)]
    want = {same_key(k): k for k in planned}
    live_routes: dict[Any, tuple[Any, bool]] = {}      # compared key -> (live key, ours)
    for r in routes:
        if is_link_local(r["dst"]):
            continue
        key = same_key(live_key(r))
        ours = str(r.get("protocol")) in (str(PROTO), PROTO_NAME)
        # NetworkManager cannot set a route protocol (1.42 has no 'protocol'
        # attribute): the planned routes it restores from our keyfiles at boot
        # come back as 'static'. Such a route, equal to a planned one, is in place.
        if ours or (key in want and str(r.get("protocol")) in ("static", "4")):
            live_routes[key] = (live_key(r), ours)
    missing = in_order(set(want) - set(live_routes))
    replaced = {k[0] for k in missing}
    actions = [delete_command(live) for k, (live, ours) in sorted(live_routes.items(), key=repr)
               if ours and k not in want and k[0] not in replaced]
    return actions + [replace_command(want[k]) for k in missing]


def runtime_actions(n: NodePlan, node: str, links: IpJson, addrs: IpJson, routes: IpJson,
                    installed: Iterable[str] = (), sysctls: dict[str, str | None] | None = None,
                    ) -> tuple[list[Action], list[str]]:
    """The ``ip`` commands (argv lists) that turn the live state into node plan n.

    links, addrs, routes: parsed ``ip -j link``, ``ip -j addr`` and
    ``ip -j route show table main`` output (and ``ip -j -6 route``); installed: the
    "ADDR/LEN DEV" addresses an earlier run installed (the state file); sysctls: the
    live ones (live_sysctls: IPv6 is turned on where the plan puts IPv6 addresses and
    it is off, before they are added). Returns (actions, problems); with problems (a
    planned NIC the node lacks) there is no action."""
    by_name = {link["ifname"]: link for link in links}
    problems = _missing_nics(n, node, by_name)
    if problems:
        return [], problems
    ipv6_on = sysctl_writes(ipv6_nic_sysctls(n), sysctls) if sysctls is not None else []
    return (_bond_actions(n, by_name) + _link_actions(n, by_name) + ipv6_on
            + _address_actions(n, addrs, installed) + _route_actions(n, routes)), []


def forwarding_actions(n: NodePlan, prefixes: Iterable[str], forwarding: str,
                       nft_table: str | None, sysctls: dict[str, str | None] | None = None) -> list[Action]:
    """The forwarding sysctls and the nftables ruleset, where they differ from the plan.

    forwarding: the live /proc/sys/net/ipv4/ip_forward; nft_table: the live
    ``nft list table inet beonet`` (None when there is no such table); sysctls: the
    live ones (live_sysctls, IPv6 forwarding among them). The ruleset is loaded from
    the persistent file, written before. The filter is in place before forwarding is
    turned on, and forwarding is off before it goes; a NIC keeps accepting router
    advertisements (accept_ra 2) before IPv6 forwarding would stop it. IPv4 forwarding
    is on only where the plan gives the node IPv4 (nodeplan.forwards_ipv4)."""
    want = "1" if forwards_ipv4(n) else "0"
    sysctl = [] if forwarding.strip() == want else [["sysctl", "-w", "net.ipv4.ip_forward=" + want]]
    sysctl += sysctl_writes(forwarding6_sysctls(n, sysctls or {}), sysctls or {})
    if n["forwarding"]:
        if not nft_table or ("beonet-ruleset %s" % forward_ruleset(cluster_prefixes(n, prefixes))[0]
                             not in nft_table):     # no table: no ruleset to compare
            return [["nft", "-f", NFT_PATH]] + sysctl
        return sysctl
    if nft_table is not None:
        return sysctl + [["nft", "delete", "table", "inet", "beonet"]]
    return sysctl


NEIGH_TIMERS = ("base_reachable_time_ms", "delay_first_probe_time", "ucast_solicit",
                "retrans_time_ms")
# What the kernel starts with (a new interface copies net.ipv4.neigh.default, which
# exists in the initial network namespace only).
KERNEL_DEFAULTS = {"fib_multipath_use_neigh": "0", "fib_multipath_hash_policy": "0",
                   "base_reachable_time_ms": "30000", "delay_first_probe_time": "5",
                   "ucast_solicit": "3", "retrans_time_ms": "1000",
                   "ignore_routes_with_linkdown": "0", "disable_ipv6": "0"}
# A next hop whose NIC has lost carrier is skipped by multipath routes only with this.
LINKDOWN = "ignore_routes_with_linkdown"


def nic_key(section: str, nic: str, name: str, family: str = "ipv4") -> str:
    """The sysctl key net.FAMILY.SECTION.NIC.NAME (section neigh or conf, family ipv4 or
    ipv6); a NIC name holding a dot (a VLAN, eth1.10) is written with '/' separators,
    as sysctl and sysctl.d read it."""
    if "." in nic:
        return "net/%s/%s/%s/%s" % (family, section, nic, name)
    return "net.%s.%s.%s.%s" % (family, section, nic, name)


def neigh_key(nic: str, timer: str, family: str = "ipv4") -> str:
    """The sysctl key of a neighbour timer of one NIC."""
    return nic_key("neigh", nic, timer, family)


def sysctl_path(key: str) -> str:
    return "/proc/sys/" + (key if "/" in key else key.replace(".", "/"))


def key_words(key: str) -> list[str]:
    """A sysctl key's words: net, the family, ..., the name (a NIC's dots kept only
    where the key is written with '/')."""
    return key.split("/") if "/" in key else key.split(".")


def _nic_sysctls(iface: Interface, timers: dict[str, Any], family: str) -> list[tuple[str, str]]:
    return ([(neigh_key(iface["name"], t, family), str(timers[t])) for t in NEIGH_TIMERS]
            + [(nic_key("conf", iface["name"], LINKDOWN, family), "1")])


def failover_sysctls(n: NodePlan) -> list[tuple[str, str]]:
    """[(key, value)] the plan's failover sets: neighbour-aware multipath, its hash
    policy, and on each NIC or bond carrying an address its neighbour timers and
    ignore_routes_with_linkdown (a next hop on a NIC without carrier is skipped); the
    IPv6 ones beside them where the plan has IPv6 (IPv6 has no use_neigh switch, and
    on a node forwarding IPv6 its multipath keeps a dead next hop: docs/failover.md).
    Empty when the plan has no ``failover``."""
    f = n.get("failover")
    if not f:
        return []
    out = [("net.ipv4.fib_multipath_use_neigh", "1"),
           ("net.ipv4.fib_multipath_hash_policy", str(f["hash_policy"]))]
    six = has_ipv6(n)
    out += [("net.ipv6.fib_multipath_hash_policy", str(f["hash_policy"]))] if six else []
    timers: dict[str, Any] = dict(f["neigh"].items())
    for iface in n["interfaces"]:
        if any(":" not in a for a in iface["addresses"]):
            out += _nic_sysctls(iface, timers, "ipv4")
        if any(":" in a for a in iface["addresses"]):
            out += _nic_sysctls(iface, timers, "ipv6")
    return out


FORWARD6 = "net.ipv6.conf.all.forwarding"     # IPv6 forwarding: all of it or none (no per-NIC switch)
ACCEPT_RA = "accept_ra"


def ipv6_nic_sysctls(n: NodePlan) -> list[tuple[str, str]]:
    """[(net.ipv6.conf.NIC.disable_ipv6, "0")] for each NIC the plan gives an IPv6
    address: a NIC with IPv6 off (a container's, or an older plan's ``ipv6: false``)
    refuses IPv6 addresses."""
    return [(nic_key("conf", i["name"], "disable_ipv6", "ipv6"), "0")
            for i in n["interfaces"] if any(":" in a for a in i["addresses"])]


def forwarding6_sysctls(n: NodePlan, live: dict[str, str | None]) -> list[tuple[str, str]]:
    """[(key, value)] of IPv6 forwarding for a plan with IPv6 (none without).

    The kernel forwards IPv6 only with net.ipv6.conf.all.forwarding (the NICs' own
    ``forwarding`` switches host or router behaviour, not forwarding; the forward
    filter limits what is forwarded). Writing it sets every NIC's ``forwarding``, and a
    forwarding NIC ignores router advertisements unless its accept_ra is 2; the kernel
    even drops the default routes learned from them then, but on NICs with accept_ra 2.
    So every NIC outside the plan that accepts them now (accept_ra 1 without IPv6
    forwarding, or 2: the management interface among them; live, from live_sysctls)
    is given accept_ra 2 first and keeps its default route. Nothing else of those NICs
    (addresses, routes) is touched."""
    if not has_ipv6(n):
        return []
    if not n["forwarding"]:
        return [(FORWARD6, "0")]
    keep = sorted(k for k, v in live.items() if key_words(k)[-1] == ACCEPT_RA
                  and (v == "2" or (v == "1" and live.get(FORWARD6) == "0")))
    return [(k, "2") for k in keep] + [(FORWARD6, "1")]


def _default_of(key: str) -> str:
    return KERNEL_DEFAULTS[key_words(key)[-1]]


def live_sysctls(n: NodePlan, read: Callable[[str], str | None],
                 nics: Iterable[str] = ()) -> dict[str, str | None]:
    """{key: live value} of the failover keys and, for a plan with IPv6, of IPv6
    forwarding and (forwarding plans) the accept_ra of each of nics (the node's NICs,
    ``ip -j link``) outside the plan but lo (None: unreadable). A NIC that does not
    exist yet (a bond) will start with the family's neigh.default value, or the
    kernel's where that is not readable."""
    out: dict[str, str | None] = {}
    keys = [key for key, _value in failover_sysctls(n) + ipv6_nic_sysctls(n)]
    if has_ipv6(n):
        keys.append(FORWARD6)
        planned = {name for i in n["interfaces"] for name in [i["name"]] + list(i.get("members", []))}
        keys += [nic_key("conf", nic, ACCEPT_RA, "ipv6") for nic in sorted(set(nics) - planned - {"lo"})
                 if n["forwarding"]]
    for key in keys:
        text = read(sysctl_path(key))
        words = key_words(key)
        if text is None and len(words) == 5 and words[2] in ("conf", "neigh"):
            text = read("/proc/sys/net/%s/%s/default/%s" % (words[1], words[2], words[-1])) \
                or KERNEL_DEFAULTS.get(words[-1])
        out[key] = text.strip() if text is not None else None
    return out


def failover_actions(n: NodePlan, live: dict[str, str | None]) -> list[Action]:
    """``sysctl -w`` for each failover key whose live value differs from the plan
    (the agent writes /proc/sys; the text is the equivalent command)."""
    return sysctl_writes(failover_sysctls(n), live)


def sysctl_writes(wanted: Iterable[tuple[str, str]], live: dict[str, str | None]) -> list[Action]:
    """``sysctl -w KEY=VALUE`` for each wanted (key, value) whose live value differs."""
    return [["sysctl", "-w", "%s=%s" % (k, v)] for k, v in wanted if live.get(k) != v]


def tso_off_bonds(n: NodePlan) -> list[str]:
    """The bonds whose plan turns TCP segmentation offload off."""
    return [i["name"] for i in n["interfaces"] if i["kind"] == "bond" and i.get("tso") is False]


def offload_actions(n: NodePlan, live_tso: dict[str, bool | None]) -> list[Action]:
    """Commands for the bonds whose plan turns TSO off and whose live TSO is not off.

    live_tso: {bond: True, False, or None when the bond does not exist yet}. The
    module applies them with ``set_tso``; the text is the equivalent ethtool command."""
    return [["ethtool", "-K", b, "tso", "off"] for b in tso_off_bonds(n) if live_tso.get(b) is not False]


def node_actions(n: NodePlan, node: str, prefixes: Iterable[str],
                 live: LiveState) -> tuple[list[Action], list[str]]:
    """Every command that turns the live state into the plan, in the order the module
    runs them: forwarding, ruleset, the ``ip`` commands, the failover sysctls (after
    the bonds exist), bond offloads, FRR's start (routing.engine frr).

    Returns (actions, problems); with problems there is no action."""
    ip_actions, problems = runtime_actions(n, node, live["links"], live["addrs"], live["routes"],
                                           live["installed"], live["sysctls"])
    if problems:
        return [], problems
    return (forwarding_actions(n, prefixes, live["forwarding"], live["nft_table"], live["sysctls"])
            + ip_actions + failover_actions(n, live["sysctls"]) + offload_actions(n, live["tso"])
            + frr.start_actions(n, live.get("frr_running", False), live.get("systemd", True))), []


def blank_live_state(n: NodePlan) -> LiveState:
    """A node as it comes: every planned Ethernet NIC present, down, with MTU 1500,
    no address, no route, no bond, forwarding off, no beonet ruleset and the
    kernel's multipath and neighbour defaults."""
    links = [{"ifname": i["name"], "flags": [], "mtu": BLANK_MTU}
             for i in n["interfaces"] if i["kind"] == "ethernet"]
    return {"links": links, "addrs": [], "routes": [], "installed": [], "forwarding": "0",
            "nft_table": None, "tso": dict.fromkeys(tso_off_bonds(n)),
            "sysctls": dict({k: _default_of(k) for k, _v in failover_sysctls(n) + ipv6_nic_sysctls(n)},
                            **({FORWARD6: "0"} if has_ipv6(n) else {})),
            "frr_running": False, "frr_conf": None, "systemd": True}


def actions_on_blank_node(n: NodePlan, node: str = "") -> list[Action]:
    """The commands the module runs on a blank node (``blank_live_state``): the dry run."""
    # No ruleset is loaded on a blank node, so the prefixes (which only name it) do not matter.
    actions, problems = node_actions(n, node, (), blank_live_state(n))
    if problems:
        raise ValueError("; ".join(problems))
    return actions


def refusals(n: NodePlan, node: str, management_interface: str, management_address: str,
             bonding: bool) -> list[str]:
    """Why this plan must not be applied on this node, checked before any change.

    management_interface: the interface Ansible connects through ("none" when
    there is none); management_address: the address it connects to ("" when
    unknown); bonding: whether the kernel has a bonding driver."""
    problems = []
    names = {name for i in n["interfaces"] for name in [i["name"]] + i.get("members", [])}
    if management_interface != "none" and management_interface in names:
        problems.append("%s: the plan would change %s, the interface Ansible connects through"
                        % (node, management_interface))
    addresses = {a.split("/")[0] for i in n["interfaces"] for a in i["addresses"]}
    if management_address and management_address in addresses:
        problems.append("%s: the plan would add %s, the address Ansible connects to"
                        % (node, management_address))
    if not bonding and has_bonds(n):
        problems.append("%s: this kernel has no bonding driver (no /sys/class/net/bonding_masters, "
                        "no bonding module); the plan's bonds need a VM or bare metal" % node)
    return problems


def has_bonds(n: NodePlan) -> bool:
    return any(i["kind"] == "bond" for i in n["interfaces"])


def _write_sysctl(setting: str) -> None:
    """`sysctl -w KEY=VALUE` without the sysctl binary."""
    key, _sep, value = setting.partition("=")
    with open(sysctl_path(key), "w", encoding="utf-8") as fh:
        fh.write(value + "\n")


def _put_tso(dev: str, on: bool) -> str | None:
    set_tso(dev, on)
    return None if get_tso(dev) == on else "the kernel keeps TSO %s" % ("off" if on else "on")


def run_action(cmd: Action, run: Runner) -> str | None:
    """Carry out one command of ``node_actions``; returns why it failed (None: done).

    run(argv) -> (rc, stderr) runs a program; the forwarding sysctl and the
    bond offload are set directly (/proc and the SIOCETHTOOL ioctl)."""
    try:
        if cmd[0] == "sysctl":
            _write_sysctl(cmd[-1])
            return None
        if cmd[0] == "ethtool":
            return _put_tso(cmd[2], cmd[-1] == "on")
    except OSError as exc:
        return str(exc)
    rc, err = run(cmd)
    if rc == 0:
        return None
    return err.strip() or "exit status %d" % rc


def action_failure(node: str, cmd: Action, err: str) -> str:
    """The message for a command that failed."""
    if cmd[:3] == ["ip", "link", "add"] and "bond" in cmd and "nknown device type" in err:
        return ("%s: this kernel has no bonding driver (%s); bonds need a VM or bare metal"
                % (node, err))
    if cmd[:4] == ["ip", "-6", "addr", "add"] and "ermission denied" in err:
        return ("%s: %s failed: %s (IPv6 is off on %s: net.ipv6.conf.%s.disable_ipv6 is 1)"
                % (node, " ".join(cmd), err, cmd[-2], cmd[-2]))
    return "%s: %s failed: %s" % (node, " ".join(cmd), err)


def apply_actions(node: str, actions: Iterable[Action], run: Runner) -> str | None:
    """Carry out the commands in order, stopping at the first that fails; returns its message."""
    for cmd in actions:
        err = run_action(cmd, run)
        if err is not None:
            return action_failure(node, cmd, err)
    return None


def _ethtool_value(dev: str, cmd: int, value: int = 0) -> int:
    """One legacy SIOCETHTOOL get/set of a struct ethtool_value {u32 cmd; u32 data}."""
    import array
    import fcntl
    import socket
    import struct
    buf = array.array("B", struct.pack("=II", cmd, value))
    ifreq = struct.pack("16sP", dev.encode()[:15], buf.buffer_info()[0]).ljust(40, b"\0")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifreq)
    return int(struct.unpack("=II", buf.tobytes())[1])


def get_tso(dev: str) -> bool:
    """Whether TCP segmentation offload is on (OSError when there is no such device)."""
    return bool(_ethtool_value(dev, ETHTOOL_GTSO))


def set_tso(dev: str, on: bool) -> None:
    _ethtool_value(dev, ETHTOOL_STSO, 1 if on else 0)


def live_tso(n: NodePlan) -> dict[str, bool | None]:
    """{bond: live TSO} for the bonds whose plan turns TSO off (None: no such device)."""
    out: dict[str, bool | None] = {}
    for bond in tso_off_bonds(n):
        try:
            out[bond] = get_tso(bond)
        except OSError:
            out[bond] = None
    return out


def installed_addresses(n: NodePlan) -> str:
    """State-file text recording the addresses this plan installs."""
    return "".join("%s %s\n" % (a, i["name"]) for i in n["interfaces"] for a in i["addresses"])


def routes_text(routes: IpJson, only_beonet: bool = True) -> str:
    """Comparable text of a routing table (for --diff), a multipath route on one line with
    its next hops in a fixed order (they are compared as a set)."""
    lines = []
    for r in routes:
        if (only_beonet and str(r.get("protocol")) not in (str(PROTO), PROTO_NAME)) \
                or is_link_local(r["dst"]):
            continue
        lines.append(route_text(same_key(live_key(r))))
    return "\n".join(sorted(lines)) + ("\n" if lines else "")


def plan_routes_text(n: NodePlan) -> str:
    lines = [route_text(same_key(planned_key(r))) for r in n["routes"]]
    return "\n".join(sorted(lines)) + ("\n" if lines else "")


def leave_actions(n: NodePlan, live: LiveState) -> list[Action]:
    """What runs before the persistent files change: FRR stopped where the plan leaves it."""
    on_lo = ["%s/%s" % (a.get("local"), a.get("prefixlen")) for link in live["addrs"]
             if link.get("ifname") == frr.LOOPBACK_NIC for a in link.get("addr_info", [])]
    return frr.leave_actions(n, live.get("frr_conf"), live.get("frr_running", False),
                             live.get("systemd", True), on_lo)
