"""The `beonet` command line: version, help, drawings (dot, Mermaid, SVG, PNG),
metrics table, paths, build and usage errors."""

import argparse
import json
import os
import sys
import time

import pytest
from conftest import ROOT, needs_host

import beonet
from beonet import cli
from beonet.compiler import pipeline, prove
from beonet.compiler.errors import Problems
from beonet.outputs import build, dryrun, metrics, tree
from beonet.outputs import plan as render

MESH = str(ROOT / "topologies/routed-mesh-2x2.yml")
BONDED = str(ROOT / "topologies/bonded-dual-net-4.yml")
CUSTOM = str(ROOT / "topologies/custom-example.yml")
TREE = str(ROOT / "topologies/switch-tree.yml")
METANODE = str(ROOT / "topologies/metanode-testbed.yml")
needs_dot = needs_host("Graphviz's own rendering of beonet's drawing (the output of dot itself)", "dot")


def run(capsys, *argv):
    """(exit status, stdout, stderr) of one command."""
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:          # argparse: --version, -h, usage errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


# --- version and help ----------------------------------------------------------

def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out == "beonet %s\n" % beonet.__version__
    assert beonet.__version__.count(".") == 2


def _options(sub):
    return [a for a in sub._actions if a.dest != "help"]


def _commands(p=None, prefix=()):
    """(words, sub-parser, its help) of every command and every lab action, from the parser."""
    p = p or cli.parser()
    table = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in table._choices_actions}
    assert set(helps) == set(table.choices)
    for name, sub in table.choices.items():
        yield (*prefix, name), sub, helps[name]
        if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
            yield from _commands(sub, (*prefix, name))


def test_every_command_and_option_has_help():
    found = list(_commands())
    assert {"lab", "lab up", "lab down", "lab fault", "lab outage"} <= {" ".join(w) for w, _, _ in found}
    for words, sub, help_ in found:
        assert help_, "command %s has no help" % " ".join(words)
        for action in _options(sub):
            assert action.help, "beonet %s %s has no help" % (" ".join(words), action.option_strings
                                                             or action.dest)


def test_a_command_builds_only_its_own_options():
    """The other commands are listed (beonet -h) without their options: their modules
    are not imported to run this one."""
    table = next(a for a in cli.parser(["schema"])._actions if isinstance(a, argparse._SubParsersAction))
    assert set(table.choices) == set(cli.COMMANDS)
    assert [a.dest for a in _options(table.choices["compile"])] == []
    assert "output" in [a.dest for a in _options(table.choices["schema"])]


@pytest.mark.parametrize("words", [" ".join(w) for w, _, _ in _commands()])
def test_command_help_prints(capsys, words):
    code, out, _ = run(capsys, *words.split(), "-h")
    assert code == 0 and out.startswith("usage: beonet %s" % words)


def test_every_command_is_run_from_a_module_of_its_own_under_300_lines():
    folder = ROOT / "module_utils/beonet/cli"
    assert {module for module, _ in cli.COMMANDS.values()} <= {p.stem for p in folder.glob("*.py")}
    for path in folder.glob("*.py"):
        assert len(path.read_text().splitlines()) <= 300, path.name


# --- usage errors: exit 2, a message, no traceback ---------------------------

def test_build_needs_output(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "build", MESH)
    assert code == 2
    assert "-o" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []


def test_build_writes_into_output(capsys, tmp_path):
    code, out, _ = run(capsys, "build", MESH, "-o", str(tmp_path / "b"))
    assert code == 0 and "wrote plan.json" in out
    assert json.loads((tmp_path / "b/plan.json").read_text())["topology"]["name"] == "routed-mesh-2x2"


def test_outputs_are_not_flushed_one_by_one(capsys, tmp_path, monkeypatch):
    def no_fsync(fd):
        raise AssertionError("fsync on a CLI output")
    monkeypatch.setattr(os, "fsync", no_fsync)
    code, _, err = run(capsys, "build", MESH, "-o", str(tmp_path / "b"))
    assert code == 0, err
    assert (tmp_path / "b/nodes/node-0-0").is_dir()


