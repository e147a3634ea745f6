"""PNG plots of benchmark results, like the papers' figures (controller only:
needs matplotlib). Input: the result tables of report.collect().

Every line joins its points in increasing size; a size axis is log base 2
with its powers of two labelled 4, 64, 1 K, 8 K, 64 K; a log axis of times
is labelled on the 1-2-5 steps of each decade (or on decades alone when
the data span many)."""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable
from typing import Any

from .report import PLOT_FILES, write_file

Results = dict[str, Any]
Row = dict[str, Any]


def series(rows: list[Row], x: str, *ys: str) -> list[tuple[float, ...]]:
    """(x, y...) of each row, in increasing x (numbers, whatever order and
    type the rows have them in): the order a line joins its points."""
    return sorted(tuple(float(r[k]) for k in (x,) + ys) for r in rows)


def size_label(n: float) -> str:
    """4, 512, 1 K, 64 K, 1 M: bytes in binary units where they divide."""
    v = int(round(n))
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if v >= div and v % div == 0:
            return "%d %s" % (v // div, unit)
    return str(v)


def size_ticks(lo: float, hi: float, most: int = 9) -> tuple[list[int], list[int]]:
    """(labelled, all) powers of two from below lo to above hi: every power
    is a tick, at most `most` carry a label (counted down from the top one)."""
    a, b = math.floor(math.log2(max(lo, 1))), math.ceil(math.log2(max(hi, 1)))
    every = [2 ** e for e in range(a, b + 1)]
    step = max(1, -(-len(every) // most))
    return sorted(every[::-1][::step]), every


def value_ticks(lo: float, hi: float, most: int = 8) -> list[float]:
    """Ticks of a log axis of values lo..hi: 1, 2, 5 x 10^k inside the range
    (decades only when too many), and the next step either side when
    fewer than three fall inside."""
    k0, k1 = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1
    steps = [m * 10.0 ** k for k in range(k0, k1 + 1) for m in (1, 2, 5)]
    inside = [v for v in steps if lo <= v <= hi]
    if len(inside) > most:
        inside = [v for v in inside if math.log10(v) == round(math.log10(v))]
    if len(inside) < 3:
        below = [v for v in steps if v < lo][-1:]
        above = [v for v in steps if v > hi][:1]
        inside = below + inside + above
    return inside


def value_label(v: float) -> str:
    return f"{v:,.0f}" if v >= 1 else "%g" % v


def _size_axis(ax: Any, xs: list[float], label: str) -> None:
    """Log base 2 axis of sizes with readable labelled ticks."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    labelled, every = size_ticks(min(xs), max(xs))
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(labelled))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: size_label(v)))
    ax.xaxis.set_minor_locator(FixedLocator(every))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(min(xs) / 1.25, max(xs) * 1.25)
    ax.set_xlabel(label)


def _value_axis(ax: Any, ys: list[float]) -> None:
    """Log base 10 axis of values with labelled 1-2-5 ticks."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator
    pos = [y for y in ys if y > 0] or [1.0]
    ticks = value_ticks(min(pos), max(pos))
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: value_label(v)))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(min(*pos, ticks[0]) / 1.15, max(*pos, ticks[-1]) * 1.15)


def _plt() -> Any:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _token_exchange(plt: Any, res: Results, title: str, proto: str) -> Any:
    """Aggregate exchange throughput against token size, one line per number
    of pairs, each with its capacity (dashed, same colour)."""
    rows = [a for a in res["aggregate"] if a["proto"] == proto]
    if not rows:
        return None
    caps = {(c["class"], c["pairs"]): c["MBps"] for c in (res.get("capacity") or {}).values()}
    classes = sorted({a["class"] for a in res["aggregate"]})
    fig, axes = plt.subplots(1, len(classes), figsize=(5 * len(classes), 4), squeeze=False)
    for ax, cls in zip(axes[0], classes):
        for k in sorted({a["pairs"] for a in rows if a["class"] == cls}):
            pts = series([a for a in rows if a["class"] == cls and a["pairs"] == k],
                         "size", "exchange_MBps")
            line = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3,
                           label="%d pair%s" % (k, "s" if k > 1 else ""))
            if (cls, k) in caps:
                ax.axhline(caps[(cls, k)], color=line[0].get_color(), ls="--", lw=1)
        if not caps and res.get("link_MBps"):
            ax.axhline(res["link_MBps"], color="grey", ls="--", lw=1, label="link rate")
        _size_axis(ax, [a["size"] for a in rows], "token size (bytes)")
        ax.set_ylabel("aggregate exchange throughput (MB/s)")
        ax.set_title("%s: %s, %s" % (title, cls, proto.upper()))
        ax.legend(fontsize=7, title="dashed: capacity (one way)" if caps else None, title_fontsize=7)
    return fig


