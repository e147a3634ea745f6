"""The results.json of a benchmark results folder: its JSON Schema (draft
2020-12) and the checks of a folder where it enters (``beonet
benchmark-report`` and the figure commands), before anything is rendered.

A results.json carries ``"format": "beonet-benchmark/1"`` (FORMAT). Files
written before the key existed are read when they hold at least one of the
benchmark's tables; a JSON object with neither the key nor a table (an MPI
run's results.json, someone else's JSON) is refused as foreign.

Untrusted input stays bounded: at most MAX_BYTES of UTF-8 text (the size is
read before the file), nesting at most MAX_DEPTH levels, no NaN, Infinity or
numbers beyond a float. Every problem of a file names it and the key path;
at most MAX_PROBLEMS are listed.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

from .. import gate
from ..agent.names import END, control_characters_in, escaped, node_name_problem, shown
from ..compiler.errors import CompileError, Problem, Problems
from ..compiler.schema import MAX_NODES
from ..gate.validate import path_text, schema_messages, strict_validator
from .planner import MAX_FILE_MB, MAX_TOKEN

FILE = "results.json"
FORMAT = "beonet-benchmark/1"
MAX_BYTES = 1 << 30
MAX_DEPTH = 10
TEXT_DEPTH = 64         # read that deep, so the value too deep is named by its key path
MAX_PROBLEMS = 100
MAX_TEXT = 10_000
TABLES = ("tokex", "aggregate", "samples", "iperf3", "ring", "copy", "copy_aggregate", "latency")
Doc = dict[str, Any]
More = Callable[[Doc], Iterable[tuple[str, str]]]    # (key path, message) of a reader's own checks


def _number(lo: int, hi: int, null: bool = False, integer: bool = False) -> dict[str, Any]:
    kind = "an integer" if integer else "a number"
    return {"type": [("integer" if integer else "number")] + (["null"] if null else []),
            "minimum": lo, "maximum": hi,
            "description": "%s from %d to %d%s" % (kind, lo, hi, " or null" if null else "")}


def _integer(lo: int, hi: int) -> dict[str, Any]:
    return _number(lo, hi, integer=True)


_text = {"type": "string", "maxLength": MAX_TEXT, "description": "text"}
_name = {"type": "string", "maxLength": 63, "description": "a name (text)"}
_proto = {"enum": ["tcp", "udp"], "description": "tcp or udp"}
_scalar = {"type": ["string", "number", "boolean", "null"], "maxLength": MAX_TEXT,
           "description": "text, a number, true, false or null"}
_names = {"type": "array", "maxItems": MAX_NODES, "items": _name, "description": "a list of names"}
US = _number(0, 10 ** 12)
MBPS = _number(0, 10 ** 9)
TIME = _number(0, 10 ** 12)
COUNT = _integer(0, 10 ** 12)
PAIRS = _integer(1, MAX_NODES)
HOPS = _integer(0, MAX_NODES)
SIZE = _integer(1, MAX_TOKEN)
FILE_MB = _integer(1, MAX_FILE_MB)
WINDOW = _integer(1, 1024)
_row_id = {"class": _name, "pairs": PAIRS, "size": SIZE, "proto": _proto, "client": _name, "server": _name}
_rtt = {"rtt_%s_us" % k: US for k in ("min", "median", "p99", "max")}

COLUMNS: dict[str, dict[str, Any]] = {
    "tokex": dict(_row_id, routers=HOPS, switches=HOPS, count=COUNT, seconds=TIME, lost=COUNT,
                  exchange_MBps=MBPS, one_way_MBps=MBPS, start=TIME, window=WINDOW, **_rtt),
    "samples": dict(_row_id, i=COUNT, rtt_us=US),
    "aggregate": dict(_row_id, exchange_MBps=MBPS, one_way_MBps=MBPS, reported=COUNT, first_start=TIME,
                      last_end=TIME, in_flight=WINDOW, sum_exchange_MBps=MBPS, sum_one_way_MBps=MBPS,
                      capacity_MBps=_number(0, 10 ** 9, null=True),
                      counted_over={"enum": ["pair", "common window", "union of windows"],
                                    "description": "pair, common window or union of windows"},
                      **{"%s_pct_of_%s" % (w, of): _number(0, 10 ** 9, null=True)
                         for w in ("one_way", "exchange") for of in ("capacity", "link")}),
    "iperf3": dict(_row_id, iperf3_MBps=_number(0, 10 ** 9, null=True),
                   iperf3_retransmits=_number(0, 10 ** 12, null=True, integer=True),
                   iperf3_error=dict(_text, type=["string", "null"], description="text or null")),
    "ring": {"nodes": PAIRS, "size": SIZE, "rounds": COUNT,
             **{"round_%s_us" % k: US for k in ("min", "median", "p99", "max")}},
    "copy": {"host": _name, "copy": _name, "remote": HOPS, "file_mb": FILE_MB, "bytes": COUNT,
             "seconds": TIME, "MBps": MBPS, "start": TIME, "resident_pages_before": _integer(-1, 10 ** 12)},
    "copy_aggregate": {"remote": HOPS, "file_mb": FILE_MB, "copies": PAIRS, "aggregate_MBps": MBPS,
                       "sum_of_rates_MBps": MBPS, "resident_pages_before": COUNT},
    "latency": dict(_row_id, routers=HOPS, switches=HOPS, model_one_way_us=US,
                    samples_one_way_us={"type": "array", "items": US, "description": "a list of numbers"},
                    **{"one_way_%s_us" % k: US for k in ("min", "median", "p99")}),
}
# Columns named after what the nodes report (tokex's rtt_us keys, iperf3's tokex modes).
PATTERNS: dict[str, dict[str, Any]] = {
    "tokex": {"^rtt_[a-z0-9]+_us" + END: US},
    "iperf3": {"^tokex_(stream|window)_[0-9]+_MBps" + END: MBPS, "^ratio_(stream|window)_[0-9]+" + END: MBPS},
}

# What each reader reads of every row: the report (summary, CSV and plots) and the figures.
_ids = ["class", "pairs", "size", "proto", "client"]
NEEDS: dict[str, dict[str, list[str]]] = {
    "report": {"tokex": _ids + ["start", "seconds", "count"], "samples": _ids + ["rtt_us"],
               "aggregate": _ids[:4] + ["exchange_MBps", "one_way_MBps"],
               "iperf3": ["class", "client", "server", "iperf3_MBps"],
               "ring": ["nodes", "size", "round_min_us", "round_median_us", "round_p99_us",
                        "round_max_us"],
               "copy_aggregate": ["file_mb", "remote", "copies", "aggregate_MBps", "resident_pages_before"],
               "latency": ["class", "proto", "routers", "switches", "one_way_min_us", "one_way_median_us",
                           "one_way_p99_us", "model_one_way_us", "samples_one_way_us"]},
    "exchange": {"tokex": _ids + ["start"], "samples": _ids + ["rtt_us"],
                 "aggregate": _ids[:4] + ["exchange_MBps"]},
    "latency": {"latency": ["class", "client", "server", "proto", "switches", "routers",
                            "one_way_median_us"]},
}
# The report's rows read only in some cases: a 1-pair run's round trips (summary
# and plot), a stored aggregate counted again (_recount).
_WHEN: dict[str, list[dict[str, Any]]] = {
    "tokex": [{"if": {"properties": {"pairs": {"const": 1}}, "required": ["pairs"]},
               "then": {"required": list(_rtt)}}],
    "aggregate": [{"if": {"required": ["first_start", "sum_exchange_MBps"]},
                   "then": {"required": ["sum_one_way_MBps", "reported", "last_end"]}}],
}

_pair = {"type": "object", "required": ["client", "server"], "additionalProperties": _scalar,
         "properties": {"client": _name, "server": _name, "routers": HOPS, "switches": HOPS, "via": _names}}
_step = {"type": "object", "additionalProperties": _scalar, "required": ["kind"],
         "properties": {"id": _name, "class": _name, "label": _text,
                        "kind": {"enum": ["tokex", "iperf3", "copy", "ring"],
                                 "description": "tokex, iperf3, copy or ring"},
                        "pairs": {"type": "array", "maxItems": MAX_NODES, "items": _pair},
                        "local": _names, "order": _names, "remote": HOPS, "file_mb": FILE_MB},
         "if": {"properties": {"kind": {"const": "tokex"}}},
         "then": {"required": ["id", "class", "pairs"]}}
_flat = {"anyOf": [_scalar, {"type": "array", "maxItems": MAX_NODES, "items": _scalar}],
         "description": "text, a number, or a list of them"}
_model = {"type": "object", "required": ["base_us", "switch_us", "router_us"],
          "additionalProperties": _scalar,
          "properties": {k: US for k in ("base_us", "switch_us", "router_us")}}
_params = {"type": "object", "required": ["sizes", "latency_model", "copies"], "additionalProperties": _flat,
           "properties": {"sizes": {"type": "array", "minItems": 1, "maxItems": 10_000, "items": SIZE},
                          "copies": PAIRS, "exchange_window": WINDOW, "nodes": _names,
                          "latency_model": {"type": "object", "required": ["tcp", "udp"],
                                            "additionalProperties": _model}}}
_environment = {"type": "object", "additionalProperties": {
    "anyOf": [_flat, {"type": "object", "additionalProperties": _flat}],
    "description": "text, a number, a list or a mapping of them"}}
_capacity = {"type": "object", "additionalProperties": {
    "type": "object", "required": ["class", "pairs", "MBps", "bottleneck"], "additionalProperties": _scalar,
    "properties": {"class": _name, "pairs": PAIRS, "MBps": MBPS, "bottleneck": _text,
                   "pairs_MBps": {"type": "array", "items": MBPS}}}}


def _table(name: str, needs: dict[str, list[str]], report: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"type": "object", "properties": COLUMNS[name], "additionalProperties": _scalar,
                           "patternProperties": PATTERNS.get(name, {})}
    if needs.get(name):
        row["required"] = needs[name]
    if report and name in _WHEN:
        row["allOf"] = _WHEN[name]
    return {"type": "array", "items": row}


def schema(reader: str) -> dict[str, Any]:
    """The JSON Schema of a results.json as `reader` (report, exchange, latency) reads it."""
    props = {name: _table(name, NEEDS[reader], reader == "report") for name in TABLES}
    props.update({"format": {"enum": [FORMAT], "description": FORMAT},
                  "topology": _name, "link_MBps": _number(0, 10 ** 9, null=True),
                  "params": _params, "environment": _environment, "capacity": _capacity,
                  "schedule": {"type": "array", "maxItems": 100_000, "items": _step}})
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "beonet benchmark results (results.json)", "type": "object",
            "additionalProperties": False, "properties": props}


@functools.cache
def _validator(reader: str) -> Any:
    return strict_validator(schema(reader))


# ------------------------------------------------------------------ reading a folder

class NotNumber:
    """A number JSON may spell but beonet does not read (NaN, Infinity, 1e400, an
    integer of more than 30 digits): kept in its place, so the schema names its key."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _float(text: str) -> float | NotNumber:
    value = float(text)
    return value if math.isfinite(value) else NotNumber(text)


