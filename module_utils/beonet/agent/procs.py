"""Processes of their own: starting and running programs, detaching one from its
caller, telling whether one runs.

Standard library only (runs on the nodes: the discovery listener and the rollback
waiter outlive the module call that starts them; and on the controller for the labs).

``start`` is the one place the agent (and the controller's inventory check) starts a
program. Ansible's advice is AnsibleModule.run_command, but the agent also runs
without an AnsibleModule: in the rollback waiter and the discovery listener (processes
of their own, detached from the module call) and as a plain command (bundle.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import IO

NOT_RUN = 127           # the status of a program that could not be started (as the shell's)
TIMED_OUT = 124         # ... of one that did not end in time and was stopped (as timeout(1)'s)


def start(argv: Sequence[str], stdout: int | IO[bytes] = subprocess.DEVNULL,
          stderr: int | IO[bytes] = subprocess.DEVNULL, env: Mapping[str, str] | None = None,
          limits: Callable[[], None] | None = None) -> subprocess.Popen[bytes]:
    """Start a program in a session of its own (so stop() ends whatever it started too),
    its standard input /dev/null, stdout and stderr subprocess.PIPE, DEVNULL or an open
    file; limits runs in the child before the program (setrlimit). OSError when it
    cannot be started."""
    # ansible-test's advice, AnsibleModule.run_command, has no AnsibleModule here (above)
    return subprocess.Popen(  # pylint: disable=ansible-bad-function
        list(argv), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env,
        preexec_fn=limits, start_new_session=True)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill a program start() started, with its whole session, and reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def wait(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    """The status of a program start() started, or None when it did not end within
    timeout seconds; then, and on an interrupt (Ctrl-C, re-raised), nothing of it is
    left running."""
    try:
        return proc.wait(timeout)
    except BaseException as exc:
        stop(proc)
        if isinstance(exc, subprocess.TimeoutExpired):
            return None
        raise


def run(argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None,
        ) -> tuple[int, str, str]:
    """Run a program to its end within timeout seconds: (status, stdout, stderr), the
    text decoded as UTF-8. NOT_RUN when it cannot be started, TIMED_OUT when it did not
    end in time (stopped), each with its reason as stderr."""
    try:
        proc = start(argv, subprocess.PIPE, subprocess.PIPE, env)
    except OSError as exc:
        return NOT_RUN, "", "cannot run %s: %s" % (argv[0], exc.strerror or exc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException as exc:
        stop(proc)
        proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            return TIMED_OUT, "", "no answer within %g s" % timeout
        raise
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


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
