"""Folders of generated files, written as a whole, and the fork that writes them
beside the rest of a build.

A tree is filled in a new folder beside the old one (``stage``, ``fill``) and
the two are swapped (``commit``), so a build leaves the old tree or the new one,
never a mix, and no file of an earlier build (a node since removed from the
topology) survives. Its files are written plainly (no temporary file each): the
folder as a whole is what is atomic.

``Background`` runs a ``fill`` in a forked child while the parent renders the
other outputs (a job either may do is ``claim``ed by the first to get to it);
its ``wait`` raises OSError with the child's reason when the child failed,
``cancel`` stops it. Where there is no fork, the work runs at once.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterable

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def stage(path: str) -> str:
    """A new empty folder beside path, to fill and then put in its place."""
    path = os.path.abspath(path)
    parent, base = os.path.split(path)
    os.makedirs(parent, 0o755, exist_ok=True)
    if os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path)):
        raise NotADirectoryError(20, "Not a directory", path)
    folder = tempfile.mkdtemp(prefix=".%s.new-" % base, dir=parent)
    os.chmod(folder, 0o755)
    return folder


def fill(folder: str, files: Iterable[tuple[str, str]]) -> None:
    """Write files ((path relative to folder, UTF-8 text), ...) into folder."""
    made: set[str] = set()
    for rel, text in files:
        if not _confined(rel):
            raise ValueError("%r would lie outside %s" % (rel, folder))
        data = text.encode("utf-8")
        if not _plain(data):
            raise ValueError("%s would hold a control character" % rel)
        full = os.path.join(folder, rel.lstrip("/"))
        parent = os.path.dirname(full)
        if parent not in made:
            os.makedirs(parent, 0o755, exist_ok=True)
            made.add(parent)
        _write(full, data)


_LAYOUT_AND_PRINTABLE = bytes(range(32, 127)) + b"\n\t"


def _plain(data: bytes) -> bool:
    """Whether UTF-8 data holds no control character but line breaks and tabs
    (the files' own layout): scanned in C, as a build writes hundreds of MB."""
    if data.isascii():
        return not data.translate(None, _LAYOUT_AND_PRINTABLE)
    return data.decode("utf-8").replace("\n", "").replace("\t", "").isprintable()


def _confined(rel: str) -> bool:
    """Whether rel, taken relative to a folder, names a file inside it (by its text:
    the staged folder is new and holds no links)."""
    parts = rel.lstrip("/").split("/")
    return all(part not in ("", ".", "..") for part in parts) and rel.isprintable()


def _write(path: str, data: bytes) -> None:
    """A new file of data (mode 0666 less the umask): plain system calls, no file
    object, as tens of thousands are written."""
    fd = os.open(path, _NEW_FILE, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def commit(folder: str, path: str) -> None:
    """Put the filled folder at path; the folder that was there is removed."""
    path = os.path.abspath(path)
    if not os.path.lexists(path):
        os.rename(folder, path)
        return
    old = folder.replace(".new-", ".old-", 1)
    os.rename(path, old)
    os.rename(folder, path)
    shutil.rmtree(old, ignore_errors=True)


def claim(folder: str, job: str) -> bool:
    """True for the first process (of those sharing folder) to claim job, once."""
    try:
        os.mkdir(os.path.join(folder, ".claim-" + job))
    except FileExistsError:
        return False
    return True


def unclaim(folder: str, jobs: Iterable[str]) -> None:
    """Remove the claims on jobs (before the folder is committed)."""
    for job in jobs:
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(os.path.join(folder, ".claim-" + job))


def discard(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)


class Background:
    """Work running in a forked child (or already done, where there is no fork)."""

    def __init__(self, work: Callable[[], None]) -> None:
        self.pid = 0
        if not hasattr(os, "fork"):
            work()
            return
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:                              # the child: work, then leave at once
            os.close(read_end)
            os._exit(_run_child(work, write_end))
        os.close(write_end)
        self.pid, self.pipe = pid, read_end

    def wait(self) -> None:
        """Wait for the work; OSError with the child's reason when it failed."""
        if not self.pid:
            return
        with os.fdopen(self.pipe, "rb") as fh:
            reason = fh.read().decode("utf-8", "replace")
        _pid, status = os.waitpid(self.pid, 0)
        self.pid = 0
        if status != 0:
            raise OSError(reason or "the writer stopped with status %d" % status)

    def cancel(self) -> None:
        """Stop the work (its output is to be thrown away) and reap the child."""
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
            os.close(self.pipe)
            os.waitpid(self.pid, 0)
            self.pid = 0


def _run_child(work: Callable[[], None], pipe: int) -> int:
    try:
        work()
    except BaseException as exc:                  # reported to the parent, not printed here
        os.write(pipe, (getattr(exc, "strerror", None) or str(exc)).encode("utf-8", "replace"))
        return 1
    return 0
