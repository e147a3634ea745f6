#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: beonet_benchmark
short_description: Plan, check and report the beonet benchmarks (controller side)
description:
  - Runs on the controller (with C(delegate_to=localhost) and C(run_once=true)).
  - Works from the plan the beonet_plan role compiled (C(beonet_plan_result.plan), and with
    C(beonet_plan_paths=true) C(beonet_plan_result.paths)); it never reads the topology file.
  - C(action=plan) validates the request against the plan (nodes in the plan, sizes in
    range, ...), classifies the node pairs by their expected paths and returns the schedule
    of steps the playbook runs.
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
  plan:
    description:
      - The compiled plan (C(beonet_plan_result.plan)), for I(action=plan) and I(action=report).
    type: dict
  paths:
    description:
      - Allowed traceroute hop lists of every ordered node pair, source node => destination
        node => list of hop address lists, the preferred branch first
        (C(beonet_plan_result.paths)), for I(action=plan). Pairs are classified by the
        preferred branch (every branch has the same length). Each address is mapped to its
        node through I(plan).
    type: dict
  params:
    description:
      - Benchmark request (nodes, sizes, count, pairs, classes, file_mb, remote_copies, family, ...).
      - C(family) is the IP family every step runs over, 4 or 6 (tokex, iperf3 and the ring
        take the nodes' addresses of that family); by default IPv4 where the plan has it
        (a dual-stack plan too), else IPv6. A family the plan has no addresses of fails.
    type: dict
    default: {}
  probe:
    description: C({host => compiler path or empty}) for I(action=tools).
    type: dict
    default: {}
  schedule:
    description: The schedule returned by I(action=plan), for I(action=report).
    type: dict
  outputs:
    description: C({host => {file => parsed JSON}}) gathered from the nodes, for I(action=report).
    type: dict
  environment:
    description: Facts recorded in the summary (kernel, offloads, qdiscs, lab or bare metal).
    type: dict
    default: {}
  dest:
    description: Results folder to write, for I(action=report).
    type: path
author:
  - beonet developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Compile the plan and every pair's expected path
  ansible.builtin.include_role:
    name: beonet_plan
  vars:
    beonet_plan_paths: true

- name: Plan the benchmark
  beonet_benchmark:
    action: plan
    plan: "{{ beonet_plan_result.plan }}"
    paths: "{{ beonet_plan_result.paths }}"
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

from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet.agent.arguments import escaped_arguments

try:
    from ansible.module_utils.beonet.benchmarks import planner as bench
    from ansible.module_utils.beonet.benchmarks import report
    IMPORT_ERROR = None
except ImportError:
    IMPORT_ERROR = traceback.format_exc()


def _fail(module: AnsibleModule, exc: Exception) -> None:
    problems = getattr(exc, "problems", [str(exc)])
    module.fail_json(msg="beonet benchmark: %d problem(s), nothing started\n%s"
                     % (len(problems), "\n".join(problems)), errors=problems)


def _report(module: AnsibleModule) -> None:
    p = module.params
    res = report.collect(p["schedule"], p["outputs"], p["plan"])
    written = []
    if not module.check_mode:
        report.write_results(p["dest"], p["schedule"], res, p["environment"], p["plan"], p["outputs"])
        written = ["raw.json", "results.json", "summary.md"]
        try:
            from ansible.module_utils.beonet.benchmarks import plots
            written += plots.plot_all(p["dest"], res, p["plan"]["topology"]["name"])
        except ImportError as exc:
            written.append("no plots: %s (pip install -r requirements.txt)" % exc)
    summary = report.summary_markdown(p["schedule"], res, p["environment"], p["plan"]["topology"]["name"])
    module.exit_json(changed=not module.check_mode, written=written, summary=summary)


def main() -> None:
    refusal = escaped_arguments(basic, "beonet_benchmark")
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "required": True, "choices": ["plan", "tools", "report"]},
            "plan": {"type": "dict"},
            "paths": {"type": "dict"},
            "params": {"type": "dict", "default": {}},
            "probe": {"type": "dict", "default": {}},
            "schedule": {"type": "dict"},
            "outputs": {"type": "dict"},
            "environment": {"type": "dict", "default": {}},
            "dest": {"type": "path"},
        },
        required_if=[("action", "plan", ["plan", "paths"]),
                     ("action", "report", ["plan", "schedule", "outputs", "dest"])],
        supports_check_mode=True,
    )
    if refusal:
        module.fail_json(msg=refusal, errors=[refusal])
    if IMPORT_ERROR:
        module.fail_json(msg="beonet: missing Python library on the controller", exception=IMPORT_ERROR)
    p = module.params
    if p["action"] != "tools" and not (p["plan"] or {}).get("nodes"):
        module.fail_json(msg="beonet benchmark: plan: no compiled plan; run the beonet_plan role "
                             "first (beonet_plan_paths: true), as playbooks/benchmark.yml does")
    try:
        if p["action"] == "tools":
            bench.check_tools(p["probe"])
            module.exit_json(changed=False)
        if p["action"] == "plan":
            path_of = bench.path_lookup(p["plan"], p["paths"])
            module.exit_json(changed=False, schedule=bench.schedule(p["plan"], path_of, p["params"]))
        _report(module)
    except bench.BenchError as exc:
        _fail(module, exc)


if __name__ == "__main__":
    main()
