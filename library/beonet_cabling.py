#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: beonet_cabling
short_description: Match the discovered wiring of a cluster to its beonet plan
description:
  - "Runs on the controller (use C(delegate_to: localhost) and C(run_once))."
  - Groups the NICs of the discovery reports (C(beonet_discover)) into layer-2
    networks by what each NIC hears, identifies each with the plan's switch,
    bond channel or point-to-point cable, and returns every host's
    C(beonet_interfaces) (logical to physical NIC names).
  - Any disagreement with the cabling sheet is a fault naming both ends and the
    fix; the task then fails with every fault and nothing is written.
options:
  topology:
    description: Path of the topology YAML file.
    type: path
    required: true
  discovered:
    description: "The discovery reports, C({host: report}), as C(beonet_discover) returns them."
    type: dict
    required: true
  mapping:
    description:
      - "An existing mapping to check, C({host: {logical: physical}}), usually each
        host's C(beonet_interfaces). A host whose names disagree with its wiring is a
        fault (for example two NICs swapped)."
    type: dict
    default: {}
  host_vars_dir:
    description:
      - Write C(HOST/beonet_interfaces.yml) under this folder (the inventory's
        C(host_vars)) for every host, atomically and only when the content differs.
      - Refused when a host already has a C(HOST.yml) file there, which Ansible
        would stop reading once a C(HOST/) folder exists.
    type: path
  report:
    description: Write the Markdown cabling report to this file (also when there are faults).
    type: path
author:
  - beonet developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Match the discovered wiring and write each host's NIC names
  beonet_cabling:
    topology: "{{ beonet_topology_file }}"
    discovered: "{{ lookup('file', inventory_dir + '/beonet-discovery.json') | from_json }}"
    host_vars_dir: "{{ inventory_dir }}/host_vars"
    report: "{{ inventory_dir }}/cabling-report.md"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
mapping:
  description:
    - "Every host's C(beonet_interfaces), C({host: {logical: physical}})."
    - Empty when there is a fault.
  returned: always
  type: dict
faults:
  description: Every cabling fault (kind, text, fix, ends, cable, message).
  returned: always
  type: list
  elements: dict
spare:
  description: "NICs the plan does not use, C({host: [name, ...]})."
  returned: always
  type: dict
report:
  description: The Markdown cabling report.
  returned: always
  type: str
written:
  description: The host_vars files written (or that would be, in check mode).
  returned: always
  type: list
  elements: str
"""

from typing import Any

from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.beonet.agent.arguments import escaped_arguments
from ansible.module_utils.beonet.agent.files import atomic_write, output_problem, read_text

try:
    from ansible.module_utils.beonet.cabling import match, reports
    from ansible.module_utils.beonet.compiler import load, pipeline
    from ansible.module_utils.beonet.compiler.errors import CompileError
    IMPORT_ERROR = load.missing_libraries()
except ImportError as exc:  # beonet's module_utils incomplete on the controller
    IMPORT_ERROR = str(exc)


def _fail(module: AnsibleModule, what: str, lines: list[str], **out: Any) -> None:
    module.fail_json(msg="beonet cabling: %s, nothing written\n%s" % (what, "\n".join(lines)),
                     errors=lines, **out)


def _checked_inputs(module: AnsibleModule, compiled: pipeline.Compiled) -> match.Interfaces:
    """The hint of the mapping option; fails on a discovery report or an output that
    is not one (the messages of beonet cabling)."""
    p = module.params
    problems = reports.check(p["discovered"], "discovered")
    if problems:
        _fail(module, "%d error(s) in the discovery reports" % len(problems), problems.texts())
    nodes = [n.name for n in compiled.graph.nodes]
    for host in sorted(set(p["discovered"]) - set(nodes)):
        module.warn("discovered: %s: not a node of the topology; its report is not used" % host)
    outputs = ["report %s: %s" % (p["report"], why)
               for why in [p["report"] and output_problem(p["report"])] if why]
    if p["host_vars_dir"]:
        outputs += ["host_vars_dir %s: %s" % (p["host_vars_dir"], why)
                    for why in match.host_vars_problems(p["host_vars_dir"], nodes)]
    if outputs:
        _fail(module, "cannot write", outputs)
    hint, warnings = match.mapping_hint(p["mapping"], nodes, "mapping")
    for line in warnings:
        module.warn(line)
    return hint


def run(module: AnsibleModule) -> None:
    p = module.params
    try:
        compiled = pipeline.compile_file(p["topology"])
    except CompileError as exc:
        errors = [str(e) for e in exc.problems]
        module.fail_json(msg="beonet: %d error(s)\n%s" % (len(errors), "\n".join(errors)),
                         errors=errors)
    result = match.match(compiled, p["discovered"], existing=_checked_inputs(module, compiled))
    text = match.report_text(compiled.graph.name, result)
    out = {"changed": False, "mapping": result.mapping, "report": text, "written": [],
           "faults": [f.as_dict() for f in result.faults], "spare": result.spare}
    if p["host_vars_dir"] and result.ok:
        hidden = match.host_vars_clashes(p["host_vars_dir"], result.mapping)
        if hidden:
            module.fail_json(msg="beonet cabling: nothing written: Ansible stops reading "
                             "host_vars/HOST.yml once a host_vars/HOST/ folder exists; move "
                             "these files into their host's folder first: %s"
                             % ", ".join(hidden), **out)
    if p["report"] and read_text(p["report"]) != text:
        out["changed"] = True
        if not module.check_mode:
            atomic_write(p["report"], text)
    if result.faults:
        lines = [str(f) for f in result.faults]
        module.fail_json(msg="beonet cabling: %d fault(s)\n%s" % (len(lines), "\n".join(lines)),
                         **out)
    if p["host_vars_dir"]:
        try:
            out["written"] = match.write_host_vars(p["host_vars_dir"], result.mapping,
                                                   module.check_mode)
        except (OSError, ValueError) as exc:
            _fail(module, "cannot write host_vars", [str(exc)], **out)
        out["changed"] = out["changed"] or bool(out["written"])
    module.exit_json(**out)


def main() -> None:
    refusal = escaped_arguments(basic, "beonet_cabling")
    module = AnsibleModule(
        argument_spec={
            "topology": {"type": "path", "required": True},
            "discovered": {"type": "dict", "required": True},
            "mapping": {"type": "dict", "default": {}},
            "host_vars_dir": {"type": "path"},
            "report": {"type": "path"},
        },
        supports_check_mode=True,
    )
    if refusal:
        module.fail_json(msg=refusal, errors=[refusal])
    if IMPORT_ERROR is not None:
        module.fail_json(msg="beonet needs the Python packages PyYAML and jsonschema on the "
                             "controller (run `make setup`); missing: %s" % IMPORT_ERROR)
    run(module)


if __name__ == "__main__":
    main()
