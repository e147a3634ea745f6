"""Benchmark results people read: the capacity of concurrent pairs, the
environment table, plot lines in size order with labelled log axes, and
rendering a results folder again from its results.json."""

import json
import random

import pytest
from conftest import ROOT
from test_benchmarks import _fake_outputs, compiled

from beonet import cli
from beonet.benchmarks import capacity as cap
from beonet.benchmarks import planner as bench
from beonet.benchmarks import plots, report

TREE = str(ROOT / "topologies/benchmarks/demo-tree.yml")


def pair(a, b, via=()):
    return {"client": a, "server": b, "via": list(via)}


@pytest.fixture(scope="module")
def tree_plan():
    return compiled(TREE)[0]


@pytest.fixture(scope="module")
def mesh_plan():
    return compiled("routed-mesh.yml")[0]


# ------------------------------------------------------------------ capacity

def test_disjoint_pairs_add_up(tree_plan, mesh_plan):
    """n pairs over separate links: n x link."""
    c = cap.capacity(tree_plan, [pair("node01", "node02"), pair("node03", "node04"),
                                 pair("node05", "node06")])
    assert c["MBps"] == 37.5 and c["bottleneck"] == "3 disjoint paths, 100 Mbit/s each"
    one = cap.capacity(mesh_plan, [pair("node-0-0", "node-1-1", ["node-0-1"])])
    assert one == {"MBps": 12.5, "pairs_MBps": [12.5], "bottleneck": "one path, 100 Mbit/s"}


def test_a_tree_uplink_caps_the_pairs_crossing_it(tree_plan):
    """demo-tree: 200 Mbit/s uplinks; 2 or 4 pairs across them share 25 MB/s."""
    across = [pair("node0%d" % i, "node0%d" % (i + 4)) for i in range(1, 5)]
    for k in (2, 4):
        c = cap.capacity(tree_plan, across[:k])
        assert c["MBps"] == 25.0
        assert c["bottleneck"] == ("uplink of switch leaf0 (200 Mbit/s each way) shared by %d pairs" % k)


def test_a_mix_of_a_shared_uplink_and_a_path_of_its_own(tree_plan):
    three = cap.capacity(tree_plan, [pair("node01", "node05"), pair("node02", "node06"),
                                     pair("node03", "node07")])
    assert three["pairs_MBps"] == [pytest.approx(25 / 3, abs=1e-3)] * 3
    # Two pairs across the uplink, one pair inside a leaf: 25 + 12.5.
    c = cap.capacity(tree_plan, [pair("node01", "node05"), pair("node02", "node06"),
                                 pair("node07", "node08")])
    assert c["MBps"] == 37.5
    assert c["bottleneck"] == ("uplink of switch leaf0 (200 Mbit/s each way) shared by 2 pairs; "
                               "1 pair on a path, 100 Mbit/s")


def test_pairs_sharing_a_gateway_nic_share_it(mesh_plan):
    shared = cap.capacity(mesh_plan, [pair("node-0-0", "node-1-1", ["node-0-1"]),
                                      pair("node-0-2", "node-2-1", ["node-0-1"])])
    assert shared["MBps"] == 12.5 and shared["pairs_MBps"] == [6.25, 6.25]
    assert shared["bottleneck"].startswith("NIC node-0-1 ") and "shared by 2 pairs" in shared["bottleneck"]
    apart = cap.capacity(mesh_plan, [pair("node-0-0", "node-1-1", ["node-0-1"]),
                                     pair("node-0-2", "node-1-3", ["node-0-3"])])
    assert apart["MBps"] == 25.0


def test_a_bond_is_one_path_of_its_channels():
    plan = compiled("bonded-dual-net.yml")[0]
    assert cap.capacity(plan, [pair("node01", "node02")])["MBps"] == 25.0


def test_max_min_fill():
    a, b, c = ("x",), ("y",), ("z",)
    rate, stop = cap.fill([{a: 10.0, b: 100.0}, {a: 10.0}, {c: 7.0}, {}])
    assert rate == [5.0, 5.0, 7.0, 0.0] and stop == [a, a, c, None]


def test_a_path_without_rates_has_no_capacity(tree_plan):
    plan = json.loads(json.dumps(tree_plan))
    for n in plan["nodes"].values():
        for i in n["interfaces"]:
            i.pop("rate_mbit", None)
    plan["switches"] = {}
    assert cap.capacity(plan, [pair("node01", "node02")]) is None