def test_build_replaces_the_nodes_folder_as_a_whole(capsys, tmp_path):
    """A node of an earlier build that the new plan lacks leaves no files behind,
    and no staging folder is left over."""
    out = tmp_path / "b"
    assert run(capsys, "build", str(ROOT / "topologies/routed-mesh-2x3.yml"), "-o", str(out))[0] == 0
    assert (out / "nodes/node-1-2").is_dir()
    code, _, err = run(capsys, "build", MESH, "-o", str(out))
    assert code == 0, err
    assert sorted(os.listdir(out / "nodes")) == ["node-0-0", "node-0-1", "node-1-0", "node-1-1"]
    assert not [f for f in os.listdir(out) if f.startswith(".")]
    network = out / "nodes/node-0-0/etc/systemd/network"
    assert (network / "60-beonet-eth1.network").read_text().startswith("# Ansible managed")


@pytest.mark.parametrize("count", [1, 63, 64, 65, 1000, 4656, 8256])
def test_parts_cover_every_node_once(count):
    parts = build.parts(count)
    assert [i for part in parts for i in part] == list(range(count))
    assert len(parts) <= build.PARTS
    assert all(len(part) >= build.PART_NODES for part in parts[:-1])


@pytest.mark.parametrize("compact", [False, True])
def test_build_in_many_parts_writes_routes_in_node_order(capsys, tmp_path, monkeypatch, compact):
    """Parts shared by the writer and this process: routes.txt is every node's dry
    run in node order, whoever wrote which part, every node has its files, and
    plan.json holds every node (compact: made of each part's share)."""
    monkeypatch.setattr(build, "PART_NODES", 1)
    monkeypatch.setattr(build, "PARTS", 5)
    monkeypatch.setattr(render, "compact", lambda nodes: compact)
    topology = str(ROOT / "topologies/metanode-testbed.yml")
    out = tmp_path / "b"
    code, _, err = run(capsys, "build", topology, "-o", str(out))
    assert code == 0, err
    plans = render.node_plans(pipeline.compile_file(topology).graph)
    expected = "\n".join(dryrun.ip_route_text(n, name) for name, n in plans.items())
    assert (out / "routes.txt").read_text() == expected
    assert sorted(os.listdir(out / "nodes")) == sorted(plans)
    assert not [f for f in os.listdir(out / "nodes") if f.startswith(".")]
    text = (out / "plan.json").read_text()
    assert json.loads(text)["nodes"] == json.loads(json.dumps(plans))
    assert text.startswith('{"beonet"') == compact


def test_build_nodes_path_taken_by_a_file_is_an_error(capsys, tmp_path):
    out = tmp_path / "b"
    out.mkdir()
    (out / "nodes").write_text("x")
    code, _, err = run(capsys, "build", MESH, "-o", str(out))
    assert code == 2 and err.startswith("beonet build: cannot write ")
    assert (out / "nodes").read_text() == "x"
    assert not [f for f in os.listdir(out) if f.startswith(".")]


def test_background_writer_failure_is_reported(tmp_path):
    def fails():
        raise PermissionError(13, "Permission denied")
    with pytest.raises(OSError, match="Permission denied"):
        tree.Background(fails).wait()
    done = tmp_path / "done"
    tree.Background(lambda: done.write_text("y")).wait()
    assert done.read_text() == "y"
    job = tree.Background(lambda: time.sleep(60))
    job.cancel()
    assert job.pid == 0


def test_build_failing_proof_writes_nothing(capsys, tmp_path, monkeypatch):
    """The nodes' files are written while the routes are proved: a failed proof
    throws them away and leaves no output folder behind."""
    def failed(graph):
        problems = Problems()
        problems.add("nodes", "a made-up proof failure")
        return None, problems
    monkeypatch.setattr(prove, "prove", failed)
    code, _, err = run(capsys, "build", MESH, "-o", str(tmp_path / "b"))
    assert code == 2 and "a made-up proof failure" in err
    assert os.listdir(tmp_path) == []


