"""Names that end up in files, paths and commands: one check for every entry.

Interface names (NICs, bonds) come from topologies, inventories
(``beonet_interfaces``), discovery reports, host_vars and the node module's
parameters; node, segment and switch names from topologies, inventories and
discovery reports. Every entry checks them here, before any file or command
is built from them, and refuses with the value escaped.

An interface name follows the kernel and systemd: 1 to 15 bytes (IFNAMSIZ is
16 with the terminating NUL), not ``.`` or ``..``, not only digits, no ``/``,
``:``, ``%`` or whitespace. beonet also refuses the characters that the files
and commands it writes would read as syntax (quotes, ``*?[]`` globs of
systemd's ``Name=``, ``#``, ``=``, ``;``, ``$``, ...) and a leading ``-``:
what is left is letters, digits and ``_ . - + @``, which covers every name
udev, systemd and the drivers give (``enp1s0f0np0``, ``eth0.100``, ``ib0``).

A node name is a letter, then letters, digits, ``_``, ``.`` or ``-``, at most
63 characters (the topology's rule, and a DNS label's length).

Standard library only (the node agent uses it on the nodes).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

IFNAMSIZ = 16
# The Linux bonding modes a plan may name (networkd's Mode=, NetworkManager's, ip link's)
BOND_MODES = ("balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad",
              "balance-tlb", "balance-alb")
# letters and digits spelled out: the string module compiles a pattern when it is imported
IFNAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-+@")
NODE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,62}")
# The same rules as a JSON Schema pattern (for the topology schema and editors).
# The end of the text as a pattern, in JSON Schema's ECMA-262 and in Python's re alike
# (where '$' alone also matches before a final line break: "name\n" would pass).
END = r"$(?!\n)"
IFNAME_PATTERN = (r"^(?!-)(?![0-9]+$)(?!\.{1,2}$)(?!(?:lo|all|default|bonding_masters)$)"
                  r"[A-Za-z0-9_.+@-]{1,15}" + END)
NODE_NAME_PATTERN = "^%s%s" % (NODE_NAME.pattern, END)
# Names the kernel gives a meaning of its own: never a NIC or bond beonet configures.
RESERVED_IFNAMES = {"lo": "the loopback interface",
                    "all": "sysctl's net.ipv4.conf.all, not an interface",
                    "default": "sysctl's net.ipv4.conf.default, not an interface",
                    "bonding_masters": "the bonding driver's file in /sys/class/net"}
IFNAME_RULE = "1-15 bytes of letters, digits and _ . - + @, not only digits, no leading -"
NODE_NAME_RULE = "a letter, then letters, digits, '_', '.' or '-' (at most 63)"


def escaped(text: str) -> str:
    """text with control and other unprintable characters escaped: one value, one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace")
                   .decode("ascii") for c in text)


def escaped_all(value: Any) -> Any:
    """value with every string in it (keys too) escaped (one line of printable text,
    a lone surrogate written out); a walk with a list, not recursion."""
    root: list[Any] = [value]
    todo: list[tuple[Any, Any]] = [(root, 0)]
    while todo:
        holder, key = todo.pop()
        v = holder[key]
        if isinstance(v, str):
            holder[key] = escaped(v)
        elif isinstance(v, dict):
            fixed = {escaped(k) if isinstance(k, str) else k: x for k, x in v.items()}
            holder[key] = fixed
            todo += [(fixed, k) for k in fixed]
        elif isinstance(v, (list, tuple)):
            items = list(v)
            holder[key] = items
            todo += [(items, k) for k in range(len(items))]
    return root[0]


def quoted(text: str) -> str:
    """text in quotes, escaped: a file name or value in a message, whole."""
    return "'%s'" % escaped(text)


def shown(value: Any, limit: int = 40) -> str:
    """A value as a message quotes it: escaped, quoted, long ones cut."""
    if isinstance(value, str):
        text = escaped(value)
        return "'%s'" % (text[:limit] + "..." if len(text) > limit else text)
    return "%s %s" % (type_word(value), escaped(repr(value))[:limit])


