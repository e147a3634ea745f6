"""The papers' figures from lab runs of playbooks/benchmark.yml.

Latency by path class (SC98, Table 1): the 4-byte token ping-pong of each
path class, measured twice on the same lab, once with the topology's per-hop
delays emulated and once without, set beside SC98's table and its per-hop
model (round trip = base + switch x switches + router x routers, fitted to
the table). Each run is fitted to the same model, so the lab's own per-hop
costs and those of its emulated delays can be read beside the paper's.

Token exchange on 10 Mbit/s nets (1995, Figure 1; 1996, Figures 3 and 7):
8 KB tokens, 1 to 7 pairs at once, on a single shared net beside a routed
mesh's local and remote pairs, or beside the channel-bonded dual net; the
pairs' throughput together over the window all of them ran in, beside the
capacity of what they share and the papers' figure.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from . import results_schema
from .planner import DEFAULT_MODEL, SC98_TABLE, fit_model, predict_rtt
from .report import _table, check_targets, concurrent, environment_markdown, write_file

Row = dict[str, Any]
PROTOS = ("udp", "tcp")


def _paths(path_of: Callable[[str, str], tuple[str, float]]) -> results_schema.More:
    """The latency figure's own checks of a run: every row's pair has the path of
    its switches and routers in the plan, every class a UDP row."""
    def problems(doc: dict[str, Any]) -> Iterator[tuple[str, str]]:
        protos: dict[str, set[str]] = {}
        for i, row in enumerate(doc.get("latency", [])):
            protos.setdefault(row["class"], set()).add(row["proto"])
            try:
                path = path_of(row["client"], row["server"])[0]
            except (KeyError, ValueError):
                yield "latency[%d]" % i, ("the plan has no path from %s to %s (the results of another "
                                          "topology?)" % (row["client"], row["server"]))
                continue
            try:
                sc98_name(row["switches"], row["routers"], path)
            except ValueError:
                yield "latency[%d]" % i, ("%d switches and %d routers, but the plan's path from %s to %s "
                                          "is %s (the results of another topology?)" % (
                                              row["switches"], row["routers"], row["client"],
                                              row["server"], path))
        yield from (("latency", "class %s has no UDP row (the figure is of UDP round trips)" % cls)
                    for cls, seen in protos.items() if "udp" not in seen)
    return problems


def sc98_name(switches: int, routers: int, order: str) -> str:
    """SC98's name of a path (B a switch, L a Linux router) from beonet's
    class name order (e-S-L-e): 'S' and 'H' become 'B'."""
    letters = [("B" if x in "SH" else x) for x in order.split("-")[1:-1]]
    if letters.count("B") != switches or letters.count("L") != routers:
        raise ValueError("path %s has %d switches and %d routers" % (order, switches, routers))
    return "-".join(["e", *letters, "e"])


def _classes(res: dict[str, Any]) -> dict[str, dict[str, Row]]:
    """{planner class: {proto: latency row}} of one run."""
    out: dict[str, dict[str, Row]] = {}
    for row in res.get("latency", []):
        out.setdefault(row["class"], {})[row["proto"]] = row
    return out


def _fit(rows: list[tuple[str, float, float]]) -> dict[str, dict[str, float]] | None:
    """The per-hop model fitted to (SC98 name, TCP RTT, UDP RTT) rows; None when
    the rows cannot tell base, switch and router apart."""
    shapes = {(n.count("B"), n.count("L")) for n, _t, _u in rows}
    if len(shapes) < 3:
        return None
    try:
        return fit_model([(n, t, u, 0.0) for n, t, u in rows])
    except ZeroDivisionError:
        return None


def latency(with_dir: str, without_dir: str,
            path_of: Callable[[str, str], tuple[str, float]]) -> dict[str, Any]:
    """The figure's data. path_of(a, b): the plan's path name from node a to
    node b (e-S-L-e) and its emulated one-way delay."""
    docs = results_schema.read([with_dir, without_dir], "latency", more=_paths(path_of))
    on, off = _classes(docs[0]), _classes(docs[1])
    table = {name: (tcp, udp) for name, tcp, udp, _bw in SC98_TABLE}
    rows = []
    for cls in sorted(on.keys() & off.keys(),
                      key=lambda c: (on[c]["udp"]["routers"], on[c]["udp"]["switches"])):
        first = on[cls]["udp"]
        path, there = path_of(first["client"], first["server"])
        _back, back = path_of(first["server"], first["client"])
        name = sc98_name(first["switches"], first["routers"], path)
        row: Row = {"class": cls, "path": path, "sc98_path": name, "pair": [first["client"],
                    first["server"]], "switches": first["switches"], "routers": first["routers"],
                    "emulated_rtt_us": round(there + back, 1)}
        for proto in PROTOS:
            row["sc98_table_%s_us" % proto] = table.get(name, (None, None))[0 if proto == "tcp" else 1]
            row["sc98_model_%s_us" % proto] = round(predict_rtt(
                DEFAULT_MODEL, proto, first["switches"], first["routers"]), 1)
            for label, run in (("off", off), ("on", on)):
                r = run[cls].get(proto)
                row["lab_%s_%s_us" % (label, proto)] = round(2 * r["one_way_median_us"], 1) if r else None
        off_udp, on_udp = row["lab_off_udp_us"], row["lab_on_udp_us"]
        row["added_udp_us"] = None if on_udp is None or off_udp is None else round(on_udp - off_udp, 1)
        row["lab_faithful_udp_us"] = (None if off_udp is None
                                      else round(off_udp + row["emulated_rtt_us"], 1))
        rows.append(row)
    fits = {label: _fit([(r["sc98_path"], r["lab_%s_tcp_us" % label], r["lab_%s_udp_us" % label])
                         for r in rows if r["lab_%s_tcp_us" % label] is not None
                         and r["lab_%s_udp_us" % label] is not None])
            for label in ("off", "on")}
    return {"rows": rows, "fits": {"sc98": DEFAULT_MODEL, "lab_off": fits["off"], "lab_on": fits["on"]},
            "environment": docs[0].get("environment", {})}


def _fit_line(name: str, fit: dict[str, dict[str, float]] | None) -> list[Any]:
    if fit is None:
        return [name, None, None, None]
    u = fit["udp"]
    return [name, u["base_us"], u["switch_us"], u["router_us"]]


def latency_markdown(fig: dict[str, Any], title: str) -> str:
    """The figure's tables: by path class, then the fitted per-hop costs."""
    head = ["path", "SC98 path", "SC98 table UDP", "SC98 model UDP", "lab UDP, no delays",
            "lab UDP, delays on", "added by the delays", "delays asked (2 x one way)",
            "SC98 table TCP", "lab TCP, no delays", "lab TCP, delays on"]
    rows = [[r["path"], r["sc98_path"], r["sc98_table_udp_us"], r["sc98_model_udp_us"],
             r["lab_off_udp_us"], r["lab_on_udp_us"], r["added_udp_us"], r["emulated_rtt_us"],
             r["sc98_table_tcp_us"], r["lab_off_tcp_us"], r["lab_on_tcp_us"]]
            for r in fig["rows"]]
    fits = fig["fits"]
    out = ["# %s: latency by path class" % title, "",
           "Round trips in microseconds (the median of the 4-byte token ping-pong; SC98: "
           "lmbench). e: end point, S/B: switch, L: Linux node forwarding.", "",
           _table(head, rows), "",
           "Per-hop model fitted to each (UDP round trip = base + switch x switches + "
           "router x routers):", "",
           _table(["fit", "base", "per switch", "per router"],
                  [_fit_line("SC98 table", fits["sc98"]), _fit_line("lab, no delays", fits["lab_off"]),
                   _fit_line("lab, delays on", fits["lab_on"])]), "",
           "## Environment", ""] + environment_markdown(fig["environment"])
    return "\n".join(str(x) if not isinstance(x, str) else x for x in out) + "\n"


