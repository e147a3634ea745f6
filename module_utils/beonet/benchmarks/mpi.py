"""MPI on the topology: what mpirun needs (ranks, pairings by path class, the
gateway of the compute test) and what its samples say (fits, summary, plots).

The benchmark (roles/beonet_mpi/files/mpibench.c) runs one rank per node, in
plan order. It reads a pairs file (``pair CLASS A B`` and ``gateway G A B``
lines, ranks) and writes one CSV (``phase,class,a,b,bytes,usec``)."""

from __future__ import annotations

import csv
import io
import math
import os
from typing import Any

from ..agent.names import shown
from .planner import CLASS_ORDER, BenchError, Pair, PathOf, classify, disjoint_pairs
from .report import summarize, write_csv, write_json

Plan = dict[str, Any]
PAIRS_PER_CLASS = 4


def plan_run(plan: Plan, path_of: PathOf, params: dict[str, Any]) -> dict[str, Any]:
    """Ranks, the pairs file and the gateway test of one run (one rank per node)."""
    nodes = list(plan["nodes"])
    if len(nodes) < 2:
        raise BenchError(["mpi: the plan has %d node; the benchmark needs two" % len(nodes)])
    per_class = params.get("pairs_per_class", PAIRS_PER_CLASS)
    if not isinstance(per_class, int) or isinstance(per_class, bool) or per_class < 1:
        raise BenchError(["params.pairs_per_class: a whole number of 1 or more, not %r" % per_class])
    rank = {name: i for i, name in enumerate(nodes)}
    classes = classify(plan, path_of, nodes)
    lines, chosen = [], {}
    for cls in [c for c in CLASS_ORDER if c in classes]:
        chosen[cls] = disjoint_pairs(classes[cls], per_class)
        lines += ["pair %s %d %d" % (cls, rank[a], rank[b]) for a, b, _info in chosen[cls]]
    gateway = _gateway(classes, rank)
    if gateway:
        lines.append("gateway %d %d %d" % tuple(rank[n] for n in gateway))
    pair_class = {"%d-%d" % (rank[a], rank[b]): info["class"]
                  for pairs in classes.values() for a, b, info in pairs}
    return {"ranks": nodes, "pairs_text": "\n".join(lines) + "\n", "pair_class": pair_class,
            "gateway": list(gateway) if gateway else None,
            "chosen": {c: [[a, b] for a, b, _i in p] for c, p in chosen.items()}}


def _gateway(classes: dict[str, list[Pair]], rank: dict[str, int]) -> tuple[str, str, str] | None:
    """(gateway, a, b): the first pair routed through exactly one forwarding node."""
    for a, b, info in classes.get("gateway-1", []):
        g = info["via"][0]
        if g in rank and g not in (a, b):
            return g, a, b
    return None


_SAMPLE_COLUMNS = {"phase": str, "class": str, "a": int, "b": int, "bytes": int, "usec": float}


def parse_samples(text: str) -> list[dict[str, Any]]:
    """The rows of mpibench's samples CSV; BenchError naming each row whose value is
    missing or is not a finite number where one is due (at most 10 named)."""
    rows, problems = [], []
    for line, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        try:
            rows.append({key: _sample_value(kind, row.get(key)) for key, kind in _SAMPLE_COLUMNS.items()})
        except ValueError as exc:
            problems.append("samples line %d: %s" % (line, exc))
            if len(problems) >= 10:
                break
    if problems:
        raise BenchError(problems)
    return rows


def _sample_value(kind: type, text: Any) -> Any:
    if not isinstance(text, str) or not text.isprintable():
        raise ValueError("a value is missing or not one line of text: %s" % shown(text))
    value = kind(text)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("%s is not a finite number" % shown(text))
    return value


def fit_line(points: list[tuple[int, float]]) -> dict[str, float | None] | None:
    """Least squares t = latency + bytes / bandwidth: latency in us, bandwidth in MB/s.

    When the time does not grow with the size (few or noisy samples) the fit has no
    bandwidth: it is None (JSON null, "-" in the summary), never an infinity."""
    n = len(points)
    if n < 2:
        return None
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx        # us per byte
    return {"latency_us": round(my - slope * mx, 2),
            "bandwidth_mb_s": round(1 / slope, 3) if slope > 0 else None}


def analyse(rows: list[dict[str, Any]], run: dict[str, Any]) -> dict[str, Any]:
    """Per path class (fixed and random phases): samples, median, fit; compute rates; allreduce."""
    by_class: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for r in rows:
        if r["phase"] == "fixed":
            cls = r["class"]
        elif r["phase"] == "random":
            cls = run["pair_class"].get("%d-%d" % (r["a"], r["b"]), "unknown")
        else:
            continue
        by_class.setdefault(r["phase"], {}).setdefault(cls, []).append((r["bytes"], r["usec"]))
    classes = {phase: {cls: {"samples": len(pts), "usec": summarize([u for _b, u in pts]),
                             "fit": fit_line(pts)}
                       for cls, pts in sorted(found.items())}
               for phase, found in by_class.items()}
    compute = {r["class"]: r["usec"] for r in rows if r["phase"] == "compute"}
    out: dict[str, Any] = {"classes": classes,
                           "allreduce": [{"bytes": r["bytes"], "usec": r["usec"]}
                                         for r in rows if r["phase"] == "allreduce"]}
    if compute:
        out["compute"] = {"gateway": run["gateway"], "mflops": compute,
                          "loaded_over_idle": round(compute.get("loaded", 0) / compute["idle"], 3)
                          if compute.get("idle") else None}
    return out


