"""Address pools, custom LAN sizes, the forward filter's prefixes and the
compile benchmark's generated topology."""

import importlib.util
import ipaddress
import random
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from beonet.compiler import pipeline
from beonet.compiler.errors import CompileError
from beonet.outputs import plan as render


def compile_dict(topo):
    return render.plan(pipeline.compile_text(yaml.safe_dump(topo, sort_keys=False), "t.yml"))


def errors_of(topo):
    with pytest.raises(CompileError) as err:
        compile_dict(topo)
    return [str(p) for p in err.value.problems]


def mesh(dims, **addressing):
    topo = {"name": "m", "family": "mesh", "mesh": {"dims": dims}}
    if addressing:
        topo["addressing"] = addressing
    return topo


# -- pools too small name one that fits -------------------------------------------

def test_lan_pool_too_small_names_a_pool_that_fits():
    (msg,) = errors_of(mesh([16, 16, 16], lan="10.1.0.0/16"))
    assert "addressing.lan: pool 10.1.0.0/16 holds 65,536 addresses" in msg
    assert ("85 /24 segments per dimension; the topology needs 196,608 addresses: "
            "use 10.0.0.0/14 or larger") in msg
    plan = compile_dict(mesh([16, 16, 16], lan="10.0.0.0/14"))
    assert len(plan["nodes"]) == 4096


def test_lan_pool_smaller_than_one_segment_names_one_that_fits():
    (msg,) = errors_of(mesh([2, 2], lan="10.1.0.0/26"))
    assert msg.endswith("pool 10.1.0.0/26 is smaller than one /24 segment: use 10.1.0.0/24 or larger")


def test_p2p_pool_too_small_names_a_pool_that_fits():
    topo = {"name": "g", "family": "metagraph", "addressing": {"p2p": "10.255.0.0/28"},
            "metagraph": {"groups": 4, "nodes_per_group": 9, "p2p_per_node": 1}}
    (msg,) = errors_of(topo)
    assert msg.endswith("pool 10.255.0.0/28 holds 8 /31 links; the topology needs 18: "
                        "use 10.255.0.0/26 or larger")
    topo["addressing"]["p2p"] = "10.255.0.0/26"
    assert compile_dict(topo)["nodes"]


# -- a custom LAN is sized by its own members -------------------------------------

def custom(lans, links=()):
    nodes = sorted({m for members in lans for m in members} | {e for link in links for e in link})
    return {"name": "c", "family": "custom", "custom": {
        "nodes": nodes,
        "segments": [{"name": "lan%d" % i, "members": list(m)} for i, m in enumerate(lans)],
        "links": [{"ends": list(link)} for link in links]}}


def test_custom_lan_of_twenty_gets_a_27_among_two_thousand_nodes():
    racks = [["r%02dn%02d" % (r, k) for k in range(20)] for r in range(100)]
    links = [(racks[r][0], racks[r + 1][1]) for r in range(99)]
    plan = compile_dict(custom(racks, links))
    for r in range(100):
        assert plan["segments"]["lan%d" % r]["prefix"] == "10.0.%d.0/27" % r
    assert plan["nodes"]["r42n19"]["interfaces"][0]["addresses"] == ["10.0.42.20/27"]


@pytest.mark.parametrize("size,plen", [(2, 30), (6, 29), (7, 28), (14, 28), (30, 27), (31, 26)])
def test_custom_lan_prefix_is_the_smallest_that_holds_its_members(size, plen):
    plan = compile_dict(custom([["n%d" % k for k in range(size)]]))
    assert plan["segments"]["lan0"]["prefix"] == "10.0.0.0/%d" % plen


def test_custom_lan_prefix_given_for_all_applies_to_every_lan():
    topo = custom([["a", "b"], ["b", "c"]])
    topo["addressing"] = {"lan_prefix": 26}
    plan = compile_dict(topo)
    assert [s["prefix"] for s in plan["segments"].values()] == ["10.0.0.0/26", "10.0.0.64/26"]


@settings(max_examples=40, deadline=None, database=None)
@given(st.lists(st.integers(2, 40), min_size=1, max_size=6), st.data())
def test_adding_a_member_moves_no_address(sizes, data):
    """Appending a node to any LAN keeps every existing address; only that LAN's
    prefix may grow, from the same network address."""
    lans = [["l%dn%d" % (i, k) for k in range(size)] for i, size in enumerate(sizes)]
    links = [(lans[i][0], lans[i + 1][-1]) for i in range(len(lans) - 1)]
    before = compile_dict(custom(lans, links))
    grown = data.draw(st.integers(0, len(lans) - 1))
    lans[grown].append("added")
    after = compile_dict(custom(lans, links))
    for name, node in before["nodes"].items():
        for old, new in zip(node["interfaces"], after["nodes"][name]["interfaces"]):
            assert [a.split("/")[0] for a in old["addresses"]] == \
                [a.split("/")[0] for a in new["addresses"]]
    for name, seg in before["segments"].items():
        old = ipaddress.ip_network(seg["prefix"])
        new = ipaddress.ip_network(after["segments"][name]["prefix"])
        assert new == old or (name == "lan%d" % grown and new.network_address == old.network_address)


# -- the forward filter's prefixes ------------------------------------------------

def _union(nets):
    return {a for n in nets for a in range(int(n.network_address), int(n.broadcast_address) + 1)}


@settings(max_examples=80, deadline=None, database=None)
@given(st.lists(st.tuples(st.integers(0, 255), st.integers(24, 32)), max_size=12))
def test_aggregate_covers_exactly_the_union_with_the_fewest_blocks(items):
    nets = [ipaddress.ip_network(("10.0.0.%d" % (a & ~((1 << (32 - p)) - 1) & 255), p)) for a, p in items]
    spans = [(int(n.network_address), int(n.broadcast_address) + 1) for n in nets]
    got = [ipaddress.ip_network(("%s" % ipaddress.ip_address(net), plen))
           for net, plen in render.aggregate(spans)]
    want = list(ipaddress.collapse_addresses(nets))
    assert got == want
    assert _union(got) == _union(nets)