def test_the_tree_summary_names_the_uplink_and_prints_percent_of_capacity(tmp_path):
    plan, path_of = compiled(TREE)
    s = bench.schedule(plan, path_of, {"count": 10, "sizes": [4, 8192], "mss_points": False,
                                       "classes": ["cross-switch"], "copies": 2, "remote_copies": [0],
                                       "file_mb": [1]})
    res = report.collect(s, _fake_outputs(s), plan)
    four = [a for a in res["aggregate"] if a["pairs"] == 4 and a["size"] == 8192 and a["proto"] == "tcp"][0]
    assert four["capacity_MBps"] == 25.0
    assert four["one_way_pct_of_capacity"] == round(100 * four["one_way_MBps"] / 25.0, 1)
    assert res["capacity"]["tokex-cross-switch-4p"]["bottleneck"].startswith("uplink of switch leaf0")
    text = report.summary_markdown(s, res, {}, "demo-tree")
    assert ("| cross-switch | 4 | 25.00 | uplink of switch leaf0 (200 Mbit/s each way) "
            "shared by 4 pairs |") in text
    assert "one-way % of capacity" in text and "% of link" not in text
    assert "| cross-switch | tcp | 4 | 8192 | %.2f | %.2f | 25.00 | %.1f %% |" % (
        four["exchange_MBps"], four["one_way_MBps"], four["one_way_pct_of_capacity"]) in text


# ------------------------------------------------------------------ environment

NODE_LINES = [
    "kernel=6.18.44",
    "qdisc=qdisc tbf 8001: dev eth1 root refcnt 2 rate 100Mbit burst 15625b lat 50ms ;"
    "qdisc tbf 8002: dev eth2 root refcnt 2 rate 100Mbit burst 15625b lat 50ms ;",
    "offload_eth1=tx-checksumming: on;tcp-segmentation-offload: on;"
    "generic-segmentation-offload: on;generic-receive-offload: off;",
    "offload_eth2=tx-checksumming: on;tcp-segmentation-offload: on;"
    "generic-segmentation-offload: on;generic-receive-offload: off;"]


def test_environment_is_a_table_with_nodes_alike_in_one_row():
    env = {"kernel": "6.18.44", "link_rates_mbit": [100], "where": "Docker lab x",
           "node_environment": {"n1": NODE_LINES, "n2": NODE_LINES, "n3": NODE_LINES, "n4": NODE_LINES,
                                "old": ["kernel=6.1.0", "qdisc=",
                                        "offloads=ethtool not installed on the node"]}}
    text = "\n".join(report.environment_markdown(env))
    assert "| link rates mbit | 100 |" in text and "| kernel | 6.18.44 |" in text
    assert ("| n1, n2 … n4 (4) | 6.18.44 | tbf 100Mbit (2 qdiscs) | "
            "tx-csum on, TSO on, GSO on, GRO off (2 NICs) |") in text
    assert "| old | 6.1.0 | — | ethtool not installed on the node (1 NIC) |" in text
    assert "{" not in text and "[" not in text          # no JSON lines any more


# ------------------------------------------------------------------ plots

def _mesh_results(shuffle=True):
    plan, path_of = compiled("routed-mesh.yml")
    s = bench.schedule(plan, path_of, {"count": 10, "pairs": [1, 2], "file_mb": [2], "remote_copies": [0]})
    res = report.collect(s, _fake_outputs(s), plan)
    if shuffle:
        rnd = random.Random(7)
        for k in ("aggregate", "tokex"):
            rnd.shuffle(res[k])
    return s, res


def _drawn(fig):
    fig.canvas.draw()
    return fig.axes


def test_series_are_in_increasing_size_whatever_the_row_order_or_type():
    rows = [{"size": "1451", "y": 3}, {"size": 16, "y": 1}, {"size": "1448", "y": 2}, {"size": 2048, "y": 4}]
    assert [p[0] for p in plots.series(rows, "size", "y")] == [16, 1448, 1451, 2048]


