"""The node's persistent network configuration: what every backend shares.

Standard library only (runs on the nodes). The backends are the modules of
netbackends/ (systemd-networkd, NetworkManager, netplan, ifupdown: each a pure
function of the node plan returning {path: text}, its reload commands, its
folders); ``backend_files`` renders one by name. Here: the folders beonet may
write in (``config_path_problem``), the record of the files
beonet wrote and the ones an earlier plan wrote that this one does not
(``stale_paths``), and what tells the managers that files changed
(``manager_commands``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from . import frr
from .netbackends import BACKENDS, get
from .netbackends.base import NETWORKD
from .nodeplan import NodePlan

RECORD_PATH = "/var/lib/beonet/files"          # the persistent files beonet wrote, one a line
# The only folders beonet writes or removes files in (the persistent files' second wall).
CONFIG_DIRS = tuple(dict.fromkeys((NETWORKD,) + tuple(d for b in BACKENDS.values() for d in b.folders)
                                  + ("/etc/sysctl.d", "/etc/nftables.d", "/var/lib/beonet", "/etc/frr")))


def plain_path_problem(path: object) -> str | None:
    """Why path is not a plain absolute path (text, printable, normalised: no '..',
    no '//', no trailing '/'), or None."""
    if not isinstance(path, str) or not path.isprintable() or os.path.normpath(path) != path \
            or not path.startswith("/"):
        return "%r is not a plain absolute path" % (path,)
    return None


def config_path_problem(path: str) -> str | None:
    """Why beonet must not write (or remove) path on a node, or None: it must be a
    plain absolute path, inside one of CONFIG_DIRS, with nothing unprintable."""
    plain = plain_path_problem(path)
    if plain:
        return plain
    if not any(path.startswith(d + "/") for d in CONFIG_DIRS):
        return "%s lies outside the network configuration folders" % path
    return None


def backend_files(n: NodePlan, backend: str, renderer: str = "networkd") -> dict[str, str]:
    """{path: text} of the network configuration for one backend (netbackends' registry;
    ValueError for a name it does not hold)."""
    return get(backend).files(n, renderer)


def stale_paths(recorded: str | None, current: Iterable[str]) -> list[str]:
    """The files an earlier plan wrote (the record's lines) that this plan does not.

    Only beonet's own files (a name holding 'beonet') are ever named, and FRR's two
    files (whose names FRR fixes; the caller removes them only when beonet wrote what
    they hold: frr.written_by_beonet)."""
    keep = set(current)
    return sorted({p.strip() for p in (recorded or "").splitlines()
                   if config_path_problem(p.strip()) is None and p.strip() not in keep
                   and ("beonet" in os.path.basename(p.strip()) or p.strip() in frr.FILES)})


def manager_commands(changed: Iterable[str]) -> list[list[str]]:
    """What tells the network managers that these files changed (they read them at boot):
    each backend's reload commands (netbackends), whichever backend wrote them (a
    NetworkManager running beside another backend reloads its leave-alone file), then
    FRR's (frr.notify)."""
    changed = list(changed)
    return [cmd for b in BACKENDS.values() for cmd in b.reload(changed)] + frr.notify(changed)


def record_text(paths: Iterable[str]) -> str:
    return "".join(p + "\n" for p in sorted(paths))
