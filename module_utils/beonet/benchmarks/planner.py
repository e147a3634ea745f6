"""Benchmarks of a compiled plan: the papers' token exchange, ring, file
copy, latency by path class and iperf3.

Pure logic only (stdlib): which pairs to test (by path class from the plan's
expected paths), the per-hop latency model, the validation of a request and
the schedule of steps the playbook runs on the nodes. The results (tables,
CSV/JSON/Markdown) are report.py's, the plots plots.py's (controller only).

Every problem with the request (a node not in the plan, a size out of range,
no compiler on a node, ...) raises BenchError with all problems listed before
anything starts.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from ..agent.names import shown
from ..outputs.ipfamily import node_addresses
from .capacity import pair_resources

Plan = Mapping[str, Any]                      # a plan (outputs.plan.Plan) as read here
PathOf = Callable[[str, str], list[str]]      # (a, b) -> hop node names from a to b
Pair = tuple[str, str, dict[str, Any]]        # (a, b, path_info of a -> b)

MAX_TOKEN = 65536               # UDP tokens: at most 64 datagrams of 1460 bytes
MAX_FILE_MB = 64
DEFAULT_SIZES = [2 ** n for n in range(2, 14)]      # 4 .. 8192, the papers' range
TOKEX_PORT = 6201
RING_PORT = 6202
IPERF_PORT = 6203
FAMILIES = {4: ("IPv4", "address"), 6: ("IPv6", "address6")}   # family: (name, node plan key)
TCP_HEADERS = {4: 52, 6: 72}    # IP header 20 (IPv6: 40), TCP 20 and its timestamps 12
CLASS_ORDER = ["same-segment", "cross-switch", "p2p", "bonded",
               "gateway-1", "gateway-2", "gateway-3"]

# SC98 (Salmon, Stein, Sterling), Table 1: lmbench round-trip latencies (us) and
# socket bandwidth (MB/s). e = end point, L = Linux router, B = Bay 350T switch,
# P = Lucent/Prominet Cajun switch.
SC98_TABLE: list[tuple[str, int, int, float]] = [
    ("e-e", 154, 118, 11.39), ("e-L-e", 214, 176, 11.39), ("e-L-L-e", 287, 240, 11.38),
    ("e-B-e", 173, 137, 11.38), ("e-L-B-e", 232, 197, 11.38),
    ("e-B-L-L-B-e", 324, 281, 11.38), ("e-B-B-e", 192, 156, 11.39),
    ("e-B-B-B-e", 210, 175, 11.37), ("e-P-e", 189, 142, 11.32), ("e-P-P-e", 194, 154, 11.39),
]


class BenchError(Exception):
    """A request that cannot run; .problems lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


# ---------------------------------------------------------------- latency model

def _solve3(a: list[list[float]], b: list[float]) -> list[float]:
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


def fit_model(rows: Sequence[tuple[str, float, float, float]] | None = None
              ) -> dict[str, dict[str, float]]:
    """Least-squares fit of round trip = base + switch x switches + router x routers
    to the table rows made of end points, Bay switches (B) and Linux routers (L),
    for TCP and UDP. Returns {"tcp": {...}, "udp": {...}} in microseconds."""
    rows = [r for r in (rows or SC98_TABLE) if "P" not in r[0].split("-")]
    out = {}
    for col, proto in ((1, "tcp"), (2, "udp")):
        ata = [[0.0] * 3 for _row in range(3)]
        atb = [0.0] * 3
        for row in rows:
            parts = row[0].split("-")
            x = [1.0, float(parts.count("B")), float(parts.count("L"))]
            for i in range(3):
                atb[i] += x[i] * (row[1] if col == 1 else row[2])
                for j in range(3):
                    ata[i][j] += x[i] * x[j]
        base, switch, router = _solve3(ata, atb)
        out[proto] = {"base_us": round(base, 1), "switch_us": round(switch, 1),
                      "router_us": round(router, 1)}
    return out


DEFAULT_MODEL = fit_model()


def predict_rtt(model: dict[str, Any], proto: str, switches: int, routers: int) -> float:
    m = model[proto]
    return float(m["base_us"] + m["switch_us"] * switches + m["router_us"] * routers)


def check_model(model: Any) -> list[str]:
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

def _switch_hops(plan: Plan, a: str, b: str) -> int:
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


def _link(plan: Plan, a: str, b: str) -> tuple[str, int]:
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


def path_info(plan: Plan, hops: list[str], src: str) -> dict[str, Any]:
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


