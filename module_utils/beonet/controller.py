# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""beonet's controller tasks (compile, prove), one body for two ways of running it.

A module that only ever runs on the controller (beonet_topology, beonet_verify_live)
keeps its work in a body `(params, check_mode, diff) -> result` next to its argument
spec. The module calls it through AnsibleModule; the action plugin of the same name
calls it through `run` inside the controller's own Python when the task's connection
is local, which spares the module's packaging and start (both take longer than a
36-node proof) and the transfer of its arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError

Body = Callable[[dict[str, Any], bool, bool], dict[str, Any]]


class TaskFailed(Exception):
    """The task fails with msg and, alongside it in the result, extra."""

    def __init__(self, msg: str, **extra: Any) -> None:
        super().__init__(msg)
        self.msg = msg
        self.extra = extra


def _refusal(name: str, checked: Any) -> str | None:
    """AnsibleModule's message for arguments that do not fit the spec (the first error)."""
    if not checked.error_messages:
        return None
    msg = str(checked.errors.msg)
    if isinstance(checked.errors[0], UnsupportedError):
        msg = "Unsupported parameters for (%s) module: %s" % (name, msg)
    return msg


def run(name: str, spec: Mapping[str, Any], body: Body, args: Mapping[str, Any], check_mode: bool,
        diff: bool) -> dict[str, Any]:
    """The result module name's body gives for args checked against spec, as AnsibleModule would."""
    checked = ArgumentSpecValidator(dict(spec)).validate(dict(args))
    refusal = _refusal(name, checked)
    if refusal:
        return {"failed": True, "changed": False, "msg": refusal}
    try:
        result = body(checked.validated_parameters, check_mode, diff)
    except TaskFailed as exc:
        return {"failed": True, "changed": False, "msg": exc.msg, **exc.extra}
    return {"changed": False, **result}