def _int(text: str) -> int | NotNumber:
    return int(text) if len(text) <= 30 else NotNumber(text)


HINT = " (a results/<topology>/<timestamp>/ folder of playbooks/benchmark.yml)"


def _load(folder: str, problems: Problems) -> Any:
    """The JSON of folder/results.json (through the gate), or None with the reason in
    problems: not a folder, no file, not a regular file, too big, not UTF-8, not
    strict JSON. A number beonet does not read is kept as a NotNumber, so the schema
    names its key; the text may nest TEXT_DEPTH levels, the document MAX_DEPTH."""
    if not os.path.isdir(folder):
        problems.add("", ("is a file, not a results folder" if os.path.lexists(folder)
                          else "no such folder") + HINT, file=folder)
        return None
    path = os.path.join(folder, FILE)
    if not os.path.lexists(path):
        problems.add("", "no results.json" + HINT, file=folder)
        return None
    try:
        text = gate.read_text(path, MAX_BYTES, "a results.json")
        if not text.strip():
            problems.add("", "is empty: no benchmark results")
            return None
        return gate.loads_json(text, None, TEXT_DEPTH, parse_constant=NotNumber,
                               parse_float=_float, parse_int=_int)
    except gate.GateError as exc:
        problems.add(exc.path, exc.message, line=exc.line)
    return None