def path_lookup(plan: Plan, paths: dict[str, dict[str, list[list[str]]]]) -> PathOf:
    """path_of(a, b) from the allowed hop lists {src: {dst: [[address, ...], ...]}}
    (beonet_plan_result.paths): the preferred branch (the first list; every
    branch has the same length), each hop address mapped to the node that
    holds it in the plan (IPv4 hops, or on an IPv6-only plan IPv6 ones). A missing pair
    or a foreign address is a BenchError."""
    if not paths:
        raise BenchError(["paths: empty: compile the plan with every pair's expected path "
                          "(beonet_plan role with beonet_plan_paths: true)"])
    owner = {}
    for name, n in plan["nodes"].items():
        owner.update(dict.fromkeys(node_addresses(n), name))
        for iface in n["interfaces"]:
            for address in iface.get("addresses") or []:
                owner[address.split("/")[0]] = name

    def path_of(a: str, b: str) -> list[str]:
        branches = (paths.get(a) or {}).get(b)
        hops = branches[0] if branches else None
        if hops is None:
            raise BenchError(["paths: no expected path from %s to %s (paths of another plan?)" % (a, b)])
        unknown = [h for h in hops if h not in owner]
        if unknown:
            raise BenchError(["paths: %s -> %s: hop %s is no address of a node of the plan"
                              % (a, b, ", ".join(unknown))])
        return [owner[h] for h in hops]
    return path_of


def classify(plan: Plan, path_of: PathOf, nodes: list[str]) -> dict[str, list[Pair]]:
    """{class: [(a, b, info)]} for unordered pairs of nodes, a before b in plan
    order. path_of(a, b) returns the expected hop node names from a to b."""
    order = [n for n in plan["nodes"] if n in set(nodes)]
    out: dict[str, list[Pair]] = {}
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            info = path_info(plan, path_of(a, b), a)
            out.setdefault(info["class"], []).append((a, b, info))
    return out


