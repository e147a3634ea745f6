"""Benchmark results: the nodes' raw outputs turned into tables (token
exchange per pair and aggregated over concurrent pairs, latency against the
per-hop model, iperf3 against tokex, ring, file copy), and the CSV, JSON and
Markdown files of `results/<topology>/<timestamp>/`. Pure logic (stdlib).
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import stat
from collections.abc import Callable
from typing import Any

from .. import gate
from ..agent.files import atomic_write
from ..agent.names import escaped
from ..gate.node import REQUIRED, shape_problem
from . import results_schema
from .capacity import capacity
from .planner import DEFAULT_MODEL, BenchError, Plan, predict_rtt
from .results_schema import FORMAT, TABLES

Outputs = dict[str, dict[str, Any]]       # host -> {file name: parsed JSON}
Results = dict[str, Any]
Step = dict[str, Any]
_NUMBER = (int, float)
_RTT = ("min", "median", "p99", "max")
# What a token exchange's output must hold where the tables read it (a node's file).
TOKEX_OUTPUT = {REQUIRED: ("runs",), "runs": [{
    REQUIRED: ("proto", "size", "count", "seconds", "lost", "one_way_MBps", "exchange_MBps", "start",
               "rtt_us"),
    "proto": str, "size": int, "count": int, "seconds": _NUMBER, "lost": int, "one_way_MBps": _NUMBER,
    "exchange_MBps": _NUMBER, "start": _NUMBER, "window": int,
    "rtt_us": {REQUIRED: _RTT, **{k: _NUMBER for k in _RTT}}, "samples_us": [_NUMBER]}]}
# iperf3's JSON (what the tables read of it, each part optional as iperf3 leaves it out
# on an error) and the token exchange's stream and window runs beside it.
IPERF3_OUTPUT = {"end": {"sum_received": {"bits_per_second": _NUMBER}, "sum_sent": {"retransmits": int}},
                 "error": str}
TOKEX_RATES = {REQUIRED: ("runs",), "runs": [{REQUIRED: ("size", "one_way_MBps"), "size": int,
                                              "one_way_MBps": _NUMBER}]}
RING_OUTPUT = {REQUIRED: ("runs",), "runs": [{REQUIRED: ("size", "count", "rtt_us"), "size": int,
                                              "count": int, "rtt_us": {}}]}
COPY_OUTPUT = {REQUIRED: ("copy", "bytes", "seconds", "MBps", "start", "resident_pages_before"),
               "copy": str, "bytes": int, "seconds": _NUMBER, "MBps": _NUMBER, "start": _NUMBER,
               "resident_pages_before": int}


def summarize(values: list[float]) -> dict[str, Any]:
    """min, median, P99 (nearest rank), max of a list of numbers."""
    if not values:
        return {"n": 0, "min": None, "median": None, "p99": None, "max": None}
    s = sorted(values)
    n = len(s)

    def rank(q: int) -> float:
        k = max(1, min(n, -(-q * n // 100)))
        return s[int(k) - 1]
    return {"n": n, "min": s[0], "median": rank(50), "p99": rank(99), "max": s[-1]}


def _link_rate(plan: Plan, nodes: list[str]) -> int | None:
    """The slowest planned link the nodes send on: a bond counts as one link of
    channels x channel rate (its members carry no address of their own)."""
    rates = [i["rate_mbit"] for n in nodes for i in plan["nodes"][n]["interfaces"]
             if i.get("rate_mbit") and not i.get("bond")]
    return min(rates) if rates else None


def _tokex_row(st: Step, pr: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    row = {"class": st["class"], "pairs": len(st["pairs"]), "client": pr["client"],
           "server": pr["server"], "routers": pr["routers"],
           "switches": pr["switches"], "proto": run["proto"], "size": run["size"],
           "count": run["count"], "seconds": run["seconds"], "lost": run["lost"],
           "exchange_MBps": run["exchange_MBps"], "one_way_MBps": run["one_way_MBps"],
           "start": run["start"]}
    row.update({"rtt_%s_us" % k: v for k, v in run["rtt_us"].items()})
    return row


def _add_run(agg: dict[tuple[str, int], dict[str, Any]], st: Step, run: dict[str, Any]) -> None:
    """Add one pair's run to the aggregate of its protocol and size."""
    a = agg.setdefault((run["proto"], run["size"]), {
        "class": st["class"], "pairs": len(st["pairs"]), "proto": run["proto"], "size": run["size"],
        "exchange_MBps": 0.0, "one_way_MBps": 0.0, "reported": 0, "first_start": run["start"],
        "last_end": run["start"] + run["seconds"], "in_flight": run.get("window", 1)})
    a["exchange_MBps"] += run["exchange_MBps"]
    a["one_way_MBps"] += run["one_way_MBps"]
    a["reported"] += 1
    a["first_start"] = min(a["first_start"], run["start"])
    a["last_end"] = max(a["last_end"], run["start"] + run["seconds"])


