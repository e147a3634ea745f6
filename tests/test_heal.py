"""Compiling with nodes down (heal): addresses of the full plan, routes and
proof over the live nodes, partitions named; the CLI's --down option."""

import json
from collections import deque

import pytest
from conftest import ROOT

from beonet import cli
from beonet.compiler import heal, pipeline
from beonet.compiler.errors import CompileError
from beonet.compiler.model import ip_int
from beonet.outputs import plan as render

CHAIN = """\
name: chain
family: custom
custom:
  nodes: [a, b, c, d, e]
  segments:
    - {name: ab, members: [a, b]}
    - {name: bcd, members: [b, c, d]}
  links:
    - ends: [d, e]
"""

# (topology, nodes to put down): a plain node and a forwarding one of each family.
CASES = [
    ("routed-mesh.yml", ["node-1-1"]),
    ("routed-mesh.yml", ["node-0-0", "node-2-3", "node-3-1"]),
    ("routed-mesh-2x3.yml", ["node-0-1"]),
    ("metanode-testbed.yml", ["node01"]),
    ("metanode-fig2.yml", None),                # None: the first two forwarding nodes of the full plan
    ("routed-mesh-2x2.yml", None),
    ("switch-tree-3.yml", ["node01", "node05"]),
    ("custom-example.yml", ["a3"]),
    ("custom-example.yml", ["head"]),
    ("bonded-dual-net-4.yml", ["node02"]),
    ("backends-chain.yml", ["node-netplan"]),
]


def _segments_of(plan):
    """node -> the routed segments it is on (channels are layer 2)."""
    out = {name: [] for name in plan["nodes"]}
    for seg_name, seg in plan["segments"].items():
        if seg["kind"] != "channel":
            for m in seg["members"]:
                out[m["node"]].append(seg_name)
    return out


def _hops(plan, src):
    """IP hops from src to every live node it reaches, by a BFS over the plan's
    segments (independent of the compiler's own graph code)."""
    on = _segments_of(plan)
    members = {s: [m["node"] for m in seg["members"]] for s, seg in plan["segments"].items()}
    dist = {src: 0}
    todo = deque([src])
    while todo:
        x = todo.popleft()
        for s in on[x]:
            for y in members[s]:
                if y not in dist:
                    dist[y] = dist[x] + 1
                    todo.append(y)
    return dist


def _down_for(compiled, down):
    if down is not None:
        return down
    return [n.name for n in compiled.graph.nodes if n.forwarding][:2]


@pytest.mark.parametrize("topo,down", CASES)
def test_live_plan_keeps_every_address_of_the_full_plan(topo, down):
    path = str(ROOT / "topologies" / topo)
    full_compiled = pipeline.compile_file(path)
    down = _down_for(full_compiled, down)
    full = render.plan(full_compiled)
    live = render.plan(pipeline.compile_file(path, down=down))
    assert live["down"] == down
    assert list(live["nodes"]) == [n for n in full["nodes"] if n not in down]
    for name, node in live["nodes"].items():
        before = full["nodes"][name]
        assert node["address"] == before["address"]
        assert [(i["name"], i["addresses"]) for i in node["interfaces"]] == \
            [(i["name"], i["addresses"]) for i in before["interfaces"]]
        assert node["index"] == list(live["nodes"]).index(name)
    for seg_name, seg in live["segments"].items():
        before = full["segments"][seg_name]
        assert seg.get("prefix") == before.get("prefix")
        assert seg["members"] == [m for m in before["members"] if m["node"] not in down]
    gone = [s for s, seg in full["segments"].items()
            if all(m["node"] in down for m in seg["members"])]
    assert sorted(gone) == sorted(set(full["segments"]) - set(live["segments"]))


@pytest.mark.parametrize("topo,down", CASES)
def test_live_routes_avoid_the_down_nodes_and_are_shortest(topo, down):
    path = str(ROOT / "topologies" / topo)
    full = pipeline.compile_file(path)
    down = _down_for(full, down)
    dead = {a for name in down for i in full.graph.by_name[name].interfaces for a in i.addresses}
    compiled = pipeline.compile_file(path, down=down)
    plan = render.plan(compiled)
    for node in plan["nodes"].values():
        assert not {ip_int(r["via"]) for r in node["routes"]} & dead
    cut = {tuple(p) for p in plan.get("partition", [])}
    pairs = 0
    for a in plan["nodes"]:
        dist = _hops(plan, a)
        for b in plan["nodes"]:
            if a == b:
                continue
            branches = compiled.path(a, b)
            if b not in dist:
                assert branches is None and ((a, b) in cut or (b, a) in cut)
                continue
            pairs += 1
            assert branches, (a, b)
            for hops in branches:
                assert len(hops) == dist[b], (a, b, hops)
                assert not {h["node"] for h in hops} & set(down)
    assert plan["metrics"]["pairs"] == pairs
    assert plan["metrics"]["nodes"] == len(plan["nodes"])


