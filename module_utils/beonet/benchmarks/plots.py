"""PNG plots of benchmark results, like the papers' figures (controller only:
needs matplotlib). Input: the result tables of report.collect()."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

Results = dict[str, Any]


def _plt() -> Any:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _token_exchange(plt: Any, res: Results, title: str, proto: str) -> Any:
    rows = [a for a in res["aggregate"] if a["proto"] == proto]
    if not rows:
        return None
    classes = sorted({a["class"] for a in res["aggregate"]})
    fig, axes = plt.subplots(1, len(classes), figsize=(5 * len(classes), 4), squeeze=False)
    for ax, cls in zip(axes[0], classes):
        for k in sorted({a["pairs"] for a in rows if a["class"] == cls}):
            pts = sorted((a["size"], a["exchange_MBps"]) for a in rows
                         if a["class"] == cls and a["pairs"] == k)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3,
                    label="%d pair%s" % (k, "s" if k > 1 else ""))
        if res.get("link_MBps"):
            ax.axhline(res["link_MBps"], color="grey", ls="--", lw=1, label="link rate")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("token size (bytes)")
        ax.set_ylabel("aggregate exchange throughput (MB/s)")
        ax.set_title("%s: %s, %s" % (title, cls, proto.upper()))
        ax.legend(fontsize=7)
    return fig


def _round_trip(plt: Any, res: Results, title: str) -> Any:
    one = [t for t in res["tokex"] if t["pairs"] == 1]
    if not one:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for cls in sorted({a["class"] for a in res["aggregate"]}):
        for proto in ("tcp", "udp"):
            pts = sorted((t["size"], t["rtt_median_us"], t["rtt_p99_us"]) for t in one
                         if t["class"] == cls and t["proto"] == proto)
            if pts:
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                            yerr=[[0] * len(pts), [p[2] - p[1] for p in pts]],
                            marker="o", ms=3, capsize=2, label="%s %s" % (cls, proto))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("token size (bytes)")
    ax.set_ylabel("round trip (us): median, bar to P99")
    ax.set_title("%s: round trip, 1 pair" % title)
    ax.legend(fontsize=7)
    return fig


def _file_copy(plt: Any, res: Results, title: str) -> Any:
    if not res["copy_aggregate"]:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for mb in sorted({c["file_mb"] for c in res["copy_aggregate"]}):
        pts = sorted((c["remote"], c["aggregate_MBps"]) for c in res["copy_aggregate"]
                     if c["file_mb"] == mb)
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
    ax.set_yscale("log")
    ax.set_ylabel("one-way latency (us) = RTT/2, 4-byte token")
    ax.set_title("%s: latency by path class" % title)
    ax.legend(fontsize=7)
    return fig


def _ring(plt: Any, res: Results, title: str) -> Any:
    if not res["ring"]:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    pts = sorted((r["size"], r["round_median_us"], r["round_p99_us"]) for r in res["ring"])
    ax.errorbar([p[0] for p in pts], [p[1] / 1000 for p in pts],
                yerr=[[0] * len(pts), [(p[2] - p[1]) / 1000 for p in pts]], marker="o", capsize=2)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("token size (bytes)")
    ax.set_ylabel("time per round (ms): median, bar to P99")
    ax.set_title("%s: ring of %d nodes" % (title, res["ring"][0]["nodes"]))
    return fig


def plot_all(folder: str, res: Results, title: str) -> list[str]:
    """Write every plot the data allows; returns the file names written."""
    plt = _plt()
    figures: list[tuple[str, Callable[[], Any]]] = [
        ("token-exchange-tcp.png", lambda: _token_exchange(plt, res, title, "tcp")),
        ("token-exchange-udp.png", lambda: _token_exchange(plt, res, title, "udp")),
        ("round-trip.png", lambda: _round_trip(plt, res, title)),
        ("file-copy.png", lambda: _file_copy(plt, res, title)),
        ("latency.png", lambda: _latency(plt, res, title)),
        ("ring.png", lambda: _ring(plt, res, title))]
    written = []
    for name, draw in figures:
        fig = draw()
        if fig is None:
            continue
        fig.tight_layout()
        fig.savefig(os.path.join(folder, name), dpi=110)
        plt.close(fig)
        written.append(name)
    return written
