# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""beonet_discover's background start and collect without the module.

With background, the plugin checks the arguments as the module does and runs
agent/discover_task.py's start_command on the node: one ``python3 -I -S`` process
carrying the discovery code starts the listener (discover.start_background) and
prints its pid; no module is packaged, copied and started, and the listener left
running is that small process. With collect (and only node and run besides), it
runs agent/discover.py's collect_command as one shell command (as ``raw`` does): it
marks the background listener to stop, waits for its report, prints it and removes
the run's files, exactly as the module's collect does. Either way the controller
reads the output back into the module's result, with the module's errors. Anything
else (a window in one task, beonet's Python package not importable here) runs the
module as any module would.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

try:
    from ansible.module_utils.beonet import controller
    from ansible.module_utils.beonet.agent import discover, discover_task
except ImportError:
    try:  # the repository's module_utils, installed into the controller's Python by make setup
        from beonet import controller
        from beonet.agent import discover, discover_task
    except ImportError:
        controller = discover = discover_task = None

COLLECT_ARGS = {"node", "run", "collect"}


class ActionModule(ActionBase):
    """Start and collect by one command each; the module for everything else."""

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self._task.args
        collect = not set(args) - COLLECT_ARGS and boolean(args.get("collect", False), strict=False)
        start = boolean(args.get("background", False), strict=False)
        if discover is None or not (collect or start):
            result.update(self._execute_module(module_name=self._task.action, task_vars=task_vars))
            self._remove_tmp_path(self._connection._shell.tmpdir)      # as the normal action does
            return result
        if start:
            result.update(controller.run(self._task.action, discover_task.ARGUMENT_SPEC,
                                         lambda p, _check, _diff: self._start(p, task_vars or {}),
                                         args, bool(self._task.check_mode), bool(self._task.diff)))
            return result
        node, run = str(args.get("node", "")), str(args.get("run", ""))
        try:
            done = self._low_level_execute_command(discover.collect_command(node, run), sudoable=True)
            if done.get("rc"):
                said = (done.get("stderr") or done.get("stdout") or "").strip()[:300]
                raise discover.DiscoveryError("%s: collecting the discovery run %s failed (rc %s): %s"
                                              % (node, run, done.get("rc"), said))
            got = discover.parse_collected(node, run, done.get("stdout", ""))
        except (discover.DiscoveryError, AnsibleError, OSError) as exc:
            result.update(failed=True, changed=False, msg=str(exc))
            return result
        result.update(changed=False, discovery=got["discovery"], ended=got["ended"], listened=got["listened"])
        return result

    def _python(self, task_vars: dict[str, Any]) -> str:
        """The node's Python as the inventory names it (python3 when it leaves it to Ansible)."""
        named = task_vars.get("ansible_python_interpreter")
        named = self._templar.template(named) if isinstance(named, str) else None
        return named if isinstance(named, str) and named and not named.startswith("auto") else "python3"

    def _start(self, p: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        problem = discover_task.params_problem(p)
        if problem:
            raise controller.TaskFailed(problem)
        try:
            done = self._low_level_execute_command(discover_task.start_command(p, self._python(task_vars)),
                                                   sudoable=True)
            return discover_task.parse_started(p["node"], p["run"], done.get("rc", 1), done.get("stdout", ""),
                                               done.get("stderr", ""))
        except (discover.DiscoveryError, AnsibleError, OSError) as exc:
            raise controller.TaskFailed(str(exc)) from exc