def test_a_dead_cut_vertex_partitions_the_chain():
    compiled = pipeline.compile_text(CHAIN, "chain.yml", down="b")
    plan = render.plan(compiled)
    assert plan["down"] == ["b"]
    assert plan["components"] == [["a"], ["c", "d", "e"]]
    assert plan["partition"] == [["a", "c"], ["a", "d"], ["a", "e"]]
    assert compiled.reachable("c", "e") and not compiled.reachable("e", "a")
    assert compiled.path("a", "c") is None
    assert [[h["node"] for h in hops] for hops in compiled.path("c", "e")] == [["d", "e"]]
    # the proof of c, d, e: 6 ordered pairs, d forwards c <-> e
    assert plan["metrics"]["pairs"] == 6 and plan["metrics"]["hops"] == {"1": 4, "2": 2}
    assert [n for n, v in plan["nodes"].items() if v["forwarding"]] == ["d"]
    assert compiled.proof.forwarded == {compiled.graph.by_name["d"].index: 2}
    assert plan["nodes"]["a"]["routes"] == []
    # the p2p link d--e keeps both ends; the LAN ab keeps its live member and prefix
    assert [m["node"] for m in plan["segments"]["ab"]["members"]] == ["a"]


@pytest.mark.parametrize("down", ["d", "b", "a,e", "b,c"])
def test_chain_keeps_the_full_plans_prefixes_and_addresses(down):
    # a custom LAN's prefix is the smallest holding its members' host numbers:
    # made on the live members only, it would shrink when d (host 3 of bcd) is down
    full = render.plan(pipeline.compile_text(CHAIN, "chain.yml"))
    live = render.plan(pipeline.compile_text(CHAIN, "chain.yml", down=down))
    for name, seg in live["segments"].items():
        assert seg["prefix"] == full["segments"][name]["prefix"]
        for m in seg["members"]:
            assert m in full["segments"][name]["members"]
    for name, node in live["nodes"].items():
        assert node["interfaces"] == full["nodes"][name]["interfaces"]


def test_three_parts_and_the_plan_keys_in_order():
    plan = render.plan(pipeline.compile_text(CHAIN, "chain.yml", down=["b", "d"]))
    assert plan["components"] == [["a"], ["c"], ["e"]]
    assert plan["partition"] == [["a", "c"], ["a", "e"], ["c", "e"]]
    assert list(plan)[-3:] == ["down", "partition", "components"]
    assert plan["metrics"]["pairs"] == 0


def test_no_partition_no_partition_keys():
    plan = render.plan(pipeline.compile_text(CHAIN, "chain.yml", down="c"))
    assert plan["down"] == ["c"] and "partition" not in plan and "components" not in plan
    full = render.plan(pipeline.compile_text(CHAIN, "chain.yml"))
    assert "down" not in full and "partition" not in full


def test_mesh_pair_whose_gateways_are_both_down_is_cut():
    path = str(ROOT / "topologies/routed-mesh-2x2.yml")
    one = render.plan(pipeline.compile_file(path, down="node-0-1"))
    assert "partition" not in one                       # node-1-0 is the other gateway
    assert one["nodes"]["node-1-0"]["forwarding"]
    both = render.plan(pipeline.compile_file(path, down="node-0-1,node-1-0"))
    assert both["partition"] == [["node-0-0", "node-1-1"]]
    assert not any(v["forwarding"] for v in both["nodes"].values())


def test_one_survivor():
    plan = render.plan(pipeline.compile_text(CHAIN, "chain.yml", down="a,b,c,d"))
    assert list(plan["nodes"]) == ["e"] and plan["metrics"]["pairs"] == 0
    assert plan["metrics"]["bisection"]["crossing_mbit"] == 0


def test_tree_switches_lose_the_down_nodes():
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/switch-tree-3.yml"),
                                             down="node01"))
    names = [n for sw in plan["switches"].values() for n in sw["nodes"]]
    assert "node01" not in names and sorted(names) == sorted(plan["nodes"])


@pytest.mark.parametrize("down,message", [
    ("x", "chain.yml: down: no node named 'x' in the topology"),
    ("a,x,y", "chain.yml: down: no nodes named 'x', 'y' in the topology"),
    ("a,b,c,d,e", "chain.yml: down: every node of the topology is down: no plan to make"),
])
def test_bad_down_lists_are_errors(down, message):
    with pytest.raises(heal.DownError) as exc:
        pipeline.compile_text(CHAIN, "chain.yml", down=down)
    assert [str(p) for p in exc.value.problems] == [message]
    assert isinstance(exc.value, CompileError)


@pytest.mark.parametrize("given,names", [
    (None, []), ("", []), ("a", ["a"]), (" a, b,,a ", ["a", "b"]), (["a,b", "c", "a"], ["a", "b", "c"]),
])
def test_parse(given, names):
    assert heal.parse(given) == names


def test_warning_names_the_parts_and_shortens_long_ones():
    text = heal.warning(["b"], [["a"], ["n%d" % i for i in range(10)]], shown=3)
    assert text == ("with b down the live nodes fall into 2 parts that cannot reach each "
                    "other: [a]; [n0, n1, n2 and 7 more]")


# --- the command line -----------------------------------------------------------

def _run(capsys, *argv):
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def chain(tmp_path):
    path = tmp_path / "chain.yml"
    path.write_text(CHAIN)
    return str(path)