def _latency_row(st: Step, pr: dict[str, Any], run: dict[str, Any], model: dict[str, Any]) -> dict[str, Any]:
    pred = predict_rtt(model, run["proto"], pr["switches"], pr["routers"])
    return {"class": st["class"], "client": pr["client"], "server": pr["server"],
            "proto": run["proto"], "size": run["size"], "routers": pr["routers"],
            "switches": pr["switches"],
            "one_way_median_us": run["rtt_us"]["median"] / 2,
            "one_way_min_us": run["rtt_us"]["min"] / 2,
            "one_way_p99_us": run["rtt_us"]["p99"] / 2,
            "model_one_way_us": pred / 2,
            "samples_one_way_us": [v / 2 for v in run.get("samples_us", [])]}


def concurrent(res: Results, cls: str, pairs: int, size: int, proto: str) -> float | None:
    """Exchange throughput (MB/s, both ways) of a step's pairs over the window
    in which all of them ran: from the last start to the first end, each
    exchange placed at its run's start plus the round trips before it (its
    samples; one token in flight). None without samples or a common window."""
    runs = [t for t in res.get("tokex", []) if (t["class"], t["pairs"], t["size"], t["proto"])
            == (cls, pairs, size, proto)]
    rtts: dict[str, list[float]] = {}
    for x in res.get("samples", []):
        if (x["class"], x["pairs"], x["size"], x["proto"]) == (cls, pairs, size, proto):
            rtts.setdefault(x["client"], []).append(x["rtt_us"] / 1e6)
    if not runs or any(t["client"] not in rtts for t in runs):
        return None
    ends: dict[str, list[float]] = {}
    for t in runs:
        clock, out = t["start"], []
        for rtt in rtts[t["client"]]:
            clock += rtt
            out.append(clock)
        ends[t["client"]] = out
    lo = max(t["start"] for t in runs)
    hi = min(e[-1] for e in ends.values())
    if hi <= lo:
        return None
    done = sum(1 for e in ends.values() for x in e if lo < x <= hi)
    return 2 * size * done / (hi - lo) / 1e6


def _finish_aggregate(a: dict[str, Any], res: Results) -> dict[str, Any]:
    """The sum of the pairs' own rates, and what the pairs moved together:
    over the window in which all of them ran (a ping-pong's exchanges are
    placed by their round trips), or, where they never all ran at once or
    kept several tokens in flight, bytes over the union of their windows."""
    a["sum_one_way_MBps"] = a["one_way_MBps"]
    a["sum_exchange_MBps"] = a["exchange_MBps"]
    a["counted_over"] = "pair"
    if a["reported"] < 2:
        return a
    cls, pairs, size, proto = a["class"], a["pairs"], a["size"], a["proto"]
    together = concurrent(res, cls, pairs, size, proto) if a["in_flight"] == 1 else None
    if together is not None:
        a["exchange_MBps"], a["one_way_MBps"] = together, together / 2
        a["counted_over"] = "common window"
        return a
    span = a["last_end"] - a["first_start"]
    done = sum(t["size"] * t["count"] for t in res["tokex"]
               if (t["class"], t["pairs"], t["size"], t["proto"]) == (cls, pairs, size, proto))
    if span > 0:
        a["one_way_MBps"] = min(a["one_way_MBps"], done / span / 1e6)
        a["exchange_MBps"] = 2 * a["one_way_MBps"]
        a["counted_over"] = "union of windows"
    return a


