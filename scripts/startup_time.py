"""Whole-process time of a command beside a yardstick command, run in turn.

    python scripts/startup_time.py [-n RUNS] [--vs 'python -c pass'] -- COMMAND [ARG ...]

COMMAND (A) and the yardstick (B, default `python -c pass` with this Python)
are started in turn, A B A B ..., RUNS times each after one warm-up run of
each that is not counted. Each run is timed from outside, start-up included:
wall seconds by a monotonic clock around the child, CPU seconds (user +
system) from the operating system's accounting of the finished child. The
ratio A/B is taken pair by pair (a drift of the machine's speed moves both
runs of a pair), and each figure is printed as min, median and max: quote
the median. Outputs are thrown away; a command that fails stops the script.
With PYTHONDONTWRITEBYTECODE set, a Python command whose modules have no
cached bytecode (an editable install, a fresh checkout) compiles them again
on every run: the script says so on stderr (`python -m compileall` the
package first, or unset it, to measure a start as an installed package has it).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def run(argv: list[str]) -> tuple[float, float]:
    """(wall, cpu) seconds of one whole process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
        raise SystemExit("%s failed:\n%s" % (shlex.join(argv), err[-2000:]))
    return wall, usage.ru_utime + usage.ru_stime


def spread(values: list[float], unit: str) -> str:
    return "min %.3f%s  median %.3f%s  max %.3f%s" % (
        min(values), unit, statistics.median(values), unit, max(values), unit)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--runs", type=int, default=9, help="runs of each command (default 9)")
    p.add_argument("--vs", default=shlex.join([sys.executable, "-c", "pass"]),
                   help="the yardstick command, split as a shell splits words "
                   "(default: python -c pass with this Python)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG ...]")
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.runs < 1:
        p.error("give -- COMMAND [ARG ...] and at least one run")
    yardstick = shlex.split(args.vs)
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("startup_time: PYTHONDONTWRITEBYTECODE is set: modules without cached bytecode are "
              "compiled again on every run", file=sys.stderr)
    run(command), run(yardstick)                      # warm-up: caches, not counted
    pairs = [(run(command), run(yardstick)) for _ in range(args.runs)]
    for label, argv_, k in (("A", command, 0), ("B", yardstick, 1)):
        print("%s %s" % (label, shlex.join(argv_)))
        print("  wall  %s" % spread([p[k][0] for p in pairs], " s"))
        print("  cpu   %s" % spread([p[k][1] for p in pairs], " s"))
    print("A/B wall  %s" % spread([a[0] / b[0] for a, b in pairs], "x"))
    # A yardstick's CPU time can be accounted as 0 (it is counted in clock ticks): 1 ms at least.
    print("A/B cpu   %s" % spread([a[1] / max(b[1], 1e-3) for a, b in pairs], "x"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