def _path_to(doc: Any, target: Any) -> list[str | int]:
    """The key path of the object target inside doc (found by identity)."""
    todo: list[tuple[Any, list[str | int]]] = [(doc, [])]
    while todo:
        value, parts = todo.pop()
        if value is target:
            return parts
        items: Iterable[tuple[Any, Any]] = value.items() if isinstance(value, dict) else enumerate(value)
        todo += [(v, parts + [k]) for k, v in items if isinstance(v, (dict, list))]
    return []


def brief(value: Any) -> str:
    """A value as a message quotes it, without rendering a large one whole."""
    if isinstance(value, NotNumber):
        return "%s (beyond the numbers beonet reads)" % shown(value.text)
    if isinstance(value, dict):
        return "a mapping of %d key%s" % (len(value), "" if len(value) == 1 else "s")
    if isinstance(value, list):
        return "a list of %d item%s" % (len(value), "" if len(value) == 1 else "s")
    return shown(value)


def _path(parts: Iterable[str | int]) -> str:
    return path_text([p if isinstance(p, int) or len(p) <= 40 else p[:40] + "..." for p in parts])


_WANTED = {"object": "a mapping", "array": "a list"}
_OF_VALUE = ("type", "minimum", "maximum", "enum", "maxLength", "anyOf")


