#!/usr/bin/env python3
"""The single-failure table of docs/failover.md: for every shipped topology, the worst
node, cable and LAN and the pairs each cuts, routed (a routing daemon) and static (the
plan's routes). Usage: .venv/bin/python scripts/failure_table.py [TOPOLOGY.yml ...]"""

from __future__ import annotations

import glob
import os
import sys
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "module_utils"))

from beonet.compiler import pipeline  # noqa: E402

KINDS = (("node", "node"), ("cable", "cable"), ("lan", "LAN"))


def worst(figures: dict[str, Any] | None) -> str:
    """`name` pairs, or what is missing."""
    if figures is None:
        return "not computed"
    w = figures["worst"]
    if w is None:
        return "none"
    return "0" if not w["pairs"] else "%d (`%s`)" % (w["pairs"], w["name"])


def row(path: str) -> str:
    compiled = pipeline.compile_file(path)
    f = compiled.metrics["failures"]
    cells = ["%s (%d)" % (os.path.splitext(os.path.basename(path))[0], len(compiled.graph.nodes))]
    for key, _label in KINDS:
        if key != "node":
            cells.append(str(f["routed"][key]["elements"]))
        static = "— (FRR)" if compiled.graph.engine == "frr" else worst(f["static"].get(key))
        cells.append("%s / %s" % (worst(f["routed"][key]), static))
    return "| %s |" % " | ".join(cells)


def main(paths: list[str]) -> None:
    paths = paths or sorted(glob.glob(os.path.join(ROOT, "topologies", "*.yml")))
    head = ["topology (nodes)"]
    for key, label in KINDS:
        head += [] if key == "node" else ["%ss" % label]
        head += ["worst %s: routed / static" % label]
    print("| %s |" % " | ".join(head))
    print("|" + " --- |" * len(head))
    for path in paths:
        print(row(path))


if __name__ == "__main__":
    main(sys.argv[1:])
