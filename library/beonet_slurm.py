#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: beonet_slurm
short_description: Render Slurm's files for a beonet cluster (controller side)
description:
  - Runs on the controller (with C(delegate_to=localhost) and C(run_once=true)) from the plan
    the beonet_plan role compiled; it never reads the topology file and changes nothing.
  - C(action=plan) returns a whole C(slurm.conf) (the cluster named after the topology,
    slurmctld on the controller node at its cluster address, every node at its cluster
    address, one partition of all nodes, plugins that need no cgroup), C(topology.conf) and
    C(topology.yaml) (the tree plugin), C(cgroup.conf) (no cgroup plugin), the cluster's /etc/hosts
    lines, and for each node
    the Slurm version its C(slurmd -V) answered and which of these files that version reads.
options:
  action:
    description: What to do.
    type: str
    choices: [plan]
    required: true
  plan:
    description: The compiled plan (C(beonet_plan_result.plan)).
    type: dict
    required: true
  controller:
    description: The node slurmctld runs on; empty for the plan's first node.
    type: str
    default: ""
  partition:
    description: Name of the one partition (all nodes, the default partition).
    type: str
    default: all
  slots:
    description: C({node => CPUs}) for the node lines; a node not named gets 1.
    type: dict
    default: {}
  versions:
    description:
      - C({node => answer of slurmd -V}) (C(slurm 24.11.5), Debian's C(slurm-wlm 24.11.5)).
      - An empty answer (slurmd not installed yet) gives that node no files.
    type: dict
    default: {}
author:
  - beonet developers (!UNKNOWN)
"""
EXAMPLES = r"""
- name: Render Slurm's files
  beonet_slurm:
    action: plan
    plan: "{{ beonet_plan_result.plan }}"
    slots: {node01: 4}
    versions: {node01: "slurm 24.11.5"}
  delegate_to: localhost
  run_once: true
  register: beonet_slurm_plan
"""
RETURN = r"""
slurm_conf:
  description: The whole slurm.conf.
  returned: success
  type: str
topology_conf:
  description: topology.conf for the tree plugin (Slurm before 25.05).
  returned: success
  type: str
topology_yaml:
  description: topology.yaml (Slurm 25.05 and later).
  returned: success
  type: str
cgroup_conf:
  description: cgroup.conf without a cgroup plugin (Slurm 24.05 and later).
  returned: success
  type: str
controller:
  description: The node slurmctld runs on.
  returned: success
  type: str
etc_hosts:
  description: /etc/hosts lines, each node's name at its cluster address and its other addresses.
  returned: success
  type: str
cluster_name:
  description: ClusterName of slurm.conf.
  returned: success
  type: str
nodes:
  description:
    - C({node => {version, files}}), C(files) C({file name => write it}); a file with false
      is one that node's Slurm does not read.
  returned: success
  type: dict
"""
import traceback

from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet.agent.arguments import escaped_arguments

try:
    from ansible.module_utils.beonet.agent import nodeplan
    from ansible.module_utils.beonet.agent.names import UnsafeText
    from ansible.module_utils.beonet.outputs import export, slurm
    IMPORT_ERROR = None
except ImportError:
    IMPORT_ERROR = traceback.format_exc()


def main() -> None:
    refusal = escaped_arguments(basic, "beonet_slurm")
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "required": True, "choices": ["plan"]},
            "plan": {"type": "dict", "required": True},
            "controller": {"type": "str", "default": ""},
            "partition": {"type": "str", "default": "all"},
            "slots": {"type": "dict", "default": {}},
            "versions": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    if refusal:
        module.fail_json(msg=refusal, errors=[refusal])
    if IMPORT_ERROR:
        module.fail_json(msg="beonet: missing Python library on the controller", exception=IMPORT_ERROR)
    p = module.params
    plan = p["plan"]
    if not (plan or {}).get("nodes"):
        module.fail_json(msg="beonet slurm: plan: no compiled plan; run the beonet_plan role first, "
                             "as playbooks/slurm.yml does")
    problems = nodeplan.whole_plan_problems(plan)
    if problems:
        module.fail_json(msg="beonet slurm: %s" % "; ".join(problems), errors=problems)
    try:
        controller = slurm.controller_of(plan, p["controller"])
        module.exit_json(changed=False, controller=controller,
                         cluster_name=slurm.cluster_name(plan["topology"]["name"]),
                         slurm_conf=slurm.slurm_conf(plan, controller, p["partition"], p["slots"]),
                         topology_conf=slurm.topology_conf(plan), topology_yaml=slurm.topology_yaml(plan),
                         cgroup_conf=slurm.cgroup_conf(plan), etc_hosts=export.hosts(plan),
                         nodes=slurm.node_files(p["versions"]))
    except (slurm.SlurmError, UnsafeText) as exc:
        module.fail_json(msg="beonet slurm: %s" % exc)


if __name__ == "__main__":
    main()
