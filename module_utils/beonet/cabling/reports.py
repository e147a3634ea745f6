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
from collections.abc import Iterable
from typing import Any

from .. import gate
from ..agent.names import END, IFNAME_RULE, NODE_NAME_RULE, ifname_problem, node_name_problem, shown
from ..compiler.errors import Problems
from ..compiler.schema import MAX_NODES
from ..gate.validate import path_text, schema_messages, strict_validator
from ..gate.yamltext import PathPart, join_path
from .match import REPORT_FORMAT

MAX_BYTES = 256 * 1024 * 1024   # 1,024 nodes on one LAN, pretty-printed, take about 210 MB
REPORT_DEPTH = 6                # {host: {nics: [{neighbours: [{...}]}]}}
MAX_DEPTH = REPORT_DEPTH + 2    # and a value of the wrong type there, named by its key path
MAX_NICS = 1024                 # NICs of one report (virtual functions included)
MAX_SKIPPED = 4096
MAX_MANAGEMENT = 64
MAX_TEXT = 255
MAX_KEY_SHOWN = 63              # longer host names are cut in key paths

_WHAT = {"name": "name", "mac": "MAC address"}
DEEP_HINT = "; a discovery report's shape {host: {nics: [{neighbours: [{...}]}]}} has %d" % REPORT_DEPTH


def _string(fmt: str, rule: str) -> dict[str, Any]:
    return {"type": "string", "format": fmt, "description": rule}


def _list(item: dict[str, Any], most: int) -> dict[str, Any]:
    return {"type": "array", "items": item, "maxItems": most}


def _object(props: dict[str, Any], required: Iterable[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required),
            "additionalProperties": False}


_ifname = _string("interface-name", "an interface name: " + IFNAME_RULE)
_node = _string("node-name", "a node name: " + NODE_NAME_RULE)
_mac = {"type": "string", "pattern": "^([0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5})?" + END,
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
    found = schema_messages(error)
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


def _parse(path: str, problems: Problems) -> Any:
    """The JSON of the file at path (through the gate), None with a problem when it is
    not a discovery file's JSON. A key twice in one object is kept for check() to name."""
    try:
        text = gate.read_text(path, MAX_BYTES, "a discovery file")
        if not text.strip():
            problems.add("", "is empty: a discovery file holds {host: discovery report}")
            return None
        return gate.loads_json(text, None, MAX_DEPTH, DEEP_HINT, pairs=_object_hook)
    except gate.GateError as exc:
        problems.add(exc.path, exc.message, line=exc.line)
    return None


def load(path: str) -> tuple[dict[str, Any] | None, Problems]:
    """({host: report}, no problems) from a discovery file, or (None, every problem)."""
    problems = Problems(path)
    problems.stage = "discovery"
    data = _parse(path, problems)
    if problems:
        return None, problems
    problems = check(data, path)
    return (None, problems) if problems else (data, problems)
