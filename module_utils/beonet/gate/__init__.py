"""The gate: the one way untrusted files and text come in.

Every file named on the command line, every plan.json, discovery report, results
folder, lab record and text a node prints passes :mod:`.read` before any other
code sees it: a regular file (a pipe or device is never opened in a way that
blocks), at most a given size, UTF-8, strict JSON (no NaN or Infinity, no key
given twice), nesting checked without recursion. A refusal is a :class:`GateError`
naming the file, the line where known and the key path.

YAML (topologies, inventories) is composed by :mod:`.yamltext`, within the same
kind of bounds (size, nesting, aliases and merge keys, duplicate keys, NaN), each
key path with its line (a topology of nested mappings of plain words and numbers
is read by :mod:`.yamlplain` without importing PyYAML, to the same data and lines);
data is checked against a JSON Schema by :mod:`.validate`
(integers are integers, patterns match the whole text; valid data is found valid
by :mod:`.fastcheck` without importing jsonschema) and every error is turned into a
key path and a message. What a node sends back passes :mod:`.node`.
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
