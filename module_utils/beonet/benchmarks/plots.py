"""PNG plots of benchmark results, like the papers' figures (controller only:
needs matplotlib). Input: the result tables of bench.collect()."""

import os


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_all(folder, res, title):
    """Write every plot the data allows; returns the file names written."""
    plt = _plt()
    written = []

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(folder, name), dpi=110)
        plt.close(fig)
        written.append(name)

    classes = sorted({a["class"] for a in res["aggregate"]})
    for proto in ("tcp", "udp"):
        rows = [a for a in res["aggregate"] if a["proto"] == proto]
        if not rows:
            continue
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
        save(fig, "token-exchange-%s.png" % proto)

    one = [t for t in res["tokex"] if t["pairs"] == 1]
    if one:
        fig, ax = plt.subplots(figsize=(6, 4))
        for cls in classes:
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
        save(fig, "round-trip.png")

    if res["copy_aggregate"]:
        fig, ax = plt.subplots(figsize=(6, 4))
        for mb in sorted({c["file_mb"] for c in res["copy_aggregate"]}):
            pts = sorted((c["remote"], c["aggregate_MBps"]) for c in res["copy_aggregate"]
                         if c["file_mb"] == mb)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label="%d MB" % mb)
        ax.set_xlabel("remote copies (of the concurrent copies)")
        ax.set_ylabel("aggregate copy throughput (MB/s)")
        ax.set_title("%s: file copy" % title)
        ax.legend(fontsize=7)
        save(fig, "file-copy.png")

    if res["latency"]:
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
        save(fig, "latency.png")

    if res["ring"]:
        fig, ax = plt.subplots(figsize=(6, 4))
        pts = sorted((r["size"], r["round_median_us"], r["round_p99_us"]) for r in res["ring"])
        ax.errorbar([p[0] for p in pts], [p[1] / 1000 for p in pts],
                    yerr=[[0] * len(pts), [(p[2] - p[1]) / 1000 for p in pts]], marker="o", capsize=2)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("token size (bytes)")
        ax.set_ylabel("time per round (ms): median, bar to P99")
        ax.set_title("%s: ring of %d nodes" % (title, res["ring"][0]["nodes"]))
        save(fig, "ring.png")
    return written