def test_build_into_a_file_is_an_error(capsys, tmp_path):
    blocker = tmp_path / "f"
    blocker.write_text("x")
    code, _, err = run(capsys, "build", MESH, "-o", str(blocker))
    assert code == 2 and err.startswith("beonet build: ")
    assert blocker.read_text() == "x"


def test_output_onto_a_folder_is_an_error(capsys, tmp_path):
    code, out, err = run(capsys, "graph", MESH, "-o", str(tmp_path))
    assert code == 2 and out == ""
    assert err == "beonet graph: cannot write '%s': Is a directory\n" % tmp_path
    assert os.listdir(tmp_path) == []


def test_output_folder_missing_is_created(capsys, tmp_path):
    out = tmp_path / "new" / "plan.json"
    code, _, _ = run(capsys, "compile", MESH, "-o", str(out))
    assert code == 0 and json.loads(out.read_text())["nodes"]


def test_missing_topology_is_an_error(capsys, tmp_path):
    code, _, err = run(capsys, "metrics", str(tmp_path / "nope.yml"))
    assert code == 2 and err and "Traceback" not in err


@pytest.mark.parametrize("argv, words", [
    (["paths", MESH], "one of the arguments --from --all is required"),
    (["paths", MESH, "--from", "node-0-0", "--all"], "not allowed with"),
    (["paths", MESH, "--all", "--to", "node-0-0"], "--to goes with --from"),
    (["paths", MESH, "--from", "nobody"], "--from: no node 'nobody'"),
    (["paths", MESH, "--from", "node-0-0", "--to", "nobody"], "--to: no node 'nobody'"),
    (["graph", MESH, "--format", "gif"], "invalid choice"),
    (["metrics", MESH, "--format", "csv"], "invalid choice"),
    (["frobnicate"], "invalid choice"),
])
def test_usage_errors(capsys, argv, words):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert words in err and "Traceback" not in err


# --- paths ---------------------------------------------------------------------

def test_paths_all_lists_every_ordered_pair(capsys):
    code, out, _ = run(capsys, "paths", MESH, "--all")
    lines = out.splitlines()
    # one line per branch: the 4 diagonal pairs of the 2x2 mesh have two (failover)
    assert code == 0 and len(lines) == 4 * 3 + 4
    assert len({line.split(" (")[0] for line in lines}) == 12
    code, one, _ = run(capsys, "paths", MESH, "--from", "node-0-0")
    assert set(one.splitlines()) <= set(lines) and len(one.splitlines()) == 3 + 1


def test_paths_all_json_by_source(capsys):
    code, out, _ = run(capsys, "paths", MESH, "--all", "--format", "json")
    every = json.loads(out)
    assert code == 0 and sorted(every) == ["node-0-0", "node-0-1", "node-1-0", "node-1-1"]
    _, one, _ = run(capsys, "paths", MESH, "--from", "node-0-0", "--format", "json")
    assert json.loads(one) == every["node-0-0"]
    _, pair, _ = run(capsys, "paths", MESH, "--from", "node-0-0", "--to", "node-1-1")
    assert pair.startswith("node-0-0 -> node-1-1 (2 hops): ")


def test_paths_print_one_line_per_branch(capsys, tmp_path):
    """Node 0-0-0 reaches 1-1-1 by changing its three coordinates in any order (the
    failover host route goes over all three neighbours): 3! branches; with failover
    off, over the one chosen next hop only."""
    for failover, branches in (("true", 6), ("false", 1)):
        topo = tmp_path / ("cube-%s.yml" % failover)
        topo.write_text("name: cube\nfamily: mesh\nmesh: {dims: [2, 2, 2]}\n"
                        "routing: {failover: %s}\n" % failover)
        code, out, _ = run(capsys, "paths", str(topo), "--from", "node-0-0-0", "--to", "node-1-1-1")
        lines = out.splitlines()
        assert code == 0 and len(lines) == branches
        assert all(line.startswith("node-0-0-0 -> node-1-1-1 (3 hops): ") for line in lines)
        assert len(set(lines)) == branches
        _, text, _ = run(capsys, "compile", str(topo), "--paths")
        paths = json.loads(text)["paths"]["node-0-0-0"]["node-1-1-1"]
        assert [" ".join(hops) for hops in paths] == [line.split(": ")[1] for line in lines]