def latency_plot(fig: dict[str, Any], path: str | IO[bytes], title: str) -> None:
    """Round trip by path class: SC98's table and model, the lab without and
    with its emulated delays (UDP)."""
    from .plots import _plt
    plt = _plt()
    rows = fig["rows"]
    xs = list(range(len(rows)))
    figure, ax = plt.subplots(figsize=(7, 4.2))
    series = (("SC98 table 1", "sc98_table_udp_us", "o", "C0"),
              ("SC98 per-hop model", "sc98_model_udp_us", "_", "C3"),
              ("lab, no delays", "lab_off_udp_us", "s", "C2"),
              ("lab, SC98 delays (netem)", "lab_on_udp_us", "^", "C1"),
              ("lab, no delays + the delays asked", "lab_faithful_udp_us", "_", "C1"))
    for label, key, marker, color in series:
        pts = [(x, r[key]) for x, r in zip(xs, rows) if r[key] is not None]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, s=160 if marker == "_"
                       else 36, color=color, label=label)
    ax.set_xticks(xs)
    ax.set_xticklabels(["%s\n(%s)" % (r["path"], r["class"]) for r in rows], fontsize=7)
    ax.set_ylabel("UDP round trip, 4-byte token (us)")
    ax.set_ylim(0, None)
    ax.set_title("%s: latency by path class" % title)
    ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, format="svg")
    plt.close(figure)


