"""The in-sync fast path: a node whose state has not changed since it last passed its
check is known to be in sync from one shell command, without starting the module.

Standard library only (runs on the nodes, and on the controller which builds the
same command). ``dump_command(n)`` prints everything the module's check reads
that can change on a node (the OS release; the plan's NICs: links and IPv4
addresses, and with IPv6 the global permanent IPv6 ones; the main routing table
(beonet's routes and FRR's daemons with routing.engine frr, ospf6d among them with
IPv6; of IPv6 beonet's and the static ones); forwarding (with IPv6 also the NICs'
accept_ra) and the failover sysctls; the nftables table; beonet's records and every
file they name; the network managers' units, files and profiles; the checkpoint
folder), in the C locale, through ``sha256sum``. When a node passes its check in sync
(or its change is confirmed), the module stores ``TOKEN SHA`` in FINGERPRINT, where TOKEN is the controller's
digest of what it asked (the node's plan, the prefixes, the parameters) and SHA the
dump's. A later run reads FINGERPRINT and the dump's SHA with one ``raw`` call: the
same line means the node is as it was when it was last found in sync, with the same
plan; anything else (a route, a file, a NIC, a reboot: FINGERPRINT is under /run)
runs the full check. Nothing is ever taken as in sync that the full check would not.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Iterable

from . import procs
from .apply import FORWARD6, NFT_PATH, STATE_PATH, SYSCTL_PATH, failover_sysctls, has_ipv6, sysctl_path
from .backends import RECORD_PATH
from .frr import watched
from .netbackends import BACKENDS, units
from .nodeplan import NodePlan
from .routes import PROTO

FINGERPRINT = "/run/beonet/fingerprint"
CHECKPOINTS = "/var/lib/beonet/checkpoint"
OS_RELEASE = "/etc/os-release /usr/lib/os-release"
# every backend's own files, units and the paths whose presence the probe reads (netbackends)
MANAGER_FILES = " ".join(glob for b in BACKENDS.values() for glob in b.watched)
UNITS = units()
PRESENT = " ".join(path for b in BACKENDS.values() for path in b.present)


def _nics(n: NodePlan) -> list[str]:
    return sorted({name for i in n["interfaces"] for name in [i["name"]] + list(i.get("members", []))})


def _units(units: Iterable[str]) -> str:
    """Each unit's files and the links that enable it."""
    return " ".join("/etc/systemd/system/%s /etc/systemd/system/*.wants/%s /lib/systemd/system/%s "
                    "/usr/lib/systemd/system/%s" % (u, u, u, u) for u in units)


def dump_command(n: NodePlan) -> str:
    """The shell command whose output's SHA-256 stands for the node's state (see above);
    NIC names are plan names (letters, digits and _ . - + @ only: nothing to quote)."""
    nics = _nics(n)
    six = has_ipv6(n)
    sysctls = " ".join([sysctl_path("net.ipv4.ip_forward")]
                       + [sysctl_path(k) for k, _v in failover_sysctls(n)] + (_sysctls6(n) if six else []))
    parts = ["cat %s" % OS_RELEASE]
    parts += ["ip -j link show dev %s; ip -j -4 addr show dev %s" % (nic, nic)
              + ("; ip -j -6 addr show dev %s scope global permanent" % nic if six else "") for nic in nics]
    frr = "routing" in n
    # with FRR the routes it learns change as links come and go; only beonet's own matter
    # (by number: `ip` knows the name beonet only where rt_protos names it)
    watch = " proto %d; ps -C %s -o pid=,comm=" % (PROTO, ",".join(watched(n)))
    parts += ["ip -j route show table main" + (watch if frr else "")]
    # IPv6: beonet's routes and those NetworkManager restores (static), never those that
    # router advertisements bring and age (their lifetimes count down)
    parts += ["ip -j -6 route show table main proto %d; ip -j -6 route show table main proto static" % PROTO
              ] if six else []
    parts += ["cat %s" % sysctls,
              "nft list table inet beonet",
              "cat %s %s %s %s" % (RECORD_PATH, STATE_PATH, SYSCTL_PATH, NFT_PATH),
              "cat $(cat %s)" % RECORD_PATH,
              "ls -d %s %s %s" % (_units(UNITS), PRESENT, "/run/systemd/system"),
              "cat %s" % MANAGER_FILES,
              "ls -AR %s" % CHECKPOINTS]
    return "%s 2>&1 | sha256sum" % shell(parts)


def _sysctls6(n: NodePlan) -> list[str]:
    """The IPv6 forwarding switch and, on a forwarding node, every NIC's accept_ra
    (apply.forwarding6_sysctls; in the order of their names)."""
    return [sysctl_path(FORWARD6)] + (["/proc/sys/net/ipv6/conf/*/accept_ra"] if n["forwarding"] else [])


def shell(parts: list[str]) -> str:
    """One shell command running parts in the C locale with the system's programs, its
    stdin from /dev/null (a raw call over SSH has a terminal that never ends a read)."""
    return "{ %s; } </dev/null" % "; ".join(["export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin"] + parts)


def agent_digest() -> str:
    """SHA-256 of the node agent's own code (every module of this package and of its
    sub-packages): a node found in sync by an agent that renders its files otherwise is
    not taken as in sync by this one. The same whatever name the package is imported
    under (a module's, a collection's, the CLI's)."""
    package = sys.modules[__name__.rpartition(".")[0]]        # this agent package
    digest = hashlib.sha256()
    for rel, name in _agent_modules(package.__name__, list(package.__path__)):
        spec = importlib.util.find_spec(name)
        source = spec.loader.get_source(name) if spec and spec.loader and hasattr(spec.loader, "get_source") \
            else None
        digest.update(("%s\n%s\n" % (rel, source or "")).encode())
    return digest.hexdigest()


def _agent_modules(package: str, path: list[str], prefix: str = "") -> list[tuple[str, str]]:
    """(name within the agent, full name) of every module under path, sorted; a
    sub-package's modules follow it."""
    out = []
    for info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
        full = "%s.%s" % (package, info.name)
        out.append((prefix + info.name, full))
        if info.ispkg:
            sub = importlib.import_module(full)
            out += _agent_modules(full, list(sub.__path__), prefix + info.name + ".")
    return out


def check_command(n: NodePlan) -> str:
    """What the controller runs with ``raw``: the stored line, then the dump's SHA."""
    return "cat %s 2>/dev/null || echo none; %s" % (FINGERPRINT, dump_command(n))


def matches(output: str, token: str) -> bool:
    """Whether check_command's output says the node is as it was when last found in sync
    with this token: the stored line is exactly TOKEN and the dump's SHA now."""
    lines = output.splitlines()
    if not token or len(lines) < 2 or not lines[1].split():
        return False
    return lines[0].strip() == "%s %s" % (token, lines[1].split()[0])


def dump_sha(n: NodePlan) -> str | None:
    """The dump's SHA-256 on this node (None when the shell fails)."""
    out = procs.run(["/bin/sh", "-c", dump_command(n)], 60)[1]
    return out.split()[0] if out.split() else None