def _collect_tokex(res: Results, st: Step, outputs: Outputs, params: dict[str, Any]) -> None:
    agg: dict[tuple[str, int], dict[str, Any]] = {}
    for pr in st["pairs"]:
        doc = outputs.get(pr["client"], {}).get(st["id"] + ".json")
        if not doc:
            continue
        for run in doc["runs"]:
            res["tokex"].append(_tokex_row(st, pr, run))
            for i, v in enumerate(run.get("samples_us", [])):
                res["samples"].append({"class": st["class"], "pairs": len(st["pairs"]),
                                       "client": pr["client"], "server": pr["server"],
                                       "proto": run["proto"], "size": run["size"],
                                       "i": i, "rtt_us": v})
            _add_run(agg, st, run)
            # Latency: the smallest token of a 1-pair ping-pong (not windowed).
            if (len(st["pairs"]) == 1 and run["size"] == min(params["sizes"])
                    and run["size"] <= 64 and run.get("window", 1) == 1):
                res["latency"].append(_latency_row(st, pr, run, params["latency_model"]))
    for a in agg.values():
        res["aggregate"].append(_finish_aggregate(a, res))


def _collect_iperf3(res: Results, st: Step, outputs: Outputs, params: dict[str, Any]) -> None:
    pr = st["pairs"][0]
    got = outputs.get(pr["client"], {})
    ip = got.get(st["id"] + ".json") or {}
    end = ip.get("end", {})
    bps = end.get("sum_received", {}).get("bits_per_second")
    row = {"class": st["class"], "client": pr["client"], "server": pr["server"],
           "iperf3_MBps": bps / 8e6 if bps else None,
           "iperf3_retransmits": end.get("sum_sent", {}).get("retransmits"),
           "iperf3_error": ip.get("error")}
    for mode, size in (("stream", 8192), ("stream", 65536), ("window", 8192)):
        doc = got.get("%s-%s-%d.json" % (st["id"], mode, size)) or {"runs": []}
        for run in doc["runs"]:
            row["tokex_%s_%d_MBps" % (mode, run["size"])] = run["one_way_MBps"]
            if bps:
                row["ratio_%s_%d" % (mode, run["size"])] = round(run["one_way_MBps"] / (bps / 8e6), 3)
    res["iperf3"].append(row)


def _collect_ring(res: Results, st: Step, outputs: Outputs, params: dict[str, Any]) -> None:
    doc = outputs.get(st["order"][0], {}).get("ring-0.json") or {"runs": []}
    for run in doc["runs"]:
        row = {"nodes": len(st["order"]), "size": run["size"], "rounds": run["count"]}
        row.update({"round_%s_us" % k: v for k, v in run["rtt_us"].items()})
        res["ring"].append(row)


