# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The beonet_verify_live task: prove every ordered pair from the nodes' live state, on the controller."""

from __future__ import annotations

from typing import Any, cast

from ..controller import TaskFailed
from ..gate import node
from . import proof, readout, report

IMPORT_ERROR: str | None = None  # everything it needs is in beonet's module_utils

ARGUMENT_SPEC: dict[str, Any] = {
    "plan": {"type": "dict", "required": True},
    "prefixes": {"type": "list", "elements": "str", "required": True},
    "states": {"type": "dict"},
    "outputs": {"type": "dict"},
    "prove": {"type": "bool", "default": True},
    "keep": {"type": "int", "default": 100},
    "sample": {"type": "bool", "default": True},
    "mode": {"type": "str", "choices": list(readout.MODES), "default": "live"},
    "paths": {"type": "dict", "default": {}},
    "max_targets": {"type": "int", "default": 64},
    "expected": {"type": "dict", "default": {}},
    "unreachable": {"type": "list", "elements": "str", "default": []},
    "settle": {"type": "float", "default": 3.0},
}


def prove_task(p: dict[str, Any], check_mode: bool, diff: bool) -> dict[str, Any]:
    """The proof and the traces judged (outputs), the proof of collected states, or the sample to
    trace. What the nodes sent is shown escaped, each string on one line (gate.node.one_line);
    ``report``: the lines a failed verify prints, long lists summarised (report.report_lines)."""
    if p["prove"] and p["states"] is None and p["outputs"] is None:
        raise TaskFailed("beonet_verify_live: states or outputs is required unless prove is false")
    try:
        if not p["prove"]:
            return readout.pick(p["plan"], p["prefixes"], p["mode"], p["paths"], p["max_targets"],
                                p["settle"])
        if p["outputs"] is not None:
            result = readout.judge(p["plan"], p["prefixes"], p["outputs"], p["expected"], p["unreachable"],
                                   max(0, p["keep"]), p["mode"] == "live")
        else:
            result = proof.prove(p["plan"], p["prefixes"], p["states"], max(0, p["keep"]), p["sample"])
    except proof.PlanError as exc:
        raise TaskFailed("beonet_verify_live: %s" % exc) from None
    traced = result.get("traced", {})
    result["report"] = report.report_lines(result.get("mismatches", []) + traced.get("mismatches", []),
                                           result.get("problems", []) + traced.get("problems", []))
    return cast("dict[str, Any]", node.one_line(result))