def test_plot_lines_join_points_in_increasing_size():
    s, res = _mesh_results()
    assert 1445 in s["params"]["sizes"] and 1451 in s["params"]["sizes"]       # the MSS points
    plt = plots._plt()
    for fig in (plots._token_exchange(plt, res, "t", "tcp"), plots._round_trip(plt, res, "t")):
        lines = [ln for ax in fig.axes for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
        assert lines
        for ln in lines:
            xs = list(ln.get_xdata())
            assert xs == sorted(xs) and len(set(xs)) == len(xs)
        plt.close(fig)


def test_size_axes_have_readable_power_of_two_labels():
    _s, res = _mesh_results()
    plt = plots._plt()
    fig = plots._token_exchange(plt, res, "t", "tcp")
    labels = [t.get_text() for t in _drawn(fig)[0].get_xticklabels() if t.get_text()]
    plt.close(fig)
    assert "8 K" in labels and "2 K" in labels and len(labels) >= 5
    assert not [x for x in labels if "$" in x]
    assert plots.size_label(65536) == "64 K" and plots.size_label(1448) == "1448"
    labelled, every = plots.size_ticks(4, 65536)
    assert labelled[-1] == 65536 and len(labelled) <= 9 and every[0] == 4


def test_log_time_axes_are_labelled_even_over_a_narrow_range():
    """Round trips of 104-109 us hold no 1-2-5 step: a labelled tick either side."""
    _s, res = _mesh_results()
    plt = plots._plt()
    for fig in (plots._round_trip(plt, res, "t"), plots._latency(plt, res, "t")):
        labels = [t.get_text() for t in _drawn(fig)[0].get_yticklabels() if t.get_text()]
        plt.close(fig)
        assert len(labels) >= 2 and not [x for x in labels if "$" in x], labels
    assert plots.value_ticks(104, 109) == [100, 200]
    assert plots.value_ticks(3, 700) == [5, 10, 20, 50, 100, 200, 500]
    assert plots.value_ticks(1, 1e6) == [1, 10, 100, 1000, 10000, 100000, 1000000]


# ------------------------------------------------------------------ rendering again

def test_a_results_folder_renders_again_from_its_json(tmp_path):
    """Also a results.json of the earlier format: no request, % of link, no capacity."""
    plan, path_of = compiled("routed-mesh.yml")
    s = bench.schedule(plan, path_of, {"count": 10, "sizes": [4, 8192], "mss_points": False,
                                       "pairs": [1, 2], "file_mb": [2], "remote_copies": [0]})
    res = report.collect(s, _fake_outputs(s), plan)
    report.write_results(str(tmp_path), s, res, {"kernel": "6.1"}, plan, {})
    first = (tmp_path / "summary.md").read_text()
    (tmp_path / "summary.md").unlink()
    report.render(str(tmp_path))
    assert (tmp_path / "summary.md").read_text() == first
    doc = json.loads((tmp_path / "results.json").read_text())
    for k in ("params", "topology", "capacity"):
        del doc[k]
    for a in doc["aggregate"]:
        for k in ("capacity_MBps", "one_way_pct_of_capacity", "exchange_pct_of_capacity"):
            del a[k]
        a["one_way_pct_of_link"] = 1.0
    (tmp_path / "results.json").write_text(json.dumps(doc))
    rc = cli.main(["benchmark-report", str(tmp_path), "--topology", str(ROOT / "topologies/routed-mesh.yml")])
    assert rc == 0
    again = (tmp_path / "summary.md").read_text()
    assert "| same-segment | 2 | 25.00 | 2 disjoint paths, 100 Mbit/s each |" in again
    assert "# beonet benchmark: routed-mesh" in again
    assert (tmp_path / "token-exchange-tcp.png").exists()
    assert "one_way_pct_of_link" not in (tmp_path / "aggregate.csv").read_text()


def test_benchmark_report_needs_a_results_folder(tmp_path, capsys):
    assert cli.main(["benchmark-report", str(tmp_path)]) == 2
    assert "no results.json" in capsys.readouterr().err


def test_the_mpi_fit_is_drawn_as_a_curve_along_the_size_axis():
    """t = latency + size / bandwidth is a curve on a log size axis: evaluated
    along it, not a straight segment between the end points."""
    from beonet.benchmarks import mpi
    rows = [{"phase": "fixed", "class": "same-segment", "a": 0, "b": 1, "bytes": b, "usec": 100 + b / 10}
            for b in (65536, 4, 1024, 16, 8192)]
    result = mpi.analyse(rows, {"pair_class": {}, "gateway": None})
    plt = plots._plt()
    fig = mpi.figure(plt, "t", rows, result)
    ax = _drawn(fig)[0]
    fit = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-"][0]
    xs, ys = list(fit.get_xdata()), list(fit.get_ydata())
    assert len(xs) > 2 and xs == sorted(xs)
    assert all(y == pytest.approx(100 + x / 10, rel=1e-3) for x, y in zip(xs, ys))
    assert "64 K" in [t.get_text() for t in ax.get_xticklabels()]
    plt.close(fig)


# ------------------------------------------------------------------ shared segments

@pytest.fixture(scope="module")
def hub_mesh():
    return compiled(str(ROOT / "topologies/benchmarks/mesh-1996.yml"))


def test_a_shared_segment_is_one_medium_for_both_ways(hub_mesh):
    """A pair exchanging tokens on a hub puts each byte on it once each way:
    one way it gets half the rate; pairs on one hub share it, on two add up."""
    plan, _path_of = hub_mesh
    one = cap.capacity(plan, [pair("node-0-0", "node-0-1")])
    assert one["MBps"] == 0.625 and one["bottleneck"] == "one path, 5 Mbit/s"
    two = cap.capacity(plan, [pair("node-0-0", "node-0-1"), pair("node-0-2", "node-0-3")])
    assert two["MBps"] == 0.625
    assert two["bottleneck"] == "shared segment d1-0 (10 Mbit/s, both ways) shared by 2 pairs"
    apart = cap.capacity(plan, [pair("node-0-0", "node-0-1"), pair("node-1-0", "node-1-1")])
    assert apart["MBps"] == 1.25
    # through a gateway: both of its segments
    assert cap.pair_resources(plan, "node-0-0", "node-1-1", ["node-0-1"]).keys() == {
        ("medium", "d1-0"), ("medium", "d0-1")}


def test_a_bonded_shared_lan_counts_each_channel_as_a_medium():
    plan, _path_of = compiled("bonded-dual-net.yml")
    shared = json.loads(json.dumps(plan))
    shared["segments"]["net0"]["medium"] = "shared"
    rate = shared["segments"]["net0"]["rate_mbit"]
    c = cap.capacity(shared, [pair("node01", "node02"), pair("node03", "node04")])
    assert c["MBps"] == 2 * rate / 16.0


def test_pairs_spread_over_the_links(hub_mesh):
    """7 local pairs of the 4x4 hub mesh: each on a segment of its own (the
    greedy in list order puts two on the first row's hub)."""
    plan, path_of = hub_mesh
    local = bench.classify(plan, path_of, list(plan["nodes"]))["same-segment"]
    links = lambda p: cap.pair_resources(plan, p[0], p[1], p[2]["via"])  # noqa: E731
    spread = bench.disjoint_pairs(local, 7, links)
    assert cap.capacity(plan, [pair(a, b) for a, b, _i in spread])["MBps"] == 7 * 0.625
    in_order = bench.disjoint_pairs(local, 7)
    assert cap.capacity(plan, [pair(a, b) for a, b, _i in in_order])["MBps"] < 7 * 0.625
    nodes = [n for a, b, _i in spread for n in (a, b)]
    assert len(nodes) == len(set(nodes)) == 14
    assert bench.disjoint_pairs(local, 7, links) == spread          # deterministic


@pytest.mark.parametrize(("value", "why"), [
    (float("nan"), "samples_us.3: nan is not a finite number"),
    (float("inf"), "samples_us.3: inf is not a finite number"),
    ("four", ".json: runs[0].samples_us[3]: must be an integer or float"),
])
def test_samples_that_are_no_finite_numbers_are_refused_and_nothing_is_written(tmp_path, value, why):
    plan, path_of = compiled("routed-mesh.yml")
    s = bench.schedule(plan, path_of, {"count": 10, "sizes": [4], "mss_points": False, "pairs": [1],
                                       "file_mb": [2], "remote_copies": [0]})
    outputs = _fake_outputs(s)
    first = next(st for st in s["steps"] if st["kind"] == "tokex")
    outputs[first["pairs"][0]["client"]][first["id"] + ".json"]["runs"][0]["samples_us"][3] = value
    with pytest.raises(bench.BenchError) as exc:
        report.collect(s, outputs, plan)
    assert why in exc.value.problems[0]
    assert exc.value.problems[-1] == "nothing written: the nodes sent what a results folder cannot hold"


def test_results_that_no_reader_takes_are_not_written(tmp_path):
    plan, path_of = compiled("routed-mesh.yml")
    s = bench.schedule(plan, path_of, {"count": 10, "sizes": [4], "mss_points": False, "pairs": [1],
                                       "file_mb": [2], "remote_copies": [0]})
    res = report.collect(s, _fake_outputs(s), plan)
    res["samples"][3]["rtt_us"] = float("nan")
    with pytest.raises(bench.BenchError) as exc:
        report.write_results(str(tmp_path / "out"), s, res, {}, plan, {"raw": [float("inf")]})
    assert exc.value.problems[0] == "raw.json: raw[0]: inf is not a finite number"
    with pytest.raises(bench.BenchError) as exc:
        report.write_results(str(tmp_path / "out"), s, res, {}, plan, {})
    assert exc.value.problems[0] == "results.json: samples[3].rtt_us: nan is not a finite number"
    res["samples"][3]["rtt_us"] = "four"
    with pytest.raises(bench.BenchError) as exc:
        report.write_results(str(tmp_path / "out"), s, res, {}, plan, {})
    assert exc.value.problems[0].startswith("results.json: samples[3].rtt_us: must be ")
    assert exc.value.problems[-1].startswith("nothing written to ")
    assert not (tmp_path / "out").exists()
