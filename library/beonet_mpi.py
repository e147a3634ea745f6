#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: beonet_mpi
short_description: Plan and report the beonet MPI benchmark; render the MPI files (controller side)
description:
  - Runs on the controller (with C(delegate_to=localhost) and C(run_once=true)) from the plan
    the beonet_plan role compiled; it never reads the topology file.
  - C(action=plan) returns the Open MPI hostfile (cluster addresses, each node's slots), the
    MCA parameters (the TCP transport and the runtime's channel confined to the networks every
    node routes to, and the launcher's ssh options), Open MPI 5's runtime (PRRTE) parameters
    (its daemons on those networks, its ssh options), the MPICH machine file and each node's
    MPICH environment, and the run (ranks in plan order, pairings by path class, the gateway
    of the compute test).
  - C(action=report) turns the benchmark's CSV into C(results/<topology>/mpi-<timestamp>/).
options:
  action:
    description: What to do.
    type: str
    choices: [plan, report]
    required: true
  plan:
    description: The compiled plan (C(beonet_plan_result.plan)).
    type: dict
    required: true
  paths:
    description:
      - Allowed hop lists of every ordered node pair (C(beonet_plan_result.paths)), for I(action=plan).
    type: dict
  slots:
    description: C({node => slots}) for the hostfiles; a node not named gets 1.
    type: dict
    default: {}
  params:
    description: Benchmark request (C(pairs_per_class)).
    type: dict
    default: {}
  ssh_args:
    description: Options of the ssh the launcher runs (key, known hosts), for I(action=plan).
    type: str
    default: ""
  node_paths:
    description:
      - The role's paths on the nodes, by what they are (its folder, the MPI parameter files, the
        hosts file); each must be a plain absolute path (printable, no C(..), no C(//)), else
        nothing runs.
    type: dict
    default: {}
  run:
    description: The run returned by I(action=plan), for I(action=report).
    type: dict
  samples:
    description: The benchmark's CSV text, for I(action=report).
    type: str
  environment:
    description: Facts recorded in the summary.
    type: dict
    default: {}
  dest:
    description: Results folder to write, for I(action=report).
    type: path
author:
  - beonet developers (!UNKNOWN)
"""
EXAMPLES = r"""
- name: Plan the MPI run
  beonet_mpi:
    action: plan
    plan: "{{ beonet_plan_result.plan }}"
    paths: "{{ beonet_plan_result.paths }}"
    slots: {node01: 4}
  delegate_to: localhost
  run_once: true
  register: beonet_mpi_plan
"""
RETURN = r"""
hostfile:
  description: The Open MPI hostfile.
  returned: action=plan
  type: str
mca:
  description: openmpi-mca-params.conf lines.
  returned: action=plan
  type: str
prte_mca:
  description: prte-mca-params.conf lines (Open MPI 5's runtime), the node networks.
  returned: action=plan
  type: str
prte_mca_by_name:
  description: The same with the cluster NICs' names (Open MPI 5.0.0 to 5.0.7).
  returned: action=plan
  type: str
prte_by_name_problem:
  description: Why NIC names cannot hold the runtime to the cluster networks; empty when they can.
  returned: action=plan
  type: str
mpich_hosts:
  description: The MPICH machine file (node names on an IPv6-only plan).
  returned: action=plan
  type: str
etc_hosts:
  description: >-
    beonet's /etc/hosts block (C(beonet export TOPOLOGY hosts)); on an IPv6-only plan the
    MPICH machine file names the nodes, and these lines resolve the names.
  returned: action=plan
  type: str
by_name:
  description: Whether the MPICH machine file names the nodes (an IPv6-only plan).
  returned: action=plan
  type: bool
mpich_env:
  description: C({node => text}), each node's MPICH environment file.
  returned: action=plan
  type: dict
run:
  description: Ranks, pairs file text, pair classes, gateway test.
  returned: action=plan
  type: dict
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
    from ansible.module_utils.beonet.agent import backends, nodeplan
    from ansible.module_utils.beonet.agent.names import UnsafeText, one_line
    from ansible.module_utils.beonet.benchmarks import mpi
    from ansible.module_utils.beonet.benchmarks import planner as bench
    from ansible.module_utils.beonet.outputs import export
    from ansible.module_utils.beonet.outputs import mpi as mpi_files
    IMPORT_ERROR = None
except ImportError:
    IMPORT_ERROR = traceback.format_exc()


def _plan(module: AnsibleModule) -> None:
    p = module.params
    plan = p["plan"]
    # Open MPI 4's launcher reads plm_rsh_args, PRRTE (Open MPI 5) plm_ssh_args.
    args = one_line(p["ssh_args"], "ssh_args")
    mca = export.openmpi_mca(plan) + ("plm_rsh_args = %s\n" % args if args else "")
    ssh = "plm_ssh_args = %s\n" % args if args else ""
    prte, prte_by_name = mpi_files.prte_mca(plan) + ssh, mpi_files.prte_mca(plan, by_name=True) + ssh
    path_of = bench.path_lookup(plan, p["paths"])
    module.exit_json(changed=False, hostfile=export.hostfile(plan, p["slots"]), mca=mca, prte_mca=prte,
                     prte_mca_by_name=prte_by_name,
                     prte_by_name_problem=mpi_files.cluster_nic_names(plan)[1],
                     mpich_hosts=export.mpich_hosts(plan, p["slots"]),
                     etc_hosts=export.hosts(plan), by_name=mpi_files.ipv6_only(plan),
                     mpich_env=mpi_files.mpich_env_files(plan),
                     run=mpi.plan_run(plan, path_of, p["params"]))


def main() -> None:
    refusal = escaped_arguments(basic, "beonet_mpi")
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "required": True, "choices": ["plan", "report"]},
            "plan": {"type": "dict", "required": True},
            "paths": {"type": "dict"},
            "slots": {"type": "dict", "default": {}},
            "params": {"type": "dict", "default": {}},
            "ssh_args": {"type": "str", "default": ""},
            "node_paths": {"type": "dict", "default": {}},
            "run": {"type": "dict"},
            "samples": {"type": "str"},
            "environment": {"type": "dict", "default": {}},
            "dest": {"type": "path"},
        },
        required_if=[("action", "plan", ["paths"]), ("action", "report", ["run", "samples", "dest"])],
        supports_check_mode=True,
    )
    if refusal:
        module.fail_json(msg=refusal, errors=[refusal])
    if IMPORT_ERROR:
        module.fail_json(msg="beonet: missing Python library on the controller", exception=IMPORT_ERROR)
    p = module.params
    paths = ["%s: %s" % (k, backends.plain_path_problem(v)) for k, v in sorted(p["node_paths"].items())
             if backends.plain_path_problem(v)]
    if paths:
        module.fail_json(msg="beonet mpi: %s" % "; ".join(paths), errors=paths)
    if not (p["plan"] or {}).get("nodes"):
        module.fail_json(msg="beonet mpi: plan: no compiled plan; run the beonet_plan role first "
                             "(beonet_plan_paths: true), as playbooks/mpi.yml does")
    problems = nodeplan.whole_plan_problems(p["plan"])
    if problems:
        module.fail_json(msg="beonet mpi: %s" % "; ".join(problems), errors=problems)
    bad = sorted(k for k, v in p["slots"].items() if not isinstance(v, int) or isinstance(v, bool) or v < 1)
    if bad:
        module.fail_json(msg="beonet mpi: slots of %s: a whole number of 1 or more" % ", ".join(bad))
    try:
        if p["action"] == "plan":
            _plan(module)
        if module.check_mode:
            module.exit_json(changed=False, summary="")
        result = mpi.write_report(p["dest"], p["plan"]["topology"]["name"], p["run"], p["samples"],
                                  p["environment"])
        module.exit_json(changed=True, result=result,
                         summary=open(p["dest"] + "/summary.md", encoding="utf-8").read())
    except (UnsafeText, mpi_files.MpiError) as exc:
        module.fail_json(msg="beonet mpi: %s" % exc)
    except bench.BenchError as exc:
        problems = exc.problems
        module.fail_json(msg="beonet mpi: %d problem(s), nothing started\n%s"
                         % (len(problems), "\n".join(problems)), errors=problems)


if __name__ == "__main__":
    main()