def _round_trip(plt: Any, res: Results, title: str) -> Any:
    one = [t for t in res["tokex"] if t["pairs"] == 1]
    if not one:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for cls in sorted({a["class"] for a in res["aggregate"]}):
        for proto in ("tcp", "udp"):
            pts = series([t for t in one if t["class"] == cls and t["proto"] == proto],
                         "size", "rtt_median_us", "rtt_p99_us")
            if pts:
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                            yerr=[[0] * len(pts), [p[2] - p[1] for p in pts]],
                            marker="o", ms=3, capsize=2, label="%s %s" % (cls, proto))
    _size_axis(ax, [t["size"] for t in one], "token size (bytes)")
    _value_axis(ax, [t[k] for t in one for k in ("rtt_median_us", "rtt_p99_us")])
    ax.set_ylabel("round trip (us): median, bar to P99")
    ax.set_title("%s: round trip, 1 pair" % title)
    ax.legend(fontsize=7)
    return fig


def _file_copy(plt: Any, res: Results, title: str) -> Any:
    if not res["copy_aggregate"]:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for mb in sorted({c["file_mb"] for c in res["copy_aggregate"]}):
        pts = series([c for c in res["copy_aggregate"] if c["file_mb"] == mb], "remote", "aggregate_MBps")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label="%d MB" % mb)
    ax.set_xlabel("remote copies (of the concurrent copies)")
    ax.set_ylabel("aggregate copy throughput (MB/s)")
    ax.set_title("%s: file copy" % title)
    ax.legend(fontsize=7)
    return fig


def _latency(plt: Any, res: Results, title: str) -> Any:
    if not res["latency"]:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    order = sorted({row["class"] for row in res["latency"]},
                   key=lambda c: min(row["routers"] * 10 + row["switches"] for row in res["latency"]
                                     if row["class"] == c))
    for proto, dx in (("tcp", -0.12), ("udp", 0.12)):
        for i, cls in enumerate(order):
            for row in res["latency"]:
                if row["class"] == cls and row["proto"] == proto:
                    ys = row["samples_one_way_us"] or [row["one_way_median_us"]]
                    ax.scatter([i + dx] * len(ys), ys, s=4, alpha=0.3,
                               color="C0" if proto == "tcp" else "C1",
                               label="%s measured" % proto if i == 0 else None)
                    ax.scatter([i + dx], [row["model_one_way_us"]], marker="_", s=300,
                               color="C3" if proto == "tcp" else "C2",
                               label="%s model (SC98)" % proto if i == 0 else None)
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(order)
    samples = [y for row in res["latency"]
               for y in (row["samples_one_way_us"] or [row["one_way_median_us"]])]
    _value_axis(ax, samples + [row["model_one_way_us"] for row in res["latency"]])
    ax.set_ylabel("one-way latency (us) = RTT/2, 4-byte token")
    ax.set_title("%s: latency by path class" % title)
    ax.legend(fontsize=7)
    return fig


def _ring(plt: Any, res: Results, title: str) -> Any:
    if not res["ring"]:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    pts = series(res["ring"], "size", "round_median_us", "round_p99_us")
    ax.errorbar([p[0] for p in pts], [p[1] / 1000 for p in pts],
                yerr=[[0] * len(pts), [(p[2] - p[1]) / 1000 for p in pts]], marker="o", capsize=2)
    _size_axis(ax, [p[0] for p in pts], "token size (bytes)")
    ax.set_ylabel("time per round (ms): median, bar to P99")
    ax.set_title("%s: ring of %d nodes" % (title, res["ring"][0]["nodes"]))
    return fig


def plot_all(folder: str, res: Results, title: str) -> list[str]:
    """Write every plot the data allows; returns the file names written."""
    plt = _plt()
    figures: list[tuple[str, Callable[[], Any]]] = list(zip(PLOT_FILES, [
        lambda: _token_exchange(plt, res, title, "tcp"),
        lambda: _token_exchange(plt, res, title, "udp"),
        lambda: _round_trip(plt, res, title),
        lambda: _file_copy(plt, res, title),
        lambda: _latency(plt, res, title),
        lambda: _ring(plt, res, title)], strict=True))
    written = []
    for name, draw in figures:
        fig = draw()
        if fig is None:
            continue
        fig.tight_layout()
        image = io.BytesIO()
        fig.savefig(image, format="png", dpi=110)
        plt.close(fig)
        write_file(os.path.join(folder, name), image.getvalue())
        written.append(name)
    return written
