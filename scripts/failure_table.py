#!/usr/bin/env python3
"""The single-failure tables of docs/failover.md: for every shipped topology, the worst
node, cable and LAN and the pairs each cuts, routed (a routing daemon) and static (the
plan's routes); then, for the static routes with failover, the worst on every branch
and on some branch. Usage: .venv/bin/python scripts/failure_table.py [TOPOLOGY.yml ...]"""

from __future__ import annotations

import glob
import os
import sys
from typing import Literal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "module_utils"))

from beonet.compiler import pipeline  # noqa: E402
from beonet.compiler.metricshape import KindFigures  # noqa: E402

KINDS: tuple[tuple[Literal["node", "cable", "lan"], str], ...] = (
    ("node", "node"), ("cable", "cable"), ("lan", "LAN"))


def worst(figures: KindFigures | None) -> str:
    """`name` pairs, or what is missing."""
    if figures is None:
        return "not computed"
    w = figures["worst"]
    if w is None:
        return "none"
    return "0" if not w["pairs"] else "%d (`%s`)" % (w["pairs"], w["name"])


def rows(path: str) -> tuple[str, str]:
    """The topology's row of each table."""
    compiled = pipeline.compile_file(path)
    f = compiled.metrics["failures"]
    name = "%s (%d)" % (os.path.splitext(os.path.basename(path))[0], len(compiled.graph.nodes))
    cells, branches = [name], [name]
    for key, _label in KINDS:
        if key != "node":
            cells.append(str(f["routed"][key]["elements"]))
        frr = compiled.graph.engine == "frr"
        static = "— (FRR)" if frr else worst(f["static"].get(key))
        cells.append("%s / %s" % (worst(f["routed"][key]), static))
        if frr or "failover" not in f["static"]:
            branches.append("— (FRR)" if frr else "— (%s)" % (
                "failover off" if not compiled.graph.failover else "not computed"))
        else:
            branches.append("%s / %s" % (worst(f["static"]["failover"][key]),
                                         worst(f["static"]["disrupted"][key])))
    return "| %s |" % " | ".join(cells), "| %s |" % " | ".join(branches)


def table(head: list[str], lines: list[str]) -> None:
    print("| %s |" % " | ".join(head))
    print("|" + " --- |" * len(head))
    for line in lines:
        print(line)


def main(paths: list[str]) -> None:
    paths = paths or sorted(glob.glob(os.path.join(ROOT, "topologies", "*.yml")))
    both = [rows(path) for path in paths]
    head = ["topology (nodes)"]
    for key, label in KINDS:
        head += [] if key == "node" else ["%ss" % label]
        head += ["worst %s: routed / static" % label]
    table(head, [first for first, _second in both])
    print()
    table(["topology (nodes)"] + ["worst %s: every branch / some branch" % label for _key, label in KINDS],
          [second for _first, second in both])


if __name__ == "__main__":
    main(sys.argv[1:])
