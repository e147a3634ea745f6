"""What beonet_node checks on the node before any host changes, besides the plan
itself: the operating system (from /etc/os-release), the plan's NICs (present, with
carrier) and the management interface and address Ansible would otherwise take from
gathered facts. Standard library only.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

from .nodeplan import NodePlan

if TYPE_CHECKING:
    from collections.abc import Iterable

OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")
# os-release IDs of each OS family, as Ansible's ansible_facts['os_family'] names them.
OS_FAMILIES = {
    "Debian": ("debian", "ubuntu", "raspbian", "linuxmint", "pop", "kali", "devuan"),
    "RedHat": ("rhel", "centos", "fedora", "rocky", "almalinux", "ol", "amzn", "scientific",
               "cloudlinux", "eurolinux", "virtuozzo"),
    "Archlinux": ("arch", "archarm", "manjaro", "endeavouros"),
    "Suse": ("suse", "opensuse", "opensuse-leap", "opensuse-tumbleweed", "sles", "sles_sap", "sled"),
}
# The address whose route Ansible's default_ipv4 fact reads (ip -4 route get).
ROUTE_PROBE = "8.8.8.8"
CABLES = ("Check the cables against the cabling sheet (beonet export TOPOLOGY cabling), "
          "or run playbooks/discover.yml to find where they go.")


def os_release(text: str) -> dict[str, str]:
    """The KEY=value pairs of an os-release file (values unquoted)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep or key.startswith("#"):
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            words = [value]
        out[key] = " ".join(words)
    return out


def os_family(text: str | None) -> str:
    """The OS family of a node from its os-release text (ID first, then ID_LIKE);
    for an OS of no known family its NAME (or ID), as Ansible reports it."""
    fields = os_release(text or "")
    ids = [fields.get("ID", "").lower()] + fields.get("ID_LIKE", "").lower().split()
    for one in ids:
        for family, members in OS_FAMILIES.items():
            if one in members:
                return family
    return fields.get("NAME") or fields.get("ID") or "an unknown OS (no /etc/os-release)"


def os_problem(node: str, family: str, supported: Iterable[str]) -> str | None:
    """Why this node's OS is refused (None: it is supported)."""
    supported = list(supported)
    if family in supported:
        return None
    return "%s: %s is not supported (supported: %s)" % (node, family, ", ".join(supported))


def nic_problem(node: str, n: NodePlan, nics: Iterable[dict[str, Any]],
                down: Iterable[str] = ()) -> str | None:
    """Why the plan's Ethernet NICs are not all there with carrier on this node (None
    when they are); nics: the probe's candidate NICs ({name, carrier}); down: dead
    nodes (a point-to-point NIC whose peer is one of them has no carrier to show)."""
    dead_peers = set(down)
    carrier = {nic["name"]: bool(nic["carrier"]) for nic in nics}
    dead = []
    for i in n["interfaces"]:
        if i["kind"] != "ethernet":
            continue
        what = "%s (%s on %s)" % (i["name"], i.get("logical") or i["name"], i["segment"])
        if i["name"] not in carrier:
            dead.append(what + " is not there")
        elif not carrier[i["name"]] and i.get("peer", {}).get("node") not in dead_peers:
            dead.append(what + " has no carrier")
    if not dead:
        return None
    return "%s: %s. %s" % (node, "; ".join(dead), CABLES)


def default_ipv4(route_get: str) -> tuple[str, str]:
    """(interface, address) of ``ip -j -4 route get ROUTE_PROBE`` output; ("none", "")
    when there is no such route (what the role's fact-based defaults gave)."""
    try:
        routes = json.loads(route_get or "[]")
    except ValueError:
        return "none", ""
    if not isinstance(routes, list) or not routes or not isinstance(routes[0], dict):
        return "none", ""
    return str(routes[0].get("dev") or "none"), str(routes[0].get("prefsrc") or "")
