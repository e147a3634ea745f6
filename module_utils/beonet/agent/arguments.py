"""A module's arguments refused before AnsibleModule reads them, where it cannot.

AnsibleModule logs its arguments as UTF-8 before any check runs: a string holding a
lone surrogate (JSON's ``"\\udc80"``, valid JSON but no UTF-8 text) makes it crash
with a traceback. Every module in library/ calls ``refuse_lone_surrogates`` first:
such an argument fails the task with its key path named, escaped.

Standard library only (the node agent's modules use it on the nodes).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from .names import escaped


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


def refuse_lone_surrogates(load: Callable[[], Any], name: str) -> None:
    """Fail the module (its JSON result on stdout, status 1) when an argument load()
    returns holds a lone surrogate; return otherwise (load failing too: AnsibleModule
    then says why)."""
    try:
        params = load()
    except (Exception, SystemExit):      # noqa: BLE001 - AnsibleModule reads them again and says why
        return
    where = lone_surrogate_at(params)
    if where is None:
        return
    msg = "%s: %s: holds a lone surrogate, not UTF-8 text: nothing done" % (name, where)
    print(json.dumps({"failed": True, "changed": False, "msg": msg, "errors": [msg]}))
    sys.exit(1)
