"""Time the live-state proof (beonet.livestate) on synthetic states: each topology is
compiled, its plan made into the state every node would report once the plan is
applied (livestate/synthetic.py, through JSON as Ansible hands it over), and the
controller's proof of every ordered pair timed. With --fault, a fault is put in
first (the busiest gateway dead, or its forwarding off).

    .venv/bin/python scripts/live_proof_timing.py topologies/metanode-testbed.yml \\
        metagraph:32x32x1 mesh:32x32 metagraph:64x64x1 mesh:64x64

A topology is a file, or FAMILY:SPEC generated here: metagraph:GROUPSxPERxP2P,
mesh:AxB[xC]. Prints one line per topology: nodes, pairs, pairs proven and walked
one by one, the median and the fastest of --runs proofs (seconds), mismatches.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "module_utils"))

from beonet.compiler import pipeline  # noqa: E402  (after the path)
from beonet.compiler.pipeline import Compiled  # noqa: E402
from beonet.livestate import proof, synthetic  # noqa: E402
from beonet.outputs import plan as render  # noqa: E402


def topology_text(spec: str) -> str:
    """The YAML of a generated topology (metagraph:32x32x1, mesh:32x32)."""
    family, _colon, sizes = spec.partition(":")
    numbers = [int(x) for x in sizes.split("x")]
    if family == "metagraph":
        groups, per, p2p = numbers
        body = "metagraph:\n  groups: %d\n  nodes_per_group: %d\n  p2p_per_node: %d\n" % (groups, per, p2p)
    elif family == "mesh":
        body = "mesh:\n  dims: %s\n" % numbers
    else:
        raise SystemExit("%s: a file, metagraph:GxPxC or mesh:AxB" % spec)
    return "name: %s\nfamily: %s\n%s" % (family, family, body)


def compiled_of(spec: str) -> Compiled:
    if os.path.exists(spec):
        return pipeline.compile_file(spec)
    return pipeline.compile_text(topology_text(spec), spec)


def fault(states: dict[str, Any], compiled: Compiled, kind: str) -> None:
    forwarded = compiled.proof.forwarded
    busiest = compiled.graph.nodes[max(forwarded, key=lambda i: (forwarded[i], -i))].name
    if kind == "dead":
        states.pop(busiest)
    elif kind == "forwarding-off":
        sysctl = states[busiest]["sysctl"]
        sysctl["forwarding"] = dict.fromkeys(sysctl["forwarding"], 0)


def measure(spec: str, runs: int, kind: str | None) -> str:
    compiled = compiled_of(spec)
    plan = render.plan(compiled)
    prefixes = render.prefixes(plan)
    states = json.loads(json.dumps({n: synthetic.plan_state(p, prefixes) for n, p in plan["nodes"].items()}))
    if kind:
        fault(states, compiled, kind)
    times = []
    for _run in range(runs):
        start = time.perf_counter()
        result = proof.prove(plan, prefixes, states)
        times.append(time.perf_counter() - start)
    return ("%-40s %6d nodes %9d pairs %9d proven %8d walked  median %.2f s  min %.2f s  %d mismatches"
            % (spec, len(plan["nodes"]), result["pairs"], result["proven"], result["walked"],
               statistics.median(times), min(times), result["mismatched"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("topologies", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fault", choices=["dead", "forwarding-off"])
    args = parser.parse_args()
    for spec in args.topologies:
        print(measure(spec, args.runs, args.fault), flush=True)


if __name__ == "__main__":
    main()
