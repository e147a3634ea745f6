"""`make bench`: whole-process wall time of `beonet build` (plan JSON plus the
`ip route` text of every node, plus hosts/Slurm/hostfile) on three sizes of
meta-graph, median of several runs. Prints the environment with the numbers."""

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEONET = os.path.join(os.path.dirname(sys.executable), "beonet")
CASES = [  # (name, L, P, C, target seconds)
    ("metanode-testbed (36 nodes)", 4, 9, 1, 0.3),
    ("L=20 P=19 C=1 (380 nodes)", 20, 19, 1, 0.5),
    ("L=97 P=48 C=2 (4,656 nodes)", 97, 48, 2, 3.0),
]
RUNS = int(os.environ.get("BENCH_RUNS", "5"))


def main():
    cpu = platform.processor() or platform.machine()
    print("beonet compile benchmark: Python %s, %s, %d CPUs, kernel %s"
          % (platform.python_version(), cpu, os.cpu_count(), platform.release()))
    print("%-30s %8s %8s %8s %7s %11s %s" % ("case", "median", "min", "max", "target",
                                            "max routes", "bound (L-1)+P*C"))
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name, L, P, C, target in CASES:
            topo = os.path.join(tmp, "t.yml")
            with open(topo, "w", encoding="utf-8") as fh:
                fh.write("name: bench\nfamily: metagraph\nmetagraph: {groups: %d, "
                         "nodes_per_group: %d, p2p_per_node: %d}\n" % (L, P, C))
            out = os.path.join(tmp, "out")
            times = []
            for _ in range(RUNS):
                t0 = time.perf_counter()
                subprocess.run([BEONET, "build", topo, "-o", out], check=True,
                               stdout=subprocess.DEVNULL)
                times.append(time.perf_counter() - t0)
            with open(os.path.join(out, "plan.json"), encoding="utf-8") as fh:
                plan = json.load(fh)
            most = plan["metrics"]["routes_per_node"]["max"]
            bound = (L - 1) + P * C
            med = statistics.median(times)
            ok = med <= target and most <= bound
            failed |= not ok
            print("%-30s %7.2fs %7.2fs %7.2fs %6.1fs %11d %d%s" % (
                name, med, min(times), max(times), target, most, bound,
                "" if ok else "  <-- MISSED"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
