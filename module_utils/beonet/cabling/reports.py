"""The discovery file: what ``beonet cabling`` and the ``beonet_cabling`` module accept.

A discovery file is JSON, ``{host: report}``, as ``playbooks/discover.yml``
writes it from each node's ``beonet_discover`` report (``agent/discover.py``).
It is checked whole before any matching, against REPORTS_SCHEMA (JSON Schema
draft 2020-12) and the rules a schema cannot state; every violation is one
message naming the file, the host and the key path, with the value escaped
(``disc.json: node-0-1.nics[2].name: 'a\\nb' holds a line break: ...``).

Host names follow the node-name rule, NIC names (``nics[].name``,
``neighbours[].nic``) the interface-name rule of ``agent/names.py``: those
names end up in ``host_vars/HOST/beonet_interfaces.yml`` and from there in
every build. A key twice in one object (one host reported twice), two NICs of
one report with one name or one MAC, NaN or Infinity, a file over MAX_BYTES
and nesting deeper than a report's shape and two levels more (MAX_DEPTH) are refused; the depth is
measured with a scan of the brackets outside strings before the JSON is parsed,
so no document makes the parser recurse.

What the file says about the cabling (a node without a report, a report of
another node, a NIC without carrier) is not checked here: those are cabling
faults, found by matching.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable
from typing import Any

from ..agent.names import IFNAME_RULE, NODE_NAME_RULE, ifname_problem, node_name_problem, shown
from ..compiler.errors import Problems
from ..compiler.load import PathPart, _schema_messages, join_path, path_text, strict_validator
from ..compiler.schema import MAX_NODES
from .match import REPORT_FORMAT

MAX_BYTES = 256 * 1024 * 1024   # 1,024 nodes on one LAN, pretty-printed, take about 210 MB
REPORT_DEPTH = 6                # {host: {nics: [{neighbours: [{...}]}]}}
MAX_DEPTH = REPORT_DEPTH + 2    # and a value of the wrong type there, named by its key path
MAX_NICS = 1024                 # NICs of one report (virtual functions included)
MAX_SKIPPED = 4096
MAX_MANAGEMENT = 64
MAX_TEXT = 255
MAX_KEY_SHOWN = 63              # longer host names are cut in key paths

_ESCAPED = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_PAIR = re.compile(rb"\[\]|\{\}")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_CLOSES = {ord("]"): ord("["), ord("}"): ord("{")}
_WHAT = {"name": "name", "mac": "MAC address"}


def _string(fmt: str, rule: str) -> dict[str, Any]:
    return {"type": "string", "format": fmt, "description": rule}


def _list(item: dict[str, Any], most: int) -> dict[str, Any]:
    return {"type": "array", "items": item, "maxItems": most}


def _object(props: dict[str, Any], required: Iterable[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required),
            "additionalProperties": False}


_ifname = _string("interface-name", "an interface name: " + IFNAME_RULE)
_node = _string("node-name", "a node name: " + NODE_NAME_RULE)
_mac = {"type": "string", "pattern": "^([0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5})?$",
        "description": "a MAC address (six hexadecimal bytes joined by ':'), or empty"}
_text = {"type": "string", "maxLength": MAX_TEXT}
_any_nic = {"type": "string", "minLength": 1, "maxLength": 64,
            "description": "a NIC beonet leaves alone (never written anywhere)"}
_neighbour = _object({"node": _node, "nic": _ifname, "mac": _mac}, ["node", "nic", "mac"])
_nic = _object({"name": _ifname, "mac": _mac, "carrier": {"type": "boolean"},
                "was_up": {"type": "boolean"}, "neighbours": _list(_neighbour, MAX_NODES)},
               ["name", "mac", "carrier", "neighbours"])
_report = _object({
    "format": {"const": REPORT_FORMAT},
    "node": _node,
    "run": _text,
    "management": _list(_any_nic, MAX_MANAGEMENT),
    "probe_only": {"type": "boolean"},
    "nics": _list(_nic, MAX_NICS),
    "skipped": _list(_object({"name": _any_nic, "why": _text}, ["name"]), MAX_SKIPPED),
}, ["format", "node", "nics"])

REPORTS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "beonet discovery file",
    "description": "{host: discovery report}, as playbooks/discover.yml writes it",
    "type": "object",
    "propertyNames": _node,
    "additionalProperties": _report,
    "maxProperties": MAX_NODES,
}


def _name_check(problem: Any) -> Any:
    """A format check raising ValueError with names.py's reason (strings only: the
    schema's type says what else is wrong)."""
    def check(value: object) -> bool:
        why = problem(value) if isinstance(value, str) else None
        if why:
            raise ValueError(why)
        return True
    return check


