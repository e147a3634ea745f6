# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""beonet_discover's collect without Python on the node.

With collect (and only node and run besides), the plugin runs agent/discover.py's
collect_command on the node as one shell command (as ``raw`` does): it marks the
background listener to stop, waits for its report, prints it and removes the run's
files, exactly as the module's collect does; the controller reads the report back
(parse_collected) with the same errors. No module to package and start on every node:
on a 128-node lab that halves what the collect costs. Anything else (starting a
listener, a window in one task, beonet's Python package not importable here) runs the
module as any module would.
"""

from __future__ import annotations

from ansible.errors import AnsibleError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

try:
    from ansible.module_utils.beonet.agent import discover
except ImportError:
    try:  # the repository's module_utils, installed into the controller's Python by make setup
        from beonet.agent import discover  # type: ignore[no-redef]
    except ImportError:
        discover = None  # type: ignore[assignment]

COLLECT_ARGS = {"node", "run", "collect"}


class ActionModule(ActionBase):
    """collect by one shell command; the module for everything else."""

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        plain = not set(args) - COLLECT_ARGS and boolean(args.get("collect", False), strict=False)
        if discover is None or not plain:
            result.update(self._execute_module(module_name=self._task.action, task_vars=task_vars))
            self._remove_tmp_path(self._connection._shell.tmpdir)      # as the normal action does
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
