"""The MPI stacks' network settings from the plan: the node networks (CIDR blocks
that hold every node's cluster address and nothing else), the runtime file of
Open MPI 5 (PRRTE) and MPICH's per-node environment (libfabric takes a NIC name,
not a network). They read the plan dict only."""

import ipaddress
from collections.abc import Mapping
from typing import Any, Union

from ..agent.names import one_line

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
    return next(i for i in node["interfaces"]
                if any(a.split("/")[0] == node["address"] for a in i["addresses"]))


def cluster_nic_names(plan: Plan) -> tuple[list[str], str]:
    """The names of the NICs that hold the nodes' cluster addresses, and "" when no node
    has another NIC of one of those names; else [] and the first node that has one."""
    names = sorted({cluster_interface(node)["name"] for node in plan["nodes"].values()})
    for node_name, node in plan["nodes"].items():
        own = cluster_interface(node)["name"]
        other = [i["name"] for i in node["interfaces"] if i["name"] in names and i["name"] != own]
        if other:
            return [], ("%s: its NIC %s has a name another node's cluster address is on (%s); "
                        "the runtime of Open MPI 5.0.0-5.0.7 can only be held to the cluster "
                        "networks by NIC names that mean the same on every node"
                        % (node_name, other[0], ", ".join(names)))
    return names, ""


PRTE_WHAT = "prte-mca-params.conf"


def prte_mca(plan: Plan, by_name: bool = False) -> str:
    """prte-mca-params.conf lines for Open MPI 5's runtime (PRRTE): its daemons'
    out-of-band channel only on the node networks. prterun hands its own values to
    every daemon, so the value is one for all nodes: networks, not NIC names; by_name:
    the names of the cluster NICs instead (PRRTE before 3.0.9, in Open MPI up to 5.0.7,
    matches a network against the wrong NIC; cluster_nic_names says when names are safe)."""
    value = ",".join(cluster_nic_names(plan)[0] if by_name else node_networks(plan))
    return ("# PRRTE (Open MPI 5) MCA parameters for %s (beonet): prterun and the prted\n"
            "# daemons talk out of band only on the NICs that hold a node's cluster\n"
            "# address%s. File: <prefix>/etc/prte-mca-params.conf (Debian 13: %s).\n"
            "prte_if_include = %s\n"
            "# A daemon reaches another node over whichever NIC its routes name, from its\n"
            "# cluster address: the netlink component would call such a peer unreachable.\n"
            "prtereachable = weighted\n"
            % (one_line(plan["topology"]["name"], PRTE_WHAT),
               ", by name (Open MPI 5.0.0-5.0.7 matches networks against the wrong NIC)"
               if by_name else "", PRTE_FILE, one_line(value, PRTE_WHAT)))


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
                       % (one_line(name, "mpich.env"), topology, nic, one_line(node["address"], "mpich.env"),
                          nic, nic))
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
