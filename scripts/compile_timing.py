"""`make bench`: compile performance of the whole `beonet` process against its targets.

Each case runs `beonet build` (plan.json, routes.txt, the exports and every
node's persistent files) or `beonet metrics` as a new process, BENCH_RUNS
times (5), and prints the median, min and max beside the target, the
process's peak RSS, and the output bytes per node and per plan entry (a
node or a route). Outputs go to a RAM-backed folder when there is one
(/dev/shm), so the disk's speed is not what is measured. Exits 1 when a
median, the 8,256-node RSS or the output growth misses its target times
--tolerance. A case whose first run takes more than RUN_CAP times its target
runs once.

The time targets are for the machine they were set on, and a shared machine's
speed drifts by tens of percent within minutes. So each run of a case is
followed by a run of the same case by the commit on which every case last met
its target (BASELINE_COMMIT, whose median there each case holds), and the case's
target is scaled by how much longer that commit takes here (the "here"
column). The baseline's code is read from the repository's history (git
archive); without it (no git, a shallow clone), or with --absolute, the
targets are taken as written.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BENCH = os.path.join(ROOT, "topologies", "benchmarks", "compile")
BEONET = os.path.join(os.path.dirname(sys.executable), "beonet")
RUN_CAP = 5
RSS_TARGET_MB = 1024
GROWTH_TARGET = 1.5            # output bytes per plan entry, 380 -> 8,256 nodes
CUSTOM_SEED = 1998
# The commit on which every case met its target (AMD EPYC, 2 CPUs, 2026-11-26;
# docs/benchmarks.md); each case holds its median there (Case.baseline).
BASELINE_COMMIT = "5cfe70b"


@dataclass
class Case:
    label: str
    topology: str               # a path, or "custom" (generated)
    target: float               # seconds, median
    command: str = "build"
    family: str = "metagraph"
    times: list[float] = field(default_factory=list)
    rss_mb: float = 0.0
    nodes: int = 0
    entries: int = 0            # nodes + routes of the plan
    out_bytes: int = 0
    baseline: float = 0.0       # BASELINE_COMMIT's median where the targets were set
    base_times: list[float] = field(default_factory=list)      # ... and here

    def factor(self) -> float:
        """How much longer the baseline takes here than where the targets were set."""
        if not self.base_times or not self.baseline:
            return 1.0
        return statistics.median(self.base_times) / self.baseline


def cases() -> list[Case]:
    def bench(name: str) -> str:
        return os.path.join(BENCH, name)
    return [
        Case("metanode-testbed, 36 nodes", os.path.join(ROOT, "topologies", "metanode-testbed.yml"), 0.2,
             baseline=0.12),
        Case("L=20 P=19 C=1, 380 nodes", bench("compile-metagraph-380.yml"), 0.4, baseline=0.28),
        Case("L=97 P=48 C=2, 4,656 nodes", bench("compile-metagraph-4656.yml"), 2.0, baseline=1.61),
        Case("L=129 P=64 C=2, 8,256 nodes", bench("compile-metagraph-8256.yml"), 4.0, baseline=3.27),
        Case("mesh 64x64, 4,096 nodes", bench("compile-mesh-64x64.yml"), 3.0, family="mesh",
             baseline=0.94),
        Case("mesh 16x16x16, 4,096 nodes", bench("compile-mesh-16x16x16.yml"), 3.0, family="mesh",
             baseline=2.62),
        Case("custom 100 LANs x 20 + 150 links", "custom", 3.0, family="custom", baseline=0.88),
        Case("metrics, mesh 60x60", bench("compile-mesh-60x60.yml"), 3.0, command="metrics",
             family="mesh", baseline=0.42),
    ]


def custom_topology(seed: int = CUSTOM_SEED, lans: int = 100, size: int = 20,
                    extra: int = 51) -> str:
    """100 LANs of 20 nodes joined by 150 point-to-point links between random
    members: a random spanning tree of the LANs (99 links) plus 51 more."""
    rng = random.Random(seed)
    names = [["r%02dn%02d" % (r, k) for k in range(size)] for r in range(lans)]
    pairs = [(rng.randrange(r), r) for r in range(1, lans)]
    for _ in range(extra):
        a, b = rng.sample(range(lans), 2)
        pairs.append((a, b))
    links = ["    - {ends: [%s, %s]}" % (rng.choice(names[a]), rng.choice(names[b]))
             for a, b in pairs]
    segments = ["    - {name: rack%02d, members: [%s]}" % (r, ", ".join(names[r]))
                for r in range(lans)]
    return "\n".join(["name: compile-custom", "family: custom", "custom:", "  nodes:"]
                     + ["    - %s" % n for rack in names for n in rack]
                     + ["  segments:"] + segments + ["  links:"] + links
                     + ["routing: {failover: false}"]) + "\n"


def run_once(case: Case, out: str, code: str | None = None) -> float:
    """Wall time of one whole process; records its peak RSS. code: a folder
    holding another version's beonet package, run instead of this one."""
    argv = [BEONET] if code is None else [sys.executable, "-c", "from beonet import cli; cli.run()"]
    argv += [case.command, case.topology]
    argv += ["-o", out] if case.command == "build" else ["--format", "json"]
    env = None if code is None else {**os.environ, "PYTHONPATH": code}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit("beonet %s %s failed:\n%s" % (case.command, case.topology, err[-2000:]))
    case.rss_mb = max(case.rss_mb, usage.ru_maxrss / 1024)
    return elapsed