# --- metrics -------------------------------------------------------------------

def test_metrics_text_by_default(capsys):
    code, out, _ = run(capsys, "metrics", METANODE)
    assert code == 0
    assert out.startswith("metrics of metanode-testbed (metagraph)\n")
    for words in ("36 nodes, 4 LAN segments, 18 point-to-point links, 0 bond channels",
                  "1260 ordered pairs, diameter 3 hops",
                  "3 hops     432 pairs  34.3%",
                  "1 hop      324 pairs  25.7%",
                  "max 9, mean 9.0, total 324",
                  "900 Mbit/s across the worst bisection found (structure-aligned cuts and "
                  "local search: an upper bound)",
                  "25.0 Mbit/s per node = 0.25 of one 100 Mbit/s link",
                  "the papers' closed form (C/4)(L/(L-1)), whole groups on each side: 0.3333 of",
                  "structure-aligned cuts (whole groups, mesh halves): 1200 Mbit/s",
                  "local search (Fiduccia-Mattheyses, 10 starts,",
                  "weights: group0-group1 3,",
                  "uneven pairs: none"):
        assert words in out, words
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_metrics_bisection_budget(capsys):
    """A budget stops the local search early and says so; 0 lets it run to the end."""
    _, out, _ = run(capsys, "metrics", METANODE, "--bisection-budget", "10")
    assert "stopped by its budget (--bisection-budget)" in out
    _, out, _ = run(capsys, "metrics", METANODE, "--bisection-budget", "0", "--format", "json")
    search = json.loads(out)["bisection"]["search"]
    assert not search["budget_spent"] and search["crossing_mbit"] == 900
    code, _, err = run(capsys, "metrics", METANODE, "--bisection-budget", "-1")
    assert code == 2 and "--bisection-budget: a whole number from 0 to 1000000000, not '-1'" in err


def test_metrics_json_and_yaml_unchanged(capsys):
    _, out, _ = run(capsys, "metrics", TREE, "--format", "json")
    metrics = json.loads(out)
    assert metrics["bisection"]["oversubscription"] == 0.8
    _, text, _ = run(capsys, "metrics", TREE)
    assert "oversubscription: 0.8" in text and "uplink per node: 125.0 Mbit/s" in text
    _, yml, _ = run(capsys, "metrics", TREE, "--format", "yaml")
    assert "oversubscription: 0.8" in yml


def test_metrics_text_lists_unknown_keys():
    text = metrics.text("t", {"nodes": 2, "hops": {"1": 2}, "notes": ["first", "second"],
                                  "extra": {"a_b": 1}, "flag": True})
    assert "  notes             first\n                    second\n" in text
    assert "  extra             a b: 1\n" in text and "  flag              True\n" in text


# --- drawings ------------------------------------------------------------------

def _dot(capsys, topology):
    code, out, _ = run(capsys, "graph", topology)
    assert code == 0
    return out


def test_dot_bonded_lan_is_one_bundle(capsys):
    out = _dot(capsys, BONDED)
    assert "seg:net0-ch" not in out, "a bond channel is drawn as its own segment"
    assert out.count('label="bond0 (eth1+eth2)\\nsw-net0-ch0:') == 4
    assert 'color="#1f4e9c:invis:#1f4e9c"' in out          # two channels, two lines
    assert '"seg:net0" [shape="ellipse", label="net0\\n10.0.0.0/24\\nbonded, 2 channels"' in out


