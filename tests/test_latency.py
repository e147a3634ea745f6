"""Per-hop latency: the topology's `latency`, the pairs by path class in the
metrics (checked against an independent count over traceroute's expected
hops and against SC98's Table 1), the plan's delays and the labs' netem
commands."""

import json

import pytest
import yaml
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from test_labs import _copy, host  # noqa: F401  (the fake Docker host fixture)

from beonet import cli
from beonet.benchmarks import figures
from beonet.benchmarks import planner as bench
from beonet.compiler import latency, pipeline
from beonet.labs import base, faults
from beonet.labs import docker as dlab
from beonet.labs import vm as vmlab
from beonet.outputs import plan as render


def compiled(family, params, lat=None, name="lat"):
    topo = {"name": name, "family": family, family: params}
    if lat is not None:
        topo["latency"] = lat
    return pipeline.compile_text(yaml.safe_dump(topo, sort_keys=False), "%s.yml" % name)


def sc98_mini():
    return compiled("metagraph", {"groups": 3, "nodes_per_group": 2, "p2p_per_node": 1},
                    {"model": "sc98"})


def test_sc98_classes_of_a_small_meta_graph():
    c = sc98_mini()
    classes = c.metrics["latency"]["classes"]
    assert {k: (v["pairs"], v["one_way_us"]) for k, v in classes.items()} == {
        "e-e": (6, 0.0), "e-S-e": (6, 9.5), "e-L-S-e": (6, 39.5), "e-S-L-e": (6, 39.5),
        "e-S-L-L-S-e": (6, 79.0)}
    assert sum(v["pairs"] for v in classes.values()) == c.metrics["pairs"]


def test_the_sc98_model_is_half_the_fit_of_its_table_and_gives_the_table():
    """One way = half the UDP fit's round-trip costs; the table's e-e round trip
    + twice the one-way delays gives Table 1's rows whose path a meta-graph
    has (B, a switch, is S here) within 6 us."""
    fit = bench.DEFAULT_MODEL["udp"]
    sc98 = latency.MODELS["sc98"]
    assert abs(2 * sc98["switch_us"] - fit["switch_us"]) <= 1
    assert abs(2 * sc98["forward_us"] - fit["router_us"]) <= 2
    table = {name: udp for name, _tcp, udp, _bw in bench.SC98_TABLE}
    classes = sc98_mini().metrics["latency"]["classes"]
    rows = {"e-e": "e-e", "e-S-e": "e-B-e", "e-L-S-e": "e-L-B-e", "e-S-L-L-S-e": "e-B-L-L-B-e"}
    for ours, theirs in rows.items():
        model = table["e-e"] + 2 * classes[ours]["one_way_us"]
        assert abs(model - table[theirs]) <= 6, (ours, model)
        assert figures.sc98_name(classes[ours]["switches"], classes[ours]["routers"], ours) == theirs


def _independent(c):
    """Class name -> pairs, from traceroute's expected first path of every pair
    and the plan's segments (not the compiler's walk)."""
    plan = render.plan(c)
    seg_of = {}
    for seg in plan["segments"].values():
        members = [m["node"] for m in seg["members"]]
        for a in members:
            for b in members:
                seg_of[a, b] = seg
    out = {}
    for s in plan["nodes"]:
        for d in plan["nodes"]:
            if s == d:
                continue
            hops = [s] + [h["node"] for h in c.path(s, d)[0]]
            letters = []
            for k, (a, b) in enumerate(zip(hops, hops[1:])):
                letters += ["L"] if k else []
                letters += [] if seg_of[a, b]["kind"] == "p2p" else ["S"]
            name = "-".join(["e", *letters, "e"])
            out[name] = out.get(name, 0) + 1
    return out


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([("mesh", {"dims": [3, 3]}), ("mesh", {"dims": [2, 2, 2]}),
                        ("metagraph", {"groups": 4, "nodes_per_group": 3, "p2p_per_node": 1}),
                        ("metagraph", {"groups": 3, "nodes_per_group": 4, "p2p_per_node": 2}),
                        ("bonded", {"nodes": 4, "channels": 2})]),
       st.floats(0, 50, allow_nan=False), st.floats(0, 50, allow_nan=False),
       st.floats(0, 100, allow_nan=False))
