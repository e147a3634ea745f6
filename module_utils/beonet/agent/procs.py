"""Processes of their own: detaching one from its caller, telling whether one runs.

Standard library only (runs on the nodes: the discovery listener and the rollback
waiter outlive the module call that starts them; and on the controller for the labs).
"""

from __future__ import annotations

import os


def detach() -> None:
    """Standard streams to /dev/null (a caller waits for their end: ``docker exec``, SSH),
    a new session (no signal of the caller's terminal reaches it)."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    os.setsid()


def alive(pid: int) -> bool:
    """Whether a process of that pid runs (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