def test_dot_nic_names_on_edges(capsys):
    out = _dot(capsys, CUSTOM)
    # p2p: both ends' NICs; LAN member: the node's NIC at the node's end.
    assert ('"a3" -- "b1" [label="10.21.0.0/31\\na3--b1", color="#2e7d32", penwidth=2, '
            'taillabel="eth3", headlabel="eth2"];') in out
    assert '"seg:rack-b" -- "b3" [label="sw-rack-b:23", headlabel="eth1"];' in out
    tree = _dot(capsys, TREE)
    assert '"sw:leaf0" -- "node01" [label="leaf0:02", style="dashed", headlabel="eth1"];' in tree
    assert '"sw:root" -- "sw:leaf0" [label="1000 Mbit/s\\nleaf0:01", penwidth=3];' in tree


@pytest.mark.parametrize("topology, wanted, unwanted", [
    (CUSTOM, ["gateway", "bonded LAN", "point-to-point link", "LAN segment"], ["switch"]),
    (TREE, ["switch port", '"legend:switch"'], ["gateway", "bonded", "point-to-point"]),
    (MESH, ["gateway", "LAN segment", "NIC on a LAN"], ["bonded", "switch"]),
])
def test_dot_legend_explains_what_is_drawn(capsys, topology, wanted, unwanted):
    out = _dot(capsys, topology)
    legend = out[out.index("subgraph cluster_legend"):]
    legend = legend[:legend.index("\n  }\n")]
    for word in wanted:
        assert word in legend, word
    for word in unwanted:
        assert word not in legend, word


def test_dot_segments_boxed_when_each_node_is_on_one(capsys):
    assert 'subgraph "cluster_seg:group0"' in _dot(capsys, METANODE)
    assert "cluster_seg" not in _dot(capsys, MESH)


def test_mermaid_has_the_same_information(capsys):
    code, out, _ = run(capsys, "graph", CUSTOM, "--format", "mermaid")
    assert code == 0
    assert '(("rack-a-ch0' not in out
    assert out.count('===|"bond0 (eth1+eth2)<br/>sw-rack-a-ch0:') == 4
    assert '---|"eth3 – eth2<br/>10.21.0.0/31<br/>a3--b1"|' in out
    assert "subgraph legend [Legend]" in out and ":::gateway" in out
    assert "linkStyle 7,8 stroke:#2e7d32" in out


@needs_dot
def test_svg_rendered_with_legend(capsys, tmp_path):
    out = tmp_path / "mesh.svg"
    code, _, err = run(capsys, "graph", MESH, "--format", "svg", "-o", str(out))
    assert code == 0, err
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "Legend" in svg and "node&#45;0&#45;0" in svg
    code, stdout, _ = run(capsys, "graph", MESH, "--format", "svg")
    assert code == 0 and "<svg" in stdout


