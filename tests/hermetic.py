"""No unit test reads the controller: the guard (imported by conftest.py).

A test runs the same on a controller with NetworkManager, netplan and ifupdown
installed as on one without: neither beonet's code nor a test reads the test
machine's ``/etc``, ``/proc``, ``/sys``, ``/run`` or ``/var/lib``, runs a program
that is not the venv's (or a stand-in a test wrote into its temporary folder), or
looks a program up on a PATH outside those. Tests hand the agent a fake tree
instead (``root``, ``sysfs``, ``proc`` arguments and the modules' path constants).

An audit hook (``sys.addaudithook``: ``open``, ``os.listdir``, ``os.scandir``,
``glob.glob``, ``subprocess.Popen``, ``os.system``, ``os.exec``, ``os.posix_spawn``),
wrappers of ``os.stat``, ``os.lstat``, ``os.access`` and ``os.readlink`` (what
``os.path.exists`` and ``realpath`` call; they have no audit event) and of
``shutil.which`` find such a read and stop it (``HostRead``); the
test fails even where the code caught the exception. Only reads that come from
beonet's code or the tests count: the innermost caller outside the standard library
is a file of ``module_utils/beonet/``, ``library/`` or ``tests/``. What Python and
the libraries read for themselves (Ansible, PyYAML, pytest) is theirs.

A test that needs the machine itself (a network namespace, the C compiler, Graphviz)
says so with ``@pytest.mark.host("why")`` and is left alone; it skips where the
machine cannot give it what it needs. The guard watches the pytest process, not the
programs it starts (``ansible-playbook`` and ``python -c`` children).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
HOST_STATE = ("/etc", "/proc", "/sys", "/run", "/var/lib")
_OURS = tuple(str(ROOT / d) + os.sep for d in ("library", "tests", "scripts"))
_PACKAGE = os.sep + os.path.join("module_utils", "beonet") + os.sep
_STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
_FILES = ("open", "os.listdir", "os.scandir", "glob.glob", "glob.glob/2")
_PROGRAMS = ("subprocess.Popen", "os.exec", "os.posix_spawn", "os.system")
_which = shutil.which
_real = os.path.realpath
_STATS = ("stat", "lstat", "access", "readlink")     # what os.path.exists & co. call


class HostRead(Exception):
    """A read of the controller's own state from a unit test (not an OSError, so the
    code under test does not take it for a missing file)."""


class _State:
    host = True             # reads allowed: a host test running (or the guard not installed)
    found: list[str] = []   # what the running test read


STATE = _State()
_EXEMPT: set[Any] = set()


def reads_the_host(func: Any) -> Any:
    """Mark a conftest helper that reads the host on purpose (the sysctl check)."""
    _EXEMPT.add(func.__code__)
    return func


def _venv_dirs() -> tuple[str, ...]:
    bindir = os.path.dirname(os.path.abspath(sys.executable))
    temp = tempfile.gettempdir()
    dirs = {bindir, os.path.realpath(bindir), temp, os.path.realpath(temp)}
    return tuple(d.rstrip(os.sep) + os.sep for d in dirs)


_ALLOWED_DIRS = _venv_dirs()
_ALLOWED_PROGRAMS = {sys.executable, os.path.realpath(sys.executable)}


@functools.cache
def _kind(name: str) -> str:
    """A code file: "stdlib" (looked through), "ours" (beonet's, a test's) or "other"."""
    if name.startswith("<") or (_real(name).startswith(_STDLIB) and "site-packages" not in name):
        return "stdlib"
    return "ours" if (_PACKAGE in name or name.startswith(_OURS)) and name != __file__ else "other"


def _culprit(frame: FrameType | None) -> str | None:
    """The file of the innermost caller outside the standard library, when it is
    beonet's or a test's; None for a library's (or the guard's own)."""
    while frame is not None:
        if frame.f_code in _EXEMPT:
            return None
        kind = _kind(frame.f_code.co_filename)
        if kind != "stdlib":
            return frame.f_code.co_filename if kind == "ours" else None
        frame = frame.f_back
    return None


def _host_path(path: Any, folder: Any = None) -> str | None:
    if isinstance(path, int) or path is None:
        return None
    path = os.fsdecode(path)
    if folder is not None and not isinstance(folder, int):
        path = os.path.join(os.fsdecode(folder), path)
    path = os.path.normpath(os.path.abspath(path))
    return path if any(path == p or path.startswith(p + os.sep) for p in HOST_STATE) else None


def _allowed_program(program: str, path: str | None) -> bool:
    if os.sep not in program:
        found = _which(program, path=path)
        if found is None:
            return False
        program = found
    program = os.path.abspath(program)
    return (program in _ALLOWED_PROGRAMS or program.startswith(_ALLOWED_DIRS)
            or os.path.realpath(program).startswith(_ALLOWED_DIRS))


def _foreign_program(event: str, args: tuple[Any, ...]) -> str | None:
    if event == "os.system":
        return os.fsdecode(args[0])
    env = args[3] if event == "subprocess.Popen" else args[2]
    program = os.fsdecode(args[0])
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    return None if _allowed_program(program, os.fsdecode(path)) else program


def _what(event: str, args: tuple[Any, ...]) -> str | None:
    if event in _FILES:
        path = _host_path(args[0], args[2] if event == "glob.glob/2" else None)
        return path and "%s %s" % (event, path)
    if event in _PROGRAMS:
        program = _foreign_program(event, args)
        return program and "runs %s" % program
    return None


def _report(what: str, frame: FrameType | None) -> None:
    culprit = _culprit(frame)
    if culprit is None:
        return
    line = "%s (from %s)" % (what, os.path.relpath(culprit, ROOT))
    STATE.found.append(line)
    raise HostRead("a unit test read the controller: " + line)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if STATE.host or (event not in _FILES and event not in _PROGRAMS):
        return
    what = _what(event, args)
    if what:
        _report(what, sys._getframe(1))


def _guarded_which(cmd: str, mode: int = os.F_OK | os.X_OK, path: str | None = None) -> str | None:
    """shutil.which, that stops a look-up on the controller's PATH."""
    if not STATE.host:
        dirs = [os.path.dirname(cmd)] if os.sep in cmd else (
            path if path is not None else os.environ.get("PATH", os.defpath)).split(os.pathsep)
        outside = [d for d in dirs if d and not (os.path.abspath(d) + os.sep).startswith(_ALLOWED_DIRS)]
        if outside:
            _report("shutil.which(%r) on %s" % (cmd, os.pathsep.join(outside)), sys._getframe(1))
    return _which(cmd, mode, path)


