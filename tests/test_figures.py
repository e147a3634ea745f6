"""The papers' token-exchange figures (make figure-mesh, make figure-bonded) from
results folders."""

import json

import pytest

from beonet import cli
from beonet.benchmarks import figures


def _step(cls, pairs, rtts, starts, size=8192, cap=None, proto="udp"):
    """A token-exchange step: each pair's run (start, round trips) and the aggregate."""
    tokex, samples = [], []
    for i, (rtt, start) in enumerate(zip(rtts, starts)):
        client = "c%d" % i
        seconds = sum(rtt) / 1e6
        rate = 2 * size * len(rtt) / seconds / 1e6
        tokex.append({"class": cls, "pairs": pairs, "size": size, "proto": proto, "client": client,
                      "start": start, "seconds": seconds, "exchange_MBps": rate})
        samples += [{"class": cls, "pairs": pairs, "size": size, "proto": proto, "client": client,
                     "i": k, "rtt_us": r} for k, r in enumerate(rtt)]
    agg = {"class": cls, "pairs": pairs, "size": size, "proto": proto,
           "exchange_MBps": 0.0, "sum_exchange_MBps": sum(t["exchange_MBps"] for t in tokex),
           "capacity_MBps": cap}
    return tokex, samples, agg


def _folder(path, steps):
    path.mkdir()
    res = {"tokex": [], "samples": [], "aggregate": [], "environment": {"kernel": "k"}}
    for tokex, samples, agg in steps:
        res["tokex"] += tokex
        res["samples"] += samples
        res["aggregate"].append(agg)
    (path / "results.json").write_text(json.dumps(res))
    return str(path)


def test_concurrent_counts_only_the_window_all_pairs_ran_in():
    # pair 0: 10 exchanges of 0.1 s from t=0; pair 1: 5 of 0.1 s from t=0.5
    tokex, samples, agg = _step("same-segment", 2, [[100000] * 10, [100000] * 5], [0.0, 0.5])
    res = {"tokex": tokex, "samples": samples}
    # window 0.5..1.0: pair 0 ends 5 exchanges in it (0.6 .. 1.0), pair 1 five
    assert figures.concurrent(res, "same-segment", 2, 8192, "udp") == pytest.approx(
        2 * 8192 * 10 / 0.5 / 1e6, abs=1e-3)
    tokex, samples, agg = _step("same-segment", 2, [[100000] * 2, [100000] * 2], [0.0, 5.0])
    assert figures.concurrent({"tokex": tokex, "samples": samples}, "same-segment", 2, 8192,
                              "udp") is None        # never ran together
    assert figures.concurrent({"tokex": tokex, "samples": []}, "same-segment", 2, 8192, "udp") is None


def test_mesh_figure_sets_the_lab_beside_the_paper(tmp_path, capsys):
    single = _folder(tmp_path / "single", [
        _step("same-segment", 1, [[13100] * 100], [0.0], cap=0.625),
        _step("same-segment", 7, [[13100 * 7] * 100] * 7, [0.0] * 7, cap=0.625)])
    mesh = _folder(tmp_path / "mesh", [
        _step("same-segment", 7, [[13100] * 100] * 7, [0.0] * 7, cap=4.375),
        _step("gateway-1", 7, [[13100 * 3] * 100] * 7, [0.0] * 7, cap=1.5),
        _step("p2p", 7, [[1000] * 10] * 7, [0.0] * 7, cap=9.0)])
    fig = figures.exchange("mesh", {"single": single, "mesh": mesh})
    assert [(r["line"], r["pairs"]) for r in fig["rows"]] == [
        ("single net", 1), ("single net", 7), ("routed mesh, local", 7), ("routed mesh, remote", 7)]
    local = fig["rows"][2]
    assert local["exchange_MBps"] == pytest.approx(7 * 2 * 8192 / 0.0131 / 1e6, abs=2e-3)
    assert local["capacity_MBps"] == 8.75
    assert fig["rows"][0]["exchange_MBps"] == fig["rows"][1]["exchange_MBps"]   # one medium
    text = figures.exchange_markdown(fig, "t")
    assert "| routed mesh, local | 8.76 |" in text and "| 8.75 | 6.30 |" in text
    assert "| local / remote | 3.00 | — | — | 2.3" in text
    out = tmp_path / "fig"
    assert cli.main(["mesh-figure", "--single", single, "--mesh", mesh, "-o", str(out)]) == 0
    assert {"figure.json", "summary.md", "token-exchange.svg"} <= {p.name for p in out.iterdir()}
    (tmp_path / "empty").mkdir()
    assert cli.main(["mesh-figure", "--single", str(tmp_path / "empty"), "--mesh", mesh, "-o", str(out)]) == 2
    assert "no results.json" in capsys.readouterr().err
    assert cli.main(["mesh-figure", "--single", str(tmp_path), "--mesh", mesh, "-o", str(out)]) == 2
    assert "lies inside" in capsys.readouterr().err


def test_bonded_figure_sets_one_channel_beside_two(tmp_path, capsys):
    """The same planner class in both runs; the single run's capacity is half
    the plan's (one of two channels up); the ratio row is bonded over single."""
    single = _folder(tmp_path / "single", [
        _step("bonded", 1, [[13100] * 100], [0.0], cap=1.25),
        _step("bonded", 7, [[13100 * 7] * 100] * 7, [0.0] * 7, cap=1.25)])
    bonded = _folder(tmp_path / "bonded", [
        _step("bonded", 1, [[7000] * 100], [0.0], cap=1.25),
        _step("bonded", 7, [[7000 * 7] * 100] * 7, [0.0] * 7, cap=1.25)])
    fig = figures.exchange("bonded", {"single": single, "bonded": bonded})
    assert [(r["line"], r["pairs"], r["capacity_MBps"]) for r in fig["rows"]] == [
        ("single net", 1, 1.25), ("single net", 7, 1.25),
        ("bonded dual net", 1, 2.5), ("bonded dual net", 7, 2.5)]
    text = figures.exchange_markdown(fig, "t")
    assert "single net and bonded dual net" in text
    assert "| bonded / single | 1.87 | — | — | 1.7 (70 % more) |" in text
    assert "| bonded dual net | 2.34 |" in text and "| 2.50 | 1.70 |" in text
    out = tmp_path / "fig"
    assert cli.main(["bonded-figure", "--single", single, "--bonded", bonded, "-o", str(out)]) == 0
    assert json.loads((out / "figure.json").read_text())["figure"] == "bonded"
    with pytest.raises(SystemExit) as exc:
        cli.main(["bonded-figure", "--single", single, "-o", str(out)])
    assert exc.value.code == 2
    assert "--bonded" in capsys.readouterr().err
