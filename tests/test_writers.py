"""Writers that cannot be injected: every value written into a file or command is one
line of printable text at the moment of writing, whatever its origin; the modules that
render files refuse such values (and numbers given as the wrong type) cleanly."""

from __future__ import annotations

import copy
import json
import pathlib

import pytest
from conftest import ROOT
from test_benchmarks import expected_paths
from test_fuzz import run_modules

from beonet.agent.names import UnsafeText, file_text, one_line
from beonet.compiler import pipeline
from beonet.outputs import export, slurm
from beonet.outputs import plan as render

SEPARATORS = ["\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029",
              "\x00", "\x1b", "\ud800"]


@pytest.mark.parametrize("sep", SEPARATORS)
def test_a_value_with_a_line_break_or_control_character_is_refused(sep):
    with pytest.raises(UnsafeText, match="ssh_args: .* holds "):
        one_line("-o x%sbtl_tcp_if_include = 0.0.0.0/0" % sep, "ssh_args")
    with pytest.raises(UnsafeText, match="slurm.conf: "):
        file_text(["ClusterName=c", "PartitionName=all%sSlurmUser=root" % sep], "slurm.conf")


def test_a_template_s_indenting_tabs_are_allowed_a_value_s_tab_is_not():
    assert file_text(["a", "\t\tb"], "f") == "a\n\t\tb\n"
    with pytest.raises(UnsafeText, match="a tab"):
        file_text(["a\tb"], "f")


EXAMPLE = str(ROOT / "topologies/custom-example.yml")


def _plan() -> dict:
    return copy.deepcopy(dict(render.plan(pipeline.compile_file(EXAMPLE))))


@pytest.mark.parametrize("partition", ["all\n", "all\nSlurmUser=root", "a b", "", None])
def test_a_partition_name_is_matched_whole(partition):
    with pytest.raises(slurm.SlurmError, match="partition: "):
        slurm.slurm_conf(_plan(), partition=partition)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(set(export.EXPORTS) - {"mpich-hosts"}))
def test_every_renderer_of_the_exports_refuses_an_injected_name(name):
    plan = _plan()
    plan["topology"]["name"] = "c\nSlurmUser=root"
    with pytest.raises(UnsafeText):
        export.EXPORTS[name](plan)


def test_the_mpich_hosts_file_refuses_an_injected_address():
    plan = _plan()
    next(iter(plan["nodes"].values()))["address"] = "10.0.0.1\n0.0.0.0"
    with pytest.raises(UnsafeText, match="the MPICH hosts file: "):
        export.mpich_hosts(plan)


def test_slurm_node_answers_of_the_wrong_type_are_named():
    with pytest.raises(slurm.SlurmError, match="node-a: slurmd -V: must be its answer as text, not a number"):
        slurm.node_files({"node-a": 24.11, "node-b": "slurm 24.11.5"})


@pytest.fixture(scope="module")
def plan_and_paths() -> tuple[dict, dict]:
    compiled = pipeline.compile_file(EXAMPLE)
    plan = dict(render.plan(compiled))
    return json.loads(json.dumps(plan)), expected_paths(compiled, plan)


def test_the_slurm_module_checks_the_plan_and_its_arguments(tmp_path: pathlib.Path, plan_and_paths):
    plan, _paths = plan_and_paths
    bad_name = copy.deepcopy(plan)
    first = next(iter(bad_name["nodes"]))
    bad_name["nodes"]["x\nSlurmUser=root"] = bad_name["nodes"].pop(first)
    calls = [{"action": "plan", "plan": bad_name},
             {"action": "plan", "plan": plan, "partition": "all\n"},
             {"action": "plan", "plan": plan, "versions": {first: 24.11}},
             {"action": "plan", "plan": plan}]
    refused, partition, version, good = run_modules("beonet_slurm", calls, tmp_path)
    assert refused["rc"] == 1 and "is not a name" in refused["msg"] and "\n" not in refused["msg"]
    assert partition["rc"] == 1 and 'partition: "all\\n"' in partition["msg"]
    assert version["rc"] == 1 and "must be its answer as text, not a number" in version["msg"]
    assert good["rc"] == 0 and "SlurmUser=slurm\n" in good["slurm_conf"]


