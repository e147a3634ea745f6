"""What every network backend declares, and the rendering helpers they share.

Standard library only (runs on the nodes). A backend is one module of this
package holding one ``Backend`` named ``BACKEND``; the package's ``__init__``
lists the modules (the registry). Everything that names backends (the modules'
choices, the detection order, the fast path's fingerprint, the folders beonet
may write in, the reload commands, the VM lab's images) asks the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..nodeplan import Interface, NodePlan, Route

if TYPE_CHECKING:
    from ..netmanager import Snapshot

HEADER = "# Ansible managed: written by beonet from the topology plan; do not edit.\n"
NETWORKD = "/etc/systemd/network"      # udev .link files go there whichever backend writes


def _no_problems(node: str, snap: Snapshot, bonds: bool) -> list[str]:
    return []


def _never(renderer: str) -> bool:
    return False


def _no_mode(path: str) -> int | None:
    return None


@dataclass(frozen=True)
class Backend:
    """One network backend: what it is called, how a node is found to use it, what beonet
    writes for it and what tells it the files changed.

    name: the value of the modules' ``backend`` and the role's ``beonet_node_backend``,
    and the VM lab's image name; unit: the systemd unit that brings NICs up at boot
    (None: another's, as netplan renders for networkd or NetworkManager); rank: the
    order in which ``auto`` tries the backends (lowest first); detect: whether a
    probed node boots with it; files(plan, renderer): {path: text}; reload(changed
    paths): the commands telling the running manager; folders: where its files go
    (the only folders beonet writes in, with the common ones); watched: shell globs
    of the manager's own files the fast path's fingerprint reads; present: the paths
    (programs, run-time folders) whose presence the probe and the fingerprint read;
    packages: the Debian
    packages its VM lab image adds; problems(node, snapshot, bonds): refusals before
    any change; uses_networkmanager(renderer): whether NetworkManager runs the NICs;
    mode(path): a file's mode when not 0644; aliases: other accepted names."""
    name: str
    title: str
    unit: str | None
    rank: int
    detect: Callable[[Snapshot], bool]
    files: Callable[[NodePlan, str], dict[str, str]]
    reload: Callable[[Sequence[str]], list[list[str]]]
    folders: tuple[str, ...]
    watched: tuple[str, ...]
    present: tuple[str, ...]
    packages: tuple[str, ...]
    problems: Callable[[str, Snapshot, bool], list[str]] = _no_problems
    uses_networkmanager: Callable[[str], bool] = _never
    mode: Callable[[str], int | None] = _no_mode
    aliases: tuple[str, ...] = ()


def is_bond_member(iface: Interface) -> bool:
    return bool(iface.get("bond"))


def ipv6(n: NodePlan) -> bool:
    """Whether the cluster NICs keep IPv6 (link-local at least): false only with ``ipv6: false``."""
    return n.get("ipv6", True)


def ipv6_only(n: NodePlan) -> bool:
    """Whether the plan is IPv6-only (``addressing: {ipv4: false}``: the node has no IPv4 address)."""
    return "address" not in n


def is_ipv6(text: str) -> bool:
    """Whether an address, ADDR/LEN or route destination of the plan is IPv6 (it holds a ':')."""
    return ":" in text


def by_family(texts: list[str]) -> tuple[list[str], list[str]]:
    """(the IPv4 ones, the IPv6 ones) of addresses or ADDR/LEN, each in the plan's order."""
    return [t for t in texts if not is_ipv6(t)], [t for t in texts if is_ipv6(t)]


def of_family(routes: list[Route], six: bool) -> list[Route]:
    """The IPv6 routes (six) or the IPv4 ones, in the plan's order."""
    return [r for r in routes if is_ipv6(r["to"]) == six]


def nic_routes(n: NodePlan, iface: Interface) -> list[Route]:
    """The routes written with this NIC: those whose (first) next hop leaves through it."""
    return [r for r in n["routes"] if r["dev"] == iface["name"]]


def is_multipath(r: Route) -> bool:
    """Whether r has two next hops or more (``len(next_hops(r)) > 1``)."""
    hops = r.get("nexthops")
    return hops is not None and len(hops) > 1


def single(routes: list[Route]) -> list[Route]:
    return [r for r in routes if not is_multipath(r)]


def tso_link_files(n: NodePlan) -> dict[str, str]:
    """udev .link files turning TSO off on the bonds whose plan says so (any manager)."""
    return {"%s/10-beonet-%s.link" % (NETWORKD, i["name"]): HEADER + (
        "[Match]\nOriginalName=%s\n\n[Link]\nTCPSegmentationOffload=false\n"
        "TCP6SegmentationOffload=false\n" % i["name"])
        for i in n["interfaces"] if i["kind"] == "bond" and i.get("tso") is False}


def no_reload(changed: Sequence[str]) -> list[list[str]]:
    """A manager that reads its files at boot only: nothing to tell it now."""
    return []


def enabled(snap: Snapshot, unit: str) -> bool:
    """Whether the probe found unit enabled (its ``*.wants`` link)."""
    return snap.units.get(unit) == "enabled"
