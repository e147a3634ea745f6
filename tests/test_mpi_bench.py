"""The MPI benchmark's controller side: the run plan from the topology, and the report."""

import csv
import json
import re

import pytest
from conftest import ROOT

from beonet.benchmarks import mpi
from beonet.benchmarks.planner import BenchError, path_lookup
from beonet.compiler import pipeline
from beonet.outputs import plan as render


def _compiled(name):
    """The plan and every ordered pair's allowed hop lists, as beonet_topology returns them."""
    c = pipeline.compile_file(str(ROOT / "topologies" / ("%s.yml" % name)))
    names = [n.name for n in c.graph.nodes]
    paths = {a: {b: [[h["address"] for h in hops] for hops in c.path(a, b) or []]
                 for b in names if b != a} for a in names}
    return render.plan(c), paths


def _run(name, **params):
    plan, paths = _compiled(name)
    return plan, mpi.plan_run(plan, path_lookup(plan, paths), params)


def test_the_testbed_run_has_pairs_of_every_class_and_a_gateway_test():
    plan, run = _run("metanode-testbed")
    assert run["ranks"] == list(plan["nodes"])
    lines = run["pairs_text"].splitlines()
    classes = {line.split()[1] for line in lines if line.startswith("pair ")}
    assert {"same-segment", "p2p", "gateway-1"} <= classes
    g, a, b = run["gateway"]
    assert g not in (a, b)
    assert lines[-1] == "gateway %d %d %d" % tuple(run["ranks"].index(x) for x in (g, a, b))
    for line in lines[:-1]:                 # disjoint pairs within a class, ranks in range
        _word, _cls, x, y = line.split()
        assert 0 <= int(x) < len(run["ranks"]) and 0 <= int(y) < len(run["ranks"]) and x != y
    assert len(run["pair_class"]) == 36 * 35 // 2


def test_pairs_per_class_is_checked():
    plan, paths = _compiled("routed-mesh")
    with pytest.raises(BenchError, match="pairs_per_class"):
        mpi.plan_run(plan, path_lookup(plan, paths), {"pairs_per_class": 0})
    _plan, run = _run("routed-mesh", pairs_per_class=1)
    assert all(sum(1 for line in run["pairs_text"].splitlines() if line.startswith("pair %s " % c)) <= 1
               for c in run["chosen"])


def test_a_fit_recovers_latency_and_bandwidth():
    points = [(x, 50.0 + x / 10.0) for x in (4, 64, 1024, 8192, 65536)]
    assert mpi.fit_line(points) == {"latency_us": 50.0, "bandwidth_mb_s": 10.0}
    assert mpi.fit_line([(4, 1.0)]) is None


def test_a_fit_whose_time_does_not_grow_has_no_bandwidth(tmp_path):
    flat = [(x, 80.0 - x / 1e4) for x in (4, 64, 1024, 65536)]
    assert mpi.fit_line(flat)["bandwidth_mb_s"] is None
    _plan, run = _run("routed-mesh")
    a, b = run["chosen"]["gateway-1"][0]
    ra, rb = run["ranks"].index(a), run["ranks"].index(b)
    rows = ["phase,class,a,b,bytes,usec"]
    rows += ["fixed,gateway-1,%d,%d,%d,%.3f" % (ra, rb, x, u) for x, u in flat]
    mpi.write_report(str(tmp_path), "routed-mesh", run, "\n".join(rows) + "\n", {})
    stored = json.loads((tmp_path / "results.json").read_text())
    assert stored["result"]["classes"]["fixed"]["gateway-1"]["fit"]["bandwidth_mb_s"] is None
    summary = (tmp_path / "summary.md").read_text()
    assert re.search(r"\| gateway-1 \| 4 \| [0-9.]+ \| [0-9.]+ \| - \|", summary)


def test_the_report_writes_summary_samples_and_plot(tmp_path):
    _plan, run = _run("routed-mesh")
    a, b = run["chosen"]["gateway-1"][0]
    ra, rb = run["ranks"].index(a), run["ranks"].index(b)
    rows = ["phase,class,a,b,bytes,usec"]
    rows += ["fixed,gateway-1,%d,%d,%d,%.3f" % (ra, rb, x, 100 + x / 5) for x in (4, 512, 8192, 65536)]
    rows += ["random,,%d,%d,%d,%.3f" % (ra, rb, x, 90 + x / 5) for x in (16, 4096)]
    rows += ["compute,idle,1,2,0,1000.0", "compute,loaded,1,2,0,800.0", "allreduce,,0,0,8,40.5"]
    result = mpi.write_report(str(tmp_path), "routed-mesh", run, "\n".join(rows) + "\n",
                              {"kernel": "6.1"})
    assert result["classes"]["fixed"]["gateway-1"]["fit"] == {"latency_us": 100.0, "bandwidth_mb_s": 5.0}
    assert result["classes"]["random"]["gateway-1"]["samples"] == 2
    assert result["compute"]["loaded_over_idle"] == 0.8
    summary = (tmp_path / "summary.md").read_text()
    assert "| gateway-1 | 4 |" in summary and "x0.8" in summary and "| kernel | 6.1 |" in summary
    assert json.loads((tmp_path / "results.json").read_text())["result"] == json.loads(json.dumps(result))
    assert len(list(csv.DictReader((tmp_path / "samples.csv").open()))) == 9
    assert (tmp_path / "time-vs-size.png").stat().st_size > 1000


def test_a_run_without_samples_is_an_error(tmp_path):
    _plan, run = _run("routed-mesh")
    with pytest.raises(BenchError, match="no sample"):
        mpi.write_report(str(tmp_path), "t", run, "phase,class,a,b,bytes,usec\n", {})
