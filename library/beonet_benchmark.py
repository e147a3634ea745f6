#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: beonet_benchmark
short_description: Plan, check and report the beonet benchmarks (controller side)
description:
  - Runs on the controller (C(delegate_to: localhost), C(run_once)).
  - C(action=plan) compiles the topology, validates the request (nodes in the plan,
    sizes in range, ...) and returns the schedule of steps the playbook runs.
  - C(action=tools) fails, naming every node, when a node has no C compiler.
  - C(action=report) turns the nodes' raw outputs into
    C(results/<topology>/<timestamp>/) (raw JSON, CSV, PNG plots, summary.md).
  - Every problem fails the task with all reasons, before anything starts on a node.
options:
  action:
    description: What to do.
    type: str
    choices: [plan, tools, report]
    required: true
  topology:
    description: Path of the topology file.
    type: path
  params:
    description: Benchmark request (nodes, sizes, count, pairs, classes, file_mb, remote_copies, ...).
    type: dict
    default: {}
  probe:
    description: C({host: compiler path or ''}) for I(action=tools).
    type: dict
    default: {}
  schedule:
    description: The schedule returned by I(action=plan), for I(action=report).
    type: dict
  outputs:
    description: C({host: {file: parsed JSON}}) gathered from the nodes, for I(action=report).
    type: dict
  environment:
    description: Facts recorded in the summary (kernel, offloads, qdiscs, lab or bare metal).
    type: dict
    default: {}
  dest:
    description: Results folder to write, for I(action=report).
    type: path
author:
  - beonet developers
"""

EXAMPLES = r"""
- name: Plan the benchmark
  beonet_benchmark:
    action: plan
    topology: topologies/routed-mesh.yml
    params: {count: 200, sizes: [64, 1024, 8192]}
  delegate_to: localhost
  run_once: true
  register: beonet_benchmark_plan
"""

RETURN = r"""
schedule:
  description: Steps (id, kind, label, hosts {host -> shell command}), server command, parameters.
  returned: action=plan
  type: dict
written:
  description: Files written into I(dest).
  returned: action=report
  type: list
  elements: str
summary:
  description: The Markdown summary.
  returned: action=report
  type: str
"""

import traceback

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils.beonet.benchmarks import planner as bench
    from ansible.module_utils.beonet.compiler import pipeline
    from ansible.module_utils.beonet.compiler.errors import CompileError
    from ansible.module_utils.beonet.outputs import plan as render
    IMPORT_ERROR = None
except ImportError:  # netaddr, jsonschema or PyYAML missing on the controller
    IMPORT_ERROR = traceback.format_exc()


def _compile(module):
    try:
        compiled = pipeline.compile_file(module.params["topology"])
    except CompileError as exc:
        errors = [str(p) for p in exc.problems]
        module.fail_json(msg="beonet: %d error(s)\n%s" % (len(errors), "\n".join(errors)))
    return compiled, render.plan(compiled)


def _fail(module, exc):
    module.fail_json(msg="beonet benchmark: %d problem(s), nothing started\n%s"
                     % (len(exc.problems), "\n".join(exc.problems)), errors=exc.problems)


def main():
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "required": True, "choices": ["plan", "tools", "report"]},
            "topology": {"type": "path"},
            "params": {"type": "dict", "default": {}},
            "probe": {"type": "dict", "default": {}},
            "schedule": {"type": "dict"},
            "outputs": {"type": "dict"},
            "environment": {"type": "dict", "default": {}},
            "dest": {"type": "path"},
        },
        required_if=[("action", "plan", ["topology"]),
                     ("action", "report", ["topology", "schedule", "outputs", "dest"])],
        supports_check_mode=True,
    )
    if IMPORT_ERROR:
        module.fail_json(msg="beonet: missing Python library on the controller", exception=IMPORT_ERROR)
    p = module.params
    try:
        if p["action"] == "tools":
            bench.check_tools(p["probe"])
            module.exit_json(changed=False)
        compiled, plan = _compile(module)

        def path_of(a, b):
            return [h["node"] for h in compiled.path(a, b)]
        if p["action"] == "plan":
            sched = bench.schedule(plan, path_of, p["params"])
            module.exit_json(changed=False, schedule=sched)
        res = bench.collect(p["schedule"], p["outputs"], plan)
        written = []
        if not module.check_mode:
            bench.write_results(p["dest"], p["schedule"], res, p["environment"], plan, p["outputs"])
            written = ["raw.json", "results.json", "summary.md"]
            try:
                from ansible.module_utils.beonet.benchmarks import plots
                written += plots.plot_all(p["dest"], res, plan["topology"]["name"])
            except ImportError as exc:
                written.append("no plots: %s (pip install -r requirements.txt)" % exc)
        module.exit_json(changed=not module.check_mode, written=written,
                         summary=bench.summary_markdown(p["schedule"], res, p["environment"], plan))
    except bench.BenchError as exc:
        _fail(module, exc)


if __name__ == "__main__":
    main()
