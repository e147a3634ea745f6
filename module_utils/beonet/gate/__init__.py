"""The gate: the one way untrusted files and text come in.

Every file named on the command line, every plan.json, discovery report, results
folder, lab record and text a node prints passes :mod:`.read` before any other
code sees it: a regular file (a pipe or device is never opened in a way that
blocks), at most a given size, UTF-8, strict JSON (no NaN or Infinity, no key
given twice), nesting checked without recursion. A refusal is a :class:`GateError`
naming the file, the line where known and the key path.
"""

from __future__ import annotations

from .read import (
    GateError,
    TooDeep,
    deepest,
    load_json,
    loads_json,
    not_finite,
    read_bytes,
    read_text,
    too_deep,
)

__all__ = ["GateError", "TooDeep", "deepest", "load_json", "loads_json", "not_finite", "read_bytes",
           "read_text", "too_deep"]