_PY_TYPES: dict[str, tuple[type, ...]] = {"integer": (int,), "number": (int, float), "string": (str,),
                                          "null": (type(None),), "boolean": (bool,)}
_SIMPLE = frozenset(("type", "minimum", "maximum", "enum", "maxLength", "description"))
Check = Callable[[Any], bool]


def _simple(sub: dict[str, Any]) -> Check | None:
    """A check of values against sub, a schema of only _SIMPLE keywords (None for
    any other schema: jsonschema decides). What it passes, jsonschema passes too
    (a tested claim); what it refuses goes to jsonschema for the message."""
    if not sub.keys() <= _SIMPLE:
        return None
    kinds = sub.get("type", list(_PY_TYPES))
    types = frozenset(t for k in ([kinds] if isinstance(kinds, str) else kinds) for t in _PY_TYPES[k])
    lo, hi = sub.get("minimum", -math.inf), sub.get("maximum", math.inf)
    enum, longest = sub.get("enum"), sub.get("maxLength", math.inf)

    def check(value: Any) -> bool:
        kind = type(value)
        if kind not in types:
            return False
        if kind is int or kind is float:
            return lo <= value <= hi and (enum is None or value in enum)
        return (enum is None or value in enum) and (kind is not str or len(value) <= longest)
    return check


@functools.cache
def _row_check(reader: str, table: str) -> Check | None:
    """A check of a table's rows without jsonschema where its rows are plain columns
    (large tables, the round-trip samples, hold millions of rows); None otherwise."""
    row = schema(reader)["properties"][table]["items"]
    if "allOf" in row or row.get("patternProperties"):
        return None
    columns = {k: _simple(v) for k, v in row["properties"].items()}
    extra, required = _simple(row["additionalProperties"]), frozenset(row.get("required", ()))
    if extra is None or None in columns.values():
        return None
    checks = {k: v for k, v in columns.items() if v is not None}

    def check(value: Any) -> bool:
        return isinstance(value, dict) and value.keys() >= required and \
            all(checks.get(k, extra)(v) for k, v in value.items())
    return check


def _slim(doc: Doc, reader: str) -> tuple[Doc, dict[str, list[int]]]:
    """doc with the table rows that row_ok passes left out, and where the rest stood."""
    slim, where = dict(doc), {}
    for name in TABLES:
        rows, check = doc.get(name), _row_check(reader, name)
        if isinstance(rows, list) and check is not None:
            kept = [i for i, row in enumerate(rows) if not check(row)]
            slim[name], where[name] = [rows[i] for i in kept], kept
    return slim, where


def _remap(parts: list[Any], where: dict[str, list[int]]) -> list[Any]:
    """A key path into the slim document as a key path into the file."""
    if len(parts) > 1 and parts[0] in where and isinstance(parts[1], int):
        return [parts[0], where[parts[0]][parts[1]], *parts[2:]]
    return parts


def _schema_problems(doc: Doc, reader: str) -> Iterator[tuple[str, str]]:
    slim, where = _slim(doc, reader)
    for error in itertools.islice(_validator(reader).iter_errors(slim), MAX_PROBLEMS + 1):
        if error.validator in _OF_VALUE:
            wanted = error.schema.get("description") or _WANTED.get(error.schema.get("type"), "")
            yield (_path(_remap(list(error.absolute_path), where)),
                   "must be %s, not %s" % (wanted, brief(error.instance)))
        else:
            yield from ((_path(_remap(parts, where)), msg) for parts, msg in schema_messages(error))


def _rows(doc: Doc) -> Iterator[tuple[str, Any, bool]]:
    """(key path, name, whether it names a node) of every name in the tables."""
    for table in TABLES:
        for i, row in enumerate(doc.get(table, [])):
            for key in ("class", "client", "server", "host"):
                if key in row:
                    yield "%s[%d].%s" % (table, i, key), row[key], key != "class"


def _scheduled(doc: Doc) -> Iterator[tuple[str, Any, bool]]:
    """(key path, name, whether it names a node) of every name of the request and its steps."""
    for i, step in enumerate(doc.get("schedule", [])):
        base = "schedule[%d]" % i
        yield from (("%s.%s" % (base, k), step[k], False) for k in ("id", "class") if k in step)
        for j, pair in enumerate(step.get("pairs", [])):
            where = "%s.pairs[%d]" % (base, j)
            yield from (("%s.%s" % (where, k), pair[k], True) for k in ("client", "server"))
            yield from (("%s.via[%d]" % (where, k), v, True) for k, v in enumerate(pair.get("via", [])))
        for key in ("local", "order"):
            yield from (("%s.%s[%d]" % (base, key, k), v, True) for k, v in enumerate(step.get(key, [])))