@functools.cache
def _validator() -> Any:
    return strict_validator(REPORTS_SCHEMA, {"interface-name": _name_check(ifname_problem),
                                             "node-name": _name_check(node_name_problem)})


def _part(key: PathPart) -> PathPart:
    """A key as a key path shows it: a host name of a megabyte is cut."""
    if isinstance(key, str) and len(key) > MAX_KEY_SHOWN:
        return key[:40] + "..."
    return key


def _where(parts: Iterable[PathPart]) -> str:
    return path_text([_part(p) for p in parts])


def _messages(error: Any) -> list[tuple[list[PathPart], str]]:
    """(key path, message) of one schema violation, the value shown."""
    parts = list(error.absolute_path)
    if error.validator == "format":
        if "propertyNames" in error.schema_path:
            return [(parts + [error.instance], "is not a host name: %s" % error.cause)]
        return [(parts, str(error.cause))]
    if error.validator == "const":
        return [(parts, "is %s; this beonet reads discovery reports of format %d (run "
                 "playbooks/discover.yml again)" % (shown(error.instance), REPORT_FORMAT))]
    if error.validator == "pattern":
        return [(parts, "%s is not %s" % (shown(error.instance), error.schema["description"]))]
    if error.validator == "maxLength":
        return [(parts, "is %d characters long; at most %d are allowed"
                 % (len(error.instance), error.validator_value))]
    if error.validator in ("maxItems", "maxProperties"):
        return [(parts, "holds %d entries; at most %d are allowed"
                 % (len(error.instance), error.validator_value))]
    found = _schema_messages(error)
    if error.validator == "type":
        return [(p, "%s, not %s" % (m, shown(error.instance))) for p, m in found]
    return found


def _twice(data: Any, path: str, problems: Problems, depth: int = 0) -> None:
    """A problem for every key the JSON gave twice in one object (all levels)."""
    if depth > MAX_DEPTH:
        return
    if isinstance(data, _Twice):
        for key in data.twice:
            what = "reported twice" if depth == 0 else "given twice in one object"
            problems.add(join_path(path, _part(key)), "%s (JSON would keep the last one "
                         "only)" % what)
    if isinstance(data, dict):
        for key, value in data.items():
            _twice(value, join_path(path, _part(key)), problems, depth + 1)
    elif isinstance(data, list):
        for k, value in enumerate(data):
            _twice(value, join_path(path, k), problems, depth + 1)


def _alike(host: str, report: Any, problems: Problems) -> None:
    """Two NICs of one report with one name, or one MAC."""
    nics = report.get("nics") if isinstance(report, dict) else None
    if not isinstance(nics, list):
        return
    firsts: dict[tuple[str, str], int] = {}
    for k, nic in enumerate(nics):
        if not isinstance(nic, dict):
            continue
        for key in ("name", "mac"):
            value = nic.get(key)
            if not isinstance(value, str) or not value:
                continue
            first = firsts.setdefault((key, value.lower()), k)
            if first != k:
                problems.add(_where([host, "nics", k, key]), "%s is the %s of nics[%d] too: "
                             "two NICs of one node cannot share it" % (shown(value), _WHAT[key], first))


