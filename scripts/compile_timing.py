"""`make bench`: compile performance of the whole `beonet` process against its baselines.

Each case runs `beonet build` (plan.json, routes.txt, the exports and every
node's persistent files) or `beonet metrics` as a new process, BENCH_RUNS
times (5), and prints the median, min and max, the process's peak RSS, and
the output bytes per node and per plan entry (a node or a route). Outputs go
to a RAM-backed folder when there is one (/dev/shm), so the disk's speed is
not what is measured.

A shared machine's speed differs by up to 3 times from another's and drifts by
tens of percent within minutes, so no time target is written down: each run of
a case is followed by a run of the same case by its baseline commit (its code
read from the repository's history, git archive), and the case's target is the
baseline's fastest run in the same run. A case misses when its fastest run is
over --tolerance times that (CI: 1.5): other work on the machine only ever adds
time, and a burst of it can take most of a few runs, so the fastest run of each is
the figure least moved by it (the medians are printed too). Then the checks of bench_checks.py (hostile
inputs refused at once, the discovery loop's CPU, tokex's deadline, a small
compile's start-up against a bare Python's), each
against a reference measured in the same run. Exits 1 on a miss (also with
--only), 2 when a baseline commit is not in the clone (a shallow clone).
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

import bench_checks

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BENCH = os.path.join(ROOT, "topologies", "benchmarks", "compile")
BEONET = os.path.join(os.path.dirname(sys.executable), "beonet")
RUN_CAP = 5
RSS_TARGET_MB = 1024
GROWTH_TARGET = 1.5            # output bytes per plan entry, 380 -> 8,256 nodes
CUSTOM_SEED = 1998
# Each build case's baseline: the last commit before the compile's families and
# backends became plug-ins (2026-12-01). Against 5cfe70b, the commit on which every
# build case first met its written target, the builds take 0.8 to 1.9 times as long
# since FRR, the writers' line checks and the gate came in (docs/benchmarks.md).
BASELINE_COMMIT = "7a05f3f"
# The metrics cases' baseline: the commit that added every single failure to the
# metrics, after the resilience figures at every size (dc2f8ea) and the bisection's
# search (67bde21); at 5cfe70b the metrics computed less (docs/benchmarks.md).
METRICS_BASELINE = "31eada9"


@dataclass
class Case:
    label: str
    topology: str               # a path, or "custom" (generated)
    command: str = "build"
    family: str = "metagraph"
    baseline_commit: str = BASELINE_COMMIT
    # A case judged against this code on another topology (the IPv4-only one of a
    # dual-stack case), allowed `allowed` times its time and output bytes
    baseline_topology: str | None = None
    allowed: float = 1.0
    goal_only: bool = False     # measured and shown against its target, not yet judged
    times: list[float] = field(default_factory=list)
    rss_mb: float = 0.0
    nodes: int = 0
    entries: int = 0            # nodes + routes of the plan
    out_bytes: int = 0
    base_times: list[float] = field(default_factory=list)      # the baseline commit's, here
    base_bytes: int = 0         # with baseline_topology: its output bytes

    def target(self) -> float | None:
        """The baseline's fastest run here (times allowed); None before it ran."""
        return self.allowed * min(self.base_times) if self.base_times else None

    def baseline(self) -> str:
        return self.baseline_commit if self.baseline_topology is None else "IPv4 x%g" % self.allowed


