"""make bench (scripts/compile_timing.py, scripts/bench_checks.py): how a case and a
check are judged, without timing anything here."""

import importlib.util
import random
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT


def _module(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def timing():
    return _module("compile_timing")


@pytest.fixture(scope="module")
def checks():
    return _module("bench_checks")


def test_bench_custom_topology_is_fixed_and_sized_as_stated(timing):
    text = timing.custom_topology()
    assert text == timing.custom_topology()
    topo = yaml.safe_load(text)
    assert len(topo["custom"]["nodes"]) == 2000
    assert len(topo["custom"]["segments"]) == 100
    assert len(topo["custom"]["links"]) == 150
    assert text != timing.custom_topology(seed=random.Random(7).randrange(10**6))


def test_every_case_has_a_topology_and_a_baseline_commit(timing):
    for case in timing.cases():
        if case.baseline_topology is not None:      # this code on another topology
            assert case.topology == timing.DUAL_STACK and (ROOT / case.baseline_topology).is_file()
            continue
        assert case.topology == "custom" or (ROOT / case.topology).is_file(), case.label
        want = timing.METRICS_BASELINE if case.command == "metrics" else timing.BASELINE_COMMIT
        assert case.baseline_commit == want, case.label


def test_a_dual_stack_case_runs_this_code_on_the_ipv4_topology_and_misses_beyond_its_share(timing, tmp_path):
    dual = next(c for c in timing.cases() if c.baseline_topology is not None)
    copy = timing.dual_stack(dual.baseline_topology, str(tmp_path))
    data = yaml.safe_load(open(copy))
    assert data["addressing"]["ipv6"] is True and data["metagraph"]["groups"] == 97
    case = timing.Case("d", "x", times=[3.9], base_times=[2.0], allowed=2.0, baseline_topology="y",
                       out_bytes=190, base_bytes=100)
    assert case.target() == 4.0 and not timing.missed(case, 1.0) and case.baseline() == "IPv4 x2"
    case.out_bytes = 201
    assert timing.missed(case, 1.0) and not timing.missed(case, 1.5)
    case.out_bytes, case.times = 190, [4.1]
    assert timing.missed(case, 1.0) and timing.judged_miss(case, 1.0)
    case.goal_only = True                   # shown as missed, not failing the bench
    assert timing.missed(case, 1.0) and not timing.judged_miss(case, 1.0)
    assert timing.report([case], 1.0)
    assert not dual.goal_only               # judged: dual stack fails the bench beyond 2x


def _two_cases(timing, small_s, big_s, base_small=0.3, base_big=6.0):
    """The 380- and 8,256-node cases with these medians, their baselines' beside them."""
    small = timing.Case("L=20 P=19 C=1, 380 nodes", "x", times=[small_s], rss_mb=50, nodes=380,
                        entries=7600, out_bytes=7600 * 300, base_times=[base_small])
    big = timing.Case("L=129 P=64 C=2, 8,256 nodes", "x", times=[big_s], rss_mb=900, nodes=8256,
                      entries=2_000_000, out_bytes=2_000_000 * 200, base_times=[base_big])
    return small, big


def test_a_case_is_judged_against_its_baseline_here_times_the_tolerance(timing, capsys):
    small, big = _two_cases(timing, 0.3, 6.0)
    assert timing.report([small, big], 1.0)
    big.times = [6.1]
    assert not timing.report([small, big], 1.0)
    assert "<-- MISSED" in capsys.readouterr().out
    big.times = [8.9]
    assert timing.report([small, big], 1.5)
    big.times = [9.1]                   # over 1.5 times the baseline's 6.0 s: CI fails
    assert not timing.report([small, big], 1.5)
    out = capsys.readouterr().out
    assert "1.52  " in out and timing.BASELINE_COMMIT in out


def test_the_fastest_runs_are_compared_and_a_case_without_a_baseline_misses(timing):
    """A burst of other work that slows two of three runs moves no verdict."""
    case = timing.Case("c", "x", times=[2.5, 0.9, 2.6], base_times=[1.0, 2.0, 1.1])
    assert case.target() == 1.0 and not timing.missed(case, 1.0)
    case.times = [1.2, 1.3, 1.25]
    assert timing.missed(case, 1.0) and not timing.missed(case, 1.25)
    assert timing.missed(timing.Case("c", "x", times=[1.0]), 10.0)


def test_the_rss_and_the_output_growth_keep_their_targets(timing):
    small, big = _two_cases(timing, 0.3, 6.0)
    big.rss_mb = 2100
    assert not timing.report([small, big], 1.5)
    big.rss_mb, big.out_bytes = 900, 2_000_000 * 600       # bytes per entry x2 from 380 nodes
    assert not timing.report([small, big], 1.0)


def test_a_missing_baseline_commit_stops_the_bench(timing, tmp_path, monkeypatch, capsys):
    def shallow(argv, **_kw):               # git archive in a clone without that commit
        raise subprocess.CalledProcessError(128, argv)
    monkeypatch.setattr(timing.subprocess, "run", shallow)
    monkeypatch.setattr(timing, "environment", lambda: "a fake machine")
    with pytest.raises(timing.NoBaseline, match="commit 5cfe70b, a case's baseline, is not in this clone"):
        timing.baseline_code(str(tmp_path), "5cfe70b")
    assert timing.main(["--only", "380 nodes"]) == 2
    assert "git fetch --unshallow" in capsys.readouterr().err


def _fake_run(timing, checks, monkeypatch, case_s, base_s):
    """Cases and checks that take the given times without running anything."""
    def run_once(case, out, code=None):
        return base_s if code else case_s
    monkeypatch.setattr(timing, "run_once", run_once)
    monkeypatch.setattr(timing, "environment", lambda: "a fake machine")
    monkeypatch.setattr(timing, "measure_output", lambda case, out: None)
    monkeypatch.setattr(timing, "baseline_code", lambda scratch, commit: "/code/" + commit)
    monkeypatch.setattr(checks, "run", lambda only, runs, scratch: [])


@pytest.mark.parametrize("case_s, code", [(1.0, 0), (1.6, 1)])
def test_only_exits_non_zero_when_its_case_misses(timing, checks, monkeypatch, capsys, case_s, code):
    _fake_run(timing, checks, monkeypatch, case_s, 1.0)
    assert timing.main(["--only", "mesh 64x64", "--tolerance", "1.5", "--runs", "2"]) == code
    out = capsys.readouterr().out
    assert "mesh 64x64" in out and "380 nodes" not in out
    assert ("<-- MISSED" in out) == bool(code)


def test_only_matching_nothing_is_a_usage_error(timing, checks, monkeypatch, capsys):
    _fake_run(timing, checks, monkeypatch, 1.0, 1.0)
    assert timing.main(["--only", "no such case"]) == 2
    assert "no case or check matches --only 'no such case'" in capsys.readouterr().err


def test_bench_plot_and_markdown(timing, tmp_path, capsys):
    done = [timing.Case("L=20 P=19 C=1, 380 nodes", "x", times=[0.3, 0.5], nodes=380,
                        entries=7600, out_bytes=760_000, base_times=[0.4]),
            timing.Case("mesh 64x64, 4,096 nodes", "x", family="mesh", times=[2.0],
                        nodes=4096, entries=80_000, out_bytes=8_000_000, base_times=[1.6])]
    timing.plot(done, str(tmp_path / "t.svg"))
    svg = (tmp_path / "t.svg").read_text()
    assert svg.startswith("<?xml") and "metagraph" in svg and "mesh" in svg
    timing.markdown(done)
    out = capsys.readouterr().out
    assert ("| L=20 P=19 C=1, 380 nodes | 0.40 s | 0.30 s | 0.50 s | %s | 0.40 s | 0.75 |"
            % timing.BASELINE_COMMIT) in out
    assert ("| mesh 64x64, 4,096 nodes | 2.00 s | 2.00 s | 2.00 s | %s | 1.60 s | 1.25 |"
            % timing.BASELINE_COMMIT) in out
    assert "| 2,000 | 100 |" in out


def test_bench_counts_nodes_routes_and_bytes_written(timing, tmp_path):
    (tmp_path / "nodes" / "a").mkdir(parents=True)
    (tmp_path / "plan.json").write_text('{"nodes": {"a": {"routes": [1, 2]}, "b": {"routes": []}}}')
    (tmp_path / "nodes" / "a" / "f").write_text("x" * 100)
    case = timing.Case("c", "x")
    timing.measure_output(case, str(tmp_path))
    assert (case.nodes, case.entries) == (2, 4)
    assert case.out_bytes == 100 + (tmp_path / "plan.json").stat().st_size


# -- the checks --------------------------------------------------------------------------

def test_a_check_misses_over_its_target_times_the_tolerance_or_on_a_wrong_result(checks, capsys):
    check = checks.Check("x", "s", target=1.0, values=[0.9, 1.4, 1.2])
    assert not check.missed(1.2) and check.missed(1.1)
    assert checks.Check("x", "s", target=1.0).missed(10.0)            # nothing measured
    wrong = checks.Check("x", "s", target=1.0, values=[0.1], problem="exit 0, not 2: compile a.yml")
    assert wrong.missed(10.0)
    assert not checks.report([check, wrong], 1.5)
    assert "<-- MISSED: exit 0, not 2: compile a.yml" in capsys.readouterr().out


def test_a_refusal_is_judged_against_the_one_line_file_refused_in_the_same_run(checks, monkeypatch):
    times = iter([0.5, 0.2, 0.4, 0.3, 0.6, 0.25])         # hostile, reference, in turn
    monkeypatch.setattr(checks, "_timed", lambda argv: (next(times), 2))
    check = checks.refusal("compile, flow nesting", ["beonet", "compile", "deep.yml"],
                           ["beonet", "compile", "bad.yml"], 3)
    assert check.values == [0.5, 0.4, 0.6] and check.target == pytest.approx(1.5 * 0.25)
    assert check.missed(1.0) and not check.missed(1.4) and not check.problem
    times = iter([0.5, 0.2])
    bomb = checks.refusal("compile, alias bomb", ["beonet", "compile", "bomb.yml"],
                          ["beonet", "compile", "bad.yml"], 1)
    assert bomb.target == pytest.approx(3.0 * 0.2) and bomb.basis == "3.0 x a one-line bad file's"


def test_a_hostile_input_that_is_accepted_is_a_problem(checks, monkeypatch):
    monkeypatch.setattr(checks, "_timed", lambda argv: (0.1, 0 if "bomb.yml" in argv else 2))
    check = checks.refusal("c", ["beonet", "compile", "bomb.yml"], ["beonet", "compile", "bad.yml"], 1)
    assert check.problem == "exit 0, not 2: compile bomb.yml" and check.missed(100.0)


def test_the_hostile_files_are_what_the_labels_say(checks, tmp_path):
    argvs = checks.refusal_argvs(str(tmp_path))
    assert len(argvs) == len(checks.TOPOLOGIES) + 4 and set(checks.RATIOS) <= set(argvs)
    deep, _ref = argvs["cabling, JSON 100,000 levels deep"]
    assert open(deep[-1]).read() == checks.DEEP_JSON
    huge, _ref = argvs["benchmark-report, a 1 GiB file"]
    assert (tmp_path / "hostile" / "huge" / "results.json").stat().st_size == (1 << 30) + 1
    assert huge[-1] == str(tmp_path / "hostile" / "huge")
    bomb, ref = argvs["compile, alias bomb"]
    assert yaml.safe_load(open(ref[2]).read()) == {"name": "t"}
    assert open(bomb[2]).read().count("*a7") == 9


def test_start_up_is_the_compiles_median_against_five_bare_interpreters(checks, monkeypatch):
    calls = []

    def run(argv):
        calls.append(argv)
        return (0.06, 0.05) if "compile" in argv else (0.01, 0.01)
    monkeypatch.setattr(checks.startup_time, "run", run)
    check = checks.startup(2)
    assert len(calls) == 2 * checks.STARTUP_RUNS and calls[0][1:] == ["compile", checks.TESTBED]
    assert calls[1][1:] == ["-c", "pass"]
    assert check.target == pytest.approx(0.05) and check.missed(1.0) and not check.missed(1.2)
    assert check.basis == "5.0 x `python -c pass` (10.0 ms; here x6.0, CPU x5.0)" and not check.problem
    # judged: the report fails with it missed, and passes within the tolerance
    assert not check.goal_only and check.fails(1.0) and not check.fails(1.2)
    assert not checks.report([check], 1.0) and checks.report([check], 1.2)


def test_start_up_fails_on_a_compile_that_fails(checks, monkeypatch):
    def run(argv):
        if "compile" in argv:
            raise SystemExit("beonet compile x.yml failed:\nbeonet: 1 error, nothing written")
        return (0.01, 0.01)
    monkeypatch.setattr(checks.startup_time, "run", run)
    check = checks.startup(1)
    assert check.problem.endswith("failed: beonet: 1 error, nothing written") and check.missed(100.0)
    assert check.fails(100.0) and not checks.report([check], 100.0)


def test_the_checks_run_alone_and_say_so_when_none_matches(checks, monkeypatch, capsys):
    times = {"compile": (0.06, 0.05)}

    def run(argv):
        return times["compile"] if "compile" in argv else (0.01, 0.01)
    monkeypatch.setattr(checks.startup_time, "run", run)
    assert checks.main(["--only", "start-up", "--runs", "1"]) == 1      # 6 times: missed
    assert "start-up, beonet compile metanode-testbed" in capsys.readouterr().out
    times["compile"] = (0.04, 0.04)
    assert checks.main(["--only", "start-up", "--runs", "1"]) == 0      # 4 times
    capsys.readouterr()
    assert checks.main(["--only", "no such check"]) == 2
    assert "no check matches --only 'no such check'" in capsys.readouterr().err
