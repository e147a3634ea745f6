"""Exports for other tools, by name: /etc/hosts, MPI hostfiles, Open MPI's network
settings (here); Open MPI 5's runtime file and MPICH's environment (mpi.py);
Slurm's node lines, topology.conf and topology.yaml (slurm.py). They read the plan
dict only."""

from collections.abc import Callable

from ..agent.names import file_text, one_line
from . import mpi, slurm
from .ipfamily import KEYS, cluster_address, node_addresses
from .mpi import Plan, Slots, node_networks, slots_of
from .slurm import hostlist

__all__ = ["hostlist", "node_networks"]      # kept here for the callers of before


def hosts(plan: Plan) -> str:
    """Each node's name at its addresses (the IPv4 lines, then the IPv6 ones), then
    NODE-NIC at each other address of its NICs."""
    lines = ["# /etc/hosts entries for %s (beonet)" % plan["topology"]["name"]]
    for key in KEYS:
        lines += ["%-15s %s" % (node[key], name) for name, node in plan["nodes"].items() if key in node]
    for name, node in plan["nodes"].items():
        own = node_addresses(node)
        for iface in node["interfaces"]:
            for a in iface["addresses"]:
                addr = a.split("/")[0]
                if addr not in own:
                    lines.append("%-15s %s-%s" % (addr, name, iface.get("logical", iface["name"])))
    return file_text(lines, "/etc/hosts")


def hostfile(plan: Plan, slots: Slots = 1) -> str:
    """Open MPI hostfile: each node by its cluster address (so mpirun and its daemons
    reach it over the cluster, whatever the names resolve to), with its slots."""
    lines = ["# Open MPI hostfile for %s (beonet): cluster address, slots, node"
             % plan["topology"]["name"]]
    lines += ["%s slots=%d # %s" % (cluster_address(node), slots_of(slots, name), name)
              for name, node in plan["nodes"].items()]
    return file_text(lines, "the hostfile")


def mpich_hosts(plan: Plan, slots: Slots = 1) -> str:
    """MPICH (Hydra) machine file: ADDRESS:SLOTS, one node a line, in plan order.
    MpiError on an IPv6-only plan: the ':' of an IPv6 address reads as the slots'."""
    if mpi.ipv6_only(plan):
        raise mpi.MpiError("Hydra's machine file (HOST:SLOTS) cannot hold an IPv6 address (its ':' "
                           "reads as the slots'): give mpiexec the hosts by name (-hosts), the "
                           "names resolving to their cluster addresses (beonet export hosts)")
    return file_text(["%s:%d" % (cluster_address(node), slots_of(slots, name))
                      for name, node in plan["nodes"].items()], "the MPICH hosts file")


def openmpi_mca(plan: Plan) -> str:
    """openmpi-mca-params.conf lines confining the TCP transport and the runtime's
    out-of-band channel to the networks of the nodes' cluster addresses."""
    nets = one_line(mpi.include_value(plan), "openmpi-mca-params.conf")
    return ("# Open MPI MCA parameters for %s (beonet): MPI traffic (btl tcp) and the\n"
            "# runtime's out-of-band channel (oob tcp) only on the NICs that hold a node's\n"
            "# cluster address; every node routes to these networks, and to no other.\n"
            "%sbtl_tcp_if_include = %s\noob_tcp_if_include = %s\n"
            "# A process reaches another node over whichever NIC its routes name, from its\n"
            "# cluster address: the netlink component would call such a peer unreachable.\n"
            "reachable = weighted\n"
            % (one_line(plan["topology"]["name"], "openmpi-mca-params.conf"),
               mpi.IPV6_NOTE if mpi.ipv6_only(plan) else "", nets, nets))


# Each takes the plan, those of SLOTS_EXPORTS also the slots per node.
EXPORTS: dict[str, Callable[..., str]] = {
    "hosts": hosts, "slurm": slurm.topology_conf, "hostfile": hostfile, "mpich-hosts": mpich_hosts,
    "openmpi-mca": openmpi_mca, "prte-mca": mpi.prte_mca, "mpich-env": mpi.mpich_env,
    "slurm-nodes": slurm.nodes, "slurm-topology-yaml": slurm.topology_yaml}
SLOTS_EXPORTS = {"hostfile", "mpich-hosts", "slurm-nodes"}     # the exports that take slots