def cases() -> list[Case]:
    def bench(name: str) -> str:
        return os.path.join(BENCH, name)
    return [
        Case("metanode-testbed, 36 nodes", os.path.join(ROOT, "topologies", "metanode-testbed.yml")),
        Case("L=20 P=19 C=1, 380 nodes", bench("compile-metagraph-380.yml")),
        Case("L=97 P=48 C=2, 4,656 nodes", bench("compile-metagraph-4656.yml")),
        Case("L=129 P=64 C=2, 8,256 nodes", bench("compile-metagraph-8256.yml")),
        Case("L=97 P=48 C=2, 4,656 nodes, dual stack", DUAL_STACK,
             baseline_topology=bench("compile-metagraph-4656.yml"), allowed=2.0,
             family="metagraph, dual stack"),
        Case("mesh 64x64, 4,096 nodes", bench("compile-mesh-64x64.yml"), family="mesh"),
        Case("mesh 16x16x16, 4,096 nodes", bench("compile-mesh-16x16x16.yml"), family="mesh"),
        Case("custom 100 LANs x 20 + 150 links", "custom", family="custom"),
        Case("metrics, mesh 60x60", bench("compile-mesh-60x60.yml"), command="metrics",
             family="mesh", baseline_commit=METRICS_BASELINE),
        Case("metrics, L=25 P=40 C=1 failover", bench("compile-metagraph-1000-failover.yml"),
             command="metrics", baseline_commit=METRICS_BASELINE),
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


DUAL_STACK = "dual stack"      # the case's topology: its baseline topology with IPv6 on


def dual_stack(path: str, scratch: str) -> str:
    """A copy of the topology at path, in scratch, with `addressing: {ipv6: true}`."""
    import yaml
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    data["name"] += "-dual"
    data["addressing"] = dict(data.get("addressing") or {}, ipv6=True)
    out = os.path.join(scratch, os.path.basename(path).replace(".yml", "-dual.yml"))
    with open(out, "w", encoding="utf-8") as fh:
        yaml.safe_dump(data, fh, sort_keys=False)
    return out


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
    """Nodes, plan entries and bytes written: the files' bytes, as written (`du -sb`
    also counts each folder's own size, 4,096 bytes a folder on ext4 and overlayfs, so
    it gives 241 MB for the 126 MB of a 4,656-node IPv4 build's 27,938 folders). The
    plan is read by a child process:
    a child's peak RSS includes its parent's (Linux carries the high-water mark
    over exec), so this process must stay small."""
    counts = subprocess.run([sys.executable, "-c", COUNT_ENTRIES, os.path.join(out, "plan.json")],
                            check=True, capture_output=True, text=True).stdout.split()
    case.nodes, routes = int(counts[0]), int(counts[1])
    case.entries = case.nodes + routes
    case.out_bytes = sum(os.path.getsize(os.path.join(d, f))
                         for d, _dirs, files in os.walk(out) for f in files)


def run_case(case: Case, runs: int, scratch: str, baseline: str) -> None:
    """runs runs of the case, each followed by one of its baseline's code (in the folder
    baseline); one run when the first takes over RUN_CAP times its baseline's."""
    # its RSS is not ours; with a baseline topology this code runs it
    twin = Case(case.label, case.baseline_topology or case.topology, case.command)
    code = None if case.baseline_topology else baseline
    for k in range(runs):
        out = os.path.join(scratch, "out%d" % k)
        case.times.append(run_once(case, out))
        if case.command == "build" and k == 0:
            measure_output(case, out)
        shutil.rmtree(out, ignore_errors=True)
        case.base_times.append(run_once(twin, out, code))
        if case.baseline_topology and case.command == "build" and k == 0:
            measure_output(twin, out)
            case.base_bytes = twin.out_bytes
        shutil.rmtree(out, ignore_errors=True)
        if case.times[0] > RUN_CAP * case.base_times[0]:
            break


class NoBaseline(Exception):
    """A baseline commit is not in this clone."""


def baseline_code(scratch: str, commit: str) -> str:
    """commit's module_utils, extracted into scratch (once); NoBaseline without it."""
    folder = os.path.join(scratch, "baseline-" + commit)
    if not os.path.isdir(folder):
        try:
            tar = subprocess.run(["git", "-C", ROOT, "archive", commit, "module_utils"],
                                 check=True, capture_output=True).stdout
        except (OSError, subprocess.CalledProcessError) as exc:
            raise NoBaseline("make bench: commit %s, a case's baseline, is not in this clone (a "
                             "shallow clone? `git fetch --unshallow`): no case can be judged"
                             % commit) from exc
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


def missed(case: Case, tolerance: float) -> bool:
    """The case's fastest run is over tolerance times its target here (or its output
    over tolerance times the allowed share of its baseline topology's)."""
    target = case.target()
    if case.base_bytes and case.out_bytes > case.allowed * case.base_bytes * tolerance:
        return True
    return target is None or min(case.times) > target * tolerance


def judged_miss(case: Case, tolerance: float) -> bool:
    """A miss that fails the bench: a goal-only case's is shown, not counted."""
    return missed(case, tolerance) and not case.goal_only


def report(done: list[Case], tolerance: float) -> bool:
    """Print the table; True when every case's fastest run is within tolerance times its
    baseline's here, and the 8,256-node RSS and the output growth meet theirs."""
    print("each run followed by one of the case's baseline commit; a case misses when its "
          "fastest run is over %.2f times the baseline's fastest here (ratio: min / min)" % tolerance)
    print("%-34s %5s %8s %7s %7s %8s %8s %6s %7s %9s %9s" % (
        "case", "runs", "median", "min", "max", "baseline", "here", "ratio", "RSS MB", "B/node",
        "B/entry"))
    for c in done:
        med, target = statistics.median(c.times), c.target() or float("nan")
        ratio = min(c.times) / target
        per_node = "%9d" % (c.out_bytes // c.nodes) if c.nodes else "%9s" % "-"
        per_entry = "%9d" % (c.out_bytes // c.entries) if c.entries else "%9s" % "-"
        print("%-34s %5d %7.2fs %6.2fs %6.2fs %8s %7.2fs %6.2f %7.0f %s %s%s" % (
            c.label, len(c.times), med, min(c.times), max(c.times), c.baseline(), target,
            ratio, c.rss_mb, per_node, per_entry,
            ("  <-- MISSED" + (" (a goal, not judged yet)" if c.goal_only else ""))
            if missed(c, tolerance) else ""))
        if c.base_bytes:
            print("%-34s output %s bytes, x%.2f of the IPv4-only build's (target x%g)"
                  % ("", f"{c.out_bytes:,}", c.out_bytes / c.base_bytes, c.allowed))
    ok = not any(judged_miss(c, tolerance) for c in done)
    big = next((c for c in done if "8,256" in c.label), None)
    small = next((c for c in done if "380 nodes" in c.label), None)
    if big is None or small is None:
        return ok
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
    ax.plot([c.nodes for c in builds], [c.target() or float("nan") for c in builds], "kx", label="baseline")
    ax.set(xscale="log", yscale="log", xlabel="nodes", ylabel="beonet build, median seconds",
           title="Whole-process build time (make bench)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.savefig(path, metadata={"Date": None})
    print("plot written to %s" % path)


def markdown(done: list[Case]) -> None:
    print("| case | median | min | max | baseline | its fastest here | ratio (min) | peak RSS "
          "| output bytes per node | per node or route |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in done:
        med, target = statistics.median(c.times), c.target() or float("nan")
        print("| %s | %.2f s | %.2f s | %.2f s | %s | %.2f s | %.2f | %.0f MB | %s | %s |" % (
            c.label, med, min(c.times), max(c.times), c.baseline(), target, min(c.times) / target,
            c.rss_mb, f"{c.out_bytes // c.nodes:,}" if c.nodes else "-",
            f"{c.out_bytes // c.entries:,}" if c.entries else "-"))


def arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--tolerance", type=float, default=1.0,
                   help="fail only when a fastest run exceeds its baseline's times this (default 1)")
    p.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", "5")))
    p.add_argument("--only", default="", help="run only the cases and checks whose label contains this")
    p.add_argument("--plot", metavar="SVG", help="also write a log-log plot of build times")
    p.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    return p.parse_args(argv)


def run_cases(args: argparse.Namespace, scratch: str) -> list[Case]:
    done = []
    for case in cases():
        if args.only not in case.label:
            continue
        if case.topology == "custom":
            case.topology = os.path.join(scratch, "compile-custom.yml")
            with open(case.topology, "w", encoding="utf-8") as fh:
                fh.write(custom_topology())
        if case.topology == DUAL_STACK and case.baseline_topology:
            case.topology = dual_stack(case.baseline_topology, scratch)
        run_case(case, args.runs, scratch, baseline_code(scratch, case.baseline_commit))
        done.append(case)
    return done


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    print("beonet compile benchmark: %s" % environment())
    scratch_root = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="beonet-bench-", dir=scratch_root) as scratch:
        try:
            done = run_cases(args, scratch)
        except NoBaseline as exc:
            print(exc, file=sys.stderr)
            return 2
        checked = bench_checks.run(args.only, args.runs, scratch)
    ok = report(done, args.tolerance) if done else True
    ok = bench_checks.report(checked, args.tolerance) and ok
    if not done and not checked:
        print("make bench: no case or check matches --only %r" % args.only, file=sys.stderr)
        return 2
    if args.markdown:
        markdown(done)
    if args.plot:
        plot(done, args.plot)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