def _collect_copy(res: Results, st: Step, outputs: Outputs, params: dict[str, Any]) -> None:
    docs = []
    for h in list(st["local"]) + [pr["client"] for pr in st["pairs"]]:
        d = outputs.get(h, {}).get(st["id"] + ".json")
        if d:
            d = dict(d, host=h, remote=st["remote"], file_mb=st["file_mb"])
            docs.append(d)
            res["copy"].append({k: d[k] for k in ("host", "copy", "remote", "file_mb", "bytes",
                                                  "seconds", "MBps", "start", "resident_pages_before")})
    if docs:
        t0 = min(d["start"] for d in docs)
        t1 = max(d["start"] + d["seconds"] for d in docs)
        res["copy_aggregate"].append({
            "remote": st["remote"], "file_mb": st["file_mb"], "copies": len(docs),
            "aggregate_MBps": sum(d["bytes"] for d in docs) / (t1 - t0) / 1e6 if t1 > t0 else None,
            "sum_of_rates_MBps": sum(d["MBps"] for d in docs),
            "resident_pages_before": sum(max(0, d["resident_pages_before"]) for d in docs)})


_COLLECT: dict[str, Callable[[Results, Step, Outputs, dict[str, Any]], None]] = {
    "tokex": _collect_tokex, "iperf3": _collect_iperf3, "ring": _collect_ring, "copy": _collect_copy}


def outputs_problems(sched: dict[str, Any], outputs: Outputs) -> list[str]:
    """Why what the nodes sent cannot be read (empty: it can): a number that is not
    finite anywhere, a token exchange's run whose numbers are no numbers."""
    bad = gate.not_finite(outputs)
    if bad is not None:
        return ["outputs.%s: %s is not a finite number" % (escaped(".".join(map(str, bad[0]))), bad[1])]
    out = []
    for st in sched["steps"]:
        for host, name, spec in _expected_files(st):
            doc = outputs.get(host, {}).get(name)
            why = shape_problem(doc, spec) if doc else None
            out += ["%s: %s: %s" % (escaped(host), escaped(name), escaped(why))] if why else []
    return out[:10]


def _expected_files(st: Step) -> list[tuple[str, str, Any]]:
    """(host, file name, the shape the tables read) of each file a step's nodes write."""
    kind, name = st["kind"], st["id"] + ".json"
    if kind == "tokex":
        return [(pr["client"], name, TOKEX_OUTPUT) for pr in st["pairs"]]
    if kind == "iperf3":
        client = st["pairs"][0]["client"]
        return [(client, name, IPERF3_OUTPUT)] + [
            (client, "%s-%s-%d.json" % (st["id"], mode, size), TOKEX_RATES)
            for mode, size in (("stream", 8192), ("stream", 65536), ("window", 8192))]
    if kind == "ring":
        return [(st["order"][0], "ring-0.json", RING_OUTPUT)]
    if kind == "copy":
        return [(h, name, COPY_OUTPUT) for h in list(st["local"]) + [pr["client"] for pr in st["pairs"]]]
    return []


def collect(sched: dict[str, Any], outputs: Outputs, plan: Plan) -> Results:
    """Turn the raw outputs {host: {file name: parsed JSON}} into result tables
    (BenchError: outputs_problems)."""
    problems = outputs_problems(sched, outputs)
    if problems:
        raise BenchError(problems + ["nothing written: the nodes sent what a results folder cannot hold"])
    rate = _link_rate(plan, sched["params"]["nodes"])
    res: Results = {"tokex": [], "aggregate": [], "samples": [], "iperf3": [], "ring": [],
                    "copy": [], "copy_aggregate": [], "latency": [],
                    "link_MBps": rate / 8.0 if rate else None}
    for st in sched["steps"]:
        step = _COLLECT.get(st["kind"])
        if step:
            step(res, st, outputs, sched["params"])
    add_capacity(res, sched["steps"], plan)
    return res


