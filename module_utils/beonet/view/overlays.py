"""The page's overlays, read from what the playbooks write and checked where
they enter: a file of the wrong shape is a CompileError naming the file and the
key path (`beonet view` exits 2, nothing written).

- verify: the result of the `beonet_verify_live` module (playbooks/verify.yml),
  saved as JSON: dead nodes, mismatched pairs, state problems.
- discovered: discovery reports {host: report} (playbooks/discover.yml), read by
  the cabling reader and matched to the plan: the cabling faults and their fixes.
- results: a benchmark results folder (playbooks/benchmark.yml), read by its
  reader: each pair's best rate, which the page adds to every link of the
  pair's preferred path (walked as the page walks the paths it shows)."""

from __future__ import annotations

from typing import Any

from .. import gate
from ..benchmarks import results_schema
from ..cabling import match, reports
from ..compiler.errors import CompileError, Problems
from ..compiler.pipeline import Compiled
from .model import Model

MAX_BYTES = 64 << 20
MAX_DEPTH = 16       # a verify report nests 6 levels (mismatches[].expected[][]{})
LISTS = {"dead": str, "unreadable": str, "problems": str, "summary": str, "mismatches": dict}
KEEP = 1000          # items of each list shown


def _verify_shape(data: Any, problems: Problems) -> None:
    """The module result's keys the page reads, each of its type."""
    if not isinstance(data, dict):
        problems.add("", "must be a mapping (the beonet_verify_live module's result), not %s"
                     % type(data).__name__)
        return
    if not data.keys() & {"dead", "mismatches", "proven", "problems"}:
        problems.add("", "is no verify report: none of dead, mismatches, proven, problems")
    for key, kind in LISTS.items():
        value = data.get(key, [])
        if not isinstance(value, list):
            problems.add(key, "must be a list, not %s" % type(value).__name__)
            continue
        for k, item in enumerate(value):
            if not isinstance(item, kind):
                problems.add("%s[%d]" % (key, k), "must be %s, not %s"
                             % ("text" if kind is str else "a mapping", type(item).__name__))
            elif kind is dict:
                for field in ("source", "destination"):
                    if not isinstance(item.get(field), str):
                        problems.add("%s[%d].%s" % (key, k, field), "must be a node name (text)")
    for key in ("pairs", "proven", "mismatched"):
        if key in data and (not isinstance(data[key], int) or isinstance(data[key], bool)):
            problems.add(key, "must be a whole number")


def verify(path: str) -> dict[str, Any]:
    """The verify overlay: dead nodes, mismatched pairs [source, destination, why], problems."""
    problems = Problems(path)
    problems.stage = "verify report"
    try:
        data = gate.load_json(path, MAX_BYTES, MAX_DEPTH, "a verify report")
    except gate.GateError as exc:
        problems.add(exc.path, exc.message, line=exc.line)
    else:
        _verify_shape(data, problems)
    if problems:
        raise CompileError(problems.items)
    mismatched = data.get("mismatched", len(data.get("mismatches", [])))
    summary = "%s of %s pairs proven, %s mismatched" % (data.get("proven", "?"), data.get("pairs", "?"),
                                                        mismatched)
    return {"file": path, "summary": summary,
            "dead": data.get("dead", [])[:KEEP] + data.get("unreadable", [])[:KEEP],
            "mismatches": [[m["source"], m["destination"], str(m.get("why", ""))]
                           for m in data.get("mismatches", [])[:KEEP]],
            "problems": data.get("problems", [])[:KEEP]}


def cabling(path: str, compiled: Compiled) -> dict[str, Any]:
    """The discovery overlay: each cabling fault [text, fix, nodes it involves]."""
    found, problems = reports.load(path)
    if found is None:
        raise CompileError(problems.items)
    result = match.match(compiled, found)
    return {"file": path, "faults": [[f.text, f.fix, sorted({str(e.get("node", "")) for e in f.ends})]
                                     for f in result.faults[:KEEP]]}


def _rate(row: dict[str, Any]) -> float | None:
    for key in ("iperf3_MBps", "one_way_MBps"):
        if isinstance(row.get(key), (int, float)):
            return float(row[key])
    return None


def load(folder: str, compiled: Compiled, m: Model) -> dict[str, Any]:
    """The benchmark overlay: each measured (client, server) pair's best rate in
    MB/s, [client, server, MB/s] by the page's node indices, and its rows."""
    names = [n.name for n in compiled.graph.nodes]
    doc = results_schema.read([folder], "report", names)[0]
    best: dict[tuple[str, str], float] = {}
    for table in ("iperf3", "tokex"):
        for row in doc.get(table) or []:
            pair, rate = (row.get("client"), row.get("server")), _rate(row)
            if rate is not None and pair[0] in m.index and pair[1] in m.index and pair[0] != pair[1]:
                best[pair] = max(rate, best.get(pair, 0.0))
    measured = sorted(best.items())
    return {"file": folder, "pairs": [[m.index[a], m.index[b], round(r, 1)] for (a, b), r in measured],
            "rows": ["%s \u2192 %s: %.1f MB/s" % (a, b, r) for (a, b), r in measured][:KEEP]}