def test_the_mpi_module_refuses_a_line_break_in_its_ssh_arguments(tmp_path: pathlib.Path, plan_and_paths):
    plan, paths = plan_and_paths
    base = {"action": "plan", "plan": plan, "paths": paths}
    injected, good = run_modules("beonet_mpi", [
        {**base, "ssh_args": "-o BatchMode=yes\nbtl_tcp_if_include = 0.0.0.0/0"},
        {**base, "ssh_args": "-o BatchMode=yes"}], tmp_path)
    assert injected["rc"] == 1 and "ssh_args: " in injected["msg"] and "holds a line break" in injected["msg"]
    assert "mca" not in injected
    assert good["rc"] == 0 and "0.0.0.0/0" not in good["mca"]


def test_the_mpi_module_refuses_nic_names_an_ipv6_only_plan_cannot_use(tmp_path: pathlib.Path):
    """Open MPI takes an IPv6-only cluster's NICs by name: a name that is one node's
    cluster NIC and another node's other NIC is refused, naming the node."""
    text = (ROOT / "topologies" / "metanode-fig2.yml").read_text() + "addressing: {ipv4: false, ipv6: true}\n"
    compiled = pipeline.compile_text(text, "fig2.yml")
    plan = json.loads(json.dumps(render.plan(compiled)))
    name, node = next((k, v) for k, v in plan["nodes"].items()
                      if {"eth1", "eth2"} <= {i["name"] for i in v["interfaces"]})
    swap = {"eth1": "eth2", "eth2": "eth1"}
    for iface in node["interfaces"]:
        iface["name"] = swap.get(iface["name"], iface["name"])
    for route in node["routes"]:
        route["dev"] = swap.get(route["dev"], route["dev"])
        for hop in route.get("nexthops", []):
            hop["dev"] = swap.get(hop["dev"], hop["dev"])
    (result,) = run_modules("beonet_mpi", [{"action": "plan", "plan": plan,
                                            "paths": expected_paths(compiled, plan)}], tmp_path)
    assert result["rc"] == 1 and result["msg"].startswith("beonet mpi: %s: its NIC eth" % name), result


def test_the_mpi_module_names_a_sample_that_is_not_a_number(tmp_path: pathlib.Path, plan_and_paths):
    plan, _paths = plan_and_paths
    samples = "phase,class,a,b,bytes,usec\nfixed,1-hop,0,1,four,1.5\nfixed,1-hop,0,1,8,nan\n"
    (result,) = run_modules("beonet_mpi", [{"action": "report", "plan": plan, "run": {}, "samples": samples,
                                            "dest": str(tmp_path / "out")}], tmp_path)
    assert result["rc"] == 1 and "samples line 2: invalid literal for int()" in result["msg"]
    assert "samples line 3: 'nan' is not a finite number" in result["msg"]


@pytest.mark.parametrize("files,mode,message", [
    ([{"name": "a", "content": "x\ud800"}], None, "files[0].content: holds a lone surrogate"),
    ([{"name": "a\ud800", "content": "x"}], None, "files[0].name: holds a lone surrogate, not UTF-8 text"),
    ([{"name": "a\u2028", "content": "x"}], None, "is not a plain file name"),
    ([{"name": "a", "content": "x", "mode": "7777"}], None,
     "files[0].mode: '7777' sets setuid, setgid, sticky, world-write"),
    ([{"name": "a", "content": "x", "mode": "0666"}], None, "'0666' sets world-write"),
    ([{"name": "a", "content": "x"}], "1777", "mode: '1777' sets sticky, world-write"),
    ([{"name": "a", "content": "x"}], "2755", "mode: '2755' sets setgid"),
])
def test_the_files_module_refuses_what_it_must_not_write(tmp_path: pathlib.Path, files, mode, message):
    dest = tmp_path / "dest"
    call = {"dest": str(dest), "files": files, **({"mode": mode} if mode else {})}
    (result,) = run_modules("beonet_files", [call], tmp_path)
    assert result["rc"] == 1 and message in result["msg"] and not dest.exists()


@pytest.mark.parametrize("backend", ["networkd", "networkmanager", "netplan", "ifupdown"])
def test_a_node_file_with_a_hidden_line_break_is_refused_even_when_the_plan_was_checked(backend):
    from beonet.agent import apply

    plan = _plan()
    node = next(iter(plan["nodes"].values()))
    nic = next(i for i in node["interfaces"] if i["addresses"])
    good = nic["addresses"][0]
    nic["addresses"][0] = good + "\u2028DNS=10.9.9.9"
    with pytest.raises(ValueError, match="holds a line break"):
        apply.persistent_files(node, ["10.0.0.0/8"], backend, checked=True)
    nic["addresses"][0] = good
    assert apply.persistent_files(node, ["10.0.0.0/8"], backend, checked=True)
