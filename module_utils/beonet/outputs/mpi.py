"""The MPI stacks' network settings from the plan: the node networks (CIDR blocks
that hold every node's cluster address and nothing else), the runtime file of
Open MPI 5 (PRRTE) and MPICH's per-node environment (libfabric takes a NIC name,
not a network). They read the plan dict only."""

import ipaddress
from collections.abc import Mapping
from typing import Any, Union

from ..agent.names import one_line
from .ipfamily import cluster_address

Plan = dict[str, Any]
Slots = Union[int, Mapping[str, int]]  # noqa: UP007 (ansible-test's pylint reads no X | Y alias)

# Where Open MPI 5's runtime reads its file: PRRTE's sysconfdir; Debian 13's openmpi-bin.
PRTE_FILE = "/etc/openmpi/prte-mca-params.conf"
MPICH_ENV_FILE = "/etc/beonet/mpi/mpich.env"


def slots_of(slots: Slots, name: str) -> int:
    """A node's slots: the one number, or its entry (1 when it has none)."""
    return slots if isinstance(slots, int) else slots.get(name, 1)


def node_networks(plan: Plan) -> list[str]:
    """The networks that hold the nodes' cluster addresses and nothing else: a segment
    whose every member address is a node address (every node routes to it), else the
    node address alone (/32); merged into the fewest blocks. A NIC whose address lies
    in them is one that every other node reaches. With routing.engine frr every segment
    (OSPF routes them all; the nodes' loopbacks are on no NIC)."""
    nets: set[ipaddress.IPv4Network] = set()
    if any("routing" in n for n in plan["nodes"].values()):
        # routing.engine frr: OSPF routes every segment, and the loopbacks are no NIC's
        nets.update(ipaddress.IPv4Network(seg["prefix"]) for seg in plan["segments"].values()
                    if seg.get("prefix"))
        return [str(n) for n in ipaddress.collapse_addresses(nets)]
    node_addrs = {n["address"] for n in plan["nodes"].values()}
    for seg in plan["segments"].values():
        addrs = [m["address"] for m in seg["members"] if "address" in m]   # not a bond's channels
        if not any(a in node_addrs for a in addrs):
            continue
        if all(a in node_addrs for a in addrs):
            nets.add(ipaddress.IPv4Network(seg["prefix"]))
        else:
            nets.update(ipaddress.IPv4Network(a + "/32") for a in addrs if a in node_addrs)
    return [str(n) for n in ipaddress.collapse_addresses(nets)]


def cluster_interface(node: dict[str, Any]) -> dict[str, Any]:
    """The node's interface that holds its cluster address (its physical name under
    -i INVENTORY; a bond for a bonded node); with routing.engine frr, whose node address
    is a loopback, the NIC it would be on with static routes."""
    if "routing" in node:
        return next(i for i in node["interfaces"] if i["name"] == node["routing"]["home"])
    address = cluster_address(node)
    return next(i for i in node["interfaces"]
                if any(a.split("/")[0] == address for a in i["addresses"]))


# Why NIC names must mean the same on every node, by the consumer of the names.
PRTE_NAMES_WHY = ("the runtime of Open MPI 5.0.0-5.0.7 can only be held to the cluster "
                  "networks by NIC names that mean the same on every node")
IPV6_NAMES_WHY = ("Open MPI and its runtime take networks only as IPv4 (a.b.c.d/n): an "
                  "IPv6-only cluster can only hold them to its cluster NICs by NIC names that "
                  "mean the same on every node")


class MpiError(ValueError):
    """No settings keep MPI on the cluster NICs of this plan (the message says why)."""


def ipv6_only(plan: Plan) -> bool:
    """Whether the plan is IPv6-only (its nodes have no IPv4 address)."""
    return not any("address" in n for n in plan["nodes"].values())


def cluster_nic_names(plan: Plan, why: str = PRTE_NAMES_WHY) -> tuple[list[str], str]:
    """The names of the NICs that hold the nodes' cluster addresses, and "" when no node
    has another NIC of one of those names; else [] and the first node that has one."""
    names = sorted({cluster_interface(node)["name"] for node in plan["nodes"].values()})
    for node_name, node in plan["nodes"].items():
        own = cluster_interface(node)["name"]
        other = [i["name"] for i in node["interfaces"] if i["name"] in names and i["name"] != own]
        if other:
            return [], ("%s: its NIC %s has a name another node's cluster address is on (%s); %s"
                        % (node_name, other[0], ", ".join(names), why))
    return names, ""


