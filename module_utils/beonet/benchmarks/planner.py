"""Benchmarks of a compiled topology: the papers' token exchange, ring, file
copy, latency by path class and iperf3 (issue 4).

Pure logic only (stdlib): which pairs to test (by path class from the plan's
expected paths), the schedule of steps the playbook runs on the nodes, the
per-hop latency model, summaries, and the CSV/JSON/Markdown writers of
`results/<topology>/<timestamp>/`. Plots live in plots.py (controller only).

Every problem with the request (a node not in the plan, a size out of range,
no compiler on a node, ...) raises BenchError with all problems listed before
anything starts.
"""

import csv
import json
import os
import shlex

MAX_TOKEN = 65536               # UDP tokens: at most 64 datagrams of 1460 bytes
MAX_FILE_MB = 64
DEFAULT_SIZES = [2 ** n for n in range(2, 14)]      # 4 .. 8192, the papers' range
TOKEX_PORT = 6201
RING_PORT = 6202
IPERF_PORT = 6203
CLASS_ORDER = ["same-segment", "cross-switch", "p2p", "bonded",
               "gateway-1", "gateway-2", "gateway-3"]

# SC98 (Salmon, Stein, Sterling), Table 1: lmbench round-trip latencies (us) and
# socket bandwidth (MB/s). e = end point, L = Linux router, B = Bay 350T switch,
# P = Lucent/Prominet Cajun switch.
SC98_TABLE = [
    ("e-e", 154, 118, 11.39), ("e-L-e", 214, 176, 11.39), ("e-L-L-e", 287, 240, 11.38),
    ("e-B-e", 173, 137, 11.38), ("e-L-B-e", 232, 197, 11.38),
    ("e-B-L-L-B-e", 324, 281, 11.38), ("e-B-B-e", 192, 156, 11.39),
    ("e-B-B-B-e", 210, 175, 11.37), ("e-P-e", 189, 142, 11.32), ("e-P-P-e", 194, 154, 11.39),
]


