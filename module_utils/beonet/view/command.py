"""`beonet view`: the page of a compiled topology with its overlays."""

from __future__ import annotations

import argparse

from ..cabling import sheet as cabling_sheet
from ..compiler.errors import CompileError, Problem
from ..compiler.pipeline import Compiled
from . import model, overlays, page
from .layout import Plan


def html(args: argparse.Namespace, compiled: Compiled, plan: Plan) -> str:
    """The page; every overlay file is read and checked first (CompileError with
    the problems of them all, nothing written)."""
    m = model.build(plan, compiled, cabling_sheet.sheet(compiled))
    found: dict[str, object] = {}
    problems: list[Problem] = []
    readers = (("verify", lambda p: overlays.verify(p)),
               ("cabling", lambda p: overlays.cabling(p, compiled)),
               ("load", lambda p: overlays.load(p, compiled, m)))
    for (key, read), given in zip(readers, (args.verify, args.discovered, args.results)):
        if not given:
            continue
        try:
            found[key] = read(given)
        except CompileError as exc:
            problems += exc.problems
    if problems:
        raise CompileError(problems)
    if found and m.data["level"] == "groups":
        raise CompileError([Problem("overlays are drawn on nodes: the group-level view of %d "
                                    "nodes has none" % m.data["count"])])
    m.data["overlays"] = found
    return page.render(m.data)
