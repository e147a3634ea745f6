"""A set of files in one folder brought to what was asked, in one pass.

Standard library only (it runs on the nodes inside the beonet_files module). A
role that writes several small files to a node (the MPI files, Slurm's files)
does it in one module call instead of one remote call per file: on a cluster
of many nodes that is most of the role's time.
"""

from __future__ import annotations

import os
import stat
from typing import NamedTuple, TypedDict

from .files import NotAFile, atomic_write, read_regular
from .names import shown

MAX_FILE = 4 * 1024 * 1024      # bytes of one file's content
MAX_FILES = 256                 # files in one call


class FileSpec(TypedDict, total=False):
    """One file of the folder, as the module's caller gives it."""

    name: str           # a plain file name in the folder
    content: str        # its text (state present)
    secret_content: str  # or this text, never shown in a diff (a private key)
    mode: str           # octal permission bits, '0644' when not given
    state: str          # present | absent


class Change(NamedTuple):
    """What one file needs: written (new content or mode), or removed."""

    name: str
    action: str                 # write | remove
    before: str | None          # its text now (None: no such file, or not shown)
    after: str | None           # its text after
    mode: int | None            # its mode after
    secret: bool                # its text is never shown


def _octal(value: object, where: str, problems: list[str]) -> int | None:
    text = str(value)
    if not text or len(text) > 4 or any(c not in "01234567" for c in text):
        problems.append("%s: %s is not an octal mode such as '0644'" % (where, shown(value)))
        return None
    mode = int(text, 8)
    if mode & 0o7002:
        problems.append("%s: %s sets %s: beonet writes no setuid, setgid, sticky or "
                        "world-writable file or folder" % (where, shown(value), ", ".join(
                            w for bit, w in ((0o4000, "setuid"), (0o2000, "setgid"),
                                             (0o1000, "sticky"), (0o002, "world-write"))
                            if mode & bit)))
        return None
    return mode


def _unwritable(text: str) -> bool:
    """Whether text cannot be written as UTF-8 (a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def spec_problems(dest: str, specs: list[FileSpec], folder_mode: object) -> list[str]:
    """Everything wrong with a call, at once (nothing is written when there is any)."""
    problems: list[str] = []
    if not dest or not os.path.isabs(dest) or not dest.isprintable():
        problems.append("dest: %s is not an absolute folder path of printable text" % shown(dest))
    if folder_mode is not None:
        _octal(folder_mode, "mode", problems)
    if len(specs) > MAX_FILES:
        problems.append("files: %d files, more than %d in one call" % (len(specs), MAX_FILES))
        return problems
    seen: set[str] = set()
    for i, spec in enumerate(specs):
        where = "files[%d]" % i
        name = spec.get("name")
        if not isinstance(name, str) or name in ("", ".", "..") or "/" in name \
                or not name.isprintable():
            problems.append("%s.name: %s is not a plain file name" % (where, shown(name)))
            continue
        if name in seen:
            problems.append("%s.name: %s is given twice" % (where, name))
        seen.add(name)
        state = spec.get("state", "present")
        if state not in ("present", "absent"):
            problems.append("%s.state: %r is not present or absent" % (where, state))
        elif state == "present" and not isinstance(_content(spec), str):
            problems.append("%s.content: a text is required (state present)" % where)
        elif state == "present" and _unwritable(_content(spec)):
            problems.append("%s.content: holds a lone surrogate, not UTF-8 text" % where)
        elif state == "present" and len(_content(spec).encode("utf-8", "surrogatepass")) > MAX_FILE:
            problems.append("%s.content: over %d MiB" % (where, MAX_FILE // (1024 * 1024)))
        _octal(spec.get("mode", "0644"), where + ".mode", problems)
    return problems


def _content(spec: FileSpec) -> str:
    """A file's text, given as content or secret_content."""
    text = spec.get("content")
    return spec.get("secret_content", "") if text is None else text


def _current(path: str) -> tuple[str | None, int | None]:
    """A file's text and mode, (None, None) when there is none. NotAFile for a folder or
    a device; a file that is not UTF-8 counts as different from any text."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None, None
    if stat.S_ISLNK(st.st_mode):
        return None, None                   # a link is replaced by the file
    data = read_regular(path, MAX_FILE)
    try:
        return data.decode("utf-8"), st.st_mode & 0o7777
    except UnicodeDecodeError:
        return "", st.st_mode & 0o7777


def changes(dest: str, specs: list[FileSpec], only_if: str = "") -> list[Change]:
    """What each file needs (files already as asked are left out); a file to remove
    only when it holds only_if. NotAFile when a name is taken by a folder, a device
    or a pipe."""
    out: list[Change] = []
    for spec in specs:
        name = spec["name"]
        path = os.path.join(dest, name)
        try:
            text, mode = _current(path)
        except NotAFile as exc:
            raise NotAFile("%s: %s" % (path, exc)) from None
        if spec.get("state", "present") == "absent":
            if text is not None and only_if in text:
                out.append(Change(name, "remove", text, None, None, False))
            continue
        want = int(spec.get("mode", "0644"), 8)
        if text != _content(spec) or mode != want:
            out.append(Change(name, "write", text, _content(spec), want,
                              spec.get("content") is None))
    return out


def folder_change(dest: str, folder_mode: str | None) -> int | None:
    """The folder's mode to set (it is missing, or has another), else None."""
    want = int(folder_mode, 8) if folder_mode is not None else 0o755
    try:
        st = os.stat(dest)
    except FileNotFoundError:
        return want
    if not stat.S_ISDIR(st.st_mode):
        raise NotAFile("%s: not a folder" % dest)
    return want if folder_mode is not None and st.st_mode & 0o7777 != want else None


def apply(dest: str, todo: list[Change], folder_mode: int | None) -> None:
    """Make the folder (or set its mode), then write and remove the files."""
    if folder_mode is not None:
        os.makedirs(dest, folder_mode, exist_ok=True)
        os.chmod(dest, folder_mode)
    for c in todo:
        path = os.path.join(dest, c.name)
        if c.action == "remove":
            os.unlink(path)
        else:
            atomic_write(path, c.after or "", c.mode)


def diffs(dest: str, todo: list[Change]) -> list[dict[str, str]]:
    """Ansible's diff of each change (a secret file's text is never shown)."""
    def shown(text: str | None, secret: bool) -> str:
        return "" if text is None else "(secret content)\n" if secret else text
    return [{"before_header": os.path.join(dest, c.name), "after_header": os.path.join(dest, c.name),
             "before": shown(c.before, c.secret), "after": shown(c.after, c.secret)} for c in todo]