def _other_names(doc: Doc) -> Iterator[tuple[str, Any, bool]]:
    if "topology" in doc:
        yield "topology", doc["topology"], False
    for key, cap in doc.get("capacity", {}).items():
        yield "capacity.%s" % key, key, False
        yield "capacity.%s.class" % key, cap["class"], False


def _semantic(doc: Doc, nodes: Collection[str] | None, topology: str | None) -> Iterator[tuple[str, str]]:
    """Names that are no names, nodes outside the request, the schedule or the plan given."""
    if topology is not None and doc.get("topology", topology) != topology:
        yield "topology", "the results of %s, not of %s (the topology given)" % (
            shown(doc["topology"]), shown(topology))
    request = doc.get("params", {}).get("nodes")
    scheduled = {v for _p, v, node in _scheduled(doc) if node}
    for where, value, node in itertools.chain(_scheduled(doc), _rows(doc), _other_names(doc)):
        problem = node_name_problem(value)
        if problem:
            yield where, problem
        elif nodes is not None and node and value not in nodes:
            yield where, "node %s is not in the plan of %s" % (shown(value), topology)
        elif node and request is not None and where.startswith("schedule") and value not in request:
            yield where, "node %s is not one of the run's nodes (params.nodes)" % shown(value)
        elif node and scheduled and not where.startswith("schedule") and value not in scheduled:
            yield where, "node %s is in none of the steps (schedule)" % shown(value)
    for where, text in control_characters_in(doc):
        yield where, "%s holds a control character or line break" % shown(text)


def document_problems(doc: Any, reader: str | None = "report") -> list[str]:
    """Why doc cannot be written as a results.json that reader reads (empty: it can), as
    'KEY PATH: message': a number that is not finite (a node's NaN or Infinity), else
    what the schema refuses (a sample that is no number), the first MAX_PROBLEMS
    (reader None: only the numbers)."""
    bad = gate.not_finite(doc)
    if bad is not None:
        return ["%s: %s is not a finite number" % (escaped(_path(bad[0])), bad[1])]
    if reader is None:
        return []
    return ["%s: %s" % (where or "(the document)", message)
            for where, message in itertools.islice(_schema_problems(doc, reader), MAX_PROBLEMS)]


def check(folder: str, reader: str, nodes: Collection[str] | None = None, topology: str | None = None,
          more: More | None = None) -> tuple[Doc | None, list[Problem]]:
    """The results.json of a results folder as `reader` (report, exchange, latency)
    reads it, or None and every problem (file, key path, message): the schema, then
    names, nodes of the run (of `nodes`, the plan's, when given) and `more`."""
    problems = Problems(os.path.join(folder, FILE))
    doc = _load(folder, problems)
    found: Iterable[tuple[str, str]] = ()
    if problems:
        pass
    elif not isinstance(doc, dict):
        found = [("", "must be a mapping of the benchmark's tables, not %s" % brief(doc))]
    elif "format" not in doc and not doc.keys() & {*TABLES, "schedule"}:
        found = [("", "is no results.json of playbooks/benchmark.yml: no 'format' key and none of "
                  "its tables (%s)" % ", ".join(TABLES))]
    elif (deep := gate.deepest(doc, MAX_DEPTH - 1)) is not None:
        found = [(_path(deep), "nests deeper than %d levels" % MAX_DEPTH)]
    else:
        found = list(itertools.islice(_schema_problems(doc, reader), MAX_PROBLEMS + 1))
        if not found:
            found = itertools.chain(_semantic(doc, nodes, topology), more(doc) if more else ())
    for where, message in itertools.islice(found, MAX_PROBLEMS + 1):
        problems.add(where, message)
    if len(problems) > MAX_PROBLEMS:
        problems.items[MAX_PROBLEMS:] = [Problem("... and more problems (the first %d are listed)"
                                                 % MAX_PROBLEMS, file=problems.file)]
    return (None, problems.items) if problems else (doc, [])


def read(folders: Iterable[str], reader: str, nodes: Collection[str] | None = None,
         topology: str | None = None, more: More | None = None) -> list[Doc]:
    """The checked results.json of each folder; CompileError with the problems of them all."""
    docs, problems = [], []
    for folder in folders:
        doc, found = check(folder, reader, nodes, topology, more)
        docs.append(doc)
        problems += found
    if problems:
        raise CompileError(problems)
    return [d for d in docs if d is not None]
