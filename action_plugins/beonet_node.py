# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""beonet_node with the in-sync fast path in the same task.

Given fast_command (the role passes the compile's command for the node), the plugin
first runs it on the node as one shell command, without Python (as ``raw`` does). When
its output is the node's stored line for this task's fingerprint and the node's state
now (agent/fast.py), the node is as it was when last found in sync with the same plan:
the task returns in_sync without starting the module. Anything else (another line, no
answer within fast_timeout seconds, a failed connection, beonet's Python package not
importable here) runs the module's full check as usual. Without fast_command the module
runs as any module would. One task per node instead of a read, a check and a fact.
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any, NoReturn

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

try:
    from ansible.module_utils.beonet.agent import fast
except ImportError:
    try:  # the repository's module_utils, installed into the controller's Python by make setup
        from beonet.agent import fast
    except ImportError:
        fast = None

FAST_ARGS = ("fast_command", "fast_timeout")


class _Expired(Exception):
    """The fast path's read did not end in time."""


def _expired(_signum: int, _frame: FrameType | None) -> NoReturn:
    raise _Expired()


class ActionModule(ActionBase):
    """The fast path's read, then the module unless the node is found in sync."""

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = {k: v for k, v in self._task.args.items() if k not in FAST_ARGS}
        command = self._task.args.get("fast_command") or ""
        try:
            timeout = int(self._task.args.get("fast_timeout", 60))
        except (TypeError, ValueError):
            timeout = 0
        if command and not 1 <= timeout <= 99999:
            result.update(failed=True, msg="beonet_node: fast_timeout must be whole seconds (1 to 99999), "
                          "not %r" % (self._task.args.get("fast_timeout"),))
            return result
        late = None
        if command and fast is not None:
            output = self._read(command, timeout)
            if output is None:
                late = "the fast path's read did not answer within %d s: checked in full" % timeout
            elif fast.matches(output, str(args.get("fingerprint") or "")):
                result.update(changed=False, in_sync=True, checkpoint={"state": "none"}, fast=True)
                return result
        result = merge_hash(result, self._execute_module(module_args=args, task_vars=task_vars))
        self._remove_tmp_path(self._connection._shell.tmpdir)      # as the normal action does
        if late:
            result["fast_read"] = late
            result["warnings"] = list(result.get("warnings") or []) + ["%s: %s" % (args.get("node"), late)]
        return result

    def _read(self, command: str, timeout: int) -> str | None:
        """The command's output on the node; None when it does not end within timeout
        seconds or the connection fails (a signal ends the wait: this runs in the worker's
        main thread, as Ansible's own task timeout does)."""
        previous = signal.signal(signal.SIGALRM, _expired)
        signal.alarm(timeout)
        try:
            return self._low_level_execute_command(command, sudoable=True).get("stdout", "")
        except (_Expired, AnsibleError, OSError):
            return None
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
