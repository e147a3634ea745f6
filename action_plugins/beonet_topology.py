# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""beonet's controller modules in the controller's own Python.

beonet_topology (compile) and beonet_verify_live (prove every pair from the live state)
only ever run on the controller. When the task's connection is local this plugin calls
the module's body in place, with the module's argument checks and result: no module to
package, start and feed its arguments (for a 36-node proof that costs more than the
proof). Otherwise (another host, or beonet's Python package not importable here) the
module runs as any module would. beonet_verify_live.py is this file under that name.
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

try:
    from ansible.module_utils.beonet import controller
    from ansible.module_utils.beonet.livestate import task as live
    from ansible.module_utils.beonet.outputs import topology_task as topology
except ImportError:
    try:  # the repository's module_utils, installed into the controller's Python by make setup
        from beonet import controller
        from beonet.livestate import task as live
        from beonet.outputs import topology_task as topology
    except ImportError:
        controller = live = topology = None

# module name -> (its task module, the name of its body)
TASKS = {"beonet_topology": (topology, "compile_task"), "beonet_verify_live": (live, "prove_task")}


class ActionModule(ActionBase):
    """The module's body, called in place when the connection is local."""

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task, body = TASKS[self._task.action.rsplit(".", 1)[-1]]
        if task is None or task.IMPORT_ERROR or self._connection.transport != "local":
            result.update(self._execute_module(module_name=self._task.action, task_vars=task_vars))
            self._remove_tmp_path(self._connection._shell.tmpdir)      # as the normal action does
            return result
        result.update(controller.run(self._task.action, task.ARGUMENT_SPEC, getattr(task, body),
                                     self._task.args, bool(self._task.check_mode), bool(self._task.diff)))
        return result