def test_aggregate_of_the_whole_space_and_of_nothing():
    assert render.aggregate([(0, 1 << 32)]) == [(0, 0)]
    assert render.aggregate([]) == []


@pytest.mark.parametrize("groups,per_group", [(4, 9), (20, 19)])
def test_forward_prefixes_do_not_grow_with_the_links(groups, per_group):
    plan = compile_dict({"name": "g", "family": "metagraph", "metagraph": {
        "groups": groups, "nodes_per_group": per_group, "p2p_per_node": 1}})
    nets = [ipaddress.ip_network(p) for p in render.prefixes(plan)]
    segs = [ipaddress.ip_network(s["prefix"]) for s in plan["segments"].values() if s.get("prefix")]
    assert len(nets) <= 8 < len(segs)
    assert all(any(s.subnet_of(n) for n in nets) for s in segs)
    assert sum(n.num_addresses for n in nets) == sum(s.num_addresses for s in segs)


# -- the benchmark's generated custom cluster -------------------------------------

def _timing_module():
    spec = importlib.util.spec_from_file_location("compile_timing", ROOT / "scripts" / "compile_timing.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["compile_timing"] = module
    spec.loader.exec_module(module)
    return module


def test_bench_custom_topology_is_fixed_and_sized_as_stated():
    timing = _timing_module()
    text = timing.custom_topology()
    assert text == timing.custom_topology()
    topo = yaml.safe_load(text)
    assert len(topo["custom"]["nodes"]) == 2000
    assert len(topo["custom"]["segments"]) == 100
    assert len(topo["custom"]["links"]) == 150
    assert text != timing.custom_topology(seed=random.Random(7).randrange(10**6))


def _two_cases(timing, small_s, big_s):
    """The 380- and 8,256-node cases (targets 0.4 and 4 s) with these medians."""
    small = timing.Case("L=20 P=19 C=1, 380 nodes", "x", 0.4, times=[small_s], rss_mb=50,
                        nodes=380, entries=7600, out_bytes=7600 * 300)
    big = timing.Case("L=129 P=64 C=2, 8,256 nodes", "x", 4.0, times=[big_s], rss_mb=900,
                      nodes=8256, entries=2_000_000, out_bytes=2_000_000 * 200)
    return small, big


def test_bench_gate_applies_the_tolerance(capsys):
    timing = _timing_module()
    small, big = _two_cases(timing, 0.5, 3.0)
    assert not timing.report([small, big], 1.0)
    assert "<-- MISSED" in capsys.readouterr().out
    assert timing.report([small, big], 2.0)
    big.rss_mb = 2100
    assert not timing.report([small, big], 2.0)


def test_bench_targets_scale_with_the_baseline_here(capsys):
    timing = _timing_module()
    small, big = _two_cases(timing, 0.7, 7.0)
    assert not timing.report([small, big], 1.0)
    for case, seconds in ((small, 0.28), (big, 3.27)):
        case.baseline = seconds
        case.base_times = [seconds * f for f in (2.5, 1.5, 2.0)]     # median: twice as slow here
    assert small.factor() == pytest.approx(2.0)
    assert timing.report([small, big], 1.0, "slow")
    out = capsys.readouterr().out
    assert "machine: slow" in out and "8.00s" in out and "6.54s" in out
    big.base_times = [3.27 * 1.5]
    assert not timing.report([small, big], 1.0)


def test_bench_without_the_baseline_commit_takes_the_targets_as_written(tmp_path, monkeypatch):
    timing = _timing_module()

    def shallow(argv, **_kw):               # git archive in a clone without that commit
        raise subprocess.CalledProcessError(128, argv)
    monkeypatch.setattr(timing.subprocess, "run", shallow)
    assert timing.baseline_code(str(tmp_path)) is None
    case = timing.cases()[3]
    assert case.baseline == 3.27 and case.factor() == 1.0


def test_bench_plot_and_markdown(tmp_path, capsys):
    timing = _timing_module()
    done = [timing.Case("L=20 P=19 C=1, 380 nodes", "x", 0.4, times=[0.3, 0.5], nodes=380,
                        entries=7600, out_bytes=760_000),
            timing.Case("mesh 64x64, 4,096 nodes", "x", 3.0, family="mesh", times=[2.0],
                        nodes=4096, entries=80_000, out_bytes=8_000_000)]
    timing.plot(done, str(tmp_path / "t.svg"))
    svg = (tmp_path / "t.svg").read_text()
    assert svg.startswith("<?xml") and "metagraph" in svg and "mesh" in svg
    timing.markdown(done)
    out = capsys.readouterr().out
    assert "| L=20 P=19 C=1, 380 nodes | 0.40 s | 0.30 s | 0.50 s | ≤ 0.4 s |" in out
    assert "| 2,000 | 100 |" in out


def test_bench_counts_nodes_routes_and_bytes_written(tmp_path):
    timing = _timing_module()
    (tmp_path / "nodes" / "a").mkdir(parents=True)
    (tmp_path / "plan.json").write_text('{"nodes": {"a": {"routes": [1, 2]}, "b": {"routes": []}}}')
    (tmp_path / "nodes" / "a" / "f").write_text("x" * 100)
    case = timing.Case("c", "x", 1.0)
    timing.measure_output(case, str(tmp_path))
    assert (case.nodes, case.entries) == (2, 4)
    assert case.out_bytes == 100 + (tmp_path / "plan.json").stat().st_size
