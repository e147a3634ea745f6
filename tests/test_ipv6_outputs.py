"""The outputs of dual-stack and IPv6-only plans: the dry run, the paths, the exports,
build, the drawings, the view, diff and metrics show each family the plan has (IPv4
first), golden files for one dual-stack and one IPv6-only topology, the MPI files that
cannot be written refused, and a plan.json's IPv6 text checked by diff."""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, golden
from test_cli import run

from beonet.compiler import pipeline
from beonet.outputs import mpi, plan6
from beonet.outputs import plan as render
from beonet.outputs.ipfamily import Paths
from beonet.view import model

SIX = ROOT / "tests" / "ipv6"
DUAL, ONLY = str(SIX / "routed-mesh-dual.yml"), str(SIX / "routed-mesh-only.yml")
TREE_ONLY = str(SIX / "switch-tree-only.yml")
IPV4_TEXT = re.compile(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b")
GOLDEN = {"routes": ["routes"], "paths": ["paths", "--all"], "dot": ["graph", "--format", "dot"],
          "mermaid": ["graph", "--format", "mermaid"], "hosts": ["export", "hosts"],
          "slurm-nodes": ["export", "slurm-nodes"], "hostfile": ["export", "hostfile"],
          "openmpi-mca": ["export", "openmpi-mca"], "prte-mca": ["export", "prte-mca"]}


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def cli_text(capsys, what: list[str], topology: str) -> str:
    argv = [what[0], topology, *what[1:]] if what[0] != "export" else ["export", topology, what[1]]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    return out


@pytest.mark.parametrize("what", sorted(GOLDEN))
@pytest.mark.parametrize("topology", ["routed-mesh-dual", "switch-tree-only"])
def test_golden_outputs(capsys, topology, what):
    out = cli_text(capsys, GOLDEN[what], "tests/ipv6/%s.yml" % topology)
    golden(ROOT / "tests" / "golden" / ("%s.%s" % (topology, what)), out)


@pytest.mark.parametrize("what", sorted(GOLDEN))
def test_an_ipv6_only_output_shows_no_ipv4_address(capsys, what):
    assert not IPV4_TEXT.findall(cli_text(capsys, GOLDEN[what], ONLY))


def test_the_dry_run_header_shows_both_addresses(capsys):
    dual = cli_text(capsys, ["routes", "--node", "node-0-0"], DUAL).splitlines()[0]
    only = cli_text(capsys, ["routes", "--node", "node-0-0"], ONLY).splitlines()[0]
    assert dual == "# node-0-0  address 10.0.0.1  address6 fd76:db0c:60c::1  forwarding on"
    assert only == "# node-0-0  address6 fd76:db0c:60c::1  forwarding on"


def test_hosts_lists_ipv4_then_ipv6_each_node_once_in_each(capsys):
    lines = cli_text(capsys, ["export", "hosts"], DUAL).splitlines()[1:]
    nodes = [line.split() for line in lines if "-eth" not in line.split()[1]]
    assert len(nodes) == 32
    assert all(":" not in a for a, _n in nodes[:16]) and all(":" in a for a, _n in nodes[16:])
    assert [n for _a, n in nodes[:16]] == [n for _a, n in nodes[16:]]


def interface_of(plan: dict, address: str) -> tuple[str, str]:
    """(node, NIC) holding address, or the node whose own address it is."""
    for name, n in plan["nodes"].items():
        if address in (n.get("address"), n.get("address6")):
            return name, "node"
    return next((name, i["name"]) for name, n in plan["nodes"].items() for i in n["interfaces"]
                if any(a.split("/")[0] == address for a in i["addresses"]))


def test_each_ipv6_hop_is_the_ipv6_address_of_the_ipv4_hops_interface():
    compiled = pipeline.compile_file(DUAL)
    plan, paths = render.plan(compiled), Paths(compiled)
    hops = [h for a in plan["nodes"] for b in plan["nodes"] if a != b
            for branch in paths.path(a, b) or [] for h in branch]
    assert hops and all(interface_of(plan, h["address"]) == interface_of(plan, h["address6"])
                        for h in hops)
    assert all(isinstance(ipaddress.ip_address(h["address6"]), ipaddress.IPv6Address) for h in hops)


def test_ipv6_only_paths_are_the_dual_stack_ipv6_paths(capsys):
    dual = json.loads(cli_text(capsys, ["paths", "--all", "--format", "json"], DUAL))
    only = json.loads(cli_text(capsys, ["paths", "--all", "--format", "json"], ONLY))
    six = {a: {b: [[{"node": h["node"], "address6": h["address6"]} for h in branch] for branch in bs]
               for b, bs in row.items()} for a, row in dual.items()}
    assert only == six


def test_paths_text_gives_the_ipv4_lines_then_the_ipv6_ones(capsys):
    lines = cli_text(capsys, ["paths", "--from", "node-0-0", "--to", "node-3-3"], DUAL).splitlines()
    assert [" -6 " in line for line in lines] == [False, False, True, True]
    assert lines[2] == "node-0-0 -> node-3-3 -6 (2 hops): fd76:db0c:60c:3::1 fd76:db0c:60c:3::4"


def test_compile_with_paths_gives_each_familys_hops(capsys):
    dual = json.loads(cli_text(capsys, ["compile", "--paths"], DUAL))
    only = json.loads(cli_text(capsys, ["compile", "--paths"], ONLY))
    assert dual["paths6"] == only["paths6"] and "paths" not in only
    assert dual["paths"]["node-0-0"]["node-3-3"][0] == ["10.0.3.1", "10.0.3.4"]


def test_slurm_node_lines_take_the_ipv6_address_and_say_what_slurm_needs(capsys):
    out = cli_text(capsys, ["export", "slurm-nodes"], ONLY)
    assert "NodeName=node-0-0 NodeAddr=fd76:db0c:60c::1 CPUs=1" in out
    assert "CommunicationParameters=EnableIPv6,DisableIPv4" in out
    assert "EnableIPv6" not in cli_text(capsys, ["export", "slurm-nodes"], DUAL)


def test_ipv6_only_mpi_settings_name_the_cluster_nics(capsys):
    out = cli_text(capsys, ["export", "openmpi-mca"], TREE_ONLY)
    assert "btl_tcp_if_include = eth1\noob_tcp_if_include = eth1\n" in out
    assert "--enable-ipv6" in out
    env = cli_text(capsys, ["export", "mpich-env"], ONLY)
    assert "the NIC of its cluster address fd76:db0c:60c::1" in env


def test_ipv6_only_mpi_names_that_differ_from_node_to_node_are_refused(capsys):
    plan = render.plan(pipeline.compile_file(ONLY))
    node = plan["nodes"]["node-0-0"]
    node["address6"] = node["interfaces"][1]["addresses"][0].split("/")[0]    # its eth2's
    why = "node-0-0: its NIC eth1 has a name another node.s cluster address is on .eth1, eth2.; Open MPI"
    with pytest.raises(mpi.MpiError, match=why):
        mpi.include_value(plan)
    assert mpi.include_value(render.plan(pipeline.compile_file(DUAL))) == mpi.include_value(
        render.plan(pipeline.compile_file("topologies/routed-mesh.yml")))


def test_the_mpich_machine_file_of_an_ipv6_only_plan_names_the_nodes(capsys):
    # an IPv6 address's ':' would read as the slots': the names, resolved by the hosts export
    code, out, err = run(capsys, "export", ONLY, "mpich-hosts", "--slots", "2")
    assert code == 0 and err == "" and out.splitlines()[:2] == ["node-0-0:2", "node-0-1:2"]
    code, dual, _err = run(capsys, "export", DUAL, "mpich-hosts")
    assert code == 0 and dual.splitlines()[0] == "10.0.0.1:1"


def test_build_writes_both_families(capsys, tmp_path):
    out = tmp_path / "b"
    out.mkdir()
    code, _out, err = run(capsys, "build", ONLY, "-o", str(out))
    assert code == 0 and err == ""
    assert (out / "mpich.hosts").read_text().startswith("node-0-0:1\n")
    assert "fd76:db0c:60c::1 node-0-0" in (out / "hosts").read_text()
    assert not IPV4_TEXT.findall((out / "routes.txt").read_text())
    code, _out, err = run(capsys, "build", DUAL, "-o", str(tmp_path / "d"))
    hosts = (tmp_path / "d" / "hosts").read_text()
    assert code == 0 and err == "" and "10.0.0.1        node-0-0" in hosts and "fd76:db0c:60c::1" in hosts
    assert (tmp_path / "d" / "mpich.hosts").read_text().startswith("10.0.0.1:1\n")


@pytest.mark.parametrize("topology", [DUAL, ONLY, TREE_ONLY])
def test_the_prefixes_from_the_plan_are_those_from_the_graph(topology):
    compiled = pipeline.compile_file(topology)
    nets = render.prefixes(render.plan(compiled))
    assert nets == render.graph_prefixes(compiled.graph)
    four = [n for n in nets if ":" not in n]
    assert bool(four) == compiled.graph.v4 and any(":" in n for n in nets)
    assert nets == four + [n for n in nets if ":" in n]


def test_the_view_of_an_ipv6_only_plan_shows_ipv6(capsys, tmp_path):
    compiled = pipeline.compile_file(ONLY)
    plan = render.plan(compiled)
    data = model.build(plan, compiled).data
    assert data["nodes"][0][:2] == ["node-0-0", "fd76:db0c:60c::1"]
    six = data["routing"]["six"]
    own = {n["address6"] for n in plan["nodes"].values()}
    assert {six[str(a)] for a in data["routing"]["address"]} == own
    dual = model.build(render.plan(pipeline.compile_file(DUAL)), pipeline.compile_file(DUAL)).data
    assert dual["nodes"][0][1] == "10.0.0.1 fd76:db0c:60c::1" and dual["routing"]["families"] == [4, 6]
    assert data["routing"]["families"] == [6]
    code, _out, err = run(capsys, "view", TREE_ONLY, "-o", str(tmp_path / "v.html"))
    assert code == 0 and "fdd5:5b69:622d::1" in (tmp_path / "v.html").read_text()


def test_metrics_of_an_ipv6_only_plan(capsys):
    code, out, err = run(capsys, "metrics", ONLY)
    assert code == 0 and "routed-mesh (mesh)" in out


# --- diff -------------------------------------------------------------------


def variant(tmp_path: Path, source: str, name: str, **addressing) -> str:
    data = yaml.safe_load(Path(source).read_text())
    data["addressing"].update(addressing)
    path = tmp_path / ("%s.yml" % name)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_a_changed_ipv6_pool_is_a_difference(capsys, tmp_path):
    pools = variant(tmp_path, ONLY, "pools", ipv6={"lan": "fd00:1::/48", "p2p": "fd00:2::/48"})
    code, out, _err = run(capsys, "diff", ONLY, pools, "--format", "json")
    found = json.loads(out)
    assert code == 1 and not found["same"] and found["paths_changed"]["count"] == 0
    assert {"node": "node-0-0", "what": "node address6", "old": ["fd76:db0c:60c::1"],
            "new": ["fd00:1::1"]} in found["renumbered"]
    assert found["nodes_changed"]["node-0-0"]["address6"] == ["fd76:db0c:60c::1", "fd00:1::1"]
    dual_pools = variant(tmp_path, DUAL, "dual-pools", ipv6={"lan": "fd00:1::/48", "p2p": "fd00:2::/48"})
    code, out, _err = run(capsys, "diff", DUAL, dual_pools)
    assert code == 1 and "address6: fd76:db0c:60c::1 -> fd00:1::1" in out


def test_the_same_plans_in_either_family_exit_0(capsys, tmp_path):
    for source in (DUAL, ONLY):
        out = tmp_path / Path(source).stem
        assert run(capsys, "build", source, "-o", str(out))[0] == 0
        code, text, _err = run(capsys, "diff", str(out / "plan.json"), source)
        assert code == 0 and text.endswith("the plans are the same\n")


def failover_off(tmp_path: Path, source: str) -> str:
    data = yaml.safe_load(Path(source).read_text())
    data["routing"] = {"failover": False}
    path = tmp_path / ("%s-static.yml" % Path(source).stem)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_ipv6_only_paths_change_as_the_dual_stack_ones(capsys, tmp_path):
    counts = []
    for source in (DUAL, ONLY):
        code, out, _err = run(capsys, "diff", source, failover_off(tmp_path, source), "--format", "json")
        assert code == 1
        counts.append(json.loads(out)["paths_changed"])
    assert counts[0] == counts[1] and counts[0]["count"] > 0


def test_dual_stack_to_ipv6_only_keeps_the_paths(capsys):
    code, out, _err = run(capsys, "diff", DUAL, ONLY, "--format", "json")
    found = json.loads(out)
    assert code == 1 and found["paths_changed"]["count"] == 0
    assert found["nodes_changed"]["node-0-0"]["address"] == ["10.0.0.1", None]


def _node(p: dict) -> dict:
    return p["nodes"]["node-0-0"]


SPOILS = [
    (lambda p: _node(p).update(address6="fd76::zz"),
     "node-0-0: plan.address6: 'fd76::zz' is not an IPv6 address"),
    (lambda p: _node(p).update(address6=7), "node-0-0: plan.address6: must be an IPv6 address, not a number"),
    (lambda p: _node(p)["interfaces"][0]["addresses"].__setitem__(0, "fd76:db0c:60c::1/129"),
     "node-0-0: plan.interfaces[0].addresses[0]: 'fd76:db0c:60c::1/129' is not an IPv6 interface"),
    (lambda p: _node(p)["routes"][0].update(to="fd76:db0c:60c:1::1/64"),
     "node-0-0: plan.routes[0].to: 'fd76:db0c:60c:1::1/64' is not an IPv6 network"),
    (lambda p: _node(p)["routes"][1]["nexthops"][1].update(via="fd76::1::2"),
     "node-0-0: plan.routes[1].nexthops[1].via: 'fd76::1::2' is not an IPv6 address"),
    (lambda p: _node(p)["routes"][0].update(dev="eth 1"), "node-0-0: plan.routes[0].dev:"),
    (lambda p: p["segments"]["d0-0"].update(prefix6="fd76:db0c:60c::/200"),
     "segments.d0-0.prefix6: 'fd76:db0c:60c::/200' is not an IPv6 network"),
    (lambda p: p["segments"]["d0-0"]["members"][0].update(address6=["fd76::1"]),
     "segments.d0-0.members[0].address6: must be an IPv6 address, not a list"),
]


def diff_of_spoiled(capsys, tmp_path: Path, spoil) -> str:
    """diff's error for the built IPv6-only plan.json spoiled (it must exit 2, print
    nothing, name the file and show no traceback)."""
    assert run(capsys, "build", ONLY, "-o", str(tmp_path / "b"))[0] == 0
    plan = json.loads((tmp_path / "b" / "plan.json").read_text())
    spoil(plan)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(plan))
    code, out, err = run(capsys, "diff", str(bad), ONLY)
    assert code == 2 and out == "" and "Traceback" not in err and str(bad) in err
    return err


