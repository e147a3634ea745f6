"""Writing a file atomically: readers see the old content or the new, never a part.

Standard library only (it runs on the nodes inside the beonet_node module, and
on the controller for the CLI's outputs).
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import tempfile
from typing import IO, TYPE_CHECKING

from .names import escaped

if TYPE_CHECKING:
    from typing import TypeAlias

    # text, bytes, or pieces of either and open binary files (copied from where they are)
    Content: TypeAlias = "str | bytes | list[str | bytes | IO[bytes]]"


def _fsync_folder(folder: str) -> None:
    """Make the rename durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _is_special(path: str) -> bool:
    """Whether path is an existing device, pipe or socket (``-o /dev/null``, a FIFO)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _write_through(path: str, text: Content) -> None:
    """Write into a device or pipe as it is: renaming over it would replace it. A
    pipe nobody reads is an error, not a wait that never ends."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "no process reads this pipe", path) from None
        raise
    os.set_blocking(fd, True)
    try:
        with os.fdopen(fd, "wb") as fh:
            _put(fh, text)
    except OSError as exc:
        exc.filename = exc.filename or path
        raise


def _put(fh: IO[bytes], text: Content) -> None:
    for part in text if isinstance(text, list) else [text]:
        if isinstance(part, str):
            fh.write(part.encode("utf-8"))
        elif isinstance(part, bytes):
            fh.write(part)
        else:
            shutil.copyfileobj(part, fh, 1 << 20)


def atomic_write(path: str, text: Content, mode: int | None = None,
                 durable: bool = True) -> None:
    """Write text (UTF-8; bytes as they are) to path through a temporary file in the same folder.

    text may also be a list of such pieces and open binary files, written one
    after the other (a file from where it stands to its end): a large file
    made of parts is never held whole in memory.

    The folder is created (with its parents, mode 0755) when missing. The
    temporary file is written, flushed to disk, given its mode and renamed over
    path. mode: the file's permission bits; None keeps those of the file it
    replaces, or gives a new file the umask's default (as ``open`` would). On
    any error the temporary file is removed and path is left as it was. An
    existing device, pipe or socket (``/dev/null``) is written into, never replaced.
    durable=False skips the flushes to disk (still atomic, not crash-safe): for
    many generated files at once, such as the CLI's outputs."""
    path = os.path.abspath(path)
    if _is_special(path):
        _write_through(path, text)
        return
    folder = os.path.dirname(path)
    os.makedirs(folder, 0o755, exist_ok=True)
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = None
    tmp = os.path.join(folder, ".%s.%s.tmp" % (os.path.basename(path), secrets.token_hex(6)))
    try:
        # Created readable by its owner only; the final mode is set before the rename.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if mode is not None else 0o666)
        with os.fdopen(fd, "wb") as fh:
            _put(fh, text)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename in (tmp, None):
            exc.filename = path               # the file asked for, not the temporary one
        raise
    if durable:
        _fsync_folder(folder)


def read_text(path: str) -> str | None:
    """A file's text, or None when it cannot be read (missing, no permission)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


class NotAFile(ValueError):
    """A path that is not a regular file where one is read (its reason as text)."""


def read_regular(path: str, limit: int) -> bytes:
    """At most limit + 1 bytes of the regular file at path (links followed): a
    caller finding more knows it is too big. NotAFile for a folder, a pipe, a
    socket or a device (never opened in a way that blocks) or a file that cannot
    be opened, with the reason."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:       # ValueError: a NUL byte in the name
        raise NotAFile(getattr(exc, "strerror", None) or str(exc)) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotAFile("a folder, not a file" if stat.S_ISDIR(mode) else
                       "a pipe, socket or device, not a file")
    with os.fdopen(fd, "rb") as fh:
        try:
            return fh.read(limit + 1)
        except OSError as exc:                 # /proc/self/mem and other files that refuse
            raise NotAFile(exc.strerror or str(exc)) from None


NAME_MAX = 255          # bytes of one file name (Linux's file systems)
PATH_MAX = 4096         # bytes of a whole path


def too_long(path: str) -> str | None:
    """Why no file can be made at path because of its name's length, or None."""
    full = os.path.abspath(path).encode("utf-8", "surrogateescape")
    if len(full) >= PATH_MAX or any(len(part) > NAME_MAX for part in full.split(b"/")):
        return "cannot be written: File name too long (over %d bytes, or a name over %d)" % (
            PATH_MAX, NAME_MAX)
    return None


def output_problem(path: str, folder: bool = False, regular: bool = False) -> str | None:
    """Why a file (folder=True: a folder) cannot be written at path, or None: a file
    is created and removed in the nearest folder that exists, so that a run which
    cannot write all its outputs writes none of them. An existing device or pipe
    is written into (``-o /dev/null``), unless regular: a file among others in an
    output folder must be a regular file or nothing."""
    full = os.path.abspath(path)
    long = too_long(full)
    if long:
        return long
    if os.path.isdir(full) != folder and os.path.exists(full):
        return "not a folder" if folder else "a folder, not a file"
    if not folder and os.path.exists(full) and not os.path.isfile(full):
        return "a pipe, socket or device, not a file" if regular else None
    probe = full if folder else os.path.dirname(full)
    while not os.path.lexists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        return "cannot be made: %s is not a folder" % escaped(probe)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".beonet-", dir=probe)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        return "cannot be written: %s (in %s)" % (exc.strerror or exc, escaped(probe))
    return None
