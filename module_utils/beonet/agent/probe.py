"""Asking neighbours whether they answer: one echo request each, all at once.

Standard library only (runs on the nodes).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable

from . import procs

SBIN = "/usr/sbin:/sbin:/usr/bin:/bin"


def ping_all(targets: Iterable[tuple[str, str]], wait: int = 1) -> set[tuple[str, str]] | None:
    """Send one echo request to each (address, NIC) out of that NIC, all at once, and
    wait at most wait seconds for the answers; the targets that answered. None when
    the node has no ping (nothing was asked)."""
    path = os.pathsep.join(filter(None, [os.environ.get("PATH"), SBIN]))
    ping = shutil.which("ping", path=path)
    if ping is None:
        return None
    started = []
    for addr, nic in targets:
        try:
            started.append(((addr, nic), procs.start(
                [ping, "-n", "-q", "-c", "1", "-W", str(wait), "-I", nic, addr])))
        except OSError:
            break
    return {target for target, proc in started if procs.wait(proc, wait + 2) == 0}
