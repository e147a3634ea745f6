"""The metrics as text for people: `beonet metrics` (its default --format)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _plain(value: Any) -> str:
    """A metric value in words: dicts as 'key value, ...', empty lists as 'none'."""
    if isinstance(value, dict):
        return ", ".join("%s %s" % (k, _plain(v)) for k, v in value.items()) or "none"
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value) or "none"
    return str(value)


def _s(count: Any, word: str) -> str:
    return "%s %s%s" % (count, word, "" if count == 1 else "s")


def _hop_lines(hops: dict[str, int]) -> list[str]:
    """The hop histogram, one bar per hop count."""
    total = sum(hops.values()) or 1
    most = max(hops.values(), default=1) or 1
    return ["%-7s %6s pairs %5.1f%%  %s" % (_s(int(h), "hop"), n, 100.0 * n / total,
                                            "#" * max(1, round(30 * n / most)))
            for h, n in hops.items()]


def _named(key: str, value: Any) -> str:
    """'key words: value', with Mbit/s for keys ending in _mbit."""
    if key.endswith("_mbit"):
        return "%s: %s Mbit/s" % (key[:-5].replace("_", " "), _plain(value))
    return "%s: %s" % (key.replace("_", " "), _plain(value))


def _bisection_lines(b: dict[str, Any]) -> list[str]:
    rest = {k: v for k, v in b.items() if k not in (
        "crossing_mbit", "per_node_mbit", "link_mbit", "fraction_of_link", "method",
        "paper_closed_form", "structure_aligned_mbit", "search")}
    out = ["%s Mbit/s across the worst bisection found (%s)" % (b.get("crossing_mbit"), b.get("method")),
           "%s Mbit/s per node = %s of one %s Mbit/s link" % (
               b.get("per_node_mbit"), b.get("fraction_of_link"), b.get("link_mbit"))]
    if "paper_closed_form" in b:
        out.append("the papers' closed form (C/4)(L/(L-1)), whole groups on each side: %s of a link "
                   "per node" % b["paper_closed_form"])
    if "structure_aligned_mbit" in b:
        out.append("structure-aligned cuts (whole groups, mesh halves): %s Mbit/s"
                   % b["structure_aligned_mbit"])
    search = b.get("search")
    if isinstance(search, dict):
        out.append("local search (%s, %s starts, %s passes, %s gain evaluations%s): %s Mbit/s" % (
            search.get("method"), search.get("starts"), search.get("passes"), search.get("evaluations"),
            "; stopped by its budget (--bisection-budget)" if search.get("budget_spent") else "",
            search.get("crossing_mbit")))
    return out + [_named(k, v) for k, v in rest.items()]


RESILIENCE_ROWS = 20     # nodes listed in the text table, the worst first


def _resilience_lines(r: Mapping[str, Any]) -> list[str]:
    """Pairs of other nodes cut by each node's death: a summary, then the worst nodes."""
    if not r.get("computed"):
        return ["not computed: %s" % r.get("reason", "")]
    single, failover, risk = r["single_path"], r["failover"], r["failover_at_risk"]
    keys = ("single_path", "failover", "failover_at_risk")
    out = ["pairs of other nodes one dead node cuts, single path / failover (every branch "
           "cut) / failover at risk (some branch cut: the flow hash decides):",
           "max %s / %s / %s, mean %s / %s / %s" % (*(r["max"][k] for k in keys),
                                                    *(r["mean"][k] for k in keys))]
    worst = sorted(single, key=lambda v: (-single[v], -risk[v], -failover[v]))
    shown = [v for v in worst[:RESILIENCE_ROWS] if single[v] or risk[v]]
    if shown:
        width = max(len(v) for v in shown)
        out.append("%-*s  %11s  %8s  %7s" % (width, "node", "single path", "failover", "at risk"))
        out += ["%-*s  %11d  %8d  %7d" % (width, v, single[v], failover[v], risk[v]) for v in shown]
    if len(shown) < sum(1 for v in worst if single[v] or risk[v]):
        out.append("(the worst %d; --format json lists every node)" % len(shown))
    return out + ([str(r["ipv6"])] if "ipv6" in r else [])


FAILURE_KINDS = (("node", "node"), ("cable", "cable"), ("lan", "LAN"))


