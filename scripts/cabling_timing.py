"""Cabling match timing: the discovery reports of a correctly cabled L=97 P=48
C=2 meta-graph (4,656 nodes) are synthesised from its plan with scrambled NIC
names, then matched back to each host's beonet_interfaces. Prints the median
matching time beside the target; exits 1 on a miss or a wrong mapping."""

from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "module_utils"))

from beonet.cabling import match  # noqa: E402
from beonet.cabling.sheet import sheet  # noqa: E402
from beonet.compiler import pipeline  # noqa: E402

L, P, C = 97, 48, 2
TARGET = 5.0
RUNS = int(os.environ.get("BENCH_RUNS", "3"))


def scrambled(compiled: pipeline.Compiled, seed: int = 1) -> dict[str, dict[str, str]]:
    """A physical name for every logical NIC, in a random order per node."""
    rng = random.Random(seed)
    out: dict[str, dict[str, str]] = {}
    for node in compiled.graph.nodes:
        logical = [i.name for i in node.interfaces if i.kind == "ethernet"]
        physical = ["enp%ds0" % k for k in range(1, len(logical) + 1)]
        rng.shuffle(physical)
        out[node.name] = dict(zip(logical, physical))
    return out


def main() -> int:
    print("beonet cabling match timing: Python %s, %s, %d CPUs"
          % (platform.python_version(), platform.machine(), os.cpu_count() or 0))
    text = ("name: bench\nfamily: metagraph\nmetagraph: {groups: %d, nodes_per_group: %d, "
            "p2p_per_node: %d}\n" % (L, P, C))
    t0 = time.perf_counter()
    compiled = pipeline.compile_text(text)
    the_sheet = sheet(compiled)
    truth = scrambled(compiled)
    reports = match.synthesise(compiled, truth, spare=1)
    print("compile, sheet and synthesised reports: %.2fs (not counted)"
          % (time.perf_counter() - t0))
    times = []
    result = None
    for _run in range(RUNS):
        t0 = time.perf_counter()
        result = match.match(compiled, reports, the_sheet=the_sheet)
        times.append(time.perf_counter() - t0)
    right = result is not None and result.ok and result.mapping == truth
    med = statistics.median(times)
    ok = med <= TARGET and right
    print("%-30s %8s %8s %8s %7s %s" % ("case", "median", "min", "max", "target", "mapping"))
    print("%-30s %7.2fs %7.2fs %7.2fs %6.1fs %s%s" % (
        "L=%d P=%d C=%d (%d nodes)" % (L, P, C, len(compiled.graph.nodes)), med, min(times),
        max(times), TARGET, "right" if right else "WRONG", "" if ok else "  <-- MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