def test_classes_match_the_expected_paths_and_sum_their_hops(case, switch, wire, forward):
    family, params = case
    c = compiled(family, params, {"switch_us": switch, "wire_us": wire, "forward_us": forward})
    classes = c.metrics["latency"]["classes"]
    assert {k: v["pairs"] for k, v in classes.items()} == _independent(c)
    for name, v in classes.items():
        letters = name.split("-")[1:-1]
        cables = v["routers"] + 1 - v["switches"]     # crossings - LAN crossings
        assert v["routers"] == letters.count("L") and v["switches"] == letters.count("S")
        want = v["switches"] * switch + v["routers"] * forward + cables * wire
        assert abs(v["one_way_us"] - want) <= 1e-3 and v["one_way_max_us"] == v["one_way_us"]


def test_a_tree_path_counts_each_switch():
    c = compiled("tree", {"fanout": [2, 2], "nodes_per_leaf": 2}, {"switch_us": 10})
    classes = c.metrics["latency"]["classes"]
    assert {k: (v["pairs"], v["one_way_us"]) for k, v in classes.items()} == {
        "e-S-e": (8, 10.0), "e-S-S-S-e": (16, 30.0), "e-S-S-S-S-S-e": (32, 50.0)}
    assert render.plan(c)["segments"]["net0"]["delay_us"] == 10.0


CUSTOM = """
name: lat-custom
family: custom
custom:
  nodes: [a, b, c, d]
  segments: [{name: hub, members: [a, b], medium: shared, delay_us: 2.5}]
  links: [{ends: [b, c], delay_us: 1}, {ends: [c, d]}]
latency: {switch_us: 7, wire_us: 0.5, forward_us: 10, forwarders: {c: 40}}
"""


def test_custom_delays_per_segment_link_and_forwarder():
    c = pipeline.compile_text(CUSTOM, "lat-custom.yml")
    classes = c.metrics["latency"]["classes"]
    # a -hub-> b (forwards, 10) -1-> c (forwards, 40) -0.5-> d
    assert classes["e-H-L-L-e"] == {"pairs": 1, "one_way_us": 54.0, "one_way_max_us": 54.0,
                                   "switches": 1, "routers": 2}
    assert classes["e-L-L-H-e"]["one_way_us"] == 54.0       # d -> a, the other way
    assert classes["e-e"]["one_way_us"] == 0.5 and classes["e-e"]["one_way_max_us"] == 1.0
    plan = render.plan(c)
    assert {k: s.get("delay_us") for k, s in plan["segments"].items()} == {
        "hub": 2.5, "b--c": 1.0, "c--d": 0.5}
    assert plan["latency"] == {"forward_us": {"b": 10.0, "c": 40.0}}


def test_without_latency_the_plan_and_metrics_have_none():
    c = compiled("mesh", {"dims": [2, 2]})
    plan = render.plan(c)
    assert "latency" not in c.metrics and "latency" not in plan
    assert not any("delay_us" in s for s in plan["segments"].values())
    assert not base.has_delay(plan)


def test_classes_are_not_walked_above_the_limit(monkeypatch):
    monkeypatch.setattr(latency, "LATENCY_UP_TO", 4)
    c = compiled("mesh", {"dims": [3, 3]}, {"model": "sc98"})
    assert "classes" not in c.metrics["latency"]
    assert any("not walked above 4 nodes" in n for n in c.metrics["notes"])


def test_delay_commands():
    assert base.delay_commands("eth1", 9.5, 0) == [
        "tc qdisc replace dev eth1 root netem delay 9.5us limit 10000"]
    cmds = base.delay_commands("eth2", 0, 30)
    assert cmds[0].startswith("tc qdisc replace dev eth2 root handle 1: prio bands 2 priomap 0 ")
    assert "parent 1:1 handle 10: pfifo limit 10000" in cmds[1]
    assert "parent 1:2 handle 20: netem delay 30us" in cmds[2]
    assert cmds[3].endswith("handle 0x6265 fw flowid 1:2")


def test_node_delay_commands_mark_forwarded_packets_once():
    plan = render.plan(sc98_mini())
    cmds = base.node_delay_commands(plan, "node01", {"eth1": "ens4", "eth2": "ens5"})
    assert cmds[:4] == base.mark_commands()
    assert sum("root handle 1: prio" in c for c in cmds) == 2
    assert "dev ens4 parent 1:1 handle 10: netem delay 9.5us" in " ".join(cmds)
    assert "dev ens5 parent 1:2 handle 20: netem delay 30us" in " ".join(cmds)
    assert base.node_delay_commands(render.plan(compiled("mesh", {"dims": [2, 2]})),
                                    "node-0-0", {"eth1": "eth1"}) == []