def _failures_lines(f: Mapping[str, Any]) -> list[str]:
    """Per kind of element: the worst and how many cut some pair, routed and static."""
    if not f:
        return []
    static = f.get("static", {})
    out = ["pairs of live nodes one failure cuts: routed (a routing daemon, converged)"
           + (" / static (the plan's preferred routes, until healed)"
              if static.get("computed") or "node" in static else "")]
    for key, label in FAILURE_KINDS:
        routed = f["routed"][key]
        line = "%-5s %6d: routed worst %s, %d cut some pair" % (
            label, routed["elements"], _worst(routed), routed["cutting"])
        if key in static:
            line += "; static worst %s, %d cut some pair" % (_worst(static[key]), static[key]["cutting"])
        out.append(line)
    for key, label in FAILURE_KINDS if "failover" in static else ():
        out.append("%-5s failover routes: every branch cut (for good) worst %s; some branch cut "
                   "(until the dead next hop is skipped) worst %s"
                   % (label, _worst(static["failover"][key]), _worst(static["disrupted"][key])))
    if not static.get("computed"):
        out.append("static %snot computed: %s" % ("cables and LANs " if "node" in static else "",
                                                  static.get("reason", "")))
    return out


def _worst(kind: Mapping[str, Any]) -> str:
    worst = kind.get("worst")
    return "%s (%d)" % (worst["name"], worst["pairs"]) if worst else "none"


def _latency_lines(lat: Mapping[str, Any]) -> list[str]:
    """The per-hop delays, then the pairs by path class (SC98's letters)."""
    out = ["one way: %s us per switch, %s us per cable, %s us per forwarding node%s" % (
        lat.get("switch_us"), lat.get("wire_us"), lat.get("forward_us"),
        " (model %s)" % lat["model"] if lat.get("model") else "")]
    classes = lat.get("classes")
    if classes is None:
        return out + ["path classes not walked (see notes)"]
    out.append("%-16s %7s  %12s  %s" % ("path", "pairs", "one way us", "e: end point, S: switch, "
                                        "H: hub, L: forwarding node"))
    for name, c in classes.items():
        lo, hi = c["one_way_us"], c["one_way_max_us"]
        out.append("%-16s %7d  %12s" % (name, c["pairs"], lo if lo == hi else "%s-%s" % (lo, hi)))
    return out


def _metric_rows(m: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """(label, lines) for every metric; keys without a layout of their own are
    listed under their own name, so nothing the compiler reports is left out."""
    rows = [
        ("size", ["%s, %s, %s, %s" % (_s(m.get("nodes"), "node"),
                                      _s(m.get("segments"), "LAN segment"),
                                      _s(m.get("links"), "point-to-point link"),
                                      _s(m.get("channels"), "bond channel"))]),
        ("pairs", ["%s ordered pairs, diameter %s" % (m.get("pairs"),
                                                      _s(m.get("diameter"), "hop"))]),
        ("hops", _hop_lines(m.get("hops", {}))),
        ("routes per node", [_plain(m.get("routes_per_node", {}))]),
        ("forwarding nodes", [str(m.get("forwarding_nodes"))]),
        ("gateway load", ["pairs forwarded per gateway: %s" % _plain(m.get("gateway_load", {}))]),
        ("bisection", _bisection_lines(m.get("bisection", {}))),
        ("resilience", _resilience_lines(m.get("resilience", {}))),
        ("single failures", _failures_lines(m.get("failures", {}))),
    ]
    if "latency" in m:
        rows.append(("latency", _latency_lines(m["latency"])))
    done = {"nodes", "segments", "links", "channels", "pairs", "diameter", "hops",
            "routes_per_node", "forwarding_nodes", "gateway_load", "bisection", "resilience",
            "latency", "failures"}
    for key, value in m.items():
        if key in done:
            continue
        if isinstance(value, dict):
            lines = [_named(k, v) for k, v in value.items()]
        elif isinstance(value, list):
            lines = [_plain(v) for v in value] or ["none"]
        else:
            lines = [_plain(value)]
        rows.append((key.replace("_", " "), lines))
    return rows


def text(name: str, metrics: Mapping[str, Any]) -> str:
    """The metrics as a two-column table for people."""
    out = ["metrics of %s" % name]
    for label, lines in _metric_rows(metrics):
        for k, line in enumerate(lines):
            out.append("  %-17s %s" % (label if k == 0 else "", line))
    return "\n".join(out) + "\n"