def write_latency(out: str, fig: dict[str, Any], title: str) -> list[str]:
    """figure.json, summary.md and latency.svg (the plot when matplotlib is there)."""
    return _write(out, fig, latency_markdown(fig, title),
                  lambda path: latency_plot(fig, path, title), "latency.svg")


# ------------------------------------------------ token exchange on 10 Mbit/s nets (1995, 1996)

@dataclass(frozen=True)
class Exchange:
    """One of the papers' token-exchange figures on 10 Mbit/s nets: its lines
    (label, run, planner class, the share of the plan's capacity the run had:
    1/2 where one channel of a 2-channel bond was left up), the papers'
    throughput of each line at 8 KB and 7 pairs (MB/s, both ways), and one
    ratio of two lines beside the papers' (row label, numerator line,
    denominator line, the papers' words)."""
    heading: str
    lines: tuple[tuple[str, str, str, float], ...]
    paper: dict[str, float]
    ratio: tuple[str, str, str, str]


EXCHANGES = {
    # 1996, Figure 7: the single net and the 4x4 software-routed mesh; its ratio
    # of local to remote throughput is the switch-routed mesh's (software-routed:
    # "somewhat greater").
    "mesh": Exchange("single net and routed mesh",
                     (("single net", "single", "same-segment", 1.0),
                      ("routed mesh, local", "mesh", "same-segment", 1.0),
                      ("routed mesh, remote", "mesh", "gateway-1", 1.0)),
                     {"single net": 1.0, "routed mesh, local": 6.3},
                     ("local / remote", "routed mesh, local", "routed mesh, remote",
                      "2.3 (switch-routed; software-routed more)")),
    # 1995, Figure 1 and 1996, Figure 3: one 10 Mbit/s channel at 80 % of its
    # 1.25 MB/s, two bonded at 68 % of 2.5 MB/s (70 % more), whatever the
    # number of pairs from 2 on. The single net is the bonded lab with the
    # second channel's NIC down on every node.
    "bonded": Exchange("single net and bonded dual net",
                       (("single net", "single", "bonded", 0.5),
                        ("bonded dual net", "bonded", "bonded", 1.0)),
                       {"single net": 1.0, "bonded dual net": 1.7},
                       ("bonded / single", "bonded dual net", "single net", "1.7 (70 % more)")),
}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def exchange(name: str, folders: dict[str, str], proto: str = "udp") -> dict[str, Any]:
    """Figure `name` of EXCHANGES from its runs' results folders ({run: folder}):
    per line and number of pairs, the pairs' exchange throughput together over
    the window all of them ran in (concurrent), the sum of each pair's own
    rate (how the papers count it: more where pairs did not overlap) and the
    capacity of the links they share (both ways), for each token size."""
    spec = EXCHANGES[name]
    runs = dict(zip(folders, results_schema.read(folders.values(), "exchange")))
    rows = []
    for label, run, cls, share in spec.lines:
        for a in runs[run].get("aggregate", []):
            if a["class"] == cls and a["proto"] == proto:
                cap = (a.get("capacity_MBps") or 0) * share
                rows.append({"line": label, "pairs": a["pairs"], "size": a["size"],
                             "exchange_MBps": _round(concurrent(runs[run], cls, a["pairs"], a["size"],
                                                                proto)),
                             "sum_MBps": round(a.get("sum_exchange_MBps", a["exchange_MBps"]), 3),
                             "capacity_MBps": round(2 * cap, 3) if cap else None})
    labels = [x[0] for x in spec.lines]
    rows.sort(key=lambda r: (labels.index(r["line"]), r["size"], r["pairs"]))
    return {"figure": name, "proto": proto, "rows": rows,
            "environment": runs[spec.lines[-1][1]].get("environment", {})}


def _at(fig: dict[str, Any], line: str, pairs: int, size: int) -> float | None:
    return next((r["exchange_MBps"] for r in fig["rows"]
                 if (r["line"], r["pairs"], r["size"]) == (line, pairs, size)), None)