def _shown(value: float | None) -> str:
    return "-" if value is None else str(value)


def _summary(title: str, result: dict[str, Any], env: dict[str, Any]) -> str:
    out = ["# MPI benchmark: %s" % title, "",
           "One rank per node, one node after another in plan order; half round trips "
           "of messages of 4 B to 64 KB (log-uniform), fitted to t = latency + size / bandwidth.",
           ""]
    for phase in ("fixed", "random"):
        found = result["classes"].get(phase, {})
        if not found:
            continue
        out += ["## %s pattern" % phase, "",
                "| path class | samples | median us | latency us (fit) | bandwidth MB/s (fit) |",
                "| --- | --- | --- | --- | --- |"]
        for cls, c in found.items():
            fit = c["fit"] or {}
            out.append("| %s | %d | %.1f | %s | %s |" % (
                cls, c["samples"], c["usec"]["median"], _shown(fit.get("latency_us")),
                _shown(fit.get("bandwidth_mb_s"))))
        out.append("")
    comp = result.get("compute")
    if comp:
        out += ["## Computation on a gateway", "",
                "%s: %.0f Mflop/s alone, %.0f Mflop/s while %s and %s exchange 64 KB messages "
                "through it (x%s)." % (comp["gateway"][0], comp["mflops"].get("idle", 0),
                                       comp["mflops"].get("loaded", 0), comp["gateway"][1],
                                       comp["gateway"][2], comp["loaded_over_idle"]), ""]
    if result["allreduce"]:
        out += ["## MPI_Allreduce", "", "| bytes | us |", "| --- | --- |"]
        out += ["| %d | %.1f |" % (r["bytes"], r["usec"]) for r in result["allreduce"]]
        out.append("")
    out += ["## Environment", "", "| what | value |", "| --- | --- |"]
    out += ["| %s | %s |" % (k, v) for k, v in sorted(env.items())]
    return "\n".join(out) + "\n"


def write_report(folder: str, title: str, run: dict[str, Any], csv_text: str,
                 env: dict[str, Any]) -> dict[str, Any]:
    """results.json, samples.csv, summary.md and the plot into folder."""
    rows = parse_samples(csv_text)
    if not rows:
        raise BenchError(["mpi: the benchmark wrote no sample"])
    result = analyse(rows, run)
    os.makedirs(folder, exist_ok=True)
    write_csv(os.path.join(folder, "samples.csv"), rows)
    write_json(os.path.join(folder, "results.json"), {"run": run, "result": result, "environment": env})
    with open(os.path.join(folder, "summary.md"), "w", encoding="utf-8") as fh:
        fh.write(_summary(title, result, env))
    plot(os.path.join(folder, "time-vs-size.png"), title, rows, run, result)
    return result


def plot(path: str, title: str, rows: list[dict[str, Any]], run: dict[str, Any],
         result: dict[str, Any]) -> None:
    """Half round trip against message size, coloured by path class, with each fit."""
    from .plots import _plt
    plt = _plt()
    fig = figure(plt, title, rows, result)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def figure(plt: Any, title: str, rows: list[dict[str, Any]], result: dict[str, Any]) -> Any:
    """The figure of plot()."""
    from .plots import _size_axis, series
    fig, ax = plt.subplots(figsize=(8, 5))
    for cls, c in result["classes"].get("fixed", {}).items():
        pts = series([r for r in rows if r["phase"] == "fixed" and r["class"] == cls], "bytes", "usec")
        line = ax.plot([p[0] for p in pts], [p[1] for p in pts], ".", alpha=0.4, label=cls)
        if c["fit"] and c["fit"]["bandwidth_mb_s"] is not None:
            # A curve on the log size axis: evaluated along it, not joined end to end.
            xs = [pts[0][0] * (pts[-1][0] / pts[0][0]) ** (i / 63) for i in range(64)]
            ax.plot(xs, [c["fit"]["latency_us"] + x / c["fit"]["bandwidth_mb_s"] for x in xs],
                    "-", color=line[0].get_color())
    _size_axis(ax, [r["bytes"] for r in rows if r["phase"] == "fixed"] or [4, 65536], "message size (bytes)")
    ax.set_ylabel("half round trip (us)")
    ax.set_title("%s: MPI ping-pong by path class (lines: latency + size / bandwidth)" % title)
    ax.legend()
    return fig