@needs_dot
def test_png_needs_output_and_is_written(capsys, tmp_path):
    code, out, err = run(capsys, "graph", BONDED, "--format", "png")
    assert code == 2 and out == "" and "give -o" in err
    png = tmp_path / "b.png"
    code, _, _ = run(capsys, "graph", BONDED, "--format", "png", "-o", str(png))
    assert code == 0 and png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def _fake_dot(tmp_path, monkeypatch):
    """A stand-in for Graphviz's dot, alone on PATH: it prints its -T option and the
    drawing it was given."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "dot"
    fake.write_text("#!%s\nimport sys\nsys.stdout.write(sys.argv[1] + '\\n' + sys.stdin.read())\n"
                    % sys.executable)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))


def test_images_go_through_dot_to_the_output(capsys, tmp_path, monkeypatch):
    """The drawing is handed to dot with the format asked for, and what dot prints is
    written to -o (or stdout for SVG); PNG, binary, needs -o."""
    _fake_dot(tmp_path, monkeypatch)
    code, out, err = run(capsys, "graph", BONDED, "--format", "png")
    assert code == 2 and out == "" and "give -o" in err
    png = tmp_path / "b.png"
    code, _, err = run(capsys, "graph", BONDED, "--format", "png", "-o", str(png))
    assert code == 0, err
    assert png.read_text().startswith("-Tpng\ngraph ") and "Legend" in png.read_text()
    code, out, _ = run(capsys, "graph", MESH, "--format", "svg")
    assert code == 0 and out.startswith("-Tsvg\ngraph ") and "node-0-0" in out


@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_image_without_graphviz(capsys, tmp_path, monkeypatch, fmt):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / ("g." + fmt)
    code, stdout, err = run(capsys, "graph", MESH, "--format", fmt, "-o", str(out))
    assert code == 2 and stdout == ""
    assert err == ("beonet graph: --format %s needs Graphviz's dot (apt-get install graphviz)\n"
                   % fmt)
    assert os.listdir(tmp_path) == []


def test_graphviz_failure_is_reported(capsys, tmp_path, monkeypatch):
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\necho 'syntax error in line 1' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, err = run(capsys, "graph", MESH, "--format", "svg", "-o", str(tmp_path / "g.svg"))
    assert code == 1 and "failed (exit 1): syntax error in line 1" in err
    assert not (tmp_path / "g.svg").exists()


def test_the_command_exits_with_main_status_and_flushed_output(tmp_path):
    """`beonet` (cli.run) leaves with os._exit: its output must be flushed first."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=str(ROOT / "module_utils"))
    ok = subprocess.run([sys.executable, "-m", "beonet.cli", "export", MESH, "hosts"],
                        capture_output=True, text=True, env=env, check=False)
    assert ok.returncode == 0 and ok.stdout.startswith("# /etc/hosts entries for routed-mesh-2x2")
    assert ok.stdout.endswith("\n")
    bad = tmp_path / "bad.yml"
    bad.write_text("name: x\n")
    failed = subprocess.run([sys.executable, "-m", "beonet.cli", "compile", str(bad)],
                            capture_output=True, text=True, env=env, check=False)
    assert failed.returncode == 2
    assert failed.stderr.endswith("beonet: 1 error, nothing written\n")


@pytest.mark.parametrize("text", [
    "name: m\nfamily: mesh\nipv6: false\nmesh: {dims: [4, 5, 6]}\n",
    open(METANODE, encoding="utf-8").read(),
    open(BONDED, encoding="utf-8").read(),
    "name: m\nfamily: mesh\nrouting: {failover: false}\nmesh: {dims: [3, 3, 3]}\n",
], ids=["mesh-ipv6-off", "metanode", "bonded", "mesh-failover-off"])
def test_compact_nodes_json_is_the_encoded_node_plans(text):
    """plan.json's nodes of a large plan are written straight from the graph:
    the same text as the node plans encoded, NICs renamed by an inventory too."""
    graph = pipeline.compile_text(text, "t.yml").graph
    physical = {n.name: {i.name: "enp%ds0" % k for k, i in enumerate(n.interfaces)}
                for n in graph.nodes[::2]}
    assert render.compact_nodes_json(graph, physical) == render.nodes_json(
        render.node_plans(graph, physical), compact_=True)


# --- lab: usage errors exit 2 before any lab is touched -------------------------

