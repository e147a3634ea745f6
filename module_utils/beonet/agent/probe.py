"""Asking neighbours whether they answer: one echo request each, all at once.

Standard library only (runs on the nodes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable

SBIN = "/usr/sbin:/sbin:/usr/bin:/bin"


def ping_all(targets: Iterable[tuple[str, str]], wait: int = 1) -> set[tuple[str, str]] | None:
    """Send one echo request to each (address, NIC) out of that NIC, all at once, and
    wait at most wait seconds for the answers; the targets that answered. None when
    the node has no ping (nothing was asked)."""
    path = os.pathsep.join(filter(None, [os.environ.get("PATH"), SBIN]))
    ping = shutil.which("ping", path=path)
    if ping is None:
        return None
    procs = []
    for addr, nic in targets:
        try:
            procs.append(((addr, nic), subprocess.Popen(
                [ping, "-n", "-q", "-c", "1", "-W", str(wait), "-I", nic, addr],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
        except OSError:
            break
    answered = set()
    for target, proc in procs:
        try:
            if proc.wait(timeout=wait + 2) == 0:
                answered.add(target)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return answered