class BenchError(Exception):
    """A request that cannot run; .problems lists every reason."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


# ---------------------------------------------------------------- latency model

def _solve3(a, b):
    """Solve the 3x3 system a x = b (Gauss-Jordan with pivoting)."""
    m = [list(a[i]) + [b[i]] for i in range(3)]
    for c in range(3):
        p = max(range(c, 3), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(3):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][3] / m[i][i] for i in range(3)]


def fit_model(rows=None):
    """Least-squares fit of round trip = base + switch x switches + router x routers
    to the table rows made of end points, Bay switches (B) and Linux routers (L),
    for TCP and UDP. Returns {"tcp": {...}, "udp": {...}} in microseconds."""
    rows = [r for r in (rows or SC98_TABLE) if "P" not in r[0].split("-")]
    out = {}
    for col, proto in ((1, "tcp"), (2, "udp")):
        ata = [[0.0] * 3 for _ in range(3)]
        atb = [0.0] * 3
        for row in rows:
            parts = row[0].split("-")
            x = [1.0, float(parts.count("B")), float(parts.count("L"))]
            for i in range(3):
                atb[i] += x[i] * row[col]
                for j in range(3):
                    ata[i][j] += x[i] * x[j]
        base, switch, router = _solve3(ata, atb)
        out[proto] = {"base_us": round(base, 1), "switch_us": round(switch, 1),
                      "router_us": round(router, 1)}
    return out


DEFAULT_MODEL = fit_model()


def predict_rtt(model, proto, switches, routers):
    m = model[proto]
    return m["base_us"] + m["switch_us"] * switches + m["router_us"] * routers


def check_model(model):
    problems = []
    if not isinstance(model, dict):
        return ["latency_model: must be a mapping {tcp: {...}, udp: {...}}"]
    for proto in ("tcp", "udp"):
        m = model.get(proto)
        if not isinstance(m, dict):
            problems.append("latency_model.%s: missing (base_us, switch_us, router_us)" % proto)
            continue
        for key in ("base_us", "switch_us", "router_us"):
            v = m.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                problems.append("latency_model.%s.%s: must be a number >= 0" % (proto, key))
    return problems


# ---------------------------------------------------------------- paths and classes

def _switch_hops(plan, a, b):
    """Switches a frame crosses on a LAN between nodes a and b (a tree's leaves
    are joined through their common ancestor)."""
    switches = plan.get("switches")
    sa, sb = plan["nodes"][a].get("switch"), plan["nodes"][b].get("switch")
    if not switches or not sa or not sb:
        return 1
    up_a = [sa]
    while switches[up_a[-1]]["parent"]:
        up_a.append(switches[up_a[-1]]["parent"])
    up_b = [sb]
    while switches[up_b[-1]]["parent"]:
        up_b.append(switches[up_b[-1]]["parent"])
    common = next(s for s in up_a if s in up_b)
    return up_a.index(common) + up_b.index(common) + 1


def _link(plan, a, b):
    """(kind, switches) of the hop between neighbours a and b: kind is lan, p2p or bond."""
    seg_a = {i["segment"]: i for i in plan["nodes"][a]["interfaces"] if i.get("addresses")}
    shared = [s for s in plan["nodes"][b]["interfaces"] if s.get("addresses") and s["segment"] in seg_a]
    if not shared:
        return "lan", 1
    iface = seg_a[shared[0]["segment"]]
    seg = plan["segments"][shared[0]["segment"]]
    if iface["kind"] == "bond":
        return "bond", 1
    if seg["kind"] == "p2p":
        return "p2p", 0
    return "lan", _switch_hops(plan, a, b)


def path_info(plan, hops, src):
    """Class of the path src -> hops[-1]; hops: node names after src (the
    expected traceroute list, whose last entry is the destination)."""
    chain = [src] + list(hops)
    routers = len(chain) - 2
    switches = 0
    kinds = []
    for a, b in zip(chain, chain[1:]):
        kind, sw = _link(plan, a, b)
        kinds.append(kind)
        switches += sw
    if routers > 0:
        cls = "gateway-%d" % routers
    elif kinds[0] == "p2p":
        cls = "p2p"
    elif kinds[0] == "bond":
        cls = "bonded"
    elif switches > 1:
        cls = "cross-switch"
    else:
        cls = "same-segment"
    return {"class": cls, "routers": routers, "switches": switches, "via": chain[1:-1]}


def classify(plan, path_of, nodes):
    """{class: [(a, b, info)]} for unordered pairs of nodes, a before b in plan
    order. path_of(a, b) returns the expected hop node names from a to b."""
    order = [n for n in plan["nodes"] if n in set(nodes)]
    out = {}
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            info = path_info(plan, path_of(a, b), a)
            out.setdefault(info["class"], []).append((a, b, info))
    return out


def disjoint_pairs(candidates, k):
    """Up to k pairs with no node in two pairs, spread over the candidate list
    (deterministic): a greedy pass that skips pairs touching a used node."""
    used, out = set(), []
    if k <= 0:
        return out
    for a, b, info in candidates:
        if a in used or b in used:
            continue
        out.append((a, b, info))
        used.update((a, b))
        if len(out) == k:
            break
    return out


def pair_counts(available, requested=None):
    """1, 2, 4, ... up to `available` (always including it), or the requested
    counts capped at what the class offers."""
    if requested:
        return sorted({min(int(k), available) for k in requested if int(k) >= 1})
    out, k = [], 1
    while k < available:
        out.append(k)
        k *= 2
    out.append(available)
    return sorted(set(out))


# ---------------------------------------------------------------- validation

def mss_points(mtu=1500, delta=3):
    """Token sizes a few bytes either side of the TCP MSS (with timestamps) and
    of the UDP payload of one datagram: where a token starts needing two packets."""
    mss = mtu - 52
    return sorted({mss - delta, mss, mss + delta, 2 * mss - delta, 2 * mss + delta})


def validate(plan, params):
    """Check a benchmark request against the plan; returns the normalised
    parameters or raises BenchError with every problem."""
    p = dict(params)
    problems = []
    names = list(plan["nodes"])
    nodes = p.get("nodes") or names
    missing = [n for n in nodes if n not in plan["nodes"]]
    if missing:
        problems.append("nodes: %s not in the plan of %s (its nodes: %s)" % (
            ", ".join(missing), plan["topology"]["name"], _few(names)))
    if len(nodes) < 2:
        problems.append("nodes: a benchmark needs at least 2 nodes")
    sizes = p.get("sizes") or list(DEFAULT_SIZES)
    if not isinstance(sizes, list):
        problems.append("sizes: must be a list of token sizes in bytes")
        sizes = []
    bad = [s for s in sizes
           if isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= MAX_TOKEN]
    for s in bad:
        problems.append("sizes: %r is out of range (token sizes are integers 1..%d bytes)"
                        % (s, MAX_TOKEN))
    if not bad and p.get("mss_points", True):
        mtu = min(i["mtu"] for n in nodes if n in plan["nodes"]
                  for i in plan["nodes"][n]["interfaces"]) if not missing else 1500
        sizes = sorted(set(sizes) | set(mss_points(mtu)))
    elif not bad:
        sizes = sorted(set(sizes))
    for key, lo, hi in (("count", 1, 1000000), ("warmup", 0, 100000), ("window", 1, 1024),
                        ("exchange_window", 1, 1024),
                        ("ring_rounds", 1, 100000), ("iperf_seconds", 1, 600)):
        v = p.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi):
            problems.append("%s: %r is out of range (%d..%d)" % (key, v, lo, hi))
    for mb in p.get("file_mb") or []:
        if isinstance(mb, bool) or not isinstance(mb, int) or not 1 <= mb <= MAX_FILE_MB:
            problems.append("file_mb: %r is out of range (1..%d MB)" % (mb, MAX_FILE_MB))
    copies = p.get("copies", 7)
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
        problems.append("copies: %r must be an integer >= 1" % (copies,))
    elif not missing and copies > len(nodes):
        problems.append("copies: %d concurrent copies need at least %d nodes, the benchmark has %d"
                        % (copies, copies, len(nodes)))
    for r in p.get("remote_copies") or []:
        if isinstance(r, bool) or not isinstance(r, int) or r < 0 or (
                isinstance(copies, int) and r > copies):
            problems.append("remote_copies: %r must be an integer 0..copies (%s)" % (r, copies))
        elif not missing and isinstance(copies, int) and copies + r > len(nodes):
            problems.append("remote_copies: %d remote of %d copies need %d nodes, the benchmark has %d"
                            % (r, copies, copies + r, len(nodes)))
    for c in p.get("classes") or []:
        if c not in CLASS_ORDER:
            problems.append("classes: unknown path class %r (known: %s)" % (c, ", ".join(CLASS_ORDER)))
    for k in p.get("pairs") or []:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            problems.append("pairs: %r must be an integer >= 1" % (k,))
        elif k > len(nodes) // 2:
            problems.append("pairs: %d disjoint pairs need %d nodes, the benchmark has %d"
                            % (k, 2 * k, len(nodes)))
    problems += check_model(p.get("latency_model") or DEFAULT_MODEL)
    if problems:
        raise BenchError(problems)
    p["nodes"] = nodes
    p["sizes"] = sizes
    p.setdefault("count", 1000)
    p.setdefault("warmup", 10)
    p.setdefault("window", 8)
    p.setdefault("exchange_window", 1)     # 1: the papers' ping-pong; >1: tokens in flight
    p.setdefault("ring_rounds", 100)
    p.setdefault("iperf_seconds", 5)
    p.setdefault("file_mb", [1, 2, 4, 8, 16])
    p["copies"] = copies
    p.setdefault("remote_copies", list(range(0, copies + 1)))
    p["latency_model"] = p.get("latency_model") or DEFAULT_MODEL
    return p


def _few(names, k=6):
    return ", ".join(names[:k]) + (", ..." if len(names) > k else "")


def check_tools(probe):
    """probe: {host: compiler path or ''}. Raises BenchError naming every node
    without a C compiler."""
    bad = sorted(h for h, path in probe.items() if not (path or "").strip())
    if bad:
        raise BenchError(["%s: no C compiler (gcc or cc) to build tokex: install gcc on the node"
                          % h for h in bad])


# ---------------------------------------------------------------- schedule

def _q(args):
    return " ".join(shlex.quote(str(a)) for a in args)


def schedule(plan, path_of, params, workdir="/tmp/beonet-bench"):
    """The ordered steps the playbook runs. Each step: id, kind, label (progress
    display), hosts {host: shell command}; '@START@' in a command is replaced by
    a common start time (epoch seconds) just before the step runs."""
    p = validate(plan, params)
    addr = {n: plan["nodes"][n]["address"] for n in p["nodes"]}
    tokex = workdir + "/tokex"
    out = workdir + "/out"
    deadline = int(p.get("deadline", 180))
    piddir = workdir + "/run"
    classes = classify(plan, path_of, p["nodes"])
    wanted = p.get("classes") or [c for c in CLASS_ORDER if c in classes]
    steps = []
    pairs_of = {}
    sizes = ",".join(str(s) for s in p["sizes"])
    for cls in wanted:
        cands = classes.get(cls, [])
        if not cands:
            continue
        most = len(disjoint_pairs(cands, len(p["nodes"])))
        for k in pair_counts(most, p.get("pairs")):
            chosen = disjoint_pairs(cands, k)
            sid = "tokex-%s-%dp" % (cls, len(chosen))
            hosts = {}
            for a, b, _ in chosen:
                hosts[a] = _q([tokex, "client", "-H", addr[b], "-p", TOKEX_PORT, "--proto",
                               "both" if p["exchange_window"] == 1 else "tcp",
                               "--window", p["exchange_window"],
                               "--sizes", sizes, "-n", p["count"], "--warmup", p["warmup"],
                               "--deadline", deadline, "--piddir", piddir, "--out", "%s/%s.json" % (out, sid)])
                hosts[a] = hosts[a].replace("--proto", "--start-at @START@ --proto", 1)
            steps.append({"id": sid, "kind": "tokex", "class": cls, "pairs": [
                {"client": a, "server": b, "routers": i["routers"], "switches": i["switches"],
                 "via": i["via"]} for a, b, i in chosen],
                "label": "token exchange%s, %s, %d pair(s): %s; sizes %d..%d, %d exchanges" % (
                    "" if p["exchange_window"] == 1 else " (window %d)" % p["exchange_window"],
                    cls, len(chosen), ", ".join("%s<->%s" % (a, b) for a, b, _ in chosen[:3])
                    + (", ..." if len(chosen) > 3 else ""), p["sizes"][0], p["sizes"][-1],
                    p["count"]),
                "hosts": hosts})
            pairs_of.setdefault(cls, chosen)
    # iperf3 and tokex's one-way modes on the first pair of each class.
    for cls in wanted:
        if cls not in pairs_of:
            continue
        a, b, info = pairs_of[cls][0]
        sid = "iperf3-%s" % cls
        secs = p["iperf_seconds"]
        stream_n = max(200, int(secs * 12.5e6 / 8192))
        parts = ["sleep 1", _q(["iperf3", "-c", addr[b], "-p", IPERF_PORT, "-t", secs, "-O", 1,
                                 "-J", "--logfile", "%s/%s.json" % (out, sid)])]
        for mode, size in (("stream", 8192), ("stream", 65536), ("window", 8192)):
            n = max(50, int(secs * 12.5e6 / size))      # about `secs` at 100 Mbit/s
            extra = ["--mode", "stream"] if mode == "stream" else ["--window", p["window"]]
            parts.append(_q([tokex, "client", "-H", addr[b], "-p", TOKEX_PORT] + extra + [
                "--sizes", size, "-n", n, "--stats-only", "--deadline", deadline,
                "--piddir", piddir, "--out", "%s/%s-%s-%d.json" % (out, sid, mode, size)]))
        client = " && ".join(parts)
        server = _q(["timeout", secs + 30, "iperf3", "-s", "-1", "-p", IPERF_PORT])
        steps.append({"id": sid, "kind": "iperf3", "class": cls,
                      "pairs": [{"client": a, "server": b, "routers": info["routers"],
                                 "switches": info["switches"], "via": info["via"]}],
                      "label": "iperf3 -J vs tokex stream/window, %s, %s -> %s, %d s"
                      % (cls, a, b, secs),
                      "hosts": {a: client, b: server}})
    # File copies: `copies` concurrent copies, r of them remote, over same-segment
    # pairs when the topology has them (the papers' local-net case).
    copy_pool = None
    for cls in wanted:
        if cls in classes:
            copy_pool = classes[cls]
            break
    for r in p["remote_copies"]:
        remote = disjoint_pairs(copy_pool or [], r)
        if len(remote) < r:
            continue
        busy = {n for a, b, _ in remote for n in (a, b)}
        local = [n for n in p["nodes"] if n not in busy][:p["copies"] - r]
        if len(local) < p["copies"] - r:
            continue
        for mb in p["file_mb"]:
            sid = "copy-r%d-%dmb" % (r, mb)
            src = "%s/src-%dmb" % (workdir, mb)
            hosts = {}
            for a, b, _ in remote:
                hosts[a] = " && ".join([
                    _q([tokex, "mkfile", src, mb * 1000000]) + " >/dev/null",
                    _q([tokex, "fsend", src, "-H", addr[b], "-p", TOKEX_PORT, "--dest",
                        "recv-%dmb" % mb, "--deadline", deadline, "--piddir", piddir, "--out",
                        "%s/%s.json" % (out, sid)]).replace("--dest", "--start-at @START@ --dest"),
                    "rm -f %s" % shlex.quote(src)])
            for n in local:
                hosts[n] = " && ".join([
                    _q([tokex, "mkfile", src, mb * 1000000]) + " >/dev/null",
                    _q([tokex, "copy", src, src + ".copy", "--deadline", deadline, "--piddir", piddir, "--out",
                        "%s/%s.json" % (out, sid)]).replace("--deadline", "--start-at @START@ --deadline"),
                    "rm -f %s %s" % (shlex.quote(src), shlex.quote(src + ".copy"))])
            steps.append({"id": sid, "kind": "copy", "remote": r, "file_mb": mb,
                          "pairs": [{"client": a, "server": b} for a, b, _ in remote],
                          "local": local,
                          "label": "file copy, %d MB, %d remote + %d local" % (mb, r, len(local)),
                          "hosts": hosts})
    # Ring: every node in plan order (last: the playbook runs it on its own).
    ring = p["nodes"]
    addrs = ",".join(addr[n] for n in ring)
    ring_sizes = ",".join(str(s) for s in p["sizes"])
    steps.append({"id": "ring", "kind": "ring", "order": ring,
                  "label": "ring round trip over %d nodes, %d rounds per size" % (
                      len(ring), p["ring_rounds"]),
                  "hosts": {n: _q([tokex, "ring", "--rank", i, "--addrs", addrs, "-p", RING_PORT,
                                   "--sizes", ring_sizes, "-n", p["ring_rounds"], "--warmup", 3,
                                   "--start-at", "@START@",
                                   "--deadline", deadline, "--piddir", piddir, "--out",
                                   "%s/ring-%d.json" % (out, i)])
                            for i, n in enumerate(ring)}})
    for i, st in enumerate(steps):
        st["label"] = "%d/%d: %s" % (i + 1, len(steps), st["label"])
    return {"params": p, "steps": steps, "workdir": workdir,
            "topology": plan["topology"]["name"],
            "link_rates": sorted({i["rate_mbit"] for n in p["nodes"]
                                  for i in plan["nodes"][n]["interfaces"] if i.get("rate_mbit")}),
            "uplink_rates": sorted({sw["uplink_mbit"] for sw in (plan.get("switches") or {}).values()
                                    if sw.get("parent") and sw.get("uplink_mbit")}),
            "classes": {c: len(v) for c, v in classes.items()},
            "servers": p["nodes"],
            "server_command": _q([tokex, "serve", "--daemon", "-p", TOKEX_PORT, "--dir", workdir,
                                  "--idle", 300, "--deadline", 3600, "--pidfile",
                                  workdir + "/serve.pid"])}


# ---------------------------------------------------------------- results

def summarize(values):
    """min, median, P99 (nearest rank), max of a list of numbers."""
    if not values:
        return {"n": 0, "min": None, "median": None, "p99": None, "max": None}
    s = sorted(values)
    n = len(s)

    def rank(q):
        k = max(1, min(n, -(-q * n // 100)))
        return s[int(k) - 1]
    return {"n": n, "min": s[0], "median": rank(50), "p99": rank(99), "max": s[-1]}


def _link_rate(plan, nodes):
    """The slowest planned link the nodes send on: a bond counts as one link of
    channels x channel rate (its members carry no address of their own)."""
    rates = [i["rate_mbit"] for n in nodes for i in plan["nodes"][n]["interfaces"]
             if i.get("rate_mbit") and not i.get("bond")]
    return min(rates) if rates else None


def collect(sched, outputs, plan):
    """Turn the raw outputs {host: {file name: parsed JSON}} into result tables."""
    rate = _link_rate(plan, sched["params"]["nodes"])
    link_MBps = rate / 8.0 if rate else None
    model = sched["params"]["latency_model"]
    res = {"tokex": [], "aggregate": [], "samples": [], "iperf3": [], "ring": [],
           "copy": [], "copy_aggregate": [], "latency": [], "link_MBps": link_MBps}
    for st in sched["steps"]:
        if st["kind"] == "tokex":
            agg = {}
            for pr in st["pairs"]:
                doc = outputs.get(pr["client"], {}).get(st["id"] + ".json")
                if not doc:
                    continue
                for run in doc["runs"]:
                    row = {"class": st["class"], "pairs": len(st["pairs"]), "client": pr["client"],
                           "server": pr["server"], "routers": pr["routers"],
                           "switches": pr["switches"], "proto": run["proto"], "size": run["size"],
                           "count": run["count"], "seconds": run["seconds"], "lost": run["lost"],
                           "exchange_MBps": run["exchange_MBps"], "one_way_MBps": run["one_way_MBps"],
                           "start": run["start"]}
                    row.update({"rtt_%s_us" % k: v for k, v in run["rtt_us"].items()})
                    res["tokex"].append(row)
                    for i, v in enumerate(run.get("samples_us", [])):
                        res["samples"].append({"class": st["class"], "pairs": len(st["pairs"]),
                                               "client": pr["client"], "server": pr["server"],
                                               "proto": run["proto"], "size": run["size"],
                                               "i": i, "rtt_us": v})
                    key = (run["proto"], run["size"])
                    a = agg.setdefault(key, {"class": st["class"], "pairs": len(st["pairs"]),
                                             "proto": run["proto"], "size": run["size"],
                                             "exchange_MBps": 0.0, "one_way_MBps": 0.0,
                                             "reported": 0, "first_start": run["start"],
                                             "last_end": run["start"] + run["seconds"]})
                    a["exchange_MBps"] += run["exchange_MBps"]
                    a["one_way_MBps"] += run["one_way_MBps"]
                    a["reported"] += 1
                    a["first_start"] = min(a["first_start"], run["start"])
                    a["last_end"] = max(a["last_end"], run["start"] + run["seconds"])
                    # Latency: the smallest token of a 1-pair ping-pong (not windowed).
                    if (len(st["pairs"]) == 1 and run["size"] == min(sched["params"]["sizes"])
                            and run["size"] <= 64 and run.get("window", 1) == 1):
                        pred = predict_rtt(model, run["proto"], pr["switches"], pr["routers"])
                        res["latency"].append({
                            "class": st["class"], "client": pr["client"], "server": pr["server"],
                            "proto": run["proto"], "size": run["size"], "routers": pr["routers"],
                            "switches": pr["switches"],
                            "one_way_median_us": run["rtt_us"]["median"] / 2,
                            "one_way_min_us": run["rtt_us"]["min"] / 2,
                            "one_way_p99_us": run["rtt_us"]["p99"] / 2,
                            "model_one_way_us": pred / 2,
                            "samples_one_way_us": [v / 2 for v in run.get("samples_us", [])]})
            for a in agg.values():
                # Sum of the pairs' own rates, and bytes over the union of their run
                # windows (conservative when the pairs did not overlap exactly).
                a["sum_one_way_MBps"] = a["one_way_MBps"]
                a["sum_exchange_MBps"] = a["exchange_MBps"]
                span = a["last_end"] - a["first_start"]
                done = sum(t["size"] * t["count"] for t in res["tokex"]
                           if t["class"] == a["class"] and t["pairs"] == a["pairs"]
                           and t["proto"] == a["proto"] and t["size"] == a["size"])
                if span > 0 and a["reported"] > 1:
                    a["one_way_MBps"] = min(a["one_way_MBps"], done / span / 1e6)
                    a["exchange_MBps"] = 2 * a["one_way_MBps"]
                if link_MBps:
                    a["one_way_pct_of_link"] = round(100 * a["one_way_MBps"] / link_MBps, 1)
                    a["exchange_pct_of_link"] = round(100 * a["exchange_MBps"] / link_MBps, 1)
                res["aggregate"].append(a)
        elif st["kind"] == "iperf3":
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
                        row["ratio_%s_%d" % (mode, run["size"])] = round(
                            run["one_way_MBps"] / (bps / 8e6), 3)
            res["iperf3"].append(row)
        elif st["kind"] == "ring":
            doc = outputs.get(st["order"][0], {}).get("ring-0.json") or {"runs": []}
            for run in doc["runs"]:
                row = {"nodes": len(st["order"]), "size": run["size"], "rounds": run["count"]}
                row.update({"round_%s_us" % k: v for k, v in run["rtt_us"].items()})
                res["ring"].append(row)
        elif st["kind"] == "copy":
            docs = []
            for h in list(st["local"]) + [pr["client"] for pr in st["pairs"]]:
                d = outputs.get(h, {}).get(st["id"] + ".json")
                if d:
                    d = dict(d, host=h, remote=st["remote"], file_mb=st["file_mb"])
                    docs.append(d)
                    res["copy"].append({k: d[k] for k in ("host", "copy", "remote", "file_mb", "bytes",
                                                          "seconds", "MBps", "start",
                                                          "resident_pages_before")})
            if docs:
                t0 = min(d["start"] for d in docs)
                t1 = max(d["start"] + d["seconds"] for d in docs)
                res["copy_aggregate"].append({
                    "remote": st["remote"], "file_mb": st["file_mb"], "copies": len(docs),
                    "aggregate_MBps": sum(d["bytes"] for d in docs) / (t1 - t0) / 1e6,
                    "sum_of_rates_MBps": sum(d["MBps"] for d in docs),
                    "resident_pages_before": sum(max(0, d["resident_pages_before"]) for d in docs)})
    return res


def write_csv(path, rows):
    keys = []
    for r in rows:
        for k in r:
            if k not in keys and not isinstance(r[k], (list, dict)):
                keys.append(k)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.write("\n")


def _fmt(v, nd=2):
    if v is None:
        return "—"
    if isinstance(v, float):
        return ("%%.%df" % nd) % v
    return str(v)


def _table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def summary_markdown(sched, res, env, plan):
    """The human summary: environment, then one table per benchmark."""
    p = sched["params"]
    lines = ["# beonet benchmark: %s" % plan["topology"]["name"], ""]
    lines.append("## Environment")
    lines.append("")
    for k in sorted(env):
        v = env[k]
        if isinstance(v, (dict, list)):
            v = json.dumps(v, sort_keys=True)
        lines.append("- **%s**: %s" % (k, str(v).replace("\n", "; ")))
    lines += ["", "Throughput: MB = 10^6 bytes. *exchange* counts the token both ways "
              "(2 x size x count / time, the papers' token-exchange count), *one-way* counts it "
              "once (what a stream, or iperf3, measures). Planned link rate %s MB/s (a bond: "
              "its channels together)." % _fmt(res["link_MBps"]),
              "", "## Token exchange (aggregate over concurrent pairs)", ""]
    rows = []
    for a in sorted(res["aggregate"], key=lambda a: (a["class"], a["proto"], a["pairs"], a["size"])):
        if a["size"] in (min(p["sizes"]), 1024, 8192) or a["size"] == max(p["sizes"]):
            rows.append([a["class"], a["proto"], a["pairs"], a["size"], a["exchange_MBps"],
                         a["one_way_MBps"], a.get("one_way_pct_of_link")])
    lines.append(_table(["class", "proto", "pairs", "size", "exchange MB/s", "one-way MB/s",
                         "one-way % of link"], rows))
    lines += ["", "## Round trip per pair (TCP, 1 pair)", ""]
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
    rows = [[l["class"], l["proto"], l["routers"], l["switches"], l["one_way_min_us"],
             l["one_way_median_us"], l["one_way_p99_us"], l["model_one_way_us"]] for l in res["latency"]]
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
    return "\n".join(lines)


def write_results(folder, sched, res, env, plan, raw):
    os.makedirs(folder, exist_ok=True)
    write_json(os.path.join(folder, "raw.json"), raw)
    write_json(os.path.join(folder, "results.json"), dict(res, environment=env,
                                                          schedule=[{k: v for k, v in s.items()
                                                                     if k != "hosts"}
                                                                    for s in sched["steps"]]))
    for name in ("tokex", "aggregate", "samples", "iperf3", "ring", "copy", "copy_aggregate", "latency"):
        write_csv(os.path.join(folder, name + ".csv"), res[name])
    with open(os.path.join(folder, "summary.md"), "w", encoding="utf-8") as fh:
        fh.write(summary_markdown(sched, res, env, plan))