@pytest.mark.parametrize("argv,message", [
    (["lab"], "the following arguments are required: ACTION"),
    (["lab", "nosuch", "t.yml"], "invalid choice: 'nosuch'"),
    (["lab", "up"], "the following arguments are required: topology"),
    (["lab", "image", "t.yml", "--provider", "vm"], "unrecognized arguments: --provider vm"),
    (["lab", "up", "t.yml", "--miswire", "-1"], "a whole number from 0 to 10000"),
    (["lab", "up", "t.yml", "--image", "networkmanager"], "--image and --node-images are the VM lab's"),
    (["lab", "up", "t.yml", "--provider", "vm", "--wiring", "scrambled"],
     "--wiring, --miswire and --seed are the Docker lab's"),
    (["lab", "fault", "t.yml", "--node", "n1"], "--node n1 needs --stop or --start"),
    (["lab", "fault", "t.yml", "--cable", "n1:eth1", "--stop"], "--cable n1:eth1 needs --down or --up"),
    (["lab", "fault", "t.yml", "--link", "n1", "--down"], "--link: 'n1' is not NODE:NIC"),
    (["lab", "fault", "t.yml", "--node", "n1", "--switch", "s", "--stop"], "not both --node and --switch"),
    (["lab", "fault", "t.yml", "--up"], "--up needs --link, --cable or --switch"),
    (["lab", "fault", "t.yml", "--delays", "off"], "--delays: the VM lab only"),
    (["lab", "fault", "t.yml", "--provider", "vm", "--delays", "off", "--node", "n1"],
     "--delays goes alone"),
    (["lab", "fault", "t.yml", "--stop", "--start"], "not allowed with argument"),
    (["lab", "link", "t.yml", "--provider", "vm", "--node", "n1"], "link needs --provider vm"),
    (["lab", "outage", "t.yml", "--window", "0", "--node", "n1"], "--window must be 1 to 600"),
    (["lab", "down", "t.yml", "--provider", "qemu"], "invalid choice: 'qemu'"),
])
def test_lab_usage_errors_exit_2_and_touch_no_lab(capsys, tmp_path, monkeypatch, argv, message):
    from beonet.labs import docker, faults, outage, vm

    def touched(*_a, **_kw):
        raise AssertionError("a lab was touched")
    for module, name in ((docker, "up"), (docker, "down"), (vm, "up"), (vm, "down"),
                         (vm, "require_root"), (faults, "_load"), (outage, "measure")):
        monkeypatch.setattr(module, name, touched)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert code == 2 and message in err and "Traceback" not in err, (code, err)
    assert out == "" and os.listdir(tmp_path) == []


def test_a_labs_own_failure_exits_1(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "lab", "fault", "t.yml", "--node", "n1", "--stop")
    assert code == 1 and err == "beonet lab: no lab in .lab/beonet-t: bring it up first (beonet lab up)\n"


def test_a_line_naming_its_command_first_builds_that_command_only(capsys):
    table = next(a for a in cli.parser(["paths"], only=True)._actions
                 if isinstance(a, argparse._SubParsersAction))
    assert list(table.choices) == ["paths"]
    full = next(a for a in cli.parser(["paths"])._actions if isinstance(a, argparse._SubParsersAction))
    assert list(full.choices) == list(cli.COMMANDS)
    with pytest.raises(SystemExit):
        cli.main(["-h", "paths"])             # beonet's own help: every command listed
    assert "bonded-figure" in capsys.readouterr().out


# --- a line of positional arguments alone, read without argparse ---------------

@pytest.mark.parametrize("values", [["t.yml"], ["a b.yml"], [""], ["t.yml", "u.yml"], [],
                                    ["=x"], ["ü.yml"], ["t.yml", "u", "v"]])
def test_a_plain_line_reads_as_argparse_reads_it(values):
    from beonet.cli import plain
    assert plain.SUPPRESS == argparse.SUPPRESS
    read = []
    for name in cli.COMMANDS:
        argv = [name, *values]
        fast = cli._plain(argv)
        if fast is not None:
            read.append(name)
            assert vars(fast) == vars(cli.parser([name], only=True).parse_args(argv)), argv
    assert read == {0: ["schema"], 1: ["compile", "routes", "metrics", "graph", "benchmark-report"],
                    2: ["diff"]}.get(len(values), []), values


@pytest.mark.parametrize("argv", [["compile", "t.yml", "--paths"], ["compile", "-"],
                                  ["compile", "t.yml", "-o", "x"], ["-h", "compile"],
                                  ["paths", "t.yml"], ["build", "t.yml"], ["lab", "up"], []])
def test_a_line_with_options_or_required_ones_is_argparses(argv):
    assert cli._plain(argv) is None
