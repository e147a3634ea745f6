"""One reader for every untrusted file and text (see the package docstring).

Standard library only, and no recursion that input can deepen: the nesting of
JSON text is measured on its brackets before the parser (which recurses once per
level) sees it, and the nesting of data already parsed is walked with a list.
"""

from __future__ import annotations

import array
import itertools
import json
import math
import os
import re
import stat
from collections.abc import Callable

from ..agent.names import escaped

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")    # as signed bytes: +1 opens, -1 closes
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_CLOSES = {ord("]"): ord("["), ord("}"): ord("{")}
Hook = Callable[[list[tuple[str, "Any"]]], "Any"]


class GateError(ValueError):
    """Input refused at the gate: the file, the line where known, the key path and why."""

    def __init__(self, file: str | None, message: str, line: int | None = None,
                 path: str = "") -> None:
        super().__init__(message)
        self.file, self.message, self.line, self.path = file, message, line, path

    def __str__(self) -> str:
        where = escaped(self.file) if self.file else ""
        if where and self.line:
            where += ":%d" % self.line
        parts = [p for p in (where, self.path) if p]
        return ": ".join(parts + [self.message])


class TooDeep(GateError):
    """Text nested deeper than its reader allows."""


def _size(limit: int) -> str:
    return "%d MiB" % (limit >> 20) if limit >= 1 << 20 else "%d bytes" % limit


def read_bytes(path: str, limit: int, what: str = "this file") -> bytes:
    """The bytes of the regular file at path (links followed), at most limit: a
    folder, pipe, socket or device is refused before anything is read from it
    (opened without blocking), and so is a file over limit (by its size first,
    then by what it holds: /proc files say size 0)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:       # ValueError: a NUL byte in the name
        raise GateError(path, "cannot read: %s" % (getattr(exc, "strerror", None) or exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise GateError(path, "cannot read: %s" % (
                "a folder, not a file" if stat.S_ISDIR(st.st_mode) else
                "a pipe, socket or device, not a file"))
        raw = os.read(fd, 0) if st.st_size > limit else _read_all(fd, limit + 1, path)
    finally:
        os.close(fd)
    if st.st_size > limit or len(raw) > limit:
        raise GateError(path, "is over %s, the limit for %s" % (_size(limit), what))
    return raw


def _read_all(fd: int, most: int, path: str) -> bytes:
    chunks, got = [], 0
    try:
        while got < most:
            chunk = os.read(fd, min(most - got, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:                     # /proc/self/mem and other files that refuse
        raise GateError(path, "cannot read: %s" % (exc.strerror or exc)) from None
    return b"".join(chunks)


def decode(raw: bytes, file: str | None) -> str:
    """raw as UTF-8 text (a leading byte-order mark dropped)."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise GateError(file, "is not UTF-8 text (byte 0x%02x at offset %d)" % (
            raw[exc.start], exc.start), line=raw.count(b"\n", 0, exc.start) + 1) from None


def read_text(path: str, limit: int, what: str = "this file") -> str:
    """read_bytes, decoded as UTF-8."""
    return decode(read_bytes(path, limit, what), path)


def too_deep(raw: bytes, most: int) -> bool:
    """Whether the brackets outside strings nest deeper than most (or open more than
    most that never close: a parser would recurse as deep). Strings, their escapes
    first, are dropped; the running depth of the brackets left (one C pass) finds
    where it first passes most, and the brackets before that point must pair up as
    JSON's do (where they do not, the JSON parser says what is wrong)."""
    # (re's cache compiles the two patterns on first use: a compile of YAML needs neither)
    rest = re.sub(rb'"[^"]*"', b"", re.sub(rb"\\.", b"", raw, flags=re.DOTALL)).translate(None, _NOT_BRACKETS)
    levels = list(itertools.accumulate(array.array("b", rest.translate(_STEPS))))
    if max(levels, default=0) <= most:
        return False
    past = next(k for k, level in enumerate(levels) if level > most)
    open_: list[int] = []
    for c in rest[:past]:
        if c in _CLOSES:
            if not open_ or open_.pop() != _CLOSES[c]:
                return False
        else:
            open_.append(c)
    return True


def _no_constant(token: str) -> Any:
    raise ValueError("%s is not a JSON value (JSON has no NaN or Infinity)" % token)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _v in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ValueError("the key '%s' is given twice in one object" % escaped(twice)[:60])
    return out


def _number(text: str) -> int:
    if len(text) > 30:
        raise ValueError("the integer %s... has over 30 digits" % text[:12])
    return int(text)


def loads_json(text: str, file: str | None, depth: int, deep_hint: str = "",
               pairs: Hook | None = None, **parse: Any) -> Any:
    """The JSON of text, strictly: no NaN or Infinity, no key twice in one object
    (pairs: another object_pairs_hook), at most depth levels, integers of at most 30
    digits. parse: json.loads' parse_constant, parse_float, parse_int instead."""
    if not text.strip():
        raise GateError(file, "is empty")
    if too_deep(text.encode("utf-8", "surrogatepass"), depth):
        raise TooDeep(file, "nests deeper than %d levels%s" % (depth, deep_hint))
    parse.setdefault("parse_constant", _no_constant)
    parse.setdefault("parse_int", _number)
    try:
        return json.loads(text, object_pairs_hook=pairs or _unique, **parse)
    except json.JSONDecodeError as exc:
        raise GateError(file, "is not JSON: %s (column %d)" % (exc.msg, exc.colno),
                        line=exc.lineno) from None
    except ValueError as exc:
        raise GateError(file, "is not JSON: %s" % exc) from None
    except RecursionError:                     # brackets the count above missed
        raise TooDeep(file, "nests deeper than %d levels%s" % (depth, deep_hint)) from None


def load_json(path: str, limit: int, depth: int, what: str = "this file") -> Any:
    """The strict JSON (loads_json) of the regular file at path (read_bytes)."""
    return loads_json(read_text(path, limit, what), path, depth)


def deepest(doc: Any, most: int) -> list[str | int] | None:
    """The key path of the first value nested deeper than most, or None (no
    recursion; the path is only built for the value found)."""
    todo: list[tuple[Any, int, tuple[str | int, ...]]] = [(doc, 0, ())]
    while todo:
        value, level, path = todo.pop()
        if level > most:
            return list(path)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            if isinstance(v, (dict, list)):
                todo.append((v, level + 1, (*path, k)))
    return None


def not_finite(doc: Any) -> tuple[list[str | int], Any] | None:
    """The key path and value of the first number in doc that is not finite (NaN,
    Infinity) or not a number JSON can hold, or None (no recursion)."""
    todo: list[tuple[Any, tuple[str | int, ...]]] = [(doc, ())]
    while todo:
        value, path = todo.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return list(path), value
        if isinstance(value, (dict, list)):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            todo += reversed([(v, (*path, k)) for k, v in items])
    return None
