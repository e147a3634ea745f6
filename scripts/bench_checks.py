"""`make bench`'s checks beside the compile cases: costs the unit tests do not time.

Each check measures one thing and judges it against a reference measured in the
same run, or against a bound that is a ratio (CPU seconds per second, seconds past
a deadline), so the verdict holds on a slow machine as on a fast one:

- hostile inputs refused at once: `beonet compile` of the fuzz's expensive YAML
  shapes (alias and merge bombs, 10,000 levels of nesting, a file over 1 MiB, a
  200 KB scalar), `beonet cabling --discovered` of 100,000 levels of JSON nesting
  and of a 256 MiB sparse file, `beonet benchmark-report` of the same for a
  results.json (1 GiB sparse): each whole process at most its ratio (RATIOS, as
  measured, rounded up to a half; REFUSAL_ALLOWANCE for the rest) times the same
  command refusing a one-line bad file;
- the resilience figures of a 1,000-node meta-graph with failover: a compile case
  of compile_timing.py (`beonet metrics`), judged against its baseline commit;
- discovery's listener on fake NICs (scripts/discover_cost.py) past its first
  seconds: at most DISCOVERY_CPU seconds of CPU per second of listening;
- tokex's --deadline against a UDP server that never answers: the client gives up
  (exit 3) within DEADLINE_ALLOWANCE times the deadline;
- start-up: `beonet compile topologies/metanode-testbed.yml` (the plan to stdout),
  each run followed by one of `python -c pass` from the same interpreter, at least
  STARTUP_RUNS times each: the compile's median at most STARTUP_RATIO times the
  bare interpreter's median.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import startup_time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEONET = os.path.join(os.path.dirname(sys.executable), "beonet")
MESH = os.path.join(ROOT, "topologies", "routed-mesh-2x2.yml")
TOKEX = os.path.join(ROOT, "roles", "beonet_benchmark", "files", "tokex.c")
REFUSAL_ALLOWANCE = 1.5         # a hostile input's refusal against a one-line bad file's
# Refusals that do bounded work first, their ratio to the one-line file's refusal as
# measured on a 2-core AMD EPYC (2026-12-01, load 5: 2.9, 3.0 and 1.6), rounded up to a half.
RATIOS = {"compile, alias bomb": 3.0, "compile, merge bomb": 3.0,
          "benchmark-report, JSON 100,000 levels deep": 2.0}
DISCOVERY_CPU = 0.5             # CPU seconds per second of listening
DEADLINE_ALLOWANCE = 1.5        # tokex's end against its --deadline
DEADLINE = 1.0
TESTBED = os.path.join(ROOT, "topologies", "metanode-testbed.yml")
STARTUP_RATIO = 5.0             # a small compile's whole process against `python -c pass`
STARTUP_RUNS = 15               # runs of each at least: a median of a few ms needs many


@dataclass
class Check:
    label: str
    unit: str                   # what the values are ("s", "CPU s/s")
    target: float = 0.0         # the bound here, before the tolerance
    basis: str = ""             # what the target is
    values: list[float] = field(default_factory=list)
    problem: str = ""           # a wrong result (an exit code, a frame not heard)
    goal_only: bool = False     # measured and shown against its target, not yet judged

    def missed(self, tolerance: float) -> bool:
        return bool(self.problem) or not self.values or \
            statistics.median(self.values) > self.target * tolerance

    def fails(self, tolerance: float) -> bool:
        """Missed and judged: a goal not yet met fails only on a wrong result."""
        return bool(self.problem) if self.goal_only else self.missed(tolerance)


def alias_bomb(levels: int = 9) -> str:
    """The billion laughs: 9 levels of 9 aliases each (the fuzz's alias-bomb too)."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += ["a%d: &a%d [%s]" % (i, i, ", ".join(["*a%d" % (i - 1)] * 9)) for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def merge_bomb() -> str:
    """Merge keys that expand past any bound (the fuzz's merge-bomb too)."""
    return "a: &a {x: 1, y: 2}\nb0: &b0 {<<: [*a], z: 1}\nb1: &b1 {<<: [*a, *b0]}\n" + "".join(
        "b%d: &b%d {<<: [*a, *b%d, *b%d]}\n" % (n, n, n - 2, n - 1) for n in range(2, 60))


# The fuzz's expensive shapes (tests/test_fuzz.py HOSTILE), each refused with exit 2.
TOPOLOGIES: dict[str, Callable[[], str]] = {
    "alias bomb": alias_bomb,
    "merge bomb": merge_bomb,
    "flow nesting": lambda: "[" * 10_000,
    "block nesting": lambda: "- " * 10_000 + "x\n",
    "file over 1 MiB": lambda: "name: " + "x" * (1 << 20) + "\n",
    "200 KB scalar": lambda: "name: " + "x" * 200_000 + "\nfamily: bonded\nbonded: {nodes: 2}\n",
}
DEEP_JSON = "[" * 100_000 + "]" * 100_000


def _sparse(path: str, size: int) -> str:
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def _write(path: str, text: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def _timed(argv: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start, proc.returncode


def refusal(label: str, hostile: list[str], reference: list[str], runs: int) -> Check:
    """runs runs of both commands in turn; each must exit 2."""
    ratio = RATIOS.get(label, REFUSAL_ALLOWANCE)
    check = Check(label, "s", basis="%.1f x a one-line bad file's" % ratio)
    ref: list[float] = []
    for _ in range(runs):
        for argv, into in ((hostile, check.values), (reference, ref)):
            seconds, code = _timed(argv)
            into.append(seconds)
            if code != 2:
                check.problem = "exit %d, not 2: %s" % (code, " ".join(argv[1:3]))
    check.target = ratio * statistics.median(ref)
    return check


def refusal_argvs(scratch: str) -> dict[str, tuple[list[str], list[str]]]:
    """label: (hostile argv, reference argv), their files written in scratch."""
    folder = os.path.join(scratch, "hostile")
    out = ["-o", os.path.join(folder, "out", "plan.json")]
    bad = _write(os.path.join(folder, "bad.yml"), "name: t\n")
    argvs = {"compile, %s" % name: ([BEONET, "compile", _write(os.path.join(folder, "%d.yml" % k), make()),
                                     *out], [BEONET, "compile", bad, *out])
             for k, (name, make) in enumerate(TOPOLOGIES.items())}
    cabling = [BEONET, "cabling", MESH, "-o", os.path.join(folder, "out", "map.yml"), "--discovered"]
    not_json = _write(os.path.join(folder, "bad.json"), "x\n")
    argvs["cabling, JSON 100,000 levels deep"] = (
        cabling + [_write(os.path.join(folder, "deep.json"), DEEP_JSON)], cabling + [not_json])
    argvs["cabling, a 256 MiB file"] = (
        cabling + [_sparse(os.path.join(folder, "huge.json"), (256 << 20) + 1)], cabling + [not_json])
    runs = {name: os.path.join(folder, name) for name in ("deep", "huge", "bad")}
    _write(os.path.join(runs["deep"], "results.json"), DEEP_JSON)
    os.makedirs(runs["huge"], exist_ok=True)
    _sparse(os.path.join(runs["huge"], "results.json"), (1 << 30) + 1)
    _write(os.path.join(runs["bad"], "results.json"), "x\n")
    report = [BEONET, "benchmark-report"]
    argvs["benchmark-report, JSON 100,000 levels deep"] = (report + [runs["deep"]], report + [runs["bad"]])
    argvs["benchmark-report, a 1 GiB file"] = (report + [runs["huge"]], report + [runs["bad"]])
    return argvs


def discovery(runs: int) -> Check:
    """The listener past its first seconds, 5 neighbours on 2 fake NICs at 0.25 s."""
    spec = importlib.util.spec_from_file_location("discover_cost", os.path.join(HERE, "discover_cost.py"))
    assert spec is not None and spec.loader is not None
    cost = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cost)
    check = Check("discovery listener, CPU per second", "CPU s/s", DISCOVERY_CPU, "a bound")
    for _ in range(runs):
        got = cost.measure(neighbours=5, nics=2, seconds=1.5, interval=0.25, fast=0.0)
        check.values.append(got["cpu_per_second"])
        if got["heard"] != 10:
            check.problem = "heard %d beacons, not 10" % got["heard"]
    return check


def tokex_deadline(runs: int, scratch: str) -> Check:
    """tokex client --deadline 1 against a UDP socket that reads nothing."""
    check = Check("tokex --deadline 1, no answer", "s", DEADLINE_ALLOWANCE * DEADLINE,
                  "%.1f x the deadline" % DEADLINE_ALLOWANCE)
    binary = os.path.join(scratch, "tokex")
    cc = shutil.which("cc")
    if cc is None:
        check.problem = "no C compiler (cc) here: scripts/host-tools.sh installs one"
        return check
    subprocess.run([cc, "-O2", "-o", binary, TOKEX], check=True, capture_output=True)
    for _ in range(runs):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
            silent.bind(("127.0.0.1", 0))
            seconds, code = _timed([binary, "client", "-H", "127.0.0.1", "-p", str(silent.getsockname()[1]),
                                    "--proto", "udp", "-n", "5", "--sizes", "4", "--deadline", "1"])
        check.values.append(seconds)
        if code != 3:
            check.problem = "exit %d, not 3 (deadline passed)" % code
    return check


def startup(runs: int) -> Check:
    """`beonet compile` of the 36-node testbed to stdout and `python -c pass` in turn
    (startup_time.py's runs), max(runs, STARTUP_RUNS) times each: the wall medians
    judged against 5 times, the CPU seconds' ratio beside them; a compile that fails is
    a problem."""
    check = Check("start-up, beonet compile metanode-testbed", "s")
    pairs = []
    try:
        for _ in range(max(runs, STARTUP_RUNS)):
            pairs.append((startup_time.run([BEONET, "compile", TESTBED]),
                          startup_time.run([sys.executable, "-c", "pass"])))
    except SystemExit as exc:
        check.problem = "beonet compile %s failed: %s" % (TESTBED, str(exc).splitlines()[-1])
        return check
    check.values = [a[0] for a, _b in pairs]
    python = statistics.median(b[0] for _a, b in pairs)
    cpu = statistics.median(a[1] for a, _b in pairs) / max(statistics.median(b[1] for _a, b in pairs), 1e-3)
    check.target = STARTUP_RATIO * python
    check.basis = "%.1f x `python -c pass` (%.1f ms; here x%.1f, CPU x%.1f)" % (
        STARTUP_RATIO, 1000 * python, statistics.median(check.values) / python, cpu)
    return check


def run(only: str, runs: int, scratch: str) -> list[Check]:
    """Every check whose label contains only."""
    done = [refusal(label, hostile, reference, runs)
            for label, (hostile, reference) in refusal_argvs(scratch).items() if only in label]
    for label, measure in (("discovery listener", lambda: discovery(runs)),
                           ("tokex --deadline", lambda: tokex_deadline(runs, scratch)),
                           ("start-up, beonet compile metanode-testbed", lambda: startup(runs))):
        if only in label:
            done.append(measure())
    return done


def report(done: list[Check], tolerance: float) -> bool:
    """Print the checks; True when each is within tolerance times its target."""
    if not done:
        return True
    print("%-46s %5s %9s %9s  %s" % ("check", "runs", "median", "target", "target is"))
    for c in done:
        med = statistics.median(c.values) if c.values else float("nan")
        print("%-46s %5d %9.3f %9.3f  %s (%s)%s%s" % (
            c.label, len(c.values), med, c.target, c.basis, c.unit,
            ("  <-- MISSED" + (" (a goal, not judged yet)" if c.goal_only else "")) if c.missed(tolerance)
            else "", ": " + c.problem if c.problem else ""))
    return not any(c.fails(tolerance) for c in done)


def main(argv: list[str] | None = None) -> int:
    """The checks alone, without the compile cases of compile_timing.py; exit 1 when
    one misses its target (a goal not judged yet only on a wrong result)."""
    import argparse
    import tempfile
    p = argparse.ArgumentParser(description="`make bench`'s checks alone, without the compile "
                                "cases of compile_timing.py (which runs them after its cases)")
    p.add_argument("--only", default="", help="run only the checks whose label contains this "
                   "(e.g. 'start-up')")
    p.add_argument("--runs", type=int, default=5, help="runs of each check (default 5; "
                   "start-up takes at least %d)" % STARTUP_RUNS)
    p.add_argument("--tolerance", type=float, default=1.0, help="a check passes at most this "
                   "times its target (default 1.0)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="beonet-checks-") as scratch:
        done = run(args.only, args.runs, scratch)
    if not done:
        print("bench_checks: no check matches --only %r" % args.only, file=sys.stderr)
        return 2
    return 0 if report(done, args.tolerance) else 1


if __name__ == "__main__":
    sys.exit(main())
