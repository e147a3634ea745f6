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


def _host(plan: Plan, name: str) -> str:
    """How a hosts file names a node: its cluster address (so the launchers reach it over
    the cluster, whatever the names resolve to); on an IPv6-only plan its name, which must
    resolve to its cluster address (beonet export hosts; playbooks/mpi.yml writes it there):
    Hydra's HOST:SLOTS would read an IPv6 address's ':' as the slots', and PRRTE 3.0
    (Open MPI 5.0.7) ends in a segmentation fault on an IPv6 address in its hostfile."""
    return name if mpi.ipv6_only(plan) else cluster_address(plan["nodes"][name])


def hostfile(plan: Plan, slots: Slots = 1) -> str:
    """Open MPI hostfile: each node (_host), with its slots."""
    lines = ["# Open MPI hostfile for %s (beonet): cluster address, slots, node"
             % plan["topology"]["name"]]
    lines += ["%s slots=%d # %s" % (_host(plan, name), slots_of(slots, name), name)
              for name in plan["nodes"]]
    return file_text(lines, "the hostfile")


def mpich_hosts(plan: Plan, slots: Slots = 1) -> str:
    """MPICH (Hydra) machine file: HOST:SLOTS (_host), one node a line, in plan order."""
    return file_text(["%s:%d" % (_host(plan, name), slots_of(slots, name)) for name in plan["nodes"]],
                     "the MPICH hosts file")


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
