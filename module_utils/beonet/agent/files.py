"""Writing a file atomically: readers see the old content or the new, never a part.

Standard library only (it runs on the nodes inside the beonet_node module, and
on the controller for the CLI's outputs).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from typing import IO, TYPE_CHECKING

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
    """Write into a device or pipe as it is: renaming over it would replace it."""
    with open(path, "wb") as fh:
        _put(fh, text)


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
    # Created readable by its owner only; the final mode is set before the rename.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if mode is not None else 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            _put(fh, text)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
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