def test_cli_compile_down_warns_of_the_partition(capsys, chain):
    code, out, err = _run(capsys, "compile", chain, "--down", "b", "--paths")
    assert code == 0
    assert err == ("beonet: warning: with b down the live nodes fall into 2 parts that "
                   "cannot reach each other: [a]; [c, d, e]\n")
    plan = json.loads(out)
    assert plan["down"] == ["b"] and plan["partition"] == [["a", "c"], ["a", "d"], ["a", "e"]]
    assert plan["paths"] == {"c": {"d": [["10.0.1.3"]], "e": [["10.0.1.3", "10.255.0.1"]]},
                             "d": {"c": [["10.0.1.2"]], "e": [["10.255.0.1"]]},
                             "e": {"c": [["10.255.0.0", "10.0.1.2"]], "d": [["10.0.1.3"]]}}


def test_cli_down_without_partition_is_quiet(capsys, chain):
    code, out, err = _run(capsys, "compile", chain, "--down", "c")
    assert code == 0 and err == ""
    assert json.loads(out)["down"] == ["c"]


@pytest.mark.parametrize("argv,message", [
    (["compile", "--down", "x"], "beonet compile: --down: no node named 'x' in the topology\n"),
    (["routes", "--down", "a,b,c,d,e"],
     "beonet routes: --down: every node of the topology is down: no plan to make\n"),
    (["paths", "--down", "q", "--all"], "beonet paths: --down: no node named 'q' in the topology\n"),
])
def test_cli_bad_down_is_a_usage_error(capsys, chain, argv, message):
    code, out, err = _run(capsys, argv[0], chain, *argv[1:])
    assert code == 2 and out == "" and err == message


def test_cli_build_bad_down_is_a_usage_error_and_writes_nothing(capsys, chain, tmp_path):
    out_dir = tmp_path / "out"
    code, _out, err = _run(capsys, "build", chain, "--down", "zz", "-o", str(out_dir))
    assert code == 2 and err == "beonet build: --down: no node named 'zz' in the topology\n"
    assert not out_dir.exists()


def test_cli_paths_skip_and_refuse_cut_pairs(capsys, chain):
    code, out, _err = _run(capsys, "paths", chain, "--down", "b", "--all")
    assert code == 0
    assert [line.split(" (")[0] for line in out.splitlines()] == [
        "c -> d", "c -> e", "d -> c", "d -> e", "e -> c", "e -> d"]
    code, out, _err = _run(capsys, "paths", chain, "--down", "b", "--from", "a")
    assert code == 0 and out == "\n"
    code, _out, err = _run(capsys, "paths", chain, "--down", "b", "--from", "e", "--to", "a")
    assert code == 2 and err.endswith("beonet paths: e cannot reach a: the live nodes are partitioned\n")
    code, _out, err = _run(capsys, "paths", chain, "--down", "b", "--from", "b")
    assert code == 2 and err.endswith("beonet paths: --from: node 'b' is down (--down)\n")


def test_cli_routes_metrics_export_build_with_down(capsys, chain, tmp_path):
    code, out, _err = _run(capsys, "routes", chain, "--down", "c")
    assert code == 0 and "# c " not in out and "# d  address 10.0.1.3  forwarding on" in out
    code, out, _err = _run(capsys, "metrics", chain, "--down", "c", "--format", "json")
    assert code == 0 and json.loads(out)["nodes"] == 4
    code, out, _err = _run(capsys, "export", chain, "hosts", "--down", "c")
    assert code == 0 and "10.0.1.2" not in out and "10.0.1.3        d" in out
    out_dir = tmp_path / "out"
    code, out, err = _run(capsys, "build", chain, "--down", "b", "-o", str(out_dir))
    assert code == 0 and "files of 4 nodes" in out and "[a]; [c, d, e]" in err
    assert sorted(p.name for p in (out_dir / "nodes").iterdir()) == ["a", "c", "d", "e"]
    plan = json.loads((out_dir / "plan.json").read_text())
    assert plan["down"] == ["b"] and plan["components"] == [["a"], ["c", "d", "e"]]


def test_cli_down_is_on_every_compiling_command(capsys):
    for command in ("compile", "routes", "paths", "metrics", "graph", "export", "build"):
        _code, out, _err = _run(capsys, command, "-h")
        assert "--down NODE[,NODE...]" in out, command
    _code, out, _err = _run(capsys, "cabling", "-h")
    assert "--down" not in out


@pytest.mark.parametrize("argv", [
    ["graph", "--format", "dot"], ["graph", "--format", "mermaid"], ["export", "cabling"],
])
def test_cli_drawings_and_cabling_leave_out_links_to_down_nodes(capsys, argv):
    # node01 of the testbed has point-to-point links: their other ends stay, alone
    topo = str(ROOT / "topologies/metanode-testbed.yml")
    code, full, _err = _run(capsys, argv[0], topo, *argv[1:])
    assert code == 0 and "node01" in full
    code, out, err = _run(capsys, argv[0], topo, *argv[1:], "--down", "node01")
    assert code == 0 and err == ""
    assert "node01" not in out and "node02" in out