COUNT_ENTRIES = ("import json, sys; nodes = json.load(open(sys.argv[1]))['nodes']; "
                 "print(len(nodes), sum(len(n['routes']) for n in nodes.values()))")


def measure_output(case: Case, out: str) -> None:
    """Nodes, plan entries and bytes written. The plan is read by a child process:
    a child's peak RSS includes its parent's (Linux carries the high-water mark
    over exec), so this process must stay small."""
    counts = subprocess.run([sys.executable, "-c", COUNT_ENTRIES, os.path.join(out, "plan.json")],
                            check=True, capture_output=True, text=True).stdout.split()
    case.nodes, routes = int(counts[0]), int(counts[1])
    case.entries = case.nodes + routes
    case.out_bytes = sum(os.path.getsize(os.path.join(d, f))
                         for d, _dirs, files in os.walk(out) for f in files)


def run_case(case: Case, runs: int, scratch: str, baseline: str | None = None) -> None:
    """runs runs of the case, each followed by one of the baseline's code when given."""
    twin = Case(case.label, case.topology, case.target, case.command)    # its RSS is not ours
    for k in range(runs):
        out = os.path.join(scratch, "out%d" % k)
        case.times.append(run_once(case, out))
        if case.command == "build" and k == 0:
            measure_output(case, out)
        shutil.rmtree(out, ignore_errors=True)
        if baseline is not None:
            case.base_times.append(run_once(twin, out, baseline))
            shutil.rmtree(out, ignore_errors=True)
        if case.times[0] > RUN_CAP * case.target * case.factor():
            break


