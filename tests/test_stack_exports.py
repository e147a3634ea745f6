"""The exports for Open MPI 5's runtime, MPICH's environment and Slurm's node lines
and topology.yaml: golden files on four topologies, and their rules."""

import copy
import ipaddress
import re

import pytest
import yaml
from conftest import ROOT, golden

from beonet import cli
from beonet.compiler import pipeline
from beonet.outputs import export, mpi, slurm
from beonet.outputs import plan as render

TOPOLOGIES = ["routed-mesh", "switch-tree", "metanode-testbed", "custom-example"]
NEW = ["prte-mca", "mpich-env", "slurm-nodes", "slurm-topology-yaml"]


def _plan(name):
    return render.plan(pipeline.compile_file(str(ROOT / "topologies" / ("%s.yml" % name))))


def _expand(hostlist):
    """Slurm's hostlist expression back to names (the forms slurm.hostlist writes)."""
    names = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?", hostlist):
        prefix, ranges = m.group(1), m.group(2)
        if ranges is None:
            names.append(prefix)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            names += ["%s%0*d" % (prefix, len(lo), v) for v in range(int(lo), int(hi or lo) + 1)]
    return names


@pytest.mark.parametrize("what", NEW)
@pytest.mark.parametrize("name", TOPOLOGIES)
def test_exports(name, what, capsys):
    assert cli.main(["export", "topologies/%s.yml" % name, what]) == 0
    golden(ROOT / "tests/golden" / ("%s.%s" % (name, what)), capsys.readouterr().out)


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_prte_file_holds_the_node_networks(name):
    plan = _plan(name)
    values = dict(line.split(" = ") for line in mpi.prte_mca(plan).splitlines() if not line.startswith("#"))
    assert values == {"prte_if_include": ",".join(export.node_networks(plan)), "prtereachable": "weighted"}


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_prte_file_by_name_names_the_cluster_nics(name):
    """Open MPI 5.0.0-5.0.7: the runtime held by NIC names, each the one of a node's
    cluster address, and no node has another NIC of one of those names."""
    plan = _plan(name)
    names, problem = mpi.cluster_nic_names(plan)
    union = {mpi.cluster_interface(n)["name"] for n in plan["nodes"].values()}
    clash = [n for n in plan["nodes"].values()
             if any(i["name"] in union and i is not mpi.cluster_interface(n) for i in n["interfaces"])]
    assert bool(problem) == bool(clash)
    if problem:            # custom-example: one node's cluster NIC is another's transit NIC
        assert names == [] and "the runtime of Open MPI 5.0.0-5.0.7" in problem
        return
    values = dict(line.split(" = ") for line in mpi.prte_mca(plan, by_name=True).splitlines()
                  if not line.startswith("#"))
    assert values["prte_if_include"] == ",".join(names)
    for node in plan["nodes"].values():
        held = [i for i in node["interfaces"] if i["name"] in names]
        assert held == [mpi.cluster_interface(node)]


def test_nic_names_that_mean_two_things_are_refused():
    """A node whose transit NIC has the name another node's cluster NIC has: names
    would let the runtime onto that transit network, so the problem names the node."""
    plan = copy.deepcopy(_plan("routed-mesh"))
    first, second = list(plan["nodes"].values())[:2]
    other = next(i for i in second["interfaces"] if i is not mpi.cluster_interface(second))
    mpi.cluster_interface(first)["name"] = other["name"]
    names, problem = mpi.cluster_nic_names(plan)
    assert names == [] and problem.startswith(list(plan["nodes"])[1] + ": its NIC ")


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_mpich_env_names_the_nic_of_each_cluster_address(name):
    plan = _plan(name)
    files = mpi.mpich_env_files(plan)
    assert list(files) == list(plan["nodes"])
    for node, text in files.items():
        env = dict(line.split("=", 1) for line in text.splitlines() if not line.startswith("#"))
        nic = next(i for i in plan["nodes"][node]["interfaces"] if i["name"] == env["FI_TCP_IFACE"])
        assert plan["nodes"][node]["address"] in [a.split("/")[0] for a in nic["addresses"]]
        assert env["FI_PROVIDER"] == "tcp"
    sections = re.findall(r"^\[(.+)\]$", mpi.mpich_env(plan), re.M)
    assert sections == list(plan["nodes"])


def test_mpich_env_follows_the_physical_names():
    plan = _plan("routed-mesh")
    node = plan["nodes"]["node-0-0"]
    mpi.cluster_interface(node)["name"] = "enp3s0"
    assert "FI_TCP_IFACE=enp3s0\n" in mpi.mpich_env_files(plan)["node-0-0"]


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_topology_yaml_parses_and_names_every_node_once(name):
    plan = _plan(name)
    doc = yaml.safe_load(slurm.topology_yaml(plan))
    assert [t["topology"] for t in doc] == [plan["topology"]["name"]]
    assert doc[0]["cluster_default"] is True
    switches = doc[0]["tree"]["switches"]
    named = [n for sw in switches for n in _expand(sw.get("nodes", ""))]
    assert sorted(named) == sorted(plan["nodes"])
    names = [sw["switch"] for sw in switches]
    assert len(set(names)) == len(names) and all(len(n) <= 64 for n in names)
    children = [c for sw in switches for c in _expand(sw.get("children", ""))]
    assert set(children) <= set(names) and len(children) == len(set(children))
    assert all(isinstance(v, str) for sw in switches for v in sw.values())


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_topology_yaml_has_the_switches_of_topology_conf(name):
    plan = _plan(name)
    conf = {}
    for line in slurm.topology_conf(plan).splitlines():
        if line.startswith("SwitchName="):
            fields = dict(f.split("=", 1) for f in line.split())
            key = {"Nodes": "nodes", "Switches": "children"}
            conf.setdefault(fields.pop("SwitchName"), {}).update({key[k]: v for k, v in fields.items()})
    yml = {sw.pop("switch"): sw for sw in yaml.safe_load(slurm.topology_yaml(plan))[0]["tree"]["switches"]}
    assert yml == conf


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_slurm_node_lines_reach_each_node_at_its_cluster_address(name):
    plan = _plan(name)
    slots = {n: i + 1 for i, n in enumerate(plan["nodes"])}
    lines = [line for line in slurm.nodes(plan, slots).splitlines() if not line.startswith("#")]
    parsed = [dict(f.split("=", 1) for f in line.split()) for line in lines]
    assert [p["NodeName"] for p in parsed] == list(plan["nodes"])
    for p in parsed:
        assert p["NodeAddr"] == plan["nodes"][p["NodeName"]]["address"]
        assert ipaddress.ip_address(p["NodeAddr"])
        assert int(p["CPUs"]) == slots[p["NodeName"]]


def test_slurm_nodes_take_slots_from_the_command_line(capsys):
    assert cli.main(["export", "topologies/switch-tree.yml", "slurm-nodes", "--slots", "8"]) == 0
    body = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    assert body and all(line.endswith(" CPUs=8") for line in body)


def test_build_writes_the_new_files(tmp_path):
    out = tmp_path / "out"
    assert cli.main(["build", "topologies/custom-example.yml", "-o", str(out)]) == 0
    plan = _plan("custom-example")
    assert (out / "prte-mca-params.conf").read_text() == mpi.prte_mca(plan)
    assert (out / "topology.yaml").read_text() == slurm.topology_yaml(plan)
    assert (out / "slurm-nodes.conf").read_text() == slurm.nodes(plan)
    assert (out / "mpich.env").read_text() == mpi.mpich_env(plan)