def test_netem_missing_reads_the_kernel_tree(tmp_path):
    mods = tmp_path / "lib/modules/6.1.0-x"
    (mods / "kernel/net/sched").mkdir(parents=True)
    assert "has no netem" in base.netem_missing("6.1.0-x", str(tmp_path))
    (mods / "kernel/net/sched/sch_netem.ko.xz").write_text("")
    assert base.netem_missing("6.1.0-x", str(tmp_path)) is None
    (mods / "kernel/net/sched/sch_netem.ko.xz").unlink()
    (mods / "modules.builtin").write_text("kernel/net/sched/sch_netem.ko\n")
    assert base.netem_missing("6.1.0-x", str(tmp_path)) is None


def test_docker_lab_warns_when_the_host_has_no_netem(host, tmp_path, monkeypatch, capsys):  # noqa: F811
    path = _copy(tmp_path, "routed-mesh-2x2.yml", "mesh")
    path.write_text(path.read_text() + "latency: {model: sc98}\n")
    monkeypatch.setattr(dlab, "netem_missing", lambda: "the kernel k has no netem (sch_netem)")
    dlab.up(str(path), str(tmp_path))
    assert "per-hop delays (latency) are not emulated" in capsys.readouterr().out
    assert not any("netem" in " ".join(c) for c in host.log)


def test_docker_lab_sets_netem_in_each_container_when_the_host_has_it(host, tmp_path,  # noqa: F811
                                                                      monkeypatch):
    path = _copy(tmp_path, "routed-mesh-2x2.yml", "mesh")
    path.write_text(path.read_text() + "latency: {model: sc98}\n")
    monkeypatch.setattr(dlab, "netem_missing", lambda: None)
    dlab.up(str(path), str(tmp_path))
    execs = [c for c in host.log if c[:2] == ["docker", "exec"] and "netem" in c[-1]]
    assert len(execs) == 4 and all("meta mark set 0x6265" in c[-1] for c in execs)


# ----------------------------------------------------------- the latency figure

PAIRS = {"p2p": ("node01", "node03", 0, 0), "same-segment": ("node01", "node02", 1, 0),
         "gateway-1": ("node01", "node04", 1, 1), "gateway-2": ("node01", "node06", 2, 2)}


def _run(folder, base, switch, router):
    """A results folder whose latency rows follow round trip = base + switch x
    switches + router x routers (UDP; TCP 30 us more)."""
    rows = []
    for cls, (a, b, switches, routers) in PAIRS.items():
        for proto, extra in (("udp", 0), ("tcp", 30)):
            rtt = base + extra + switch * switches + router * routers
            rows.append({"class": cls, "client": a, "server": b, "proto": proto,
                         "switches": switches, "routers": routers, "one_way_median_us": rtt / 2})
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"latency": rows, "environment": {"kernel": "k"}}))
    return str(folder)


def test_latency_figure_sets_both_runs_beside_sc98(tmp_path):
    c = sc98_mini()
    on = _run(tmp_path / "on", 250, 100, 450)
    off = _run(tmp_path / "off", 250, 20, 250)
    fig = figures.latency(on, off, lambda a, b: latency.pair_path(c.graph, c.proof, a, b))
    rows = {r["class"]: r for r in fig["rows"]}
    assert [r["sc98_path"] for r in fig["rows"]] == ["e-e", "e-B-e", "e-L-B-e", "e-B-L-L-B-e"]
    assert rows["gateway-1"]["path"] in ("e-S-L-e", "e-L-S-e")
    assert rows["gateway-1"]["emulated_rtt_us"] == 79.0 and rows["gateway-2"]["emulated_rtt_us"] == 158.0
    assert rows["gateway-2"]["sc98_table_udp_us"] == 281 and rows["gateway-2"]["sc98_table_tcp_us"] == 324
    assert rows["same-segment"]["added_udp_us"] == 80.0
    assert rows["same-segment"]["lab_faithful_udp_us"] == 270 + 19.0
    assert fig["fits"]["lab_off"]["udp"] == {"base_us": 250.0, "switch_us": 20.0, "router_us": 250.0}
    assert fig["fits"]["lab_on"]["tcp"]["base_us"] == 280.0
    text = figures.latency_markdown(fig, "t")
    assert "| e-S-L-L-S-e | e-B-L-L-B-e | 281 |" in text and "| lab, delays on | 250.00 |" in text