def check(data: Any, file: str) -> Problems:
    """Every violation of the discovery file's schema and rules, each one naming
    file, host and key path."""
    problems = Problems(file)
    problems.stage = "discovery"
    if not isinstance(data, dict):
        problems.add("", "must hold an object {host: discovery report}, not %s" % shown(data))
        return problems
    _twice(data, "", problems)
    for error in sorted(_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        for parts, message in _messages(error):
            problems.add(_where(parts), message)
    for host, report in data.items():
        _alike(host, report, problems)
    return problems


class _Twice(dict[str, Any]):
    """A JSON object that held some of its keys more than once (the last value kept)."""

    twice: list[str]


def _object_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    marked = _Twice(out)
    seen: set[str] = set()
    marked.twice = []
    for key, _value in pairs:
        if key in seen and key not in marked.twice:
            marked.twice.append(key)
        seen.add(key)
    return marked


class _NotJson(ValueError):
    """NaN, Infinity or -Infinity: Python's json reads them, JSON has none."""


def _constant(token: str) -> Any:
    raise _NotJson("%s is not a JSON value (JSON has no NaN or Infinity)" % token)


def too_deep(raw: bytes, most: int = MAX_DEPTH) -> bool:
    """Whether the brackets outside strings nest deeper than most (or open more than
    most that never close: a parser would recurse as deep). Strings, their escapes
    first, are dropped, then `most` passes drop the innermost pairs: a pair left
    after them was deeper. The rest is read until a pair closes, a bracket does not
    match (the JSON parser then says what is wrong) or more than most are open."""
    rest = _STRING.sub(b"", _ESCAPED.sub(b"", raw)).translate(None, _NOT_BRACKETS)
    for _round in range(most):
        rest = _PAIR.sub(b"", rest)
    open_: list[int] = []
    for c in rest:
        if c in _CLOSES:
            return bool(open_) and open_[-1] == _CLOSES[c]
        open_.append(c)
        if len(open_) > most:
            return True
    return False


def _read(path: str, problems: Problems) -> bytes | None:
    """The file's bytes, at most MAX_BYTES; None with a problem otherwise (never
    opening a pipe or device, which could block)."""
    try:
        if not os.path.isfile(path):
            what = "a folder" if os.path.isdir(path) else "not a regular file"
            problems.add("", "cannot read: %s" % (what if os.path.exists(path) else "no such file"))
            return None
        with open(path, "rb") as fh:
            big = os.fstat(fh.fileno()).st_size > MAX_BYTES
            raw = b"" if big else fh.read(MAX_BYTES + 1)   # /proc files say size 0
    except OSError as exc:
        problems.add("", "cannot read: %s" % (exc.strerror or exc))
        return None
    if big or len(raw) > MAX_BYTES:
        problems.add("", "is over %d MiB, the limit for a discovery file" % (MAX_BYTES >> 20))
        return None
    return raw


def _parse(raw: bytes, problems: Problems) -> Any:
    """The JSON of raw, None with a problem when it is not a discovery file's JSON."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.add("", "is not UTF-8 text (byte 0x%02x at offset %d)" % (raw[exc.start], exc.start))
        return None
    if not text.strip():
        problems.add("", "is empty: a discovery file holds {host: discovery report}")
        return None
    if too_deep(raw):
        problems.add("", "nests deeper than %d levels; a discovery report's shape "
                     "{host: {nics: [{neighbours: [{...}]}]}} has %d" % (MAX_DEPTH, REPORT_DEPTH))
        return None
    try:
        return json.loads(text, object_pairs_hook=_object_hook, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        problems.add("", "is not JSON: %s (column %d)" % (exc.msg, exc.colno), line=exc.lineno)
    except ValueError as exc:      # NaN/Infinity, or an integer of thousands of digits
        problems.add("", "is not JSON: %s" % exc)
    return None


def load(path: str) -> tuple[dict[str, Any] | None, Problems]:
    """({host: report}, no problems) from a discovery file, or (None, every problem)."""
    problems = Problems(path)
    problems.stage = "discovery"
    raw = _read(path, problems)
    data = _parse(raw, problems) if raw is not None else None
    if problems:
        return None, problems
    problems = check(data, path)
    return (None, problems) if problems else (data, problems)