@pytest.mark.parametrize("spoil,message", SPOILS)
def test_bad_ipv6_text_in_a_plan_json_is_refused_naming_the_key(capsys, tmp_path, spoil, message):
    assert message in diff_of_spoiled(capsys, tmp_path, spoil)


def test_a_loopback6_must_be_a_128():
    node = {"routing": {"engine": "frr", "loopback6": "fd00::1/64"}}
    four, six = plan6.split(node)
    assert "loopback6" not in four["routing"]
    assert plan6.problems6("n", six) == ["n: plan.routing.loopback6: must be a /128"]


def test_the_ipv4_part_of_a_dual_stack_node_is_its_ipv4_plan():
    dual = render.plan(pipeline.compile_file(DUAL))
    four = render.plan(pipeline.compile_file("topologies/routed-mesh.yml"))
    for name, n in dual["nodes"].items():
        part, six = plan6.split(n)
        assert part == four["nodes"][name] and plan6.problems6(name, six) == []


# --- what the playbooks are given ---------------------------------------------


def test_the_paths_given_to_verify_are_ipv6_on_an_ipv6_only_plan():
    from beonet import controller
    from beonet.outputs import topology_task
    results = [controller.run("beonet_topology", topology_task.ARGUMENT_SPEC, topology_task.compile_task,
                              {"topology": t, "paths": True}, False, False) for t in (DUAL, ONLY)]
    dual, only = (r["paths"]["node-0-0"]["node-3-3"] for r in results)
    assert dual == [["10.0.3.1", "10.0.3.4"], ["10.0.0.4", "10.0.3.4"]]
    assert only == [["fd76:db0c:60c:3::1", "fd76:db0c:60c:3::4"], ["fd76:db0c:60c::4", "fd76:db0c:60c:3::4"]]


