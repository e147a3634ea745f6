"""FRR's configuration for a node of a topology with ``routing: {engine: frr}``.

Standard library only (rendered on the node, from its plan, with its NICs' real
names, like the network backends' files). The protocol is OSPFv2 in one area:

* the node's loopback address (``loopback``, a /32 of its own pool) is put on
  ``lo`` by FRR's zebra itself (no network backend involved: the address lives
  exactly as long as the routing that makes it reachable), advertised, and never
  talks OSPF (passive), so it stays reachable while any of the node's cluster
  NICs is;
* every cluster NIC (an ethernet NIC not in a bond, or a bond) runs OSPF with the
  same cost, so each pair's routes are the topology's shortest paths in hops,
  and FRR installs every equal one (ECMP, ``maximum-paths``) as the kernel's
  multipath routes do; a point-to-point segment uses OSPF's point-to-point
  network type (no designated router, adjacent at once), a LAN broadcast;
* BFD runs on every adjacency with the topology's timers (``bfd``); OSPF drops
  a neighbour as soon as BFD does, so a dead node or a cut cable costs
  interval x multiplier plus an SPF run, not OSPF's dead interval;
* the management NIC is not in the plan and so never in OSPF.

Why OSPF and not IS-IS or OpenFabric: it is the IGP every Linux admin has met,
FRR's most used, numbered links are what beonet already gives every segment,
and its LAN mode (designated router) suits the papers' switched segments;
OpenFabric is built for leaf-spine fabrics and IS-IS needs NETs the topology
does not have.
"""

from __future__ import annotations

from .nodeplan import Interface, NodePlan, Routing

LOOPBACK_NIC = "lo"               # zebra adds the /32 beside 127.0.0.1/8
FRR_CONF = "/etc/frr/frr.conf"
FRR_DAEMONS = "/etc/frr/daemons"
OSPF_COST = 10                     # the same on every NIC: hops decide
MAX_PATHS = 64                     # FRR's upper bound; the kernel takes as many
BFD_PROFILE = "beonet"
HEADER = "! beonet: written from the cluster plan; changes here are replaced\n"


def ospf_nics(n: NodePlan) -> list[Interface]:
    """The NICs that run OSPF: those holding a cluster address (bond members do not)."""
    return [i for i in n["interfaces"] if i["addresses"] and "bond" not in i]


def _interface(iface: Interface) -> list[str]:
    p2p = "peer" in iface
    return (["interface %s" % iface["name"],
             " ip ospf area 0",
             " ip ospf cost %d" % OSPF_COST]
            + ([" ip ospf network point-to-point"] if p2p else [])
            + [" ip ospf bfd",
               " ip ospf bfd profile %s" % BFD_PROFILE,
               "exit",
               "!"])


def frr_conf(name: str, n: NodePlan, frr: Routing) -> str:
    """/etc/frr/frr.conf of node ``name`` (FRR's integrated configuration)."""
    router_id = frr["loopback"].split("/")[0]
    bfd = frr["bfd"]
    lines = ["frr defaults traditional",
             "hostname %s" % name,
             "log syslog informational",
             "service integrated-vtysh-config",
             "!",
             "interface %s" % LOOPBACK_NIC,
             " ip address %s" % frr["loopback"],
             " ip ospf area 0",
             " ip ospf passive",
             "exit",
             "!"]
    for iface in ospf_nics(n):
        lines += _interface(iface)
    lines += ["router ospf",
              " ospf router-id %s" % router_id,
              " maximum-paths %d" % MAX_PATHS,
              " timers throttle spf 0 50 1000",
              "exit",
              "!",
              "bfd",
              " profile %s" % BFD_PROFILE,
              "  detect-multiplier %d" % bfd["multiplier"],
              "  receive-interval %d" % bfd["interval_ms"],
              "  transmit-interval %d" % bfd["interval_ms"],
              " exit",
              " !",
              "exit",
              "!"]
    return HEADER + "\n".join(lines) + "\n"


def daemons() -> str:
    """/etc/frr/daemons: zebra (always started), ospfd and bfdd; the rest off."""
    on = ("ospfd", "bfdd")
    off = ("bgpd", "ospf6d", "ripd", "ripngd", "isisd", "pimd", "pim6d", "ldpd", "nhrpd", "eigrpd",
           "babeld", "sharpd", "pbrd", "fabricd", "vrrpd", "pathd")
    lines = ["%s=%s" % (d, "yes" if d in on else "no") for d in on + off]
    lines += ["vtysh_enable=yes",
              'zebra_options="  -A 127.0.0.1 -s 90000000"',
              'mgmtd_options="  -A 127.0.0.1"',
              'ospfd_options="  -A 127.0.0.1"',
              'staticd_options="-A 127.0.0.1"',
              'bfdd_options="   -A 127.0.0.1"']
    return "# beonet: written from the cluster plan; changes here are replaced\n" + "\n".join(lines) + "\n"


def frr_files(name: str, n: NodePlan) -> dict[str, str]:
    """{path: text} of FRR's files for this node (none with static routes)."""
    frr = n.get("routing")
    if frr is None:
        return {}
    return {FRR_CONF: frr_conf(name, n, frr), FRR_DAEMONS: daemons()}