def include_value(plan: Plan, by_name: bool = False) -> str:
    """What *_if_include takes: the node networks, or (by_name, or on an IPv6-only plan,
    whose networks no Open MPI component parses) the cluster NICs' names; MpiError when
    an IPv6-only plan's names do not mean the same on every node."""
    if not (by_name or ipv6_only(plan)):
        return ",".join(node_networks(plan))
    names, problem = cluster_nic_names(plan, IPV6_NAMES_WHY if ipv6_only(plan) else PRTE_NAMES_WHY)
    if problem and ipv6_only(plan):
        raise MpiError(problem)
    return ",".join(names)


IPV6_NOTE = ("# IPv6-only: Open MPI and PRRTE parse a network (a.b.c.d/n) only as IPv4, so the\n"
             "# cluster NICs by name; TCP over IPv6 needs an Open MPI and PRRTE built with\n"
             "# --enable-ipv6 (ompi_info: \"IPv6 support: yes\").\n")


PRTE_WHAT = "prte-mca-params.conf"


def prte_mca(plan: Plan, by_name: bool = False) -> str:
    """prte-mca-params.conf lines for Open MPI 5's runtime (PRRTE): its daemons'
    out-of-band channel only on the node networks. prterun hands its own values to
    every daemon, so the value is one for all nodes: networks, not NIC names; by_name:
    the names of the cluster NICs instead (PRRTE before 3.0.9, in Open MPI up to 5.0.7,
    matches a network against the wrong NIC; cluster_nic_names says when names are safe)."""
    value = include_value(plan, by_name)
    return ("# PRRTE (Open MPI 5) MCA parameters for %s (beonet): prterun and the prted\n"
            "# daemons talk out of band only on the NICs that hold a node's cluster\n"
            "# address%s. File: <prefix>/etc/prte-mca-params.conf (Debian 13: %s).\n"
            "%sprte_if_include = %s\n"
            "# A daemon reaches another node over whichever NIC its routes name, from its\n"
            "# cluster address: the netlink component would call such a peer unreachable.\n"
            "prtereachable = weighted\n"
            % (one_line(plan["topology"]["name"], PRTE_WHAT),
               ", by name (Open MPI 5.0.0-5.0.7 matches networks against the wrong NIC)"
               if by_name and not ipv6_only(plan) else "", PRTE_FILE,
               IPV6_NOTE if ipv6_only(plan) else "", one_line(value, PRTE_WHAT)))


def mpich_env_files(plan: Plan) -> dict[str, str]:
    """Each node's MPICH environment (KEY=value lines): the NIC that holds the node's
    cluster address, by its name, for either network layer an MPICH build has: ch4:ucx
    (Debian 13's) through UCX_NET_DEVICES, ch4:ofi through libfabric's tcp provider.
    Hydra's control and ch3 need none: the machine file by address keeps them there."""
    files = {}
    topology = one_line(plan["topology"]["name"], "mpich.env")
    for name, node in plan["nodes"].items():
        nic = one_line(cluster_interface(node)["name"], "mpich.env")
        files[name] = ("# MPICH 4 environment of %s (%s, beonet): its network layer only on %s,\n"
                       "# the NIC of its cluster address %s. ch4:ucx reads UCX_NET_DEVICES,\n"
                       "# ch4:ofi libfabric's tcp provider and FI_TCP_IFACE.\n"
                       "UCX_NET_DEVICES=%s\nFI_PROVIDER=tcp\nFI_TCP_IFACE=%s\n"
                       % (one_line(name, "mpich.env"), topology, nic,
                          one_line(cluster_address(node), "mpich.env"), nic, nic))
    return files


def mpich_env(plan: Plan) -> str:
    """Every node's MPICH environment, one [NODE] section a node; each section goes
    into that node's own file (MPICH_ENV_FILE), read by its processes at start."""
    parts = ["# MPICH 4 (Hydra, ch4:ucx or ch4:ofi) environment for %s (beonet), one [NODE]\n"
             "# section a node: write each into that node's %s. UCX and libfabric take NIC\n"
             "# names, and Hydra passes the launching shell's environment to every process:\n"
             "# let each process read its own node's file (docs/mpi.md), not the launcher.\n"
             % (one_line(plan["topology"]["name"], "mpich.env"), MPICH_ENV_FILE)]
    for name, text in mpich_env_files(plan).items():
        parts.append("[%s]\n%s" % (name, text))
    return "".join(parts)