def disjoint_pairs(candidates: list[Pair], k: int,
                   uses: Callable[[Pair], Iterable[object]] | None = None) -> list[Pair]:
    """Up to k pairs with no node in two pairs (deterministic). Without uses: a
    greedy pass in candidate order that skips pairs touching a used node. With
    uses(pair) (the links a pair's path takes): greedy spreads, each next pair
    the first free one sharing the fewest links with those chosen, started
    from up to SPREAD_STARTS first pairs; the most pairs, then the fewest
    links shared, win. The pairs spread over the network as the papers'
    independent pairs did."""
    if uses is None:
        used: set[str] = set()
        out: list[Pair] = []
        for a, b, info in candidates:
            if len(out) == k:
                break
            if a not in used and b not in used:
                out.append((a, b, info))
                used.update((a, b))
        return out
    links = [set(uses(p)) for p in candidates]
    best: tuple[int, list[int]] | None = None
    starts = max(1, min(SPREAD_STARTS, SPREAD_BUDGET // (len(candidates) * max(k, 1) + 1)))
    for start in sorted({len(candidates) * j // starts for j in range(starts)}):
        shared, chosen = _spread(candidates, links, k, start)
        if best is None or (-len(chosen), shared) < (-len(best[1]), best[0]):
            best = (shared, chosen)
    return [candidates[i] for i in (best[1] if best else [])]


SPREAD_STARTS = 32      # greedy spreads tried, each from another first pair ...
SPREAD_BUDGET = 2_000_000   # ... fewer where candidates x pairs is large (one at least)


def _spread(candidates: list[Pair], links: list[set[object]], k: int,
            start: int) -> tuple[int, list[int]]:
    """Greedy from candidate `start`: each next pair the first free one sharing
    the fewest links with those chosen. (links shared in all, chosen indexes)"""
    used: set[str] = set()
    taken: set[object] = set()
    chosen: list[int] = []
    shared = 0
    order = list(range(start, len(candidates))) + list(range(start))
    while len(chosen) < k:
        free = [i for i in order if candidates[i][0] not in used and candidates[i][1] not in used]
        if not free:
            break
        pick = min(free, key=lambda i: len(links[i] & taken))     # the first of the least shared
        shared += len(links[pick] & taken)
        chosen.append(pick)
        used.update(candidates[pick][:2])
        taken |= links[pick]
    return shared, chosen


def pair_counts(available: int, requested: list[int] | None = None) -> list[int]:
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

def mss_points(mtu: int = 1500, delta: int = 3, version: int = 4) -> list[int]:
    """Token sizes a few bytes either side of the TCP MSS (with timestamps) and
    of the UDP payload of one datagram: where a token starts needing two packets.
    version: the IP family's (IPv6's header is 20 bytes longer than IPv4's)."""
    mss = mtu - TCP_HEADERS[version]
    return sorted({mss - delta, mss, mss + delta, 2 * mss - delta, 2 * mss + delta})


def _is_int(v: Any, lo: int, hi: int | None = None) -> bool:
    """v is an integer (not a bool) in lo..hi."""
    return not isinstance(v, bool) and isinstance(v, int) and lo <= v and (hi is None or v <= hi)


def _check_nodes(plan: Plan, nodes: list[str], missing: list[str]) -> list[str]:
    problems = []
    if missing:
        problems.append("nodes: %s not in the plan of %s (its nodes: %s)" % (
            ", ".join(missing), plan["topology"]["name"], _few(list(plan["nodes"]))))
    if len(nodes) < 2:
        problems.append("nodes: a benchmark needs at least 2 nodes")
    return problems


def _check_sizes(plan: Plan, p: dict[str, Any], nodes: list[str], missing: list[str],
                 version: int) -> tuple[list[str], list[Any]]:
    """(problems, the sorted token sizes with the MSS points unless turned off)."""
    problems = []
    sizes = p.get("sizes") or list(DEFAULT_SIZES)
    if not isinstance(sizes, list):
        problems.append("sizes: must be a list of token sizes in bytes")
        sizes = []
    bad = [s for s in sizes if not _is_int(s, 1, MAX_TOKEN)]
    for s in bad:
        problems.append("sizes: %r is out of range (token sizes are integers 1..%d bytes)"
                        % (s, MAX_TOKEN))
    if not bad and p.get("mss_points", True):
        mtu = min(i["mtu"] for n in nodes if n in plan["nodes"]
                  for i in plan["nodes"][n]["interfaces"]) if not missing else 1500
        sizes = sorted(set(sizes) | set(mss_points(mtu, version=version)))
    elif not bad:
        sizes = sorted(set(sizes))
    return problems, sizes


def _check_numbers(p: dict[str, Any]) -> list[str]:
    problems = []
    for key, lo, hi in (("count", 1, 1000000), ("warmup", 0, 100000), ("window", 1, 1024),
                        ("exchange_window", 1, 1024),
                        ("ring_rounds", 1, 100000), ("iperf_seconds", 1, 600)):
        v = p.get(key)
        if v is not None and not _is_int(v, lo, hi):
            problems.append("%s: %r is out of range (%d..%d)" % (key, v, lo, hi))
    for mb in p.get("file_mb") or []:
        if not _is_int(mb, 1, MAX_FILE_MB):
            problems.append("file_mb: %r is out of range (1..%d MB)" % (mb, MAX_FILE_MB))
    return problems


def _check_copies(p: dict[str, Any], nodes: list[str], missing: list[str]) -> list[str]:
    problems = []
    copies = p.get("copies", 7)
    if not _is_int(copies, 1):
        problems.append("copies: %r must be an integer >= 1" % (copies,))
    elif not missing and copies > len(nodes):
        problems.append("copies: %d concurrent copies need at least %d nodes, the benchmark has %d"
                        % (copies, copies, len(nodes)))
    for r in p.get("remote_copies") or []:
        if not _is_int(r, 0) or (isinstance(copies, int) and r > copies):
            problems.append("remote_copies: %r must be an integer 0..copies (%s)" % (r, copies))
        elif not missing and isinstance(copies, int) and copies + r > len(nodes):
            problems.append("remote_copies: %d remote of %d copies need %d nodes, the benchmark has %d"
                            % (r, copies, copies + r, len(nodes)))
    return problems


def _check_pairs(p: dict[str, Any], nodes: list[str]) -> list[str]:
    problems = []
    for c in p.get("classes") or []:
        if c not in CLASS_ORDER:
            problems.append("classes: unknown path class %r (known: %s)" % (c, ", ".join(CLASS_ORDER)))
    for k in p.get("pairs") or []:
        if not _is_int(k, 1):
            problems.append("pairs: %r must be an integer >= 1" % (k,))
        elif k > len(nodes) // 2:
            problems.append("pairs: %d disjoint pairs need %d nodes, the benchmark has %d"
                            % (k, 2 * k, len(nodes)))
    return problems


def families(plan: Plan) -> list[int]:
    """The IP families (4, 6) the plan's nodes have addresses of."""
    return [v for v, (_name, key) in FAMILIES.items() if any(key in n for n in plan["nodes"].values())]


def _check_family(plan: Plan, p: dict[str, Any], nodes: list[str]) -> tuple[list[str], int]:
    """(problems, the family the benchmark runs over): the request's `family` (4 or 6),
    by default IPv4 where the plan has it (a dual-stack plan too), else IPv6."""
    has = families(plan)
    v = p.get("family")
    if v is None:
        v = has[0] if has else 4
    elif not _is_int(v, 4, 6) or v not in FAMILIES:
        return ["family: must be 4 or 6 (the IP family the benchmark runs over), not %s" % shown(v)], 4
    elif v not in has:
        return ["family: %d: the plan of %s has no %s addresses (it has %s); %s" % (
            v, plan["topology"]["name"], FAMILIES[v][0], " and ".join(FAMILIES[h][0] for h in has),
            "addressing: {ipv6: true} adds IPv6" if v == 6 else "leave family out or set 6")], v
    name, key = FAMILIES[v]
    without = [n for n in nodes if n in plan["nodes"] and key not in plan["nodes"][n]]
    if without:
        return ["family: %d: %s have no %s address in the plan" % (v, _few(without), name)], v
    return [], v


def validate(plan: Plan, params: dict[str, Any]) -> dict[str, Any]:
    """Check a benchmark request against the plan; returns the normalised
    parameters or raises BenchError with every problem."""
    p = dict(params)
    nodes = p.get("nodes") or list(plan["nodes"])
    missing = [n for n in nodes if n not in plan["nodes"]]
    problems, version = _check_family(plan, p, nodes)
    problems += _check_nodes(plan, nodes, missing)
    more, sizes = _check_sizes(plan, p, nodes, missing, version)
    problems += more + _check_numbers(p) + _check_copies(p, nodes, missing) + _check_pairs(p, nodes)
    problems += check_model(p.get("latency_model") or DEFAULT_MODEL)
    if problems:
        raise BenchError(problems)
    p["family"] = version
    p["nodes"] = nodes
    p["sizes"] = sizes
    p.setdefault("count", 1000)
    p.setdefault("warmup", 10)
    p.setdefault("window", 8)
    p.setdefault("exchange_window", 1)     # 1: the papers' ping-pong; >1: tokens in flight
    p.setdefault("ring_rounds", 100)
    p.setdefault("iperf_seconds", 5)
    p.setdefault("file_mb", [1, 2, 4, 8, 16])
    p["copies"] = p.get("copies", 7)
    p.setdefault("remote_copies", list(range(0, p["copies"] + 1)))
    p["latency_model"] = p.get("latency_model") or DEFAULT_MODEL
    return p


def _few(names: list[str], k: int = 6) -> str:
    return ", ".join(names[:k]) + (", ..." if len(names) > k else "")


def check_tools(probe: dict[str, str | None]) -> None:
    """probe: {host: compiler path or ''}. Raises BenchError naming every node
    without a C compiler."""
    bad = sorted(h for h, path in probe.items() if not (path or "").strip())
    if bad:
        raise BenchError(["%s: no C compiler (gcc or cc) to build tokex: install gcc on the node"
                          % h for h in bad])


# ---------------------------------------------------------------- schedule

def _q(args: list[Any]) -> str:
    return " ".join(shlex.quote(str(a)) for a in args)


class _Ctx(NamedTuple):
    """What every step's commands are made of."""
    p: dict[str, Any]               # the validated request
    addr: dict[str, str]            # node -> the address its peers reach it at
    workdir: str
    tokex: str
    out: str
    piddir: str
    deadline: int
    links: Callable[[Pair], Iterable[object]]   # what a pair's path takes (capacity.pair_resources)


def _pair(a: str, b: str, info: dict[str, Any]) -> dict[str, Any]:
    return {"client": a, "server": b, "routers": info["routers"], "switches": info["switches"],
            "via": info["via"]}


def _tokex_step(c: _Ctx, cls: str, chosen: list[Pair]) -> dict[str, Any]:
    """Token exchange between each chosen pair at once (client on the first node)."""
    p = c.p
    sid = "tokex-%s-%dp" % (cls, len(chosen))
    sizes = ",".join(str(s) for s in p["sizes"])
    hosts = {}
    for a, b, _info in chosen:
        hosts[a] = _q([c.tokex, "client", "-H", c.addr[b], "-p", TOKEX_PORT, "--proto",
                       "both" if p["exchange_window"] == 1 else "tcp",
                       "--window", p["exchange_window"],
                       "--sizes", sizes, "-n", p["count"], "--warmup", p["warmup"],
                       "--deadline", c.deadline, "--piddir", c.piddir,
                       "--out", "%s/%s.json" % (c.out, sid)])
        hosts[a] = hosts[a].replace("--proto", "--start-at @START@ --proto", 1)
    shown = ", ".join("%s<->%s" % (a, b) for a, b, _info in chosen[:3]) + (", ..." if len(chosen) > 3 else "")
    label = "token exchange%s, %s, %d pair(s): %s; sizes %d..%d, %d exchanges" % (
        "" if p["exchange_window"] == 1 else " (window %d)" % p["exchange_window"],
        cls, len(chosen), shown, p["sizes"][0], p["sizes"][-1], p["count"])
    return {"id": sid, "kind": "tokex", "class": cls,
            "pairs": [_pair(a, b, i) for a, b, i in chosen], "label": label, "hosts": hosts}


def _tokex_steps(c: _Ctx, classes: dict[str, list[Pair]],
                 wanted: list[str]) -> tuple[list[dict[str, Any]], dict[str, list[Pair]]]:
    """Per class, token exchange over 1, 2, 4, ... disjoint pairs; and the
    pairs of each class's first step."""
    steps: list[dict[str, Any]] = []
    pairs_of: dict[str, list[Pair]] = {}
    for cls in wanted:
        cands = classes.get(cls, [])
        if not cands:
            continue
        most = len(disjoint_pairs(cands, len(c.p["nodes"]), c.links))
        for k in pair_counts(most, c.p.get("pairs")):
            chosen = disjoint_pairs(cands, k, c.links)
            steps.append(_tokex_step(c, cls, chosen))
            pairs_of.setdefault(cls, chosen)
    return steps, pairs_of


def _iperf_step(c: _Ctx, cls: str, pair: Pair) -> dict[str, Any]:
    """iperf3 and tokex's one-way modes on one pair of a class."""
    a, b, info = pair
    sid = "iperf3-%s" % cls
    secs = c.p["iperf_seconds"]
    iperf = ["iperf3", "-c", c.addr[b], "-p", IPERF_PORT, "-t", secs, "-O", 1,
             "-J", "--logfile", "%s/%s.json" % (c.out, sid)]
    parts = ["sleep 1", _q(iperf)]
    for mode, size in (("stream", 8192), ("stream", 65536), ("window", 8192)):
        n = max(50, int(secs * 12.5e6 / size))      # about `secs` at 100 Mbit/s
        extra = ["--mode", "stream"] if mode == "stream" else ["--window", c.p["window"]]
        parts.append(_q([c.tokex, "client", "-H", c.addr[b], "-p", TOKEX_PORT] + extra + [
            "--sizes", size, "-n", n, "--stats-only", "--deadline", c.deadline,
            "--piddir", c.piddir, "--out", "%s/%s-%s-%d.json" % (c.out, sid, mode, size)]))
    server = _q(["timeout", secs + 30, "iperf3", "-s", "-1", "-p", IPERF_PORT])
    return {"id": sid, "kind": "iperf3", "class": cls, "pairs": [_pair(a, b, info)],
            "label": "iperf3 -J vs tokex stream/window, %s, %s -> %s, %d s" % (cls, a, b, secs),
            "hosts": {a: " && ".join(parts), b: server}}


def _copy_step(c: _Ctx, r: int, mb: int, remote: list[Pair], local: list[str]) -> dict[str, Any]:
    """`mb` MB files copied at once: over the network by the remote pairs'
    clients, on their own disk by the local nodes."""
    sid = "copy-r%d-%dmb" % (r, mb)
    src = "%s/src-%dmb" % (c.workdir, mb)
    make = _q([c.tokex, "mkfile", src, mb * 1000000]) + " >/dev/null"
    hosts = {}
    for a, b, _info in remote:
        hosts[a] = " && ".join([
            make,
            _q([c.tokex, "fsend", src, "-H", c.addr[b], "-p", TOKEX_PORT, "--dest",
                "recv-%dmb" % mb, "--deadline", c.deadline, "--piddir", c.piddir, "--out",
                "%s/%s.json" % (c.out, sid)]).replace("--dest", "--start-at @START@ --dest"),
            "rm -f %s" % shlex.quote(src)])
    for n in local:
        hosts[n] = " && ".join([
            make,
            _q([c.tokex, "copy", src, src + ".copy", "--deadline", c.deadline, "--piddir", c.piddir,
                "--out", "%s/%s.json" % (c.out, sid)]).replace("--deadline", "--start-at @START@ --deadline"),
            "rm -f %s %s" % (shlex.quote(src), shlex.quote(src + ".copy"))])
    return {"id": sid, "kind": "copy", "remote": r, "file_mb": mb,
            "pairs": [{"client": a, "server": b} for a, b, _info in remote], "local": local,
            "label": "file copy, %d MB, %d remote + %d local" % (mb, r, len(local)), "hosts": hosts}


def _copy_steps(c: _Ctx, pool: list[Pair]) -> list[dict[str, Any]]:
    """`copies` concurrent copies, r of them remote (over disjoint pairs of the
    pool), for each r and file size that the nodes allow."""
    steps = []
    for r in c.p["remote_copies"]:
        remote = disjoint_pairs(pool, r)
        if len(remote) < r:
            continue
        busy = {n for a, b, _info in remote for n in (a, b)}
        local = [n for n in c.p["nodes"] if n not in busy][:c.p["copies"] - r]
        if len(local) < c.p["copies"] - r:
            continue
        steps += [_copy_step(c, r, mb, remote, local) for mb in c.p["file_mb"]]
    return steps


def _ring_step(c: _Ctx) -> dict[str, Any]:
    """Every node in plan order passes the token round the ring."""
    ring = c.p["nodes"]
    addrs = ",".join(c.addr[n] for n in ring)
    sizes = ",".join(str(s) for s in c.p["sizes"])
    return {"id": "ring", "kind": "ring", "order": ring,
            "label": "ring round trip over %d nodes, %d rounds per size" % (len(ring), c.p["ring_rounds"]),
            "hosts": {n: _q([c.tokex, "ring", "--rank", i, "--addrs", addrs, "-p", RING_PORT,
                             "--sizes", sizes, "-n", c.p["ring_rounds"], "--warmup", 3,
                             "--start-at", "@START@",
                             "--deadline", c.deadline, "--piddir", c.piddir, "--out",
                             "%s/ring-%d.json" % (c.out, i)])
                      for i, n in enumerate(ring)}}


def schedule(plan: Plan, path_of: PathOf, params: dict[str, Any],
             workdir: str = "/tmp/beonet-bench") -> dict[str, Any]:
    """The ordered steps the playbook runs. Each step: id, kind, label (progress
    display), hosts {host: shell command}; '@START@' in a command is replaced by
    a common start time (epoch seconds) just before the step runs."""
    p = validate(plan, params)
    name, key = FAMILIES[p["family"]]
    c = _Ctx(p, {n: plan["nodes"][n][key] for n in p["nodes"]}, workdir, workdir + "/tokex",
             workdir + "/out", workdir + "/run", int(p.get("deadline", 180)),
             lambda pair: pair_resources(plan, pair[0], pair[1], pair[2]["via"]))
    classes = classify(plan, path_of, p["nodes"])
    wanted = p.get("classes") or [cls for cls in CLASS_ORDER if cls in classes]
    steps, pairs_of = _tokex_steps(c, classes, wanted)
    steps += [_iperf_step(c, cls, pairs_of[cls][0]) for cls in wanted if cls in pairs_of]
    # File copies over same-segment pairs when the topology has them (the
    # papers' local-net case): the first wanted class there is.
    steps += _copy_steps(c, next((classes[cls] for cls in wanted if cls in classes), []))
    steps.append(_ring_step(c))            # last: the playbook runs it on its own
    for i, st in enumerate(steps):
        st["label"] = "%d/%d: %s" % (i + 1, len(steps), st["label"])
    return {"params": p, "steps": steps, "workdir": workdir, "family": name,
            "topology": plan["topology"]["name"],
            "link_rates": sorted({i["rate_mbit"] for n in p["nodes"]
                                  for i in plan["nodes"][n]["interfaces"] if i.get("rate_mbit")}),
            "uplink_rates": sorted({sw["uplink_mbit"] for sw in (plan.get("switches") or {}).values()
                                    if sw.get("parent") and sw.get("uplink_mbit")}),
            "classes": {cls: len(v) for cls, v in classes.items()},
            "servers": p["nodes"],
            "server_command": _q([c.tokex, "serve", "--daemon", "-p", TOKEX_PORT, "--dir", workdir,
                                  "--idle", 300, "--deadline", 3600, "--pidfile",
                                  workdir + "/serve.pid"])}