def exchange_markdown(fig: dict[str, Any], title: str) -> str:
    """The most pairs at 8 KB beside the papers, then every measured point."""
    spec = EXCHANGES[fig["figure"]]
    most = max((r["pairs"] for r in fig["rows"]), default=0)
    by = {(r["line"], r["pairs"], r["size"]): r for r in fig["rows"]}
    rows = [[label, _at(fig, label, most, 8192), by.get((label, most, 8192), {}).get("sum_MBps"),
             by.get((label, most, 8192), {}).get("capacity_MBps"), spec.paper.get(label)]
            for label, *_ in spec.lines]
    head, top, bottom, words = spec.ratio
    num, den = _at(fig, top, most, 8192), _at(fig, bottom, most, 8192)
    rows.append([head, round(num / den, 2) if num and den else None, None, None, words])
    out = ["# %s: token exchange (%s), %s" % (title, fig["proto"].upper(), spec.heading), "",
           "Exchange throughput of the pairs together, both ways, MB/s: over the window in "
           "which all of them ran; the sum of each pair's own rate (the papers' count, more "
           "where pairs did not overlap); the capacity of the links they share, both ways.", "",
           _table(["line", "lab, %d pairs, 8 KB" % most, "sum of the pairs' rates", "capacity",
                   "papers, 7 pairs, 8 KB"], rows), "", "Every point:", "",
           _table(["line", "pairs", "token bytes", "MB/s together", "sum of rates", "capacity"],
                  [[r["line"], r["pairs"], r["size"], r["exchange_MBps"], r["sum_MBps"],
                    r["capacity_MBps"]] for r in fig["rows"]]), "", "## Environment", ""]
    return "\n".join(out + environment_markdown(fig["environment"])) + "\n"


def exchange_plot(fig: dict[str, Any], path: str | IO[bytes], title: str) -> None:
    """Throughput against the number of pairs at the largest token, a line
    per net, with its capacity dashed and the papers' 7-pair figure."""
    from .plots import _plt
    plt = _plt()
    spec = EXCHANGES[fig["figure"]]
    size = max((r["size"] for r in fig["rows"]), default=0)
    figure, ax = plt.subplots(figsize=(7, 4.2))
    for k, (label, *_) in enumerate(spec.lines):
        rows = sorted((r for r in fig["rows"] if r["line"] == label and r["size"] == size),
                      key=lambda r: r["pairs"])
        got = [(r["pairs"], r["exchange_MBps"]) for r in rows if r["exchange_MBps"] is not None]
        ax.plot([p[0] for p in got], [p[1] for p in got], marker="o", color="C%d" % k, label=label)
        caps = [(r["pairs"], r["capacity_MBps"]) for r in rows if r["capacity_MBps"]]
        ax.plot([p[0] for p in caps], [p[1] for p in caps], linestyle="--", color="C%d" % k,
                alpha=0.5, label="%s: capacity" % label)
        if label in spec.paper:
            ax.scatter([7], [spec.paper[label]], marker="*", s=140, color="C%d" % k,
                       edgecolors="black", zorder=3, label="%s: the papers" % label)
    ax.set_xlabel("pairs exchanging tokens at once")
    ax.set_ylabel("exchange throughput, pairs together (MB/s)")
    ax.set_ylim(0, None)
    ax.set_title("%s: %d-byte tokens (%s)" % (title, size, fig["proto"].upper()))
    ax.legend(fontsize=6)
    figure.tight_layout()
    figure.savefig(path, format="svg")
    plt.close(figure)


def write_exchange(out: str, fig: dict[str, Any], title: str) -> list[str]:
    """figure.json, summary.md and token-exchange.svg (with matplotlib)."""
    return _write(out, fig, exchange_markdown(fig, title),
                  lambda path: exchange_plot(fig, path, title), "token-exchange.svg")


def _write(out: str, fig: dict[str, Any], markdown: str, plot: Callable[[IO[bytes]], None],
           plot_name: str) -> list[str]:
    """figure.json, summary.md and the plot into out (write_file: a link there is replaced)."""
    os.makedirs(out, exist_ok=True)
    check_targets(out, ["figure.json", "summary.md", plot_name])
    write_file(os.path.join(out, "figure.json"), json.dumps(fig, indent=1, sort_keys=True))
    write_file(os.path.join(out, "summary.md"), markdown)
    written = ["figure.json", "summary.md"]
    image = io.BytesIO()
    try:
        plot(image)
    except ImportError:
        return written
    write_file(os.path.join(out, plot_name), image.getvalue())
    return written + [plot_name]


__all__ = ["EXCHANGES", "Exchange", "exchange", "exchange_markdown", "exchange_plot",
           "latency", "latency_markdown", "latency_plot", "sc98_name", "write_exchange",
           "write_latency"]
