"""A module's arguments that AnsibleModule cannot read, made readable and refused.

AnsibleModule logs its arguments as UTF-8 before any check runs: a string holding a
lone surrogate (JSON's ``"\\udc80"``, valid JSON but no UTF-8 text) makes it crash
with a traceback. Every module in library/ calls ``escaped_arguments`` first: the
arguments are given to AnsibleModule again with every string escaped, and the module
fails with the refusal this returns (the key path named) once AnsibleModule stands.

Standard library only (the node agent's modules use it on the nodes).
"""

from __future__ import annotations

import json
from typing import Any

from .names import escaped, escaped_all


def lone_surrogate_at(value: Any) -> str | None:
    """The key path of the first key or string in value holding a lone surrogate
    (None: none does); a walk with a list, not recursion."""
    todo: list[tuple[Any, str]] = [(value, "")]
    while todo:
        v, path = todo.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return path or "(the arguments)"
        elif isinstance(v, dict):
            for k, item in v.items():
                where = "%s.%s" % (path, escaped(str(k))) if path else escaped(str(k))
                todo += [(k, where), (item, where)]
        elif isinstance(v, list):
            todo += [(item, "%s[%d]" % (path, i)) for i, item in enumerate(v)]
    return None


def escaped_arguments(basic: Any, name: str) -> str | None:
    """The refusal of module name's arguments when one holds a lone surrogate (None:
    none does); then basic (ansible.module_utils.basic) is given them again, each
    string escaped, so that AnsibleModule can log them before the module fails."""
    try:
        params = basic._load_params()
    except (Exception, SystemExit):      # noqa: BLE001 - Ansible's decoder may refuse them itself
        params = _raw_arguments(basic)
    where = lone_surrogate_at(params)
    if where is None:
        return None
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": escaped_all(params)}).encode()
    return "%s: %s: holds a lone surrogate, not UTF-8 text: nothing done" % (name, where)


def _raw_arguments(basic: Any) -> Any:
    """The arguments as plain JSON reads them from the buffer AnsibleModule decodes
    (None: there is none, or it is no JSON): AnsibleModule says why."""
    buffer = getattr(basic, "_ANSIBLE_ARGS", None)
    if not isinstance(buffer, bytes):
        return None
    try:
        doc = json.loads(buffer.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return None
    return doc.get("ANSIBLE_MODULE_ARGS") if isinstance(doc, dict) else None