def test_a_rolling_push_asks_the_neighbours_at_the_plans_addresses():
    from beonet.outputs import rolling
    dual, only, four = (rolling.node_neighbours(render.plan(pipeline.compile_file(t)), "node-0-0")
                        for t in (DUAL, ONLY, "topologies/routed-mesh.yml"))
    assert dual == four and [t["node"] for t in only] == [t["node"] for t in four]
    assert only[0] == {"nic": "eth1", "address": "fd76:db0c:60c::2", "node": "node-1-0"}


def test_a_whole_slurm_conf_of_an_ipv6_only_plan_turns_slurms_ipv6_on():
    from beonet.outputs import slurm
    only = slurm.slurm_conf(render.plan(pipeline.compile_file(TREE_ONLY)), "node01")
    assert "SlurmctldHost=node01(fdd5:5b69:622d::1)\n" in only
    assert "\nCommunicationParameters=EnableIPv6,DisableIPv4\n" in only
    assert "CommunicationParameters" not in slurm.slurm_conf(render.plan(pipeline.compile_file(DUAL)))


def _mixed(p: dict) -> None:
    p["nodes"]["node-0-1"]["address"] = "10.0.1.1"


def _neither(p: dict) -> None:
    del p["nodes"]["node-0-1"]["address6"]


@pytest.mark.parametrize("spoil,message", [
    (_mixed, "nodes.node-0-0.address: missing, while node node-0-1 has one"),
    (_neither, "nodes.node-0-1: no address nor address6"),
])
def test_a_plan_json_with_families_that_differ_by_node_is_refused(capsys, tmp_path, spoil, message):
    assert message in diff_of_spoiled(capsys, tmp_path, spoil)