def add_capacity(res: Results, steps: list[Step], plan: Plan) -> None:
    """The capacity of each token-exchange step's concurrent pairs
    (capacity.py) as res["capacity"] {step id: ...}, and on each aggregate
    row its capacity and the percentages against it."""
    res["capacity"] = {}
    for st in steps:
        if st["kind"] != "tokex":
            continue
        cap = capacity(plan, st["pairs"])
        if cap:
            res["capacity"][st["id"]] = dict(cap, **{"class": st["class"], "pairs": len(st["pairs"])})
    by_set = {(c["class"], c["pairs"]): c for c in res["capacity"].values()}
    for a in res["aggregate"]:
        for k in ("one_way_pct_of_link", "exchange_pct_of_link"):
            a.pop(k, None)
        cap = by_set.get((a["class"], a["pairs"]))
        a["capacity_MBps"] = cap["MBps"] if cap else None
        _percent(a)


def _percent(a: dict[str, Any]) -> None:
    """An aggregate row's throughput against its capacity, one way and exchanged."""
    cap = a.get("capacity_MBps")
    a["one_way_pct_of_capacity"] = round(100 * a["one_way_MBps"] / cap, 1) if cap else None
    a["exchange_pct_of_capacity"] = round(100 * a["exchange_MBps"] / cap, 1) if cap else None


def _recount(res: Results, params: dict[str, Any]) -> None:
    """Count each stored aggregate again from its pairs' runs and samples, as
    collect() does now (older results carry the union-of-windows figure)."""
    for a in res["aggregate"]:
        if "sum_exchange_MBps" not in a or "first_start" not in a:
            continue
        a["exchange_MBps"], a["one_way_MBps"] = a["sum_exchange_MBps"], a["sum_one_way_MBps"]
        a.setdefault("in_flight", params.get("exchange_window", 1))
        _finish_aggregate(a, res)
        _percent(a)


# The plots benchmark-report draws (plots.py), by file name.
PLOT_FILES = ("token-exchange-tcp.png", "token-exchange-udp.png", "round-trip.png", "file-copy.png",
              "latency.png", "ring.png")


def _mode(path: str) -> int:
    """path's own mode (a link's, not its target's); a regular file's when nothing is there."""
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return stat.S_IFREG


def check_targets(folder: str, names: list[str]) -> None:
    """Every file of a results or figure folder that is about to be written can be
    (nothing there, a regular file, or a link, which is replaced), before any is:
    OSError naming the first that cannot."""
    for name in names:
        mode = _mode(os.path.join(folder, name))
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise OSError(errno.EEXIST, "a folder, pipe, socket or device, not a file",
                          os.path.join(folder, name))


def write_file(path: str, data: str | bytes) -> None:
    """Write a file of a results or figure folder atomically. A symbolic link
    planted in its place is replaced, never followed; a pipe, socket or device
    there is refused (OSError), never written into."""
    folder, name = os.path.split(path)
    check_targets(folder, [name])
    if stat.S_ISLNK(_mode(path)):
        os.unlink(path)
    atomic_write(path, data, durable=False)