def _watched(name: str) -> Any:
    """os.stat & co., that stop a look at the host's files (they have no audit event)."""
    real = getattr(os, name)

    @functools.wraps(real)
    def watched(path: Any, *args: Any, **kwargs: Any) -> Any:
        if not STATE.host:
            found = _host_path(path, kwargs.get("dir_fd"))
            if found:
                _report("os.%s %s" % (name, found), sys._getframe(1))
        return real(path, *args, **kwargs)
    return watched


def install() -> None:
    """Once per process: the audit hook (it cannot be removed), os.stat & co. and
    shutil.which."""
    if getattr(install, "done", False):
        return
    install.done = True  # type: ignore[attr-defined]
    sys.addaudithook(_audit)
    for name in _STATS:
        setattr(os, name, _watched(name))
    shutil.which = _guarded_which  # type: ignore[assignment]  # one signature of the overloaded which
    STATE.host = False   # collection (test modules' top level) is guarded too


def guard_phase(item: pytest.Item, setup: bool = False) -> Generator[None, Any, Any]:
    """Around each test's setup, call and teardown: the test fails on any host read
    (caught by the code or not), unless it is marked ``host`` with a reason."""
    marker = item.get_closest_marker("host")
    if setup and marker is not None and not (marker.args or marker.kwargs.get("reason")):
        pytest.fail("@pytest.mark.host needs a reason: what of the machine the test needs",
                    pytrace=False)
    STATE.host, STATE.found = marker is not None, []
    try:
        return (yield)
    finally:
        found, STATE.found, STATE.host = STATE.found, [], False
        if found:
            pytest.fail("the test read the controller (give the code a fake tree, or mark the "
                        "test host with a reason):\n  " + "\n  ".join(found), pytrace=False)


@functools.cache
def _lacks(programs: tuple[str, ...], netns: bool) -> str | None:
    missing = [p for p in programs if _which(p) is None]
    if missing:
        return "needs %s, not installed here" % " and ".join(missing)
    if netns and os.geteuid() != 0:
        return "needs root (network namespaces)"
    unshare = _which("unshare")
    if netns and (unshare is None or subprocess.run([unshare, "-n", "true"], capture_output=True,
                                                    check=False).returncode):
        return "needs network namespaces (root with CAP_SYS_ADMIN; not in an unprivileged container)"
    return None


def needs_host(reason: str, *programs: str, netns: bool = False) -> Any:
    """Mark a test that needs the machine itself (``host``, with the reason) and skip it
    where the machine lacks what it needs: programs on its PATH, a network namespace."""
    problem = _lacks(programs, netns)

    def mark(obj: Any) -> Any:
        obj = pytest.mark.skipif(problem is not None, reason=problem or "")(obj)
        return pytest.mark.host(reason)(obj)
    return mark


@contextlib.contextmanager
def caught() -> Iterator[list[str]]:
    """For the guard's own tests: the host reads of the block, stopped and taken back
    so that the test itself does not fail."""
    found: list[str] = []
    before = list(STATE.found)
    try:
        yield found
    except HostRead:
        pass
    found += STATE.found[len(before):]
    STATE.found = before