def baseline_code(scratch: str) -> str | None:
    """BASELINE_COMMIT's module_utils, extracted into scratch; None without it."""
    try:
        tar = subprocess.run(["git", "-C", ROOT, "archive", BASELINE_COMMIT, "module_utils"],
                             check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    folder = os.path.join(scratch, "baseline")
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(folder, filter="data")
    return os.path.join(folder, "module_utils")


def environment() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            model = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return "Python %s, %s, %d CPUs, kernel %s" % (platform.python_version(), model,
                                                    os.cpu_count() or 0, platform.release())


def report(done: list[Case], tolerance: float, note: str = "targets as written") -> bool:
    """Print the table; True when every case meets its target (scaled to this
    machine) times tolerance."""
    ok = True
    print("machine: %s" % note)
    print("%-34s %5s %8s %7s %7s %7s %8s %7s %7s %9s %9s" % (
        "case", "runs", "median", "min", "max", "target", "baseline", "here", "RSS MB", "B/node",
        "B/entry"))
    for c in done:
        med = statistics.median(c.times)
        here = c.target * c.factor()
        miss = med > here * tolerance
        ok &= not miss
        base = "%7.2fs" % statistics.median(c.base_times) if c.base_times else "%8s" % "-"
        per_node = "%9d" % (c.out_bytes // c.nodes) if c.nodes else "%9s" % "-"
        per_entry = "%9d" % (c.out_bytes // c.entries) if c.entries else "%9s" % "-"
        print("%-34s %5d %7.2fs %6.2fs %6.2fs %6.1fs %s %6.2fs %7.0f %s %s%s" % (
            c.label, len(c.times), med, min(c.times), max(c.times), c.target, base, here, c.rss_mb,
            per_node, per_entry, "  <-- MISSED" if miss else ""))
    big = next(c for c in done if "8,256" in c.label)
    small = next(c for c in done if "380 nodes" in c.label)
    rss_ok = big.rss_mb <= RSS_TARGET_MB * tolerance
    growth = (big.out_bytes / big.entries) / (small.out_bytes / small.entries)
    node_growth = (big.out_bytes / big.nodes) / (small.out_bytes / small.nodes)
    growth_ok = growth <= GROWTH_TARGET * tolerance
    print("max RSS, 8,256 nodes: %.0f MB (target %d MB)%s"
          % (big.rss_mb, RSS_TARGET_MB, "" if rss_ok else "  <-- MISSED"))
    print("output bytes per plan entry (node or route), 380 -> 8,256 nodes: x%.2f (target x%.1f)%s"
          % (growth, GROWTH_TARGET, "" if growth_ok else "  <-- MISSED"))
    print("output bytes per node, 380 -> 8,256 nodes: x%.2f (routes per node grow with the "
          "number of groups)" % node_growth)
    return ok and rss_ok and growth_ok


def plot(done: list[Case], path: str) -> None:
    """Log-log SVG of build time against nodes, one line per family, targets as crosses."""
    import matplotlib
    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["svg.hashsalt"] = "beonet"       # the same file for the same figures
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    builds = [c for c in done if c.command == "build" and c.nodes]
    for fam in sorted({c.family for c in builds}):
        pts = sorted((c.nodes, statistics.median(c.times), c.label) for c in builds if c.family == fam)
        ax.plot([n for n, _t, _l in pts], [t for _n, t, _l in pts], "o-", label=fam)
    ax.plot([c.nodes for c in builds], [c.target for c in builds], "kx", label="target")
    ax.set(xscale="log", yscale="log", xlabel="nodes", ylabel="beonet build, median seconds",
           title="Whole-process build time (make bench)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.savefig(path, metadata={"Date": None})
    print("plot written to %s" % path)


def markdown(done: list[Case]) -> None:
    print("| case | median | min | max | target | %s here | target here | peak RSS "
          "| output bytes per node | per node or route |" % BASELINE_COMMIT)
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in done:
        print("| %s | %.2f s | %.2f s | %.2f s | ≤ %g s | %s | ≤ %.2f s | %.0f MB | %s | %s |" % (
            c.label, statistics.median(c.times), min(c.times), max(c.times), c.target,
            "%.2f s" % statistics.median(c.base_times) if c.base_times else "-",
            c.target * c.factor(), c.rss_mb,
            f"{c.out_bytes // c.nodes:,}" if c.nodes else "-",
            f"{c.out_bytes // c.entries:,}" if c.entries else "-"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tolerance", type=float, default=1.0,
                   help="fail only when a result exceeds its target times this (default 1)")
    p.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", "5")))
    p.add_argument("--only", default="", help="run only the cases whose label contains this")
    p.add_argument("--plot", metavar="SVG", help="also write a log-log plot of build times")
    p.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    p.add_argument("--absolute", action="store_true",
                   help="judge against the targets as written, not scaled to this machine")
    args = p.parse_args(argv)
    print("beonet compile benchmark: %s" % environment())
    scratch_root = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    done = []
    with tempfile.TemporaryDirectory(prefix="beonet-bench-", dir=scratch_root) as scratch:
        baseline = None if args.absolute or args.only else baseline_code(scratch)
        for case in cases():
            if args.only not in case.label:
                continue
            if case.topology == "custom":
                case.topology = os.path.join(scratch, "compile-custom.yml")
                with open(case.topology, "w", encoding="utf-8") as fh:
                    fh.write(custom_topology())
            run_case(case, args.runs, scratch, baseline)
            done.append(case)
    note = ("targets as written (%s)" % ("--absolute" if args.absolute else
                                        "commit %s is not in this clone" % BASELINE_COMMIT)
            if baseline is None else
            "each run followed by one of commit %s, which met every target where they were set; "
            "targets scaled by its time here (baseline, here)" % BASELINE_COMMIT)
    if args.only:
        for c in done:
            print("%-34s median %.2fs (target %.1fs), RSS %.0f MB"
                  % (c.label, statistics.median(c.times), c.target, c.rss_mb))
        return 0
    ok = report(done, args.tolerance, note)
    if args.markdown:
        markdown(done)
    if args.plot:
        plot(done, args.plot)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