def write_csv(path: str, rows: list[dict[str, Any]]) -> None:
    keys = []
    for r in rows:
        for k in r:
            if k not in keys and not isinstance(r[k], (list, dict)):
                keys.append(k)
    out = io.StringIO(newline="")
    w = csv.DictWriter(out, fieldnames=keys, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    write_file(path, out.getvalue())


def write_json(path: str, data: Any) -> None:
    write_file(path, json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n")


def _fmt(v: Any, nd: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return ("%%.%df" % nd) % v
    return str(v)


def _pct(v: float | None) -> str | None:
    return None if v is None else "%.1f %%" % v


def _table(head: list[str], rows: list[list[Any]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


OFFLOADS = {"tx-checksumming": "tx-csum", "tcp-segmentation-offload": "TSO",
            "generic-segmentation-offload": "GSO", "generic-receive-offload": "GRO"}


def _node_facts(lines: Any) -> tuple[str, str, str]:
    """(kernel, shaping, offloads) of one node from its `key=value` lines
    (the role's probe: kernel=, qdisc=, offload_<nic>= or offloads=)."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    kv = [str(x).partition("=") for x in lines or []]
    kernel = next((v for k, _eq, v in kv if k == "kernel"), "")
    shaping: dict[str, int] = {}
    for k, _eq, v in kv:
        for q in (v.split(";") if k == "qdisc" else []):
            w = q.split()
            if len(w) > 1 and w[0] == "qdisc":
                what = w[1] + (" " + w[w.index("rate") + 1] if "rate" in w[:-1] else "")
                shaping[what] = shaping.get(what, 0) + 1
    offloads: dict[str, int] = {}
    for k, _eq, v in kv:
        if k.startswith("offload_"):
            feats = [f.split(":", 1) for f in v.split(";") if ":" in f]
            what = ", ".join("%s %s" % (OFFLOADS.get(n.strip(), n.strip()), st.split()[0])
                             for n, st in feats if st.split()) or "none reported"
            offloads[what] = offloads.get(what, 0) + 1
        elif k == "offloads":
            offloads[v] = offloads.get(v, 0) + 1
    return kernel, _counted(shaping, "qdisc"), _counted(offloads, "NIC")


def _counted(found: dict[str, int], unit: str) -> str:
    return "; ".join("%s (%d %s%s)" % (k, n, unit, "s" if n > 1 else "")
                     for k, n in sorted(found.items())) or "—"


def _names(nodes: list[str]) -> str:
    if len(nodes) <= 3:
        return ", ".join(nodes)
    return "%s, %s … %s (%d)" % (nodes[0], nodes[1], nodes[-1], len(nodes))


def environment_markdown(env: dict[str, Any]) -> list[str]:
    """The environment as two short tables: the run's facts, then the nodes
    grouped by what they report alike (kernel, shaping, NIC offloads)."""
    rows = []
    for k in sorted(env):
        v = env[k]
        if k == "node_environment" and isinstance(v, dict):
            continue
        if isinstance(v, list):
            v = ", ".join(str(x) for x in v)
        elif isinstance(v, dict):
            v = json.dumps(v, sort_keys=True)
        rows.append([k.replace("_", " "), " ".join(str(v).split())])
    out = [_table(["what", "value"], rows)]
    per_node = env.get("node_environment")
    if isinstance(per_node, dict) and per_node:
        kinds: dict[tuple[str, str, str], list[str]] = {}
        for node, lines in per_node.items():
            kinds.setdefault(_node_facts(lines), []).append(node)
        out += ["", "Nodes alike are one row (every node's own lines are in results.json):", "",
                _table(["nodes", "kernel", "shaping (qdiscs)", "NIC offloads"],
                       [[_names(nodes), *facts] for facts, nodes in kinds.items()])]
    return out


def _tokex_markdown(p: dict[str, Any], res: Results) -> list[str]:
    """The aggregate table, each set of pairs against its capacity, and the capacities."""
    rows = []
    for a in sorted(res["aggregate"], key=lambda a: (a["class"], a["proto"], a["pairs"], a["size"])):
        if a["size"] in (min(p["sizes"]), 1024, 8192) or a["size"] == max(p["sizes"]):
            rows.append([a["class"], a["proto"], a["pairs"], a["size"], a["exchange_MBps"],
                         a["one_way_MBps"], a.get("capacity_MBps"), _pct(a.get("one_way_pct_of_capacity")),
                         a.get("counted_over")])
    caps = sorted((res.get("capacity") or {}).values(), key=lambda c: (c["class"], c["pairs"]))
    return [_table(["class", "proto", "pairs", "size", "exchange MB/s", "one-way MB/s",
                    "capacity MB/s", "one-way % of capacity", "counted over"], rows),
            "", "Counted over: the window in which all the pairs ran (each ping-pong exchange "
            "placed by its round trips), else the union of their windows (pairs that never ran "
            "all at once, or kept several tokens in flight); the sum of the pairs' own rates is "
            "in aggregate.csv (`sum_exchange_MBps`).", "",
            "Capacity: what the concurrent pairs can move at most, one way, from the plan: "
            "pairs on disjoint links add up, pairs crossing one NIC or switch uplink share it "
            "(each pair's rate grows until something on its path is full).", "",
            _table(["class", "pairs", "capacity MB/s", "bottleneck"],
                   [[c["class"], c["pairs"], c["MBps"], c["bottleneck"]] for c in caps])]


def summary_markdown(sched: dict[str, Any], res: Results, env: dict[str, Any], title: str) -> str:
    """The human summary: environment, then one table per benchmark."""
    p = sched["params"]
    lines = ["# beonet benchmark: %s" % title, "", "## Environment", ""]
    lines += environment_markdown(env)
    lines += ["", "Throughput: MB = 10^6 bytes. *exchange* counts the token both ways "
              "(2 x size x count / time, the papers' token-exchange count), *one-way* counts it "
              "once (what a stream, or iperf3, measures). Planned link rate %s MB/s (a bond: "
              "its channels together).%s" % (_fmt(res["link_MBps"]), _family_sentence(p)),
              "", "## Token exchange (aggregate over concurrent pairs)", ""]
    lines += _tokex_markdown(p, res)
    return "\n".join(lines + _other_markdown(p, res))


def _family_sentence(p: dict[str, Any]) -> str:
    """' Measured over IPv4.' (or IPv6): the request's family, where it records one."""
    family = p.get("family")
    return " Measured over IPv%d." % family if family in (4, 6) and not isinstance(family, bool) else ""


def _other_markdown(p: dict[str, Any], res: Results) -> list[str]:
    """Round trip, iperf3, latency, ring and file copy tables."""
    lines = ["", "## Round trip per pair (TCP, 1 pair)", ""]
    rows = [[t["class"], t["size"], t["rtt_min_us"], t["rtt_median_us"], t["rtt_p99_us"], t["rtt_max_us"]]
            for t in res["tokex"] if t["pairs"] == 1 and t["proto"] == "tcp"]
    lines.append(_table(["class", "size", "min us", "median us", "P99 us", "max us"], rows))
    lines += ["", "## iperf3 and tokex one-way modes (same pair)", ""]
    rows = [[r["class"], "%s->%s" % (r["client"], r["server"]), r["iperf3_MBps"],
             r.get("tokex_stream_8192_MBps"), r.get("ratio_stream_8192"),
             r.get("tokex_stream_65536_MBps"), r.get("ratio_stream_65536"),
             r.get("tokex_window_8192_MBps"), r.get("ratio_window_8192")] for r in res["iperf3"]]
    lines.append(_table(["class", "pair", "iperf3 MB/s", "stream 8K", "ratio", "stream 64K", "ratio",
                         "window 8K", "ratio"], rows))
    lines += ["", "## Latency by path class vs the model (4-byte tokens, one way = RTT/2)", ""]
    rows = [[r["class"], r["proto"], r["routers"], r["switches"], r["one_way_min_us"],
             r["one_way_median_us"], r["one_way_p99_us"], r["model_one_way_us"]] for r in res["latency"]]
    lines.append(_table(["class", "proto", "routers", "switches", "min us", "median us", "P99 us",
                         "model us"], rows))
    m = p["latency_model"]
    lines += ["", "Model (round trip): TCP %s + %s/switch + %s/router us; UDP %s + %s/switch + %s/router us."
              % (m["tcp"]["base_us"], m["tcp"]["switch_us"], m["tcp"]["router_us"],
                 m["udp"]["base_us"], m["udp"]["switch_us"], m["udp"]["router_us"])]
    lines += ["", "## Ring round trip", ""]
    rows = [[r["nodes"], r["size"], r["round_min_us"], r["round_median_us"], r["round_p99_us"],
             r["round_max_us"]] for r in res["ring"]]
    lines.append(_table(["nodes", "size", "min us", "median us", "P99 us", "max us"], rows))
    lines += ["", "## File copy (%d concurrent copies)" % p["copies"], ""]
    rows = [[c["file_mb"], c["remote"], c["copies"], c["aggregate_MBps"], c["resident_pages_before"]]
            for c in sorted(res["copy_aggregate"], key=lambda c: (c["file_mb"], c["remote"]))]
    lines.append(_table(["file MB", "remote copies", "copies", "aggregate MB/s",
                         "pages cached at start"], rows))
    lines.append("")
    return lines


def write_results(folder: str, sched: dict[str, Any], res: Results, env: dict[str, Any], plan: Plan,
                  raw: Outputs) -> None:
    """raw.json, results.json (every table, the environment, the request and
    the steps: enough to render the summary and plots again), CSV, summary.md; nothing
    (BenchError) when a number is not finite or results.json would not be one its
    readers take (results_schema.document_problems)."""
    doc = dict(res, format=FORMAT, environment=env, params=sched["params"], topology=plan["topology"]["name"],
               schedule=[{k: v for k, v in s.items() if k != "hosts"} for s in sched["steps"]])
    problems = ["raw.json: %s" % p for p in results_schema.document_problems(raw, None)]
    problems = problems or ["results.json: %s" % p for p in results_schema.document_problems(doc)]
    if problems:
        raise BenchError(problems + ["nothing written to %s: the nodes sent what a results folder "
                                     "cannot hold" % escaped(folder)])
    os.makedirs(folder, exist_ok=True)
    write_json(os.path.join(folder, "raw.json"), raw)
    write_json(os.path.join(folder, "results.json"), doc)
    write_tables(folder, sched, res, env, plan["topology"]["name"])


def write_tables(folder: str, sched: dict[str, Any], res: Results, env: dict[str, Any], title: str) -> None:
    """The CSV tables and summary.md."""
    for name in TABLES:
        write_csv(os.path.join(folder, name + ".csv"), res[name])
    write_file(os.path.join(folder, "summary.md"), summary_markdown(sched, res, env, title))


def _stored_params(doc: dict[str, Any]) -> dict[str, Any]:
    """The request of a results.json (older files kept no request: rebuilt from the tables)."""
    if doc.get("params"):
        return dict(doc["params"])
    sizes = sorted({t["size"] for t in doc.get("tokex", [])}) or [4]
    copies = max([c["copies"] for c in doc.get("copy_aggregate", [])] or [7])
    return {"sizes": sizes, "latency_model": DEFAULT_MODEL, "copies": copies}


def render(folder: str, plan: Plan | None = None) -> tuple[dict[str, Any], Results, str]:
    """Rewrite the CSV tables and summary.md of a results folder from its
    results.json, with the capacities worked out again from `plan` when
    given; returns (schedule, tables, title) for the plots. The file is checked
    first (results_schema: CompileError, nothing written, when it is bad)."""
    nodes = list(plan["nodes"]) if plan is not None else None
    doc = results_schema.read([folder], "report", nodes, plan["topology"]["name"] if plan else None)[0]
    sched = {"params": _stored_params(doc), "steps": doc.get("schedule", [])}
    res: Results = {k: doc.get(k, []) for k in TABLES}
    res["link_MBps"] = doc.get("link_MBps")
    res["capacity"] = doc.get("capacity", {})
    _recount(res, sched["params"])
    if plan is not None:
        add_capacity(res, sched["steps"], plan)
    title = doc.get("topology") or (plan["topology"]["name"] if plan is not None else
                                    os.path.basename(os.path.dirname(os.path.abspath(folder))))
    check_targets(folder, ["results.json", "summary.md", *("%s.csv" % t for t in TABLES), *PLOT_FILES])
    write_json(os.path.join(folder, "results.json"), dict(doc, **res, params=sched["params"], topology=title,
                                                          format=FORMAT))
    write_tables(folder, sched, res, doc.get("environment", {}), title)
    return sched, res, title
