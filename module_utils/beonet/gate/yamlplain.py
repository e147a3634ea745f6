"""The plainest YAML, read without PyYAML: what most topology files are.

A topology is mostly nested block mappings of plain words and numbers. Reading
that takes a few lines of Python, while importing PyYAML costs more than the
compile of a small topology (its reader compiles a regular expression over the
whole of Unicode). ``read`` takes a document only when every line is one of:
blank, a comment, a lone ``---`` before the first key, or ``key:`` / ``key: value``
with a plain word key, at an indentation that opens or returns to a mapping;
values are decimal integers and fractions, quoted text without escapes and
plain text that no YAML 1.1 rule turns into anything but a string. Anything
else (sequences, flow collections, anchors, tags, a value over several lines, a
duplicate key, a tab, a non-ASCII character...) returns None: PyYAML's safe
loader reads it (``yamltext``). Where it answers, the data and the line of every
key path are what yamltext gives; the tests hold the two equal on generated
documents.
"""

from __future__ import annotations

from ..compiler.errors import Problems

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 50
PathPart: TypeAlias = "str | int"
Lines = dict[str, int]

# What each line and value may hold, checked with string methods: compiling the
# regular expressions these once were cost every compile more than reading the file.
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
_KEY_FIRST = _LETTERS + "_"
_KEY_CHARS = _KEY_FIRST + _DIGITS + "-"
# plain text: a letter first, then no character YAML gives a meaning to in a plain scalar
_TEXT_CHARS = _LETTERS + _DIGITS + " _./()=,+@%-"
# words YAML 1.1 reads as booleans or null
_WORDS = frozenset("yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF "
                   "null Null NULL".split())


def join_path(path: str, key: PathPart) -> str:
    if isinstance(key, int):
        return "%s[%d]" % (path, key)
    return "%s.%s" % (path, key) if path else str(key)


def _value(text: str) -> tuple[Any] | None:
    """(the value,) of a plain or quoted scalar on a key's line, or None when it
    is more than this module reads."""
    if "#" in text:                                 # a comment: after a space only
        at = text.index("#")
        if text[at - 1] != " ":
            return None
        text = text[:at]
    text = text.rstrip(" ")
    whole, dot, fraction = text.partition(".")
    if _integer(whole):
        if not dot:
            return (int(text),)
        if 0 < len(fraction) <= 17 and not fraction.strip(_DIGITS):
            return (float(text),)
        return None
    if text and text[0] in _LETTERS and not text.strip(_TEXT_CHARS) and text not in _WORDS:
        return (text,)
    return _quoted(text)


def _integer(text: str) -> bool:
    """-?(0|[1-9][0-9]{0,17}): longer, int() may refuse it (and a fraction may be inf)."""
    digits = text[1:] if text[:1] == "-" else text
    return (0 < len(digits) <= 18 and not digits.strip(_DIGITS)
            and (digits[0] != "0" or digits == "0"))


def _quoted(text: str) -> tuple[str] | None:
    """(the text,) of a quoted scalar without escapes: printable ASCII within single
    quotes but ', or within double quotes but " and backslash; else None."""
    quote, inner = text[:1], text[1:-1]
    if (len(text) < 2 or quote not in ("'", '"') or text[-1] != quote or quote in inner
            or not _printable(inner) or (quote == '"' and "\\" in inner)):
        return None
    return (inner,)


def _printable(text: str) -> bool:
    """Every character from ' ' to '~'."""
    return text.isascii() and text.isprintable()


def _odd(text: str) -> bool:
    """A tab, a control or a non-ASCII character: anything but a newline and ' ' to '~'."""
    return not _printable(text.replace("\n", ""))


def _key_line(line: str) -> tuple[int, str, str | None] | None:
    """(indent, key, rest) of `key:` or `key: rest` (spaces before rest dropped) with
    a key of [A-Za-z_][A-Za-z0-9_-]*; None for any other line."""
    bare = line.lstrip(" ")
    key, colon, after = bare.partition(":")
    if not colon or not key or key[0] not in _KEY_FIRST or key.strip(_KEY_CHARS):
        return None
    if not after:
        return len(line) - len(bare), key, None
    rest = after.lstrip(" ")
    return (len(line) - len(bare), key, rest) if len(rest) < len(after) else None


def _body(text: str) -> list[tuple[int, str]] | None:
    """The lines that hold keys (number, text); None if the document is not plain."""
    if _odd(text):
        return None
    out: list[tuple[int, str]] = []
    started = False                                 # a `---` seen
    for number, line in enumerate(text.split("\n"), 1):
        bare = line.lstrip(" ")
        if not bare or bare.startswith("#"):
            continue
        if line == "---" and not out and not started:
            started = True
            continue
        out.append((number, line))
    return out or None


def read(text: str) -> tuple[dict[str, Any], Lines] | None:
    """(data, line of each key path) as yamltext gives them, or None: the document is
    PyYAML's to read."""
    body = _body(text)
    if body is None:
        return None
    root: dict[str, Any] = {}
    lines: Lines = {"": body[0][0]}
    # the open mappings, innermost last: (indent, mapping, its path)
    open_: list[tuple[int, dict[str, Any], str]] = [(len(body[0][1]) - len(body[0][1].lstrip(" ")), root, "")]
    pending: tuple[int, str, str] | None = None     # a `key:` whose mapping may follow
    for number, line in body:
        found = _key_line(line)
        if found is None:
            return None
        indent, key, rest = found
        if pending is not None and indent > pending[0]:
            if len(open_) >= MAX_DEPTH - 1:
                return None
            inner: dict[str, Any] = {}
            open_[-1][1][pending[1]] = inner
            open_.append((indent, inner, pending[2]))
        pending = None
        while open_ and indent < open_[-1][0]:
            open_.pop()
        if not open_ or indent != open_[-1][0] or key in _WORDS or key in open_[-1][1]:
            return None
        _indent, mapping, path = open_[-1]
        sub = join_path(path, key)
        lines[sub] = number
        if rest is None or rest.startswith("#"):
            mapping[key] = None
            pending = (indent, key, sub)
            continue
        value = _value(rest)
        if value is None:
            return None
        mapping[key] = value[0]
    return root, lines


def parse_yaml(text: str, file: str | None, limit: int = MAX_BYTES,
               what: str = "a topology") -> tuple[Any, Lines, Problems]:
    """yamltext.parse_yaml: (data, lines, problems); PyYAML is imported only for a
    document ``read`` leaves to it."""
    if len(text) <= limit:
        plain = read(text)
        if plain is not None:
            problems = Problems(file)
            problems.stage = "load"
            return plain[0], plain[1], problems
    from .yamltext import parse_yaml as composed
    return composed(text, file, limit, what)