def type_word(value: Any) -> str:
    """What a YAML/JSON value is, in the words a user knows."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


def ifname_problem(value: Any) -> str | None:
    """Why value is not an interface name beonet writes, or None when it is one."""
    if not isinstance(value, str):
        return "must be an interface name, not %s" % type_word(value)
    size = len(value.encode("utf-8", "surrogatepass"))
    if size == 0:
        return "must be an interface name, not empty text"
    why = None
    if set(value) - IFNAME_CHARS:
        bad = sorted(set(value) - IFNAME_CHARS)
        why = "holds %s" % ", ".join(_char_name(c) for c in bad[:3])
    elif size >= IFNAMSIZ:
        why = "is %d bytes long; the kernel allows 15" % size
    elif value in (".", ".."):
        why = "is a folder's name, not an interface name"
    elif value.isdigit():
        why = "is only digits (the kernel reads those as an interface index)"
    elif value.startswith("-"):
        why = "starts with '-' (commands would read it as an option)"
    elif value in RESERVED_IFNAMES:
        why = "is a name the kernel keeps for itself (%s)" % RESERVED_IFNAMES[value]
    if why is None:
        return None
    return "%s %s: an interface name is %s" % (shown(value), why, IFNAME_RULE)


def node_name_problem(value: Any) -> str | None:
    """Why value is not a node (host, segment, switch) name, or None when it is one."""
    if not isinstance(value, str):
        return "must be a name, not %s" % type_word(value)
    if NODE_NAME.fullmatch(value):
        return None
    return "%s is not a name: %s" % (shown(value), NODE_NAME_RULE)


def _char_name(c: str) -> str:
    if c == " ":
        return "a space"
    if c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029":
        return "a line break"
    if c == "\t":
        return "a tab"
    if not c.isprintable():
        return "the control character %s" % escaped(c)
    return "'%s'" % c


class UnsafeText(ValueError):
    """A value that would add a line (or hide part of one) to a file or command."""


def one_line(value: Any, what: str) -> str:
    """value as text for one line of a file or command, refused (UnsafeText) when it
    holds a control character or a line or paragraph separator (\\n, \\r, \\v, \\f,
    \\x1c-\\x1e, \\x85, U+2028, U+2029) or a lone surrogate."""
    text = value if isinstance(value, str) else str(value)
    if not text.isprintable():
        bad = sorted({c for c in text if not c.isprintable()})
        raise UnsafeText("%s: %s holds %s: a value written into a file or command must be "
                         "one line of printable text" % (what, shown(text, 60),
                                                         ", ".join(_char_name(c) for c in bad[:3])))
    return text


def file_text(lines: Iterable[str], what: str) -> str:
    """The lines of a rendered file joined, each checked at this moment of writing: a
    line holding a control character or a line break (a value that carried one) is
    refused with UnsafeText, so no value adds a line its template did not make. Tabs
    that indent a line are the template's and allowed."""
    out = [_checked_line(line, what) for line in lines]
    return "\n".join(out) + "\n"


def _checked_line(line: str, what: str) -> str:
    if not line.isprintable():
        one_line(line.lstrip("\t"), what)
    return line


def whole_file_problem(text: str, what: str) -> str | None:
    """Why a whole rendered file must not be written (None: it may): a line of it holds
    a control character or a line separator other than its own end (a carriage return,
    a vertical tab, U+2028, ...), past the tabs that indent it."""
    try:
        for line in text.split("\n"):
            _checked_line(line, what)
    except UnsafeText as exc:
        return str(exc)
    return None


def control_characters(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(key path, text) of every string in value (keys too) holding a control
    character or line break: nothing beonet renders into a file may carry one."""
    if isinstance(value, str):
        if not value.isprintable():
            yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            here = "%s.%s" % (path, k) if path else str(k)
            if isinstance(k, str) and not k.isprintable():
                yield here, k
            yield from control_characters(v, here)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from control_characters(v, "%s[%d]" % (path, i))


def control_characters_in(value: Any) -> list[tuple[str, str]]:
    """control_characters(value) as a list; fast where there are none (one JSON
    encoding scanned in C, not a walk in Python): plans and results are large."""
    try:
        text: str | None = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = None
    if text is not None and "\\" not in text and text.isprintable():
        return []
    return list(control_characters(value))


def inside(root: str, path: str) -> str:
    """path (absolute, or relative to root) made absolute, if it stays inside root
    once '..' and symbolic links are resolved; ValueError naming it otherwise."""
    base = os.path.realpath(root)
    full = os.path.realpath(os.path.join(base, path))
    if full != base and not full.startswith(base.rstrip(os.sep) + os.sep):
        raise ValueError("%s lies outside %s" % (escaped(path), escaped(root)))
    return full