def test_latency_figure_without_three_path_shapes_has_no_fit(tmp_path):
    c = sc98_mini()
    on = _run(tmp_path / "on", 250, 100, 450)
    off = tmp_path / "off"
    off.mkdir()
    data = json.loads((tmp_path / "on" / "results.json").read_text())
    data["latency"] = [r for r in data["latency"] if r["class"] in ("p2p", "same-segment")]
    (off / "results.json").write_text(json.dumps(data))
    fig = figures.latency(on, str(off), lambda a, b: latency.pair_path(c.graph, c.proof, a, b))
    assert len(fig["rows"]) == 2 and fig["fits"]["lab_off"] is None
    assert "| lab, no delays | — | — | — |" in figures.latency_markdown(fig, "t")


def test_cli_latency_figure(tmp_path, capsys):
    topo = str(ROOT / "topologies" / "benchmarks" / "sc98-latency.yml")
    on = _run(tmp_path / "on", 250, 100, 450)
    off = _run(tmp_path / "off", 250, 20, 250)
    out = tmp_path / "fig"
    assert cli.main(["latency-figure", topo, "--delays-on", on, "--delays-off", off,
                     "-o", str(out)]) == 0
    assert {"figure.json", "summary.md", "latency.svg"} <= {p.name for p in out.iterdir()}
    (tmp_path / "empty").mkdir()
    assert cli.main(["latency-figure", topo, "--delays-on", str(tmp_path / "empty"), "--delays-off", off,
                     "-o", str(out)]) == 2
    assert "no results.json" in capsys.readouterr().err


# ----------------------------------------------------------- delays on and off in the VM lab

def _vm_record(tmp_path, commands):
    folder = tmp_path / ".lab" / "beonet-sc98"
    folder.mkdir(parents=True)
    record = {"provider": "vm", "lab": "sc98", "netns": "sc98", "faults": {"nodes": [], "links": []},
              "nodes": {"node01": {"address": "198.18.0.10", "delay": commands},
                        "node02": {"address": "198.18.0.11", "delay": []}}}
    (folder / base.VM_STATE).write_text(json.dumps(record))
    return tmp_path / "sc98.yml"


def test_lab_delays_off_removes_what_up_set_and_on_sets_it_again(tmp_path, monkeypatch):
    plan = render.plan(sc98_mini())
    commands = base.node_delay_commands(plan, "node01", {"eth1": "ens17", "eth2": "ens18"})
    topo = _vm_record(tmp_path, commands)
    sent = []
    monkeypatch.setattr(vmlab, "_delay_node", lambda ns, st, node, addr, cmds: sent.append((node, cmds)))
    assert base.delay_devices(commands) == ["ens17", "ens18"]
    assert faults.delays(str(topo), str(tmp_path), None, "vm", False) == "sc98: per-hop delays off in 1 VMs"
    assert sent == [("node01", ["nft delete table inet beonet_lab 2>/dev/null || true",
                                "tc qdisc del dev ens17 root 2>/dev/null || true",
                                "tc qdisc del dev ens18 root 2>/dev/null || true"])]
    faults.delays(str(topo), str(tmp_path), None, "vm", True)
    assert sent[-1] == ("node01", commands)


def test_lab_delays_errors(tmp_path):
    topo = _vm_record(tmp_path, [])
    assert "has no per-hop delays" in faults.delays(str(topo), str(tmp_path), None, "vm", False)
    with pytest.raises(base.LabError, match="VM lab only"):
        faults.delays(str(topo), str(tmp_path), None, "docker", False)
    record = json.loads((tmp_path / ".lab" / "beonet-sc98" / base.VM_STATE).read_text())
    record["faults"]["nodes"] = ["node02"]
    (tmp_path / ".lab" / "beonet-sc98" / base.VM_STATE).write_text(json.dumps(record))
    with pytest.raises(base.LabError, match="start the stopped nodes first"):
        faults.delays(str(topo), str(tmp_path), None, "vm", True)


def test_nodes_down_classes_count_only_pairs_that_reach_each_other():
    text = """
name: chain
family: custom
custom:
  nodes: [a, b, c, d]
  links: [{ends: [a, b]}, {ends: [b, c]}, {ends: [c, d]}]
latency: {forward_us: 5, forwarders: {b: 7}}
"""
    c = pipeline.compile_text(text, "chain.yml", down="b")
    assert c.metrics["latency"]["classes"] == {"e-e": {"pairs": 2, "one_way_us": 0.0,
                                                       "one_way_max_us": 0.0, "switches": 0,
                                                       "routers": 0}}
    assert render.plan(c)["latency"] == {"forward_us": {}}
    with pytest.raises(ValueError, match="no path from a to c"):
        latency.pair_path(c.graph, c.proof, "a", "c")
    full = pipeline.compile_text(text, "chain.yml")
    assert full.metrics["latency"]["classes"]["e-L-L-e"]["one_way_us"] == 12.0
