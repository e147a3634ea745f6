"""Results folders are checked where they enter: benchmark-report and the figure
commands refuse a bad results.json (exit 2, file and key path named, no
traceback, nothing written), whatever its shape."""

import json
import os
import pathlib
import shutil

import pytest
from conftest import ROOT, golden
from hypothesis import event, given, settings
from hypothesis import strategies as st
from test_benchmarks import _fake_outputs, compiled

from beonet import cli
from beonet.benchmarks import planner as bench
from beonet.benchmarks import report, results_schema
from beonet.gate.validate import strict_validator

ERRORS = ROOT / "tests/errors/results"
MESH = str(ROOT / "topologies/routed-mesh.yml")
SC98 = str(ROOT / "topologies/benchmarks/sc98-latency.yml")
CASES = sorted(p.stem for p in ERRORS.glob("*.json"))


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A results folder of the routed mesh, as playbooks/benchmark.yml writes it."""
    plan, path_of = compiled("routed-mesh.yml")
    s = bench.schedule(plan, path_of, {"count": 10, "sizes": [4, 8192], "mss_points": False,
                                       "pairs": [1, 2], "file_mb": [2], "remote_copies": [0]})
    folder = tmp_path_factory.mktemp("good") / "run"
    res = report.collect(s, _fake_outputs(s), plan)
    report.write_results(str(folder), s, res, {"kernel": "6.1"}, plan, {})
    return folder


def _snapshot(*folders):
    """Every file under the folders: a link's target, a file's size and time of change."""
    out = {}
    for folder in folders:
        for path in sorted(pathlib.Path(folder).rglob("*")) if os.path.isdir(folder) else []:
            st = path.lstat()
            out[str(path)] = os.readlink(path) if path.is_symlink() else (st.st_size, st.st_mtime_ns)
    return out


def refused(capsys, argv, *watched):
    """Run beonet: exit 2, no traceback, nothing under the watched folders changed; stderr."""
    before = _snapshot(*watched)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.endswith("\n")
    assert _snapshot(*watched) == before, "a file was written despite the errors"
    return err


def _folder(tmp_path, content, name="run"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "results.json").write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


@pytest.mark.parametrize("name", CASES)
def test_golden_refusals(name, tmp_path, capsys):
    folder = _folder(tmp_path, (ERRORS / ("%s.json" % name)).read_bytes())
    argv = ["benchmark-report", str(folder)] + (["--topology", MESH] if name.startswith("topology-") else [])
    err = refused(capsys, argv, folder)
    assert all(line.startswith(str(folder)) for line in err.splitlines()[:-1])
    golden(ERRORS / ("%s.txt" % name), err.replace(str(folder), "FOLDER"))


HOSTILE = {
    "empty object": "{}",
    "a string": '"results"',
    "a number": "12",
    "null": "null",
    "strings for numbers": json.dumps({"tokex": [{"class": "p2p", "pairs": "2", "size": "4", "proto": "udp",
                                                  "client": "a", "start": "now"}]}),
    "negative count": json.dumps({"tokex": [{"class": "p2p", "pairs": -3, "size": 4, "proto": "udp",
                                             "client": "a", "start": 0, "seconds": 1, "count": -1}]}),
    "huge count": json.dumps({"copy_aggregate": [{"file_mb": 2, "remote": 0, "copies": 10 ** 30,
                                                  "aggregate_MBps": 1, "resident_pages_before": 0}]}),
    "10^400": '{"link_MBps": 1e400, "tokex": []}',
    "a 400-digit integer": '{"tokex": [], "link_MBps": 1%s}' % ("0" * 400),
    "-Infinity": '{"tokex": [], "link_MBps": -Infinity}',
    "a boolean for a number": json.dumps({"tokex": [], "link_MBps": True}),
    "a float for an integer": json.dumps({"ring": [{"nodes": 2.0, "size": 4, "rounds": 1, "round_min_us": 1,
                                                    "round_median_us": 1, "round_p99_us": 1,
                                                    "round_max_us": 1}]}),
    "rows of lists": json.dumps({"aggregate": [[1, 2]]}),
    "nested beyond the limit": '{"environment": {"x": %s1%s}}' % ("[" * 40, "]" * 40),
    "a UTF-8 BOM": "\ufeff{}",
    "a long key": json.dumps({"x" * 5000: 1, "tokex": []}),
    "no sizes": json.dumps({"tokex": [], "params": {"sizes": [], "copies": 1, "latency_model": {}}}),
    "a name with a slash": json.dumps({"copy": [{"host": "../etc/passwd"}], "tokex": []}),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_results_are_refused(case, tmp_path, capsys):
    folder = _folder(tmp_path, HOSTILE[case])
    err = refused(capsys, ["benchmark-report", str(folder)], folder)
    assert err.startswith(str(folder / "results.json") + ": ")
    assert err.splitlines()[-1].startswith("beonet: ") and "nothing written" in err


def test_a_100k_deep_bracket_file_is_refused_without_recursion(tmp_path, capsys):
    folder = _folder(tmp_path, "[" * 100_000)
    err = refused(capsys, ["benchmark-report", str(folder)], folder)
    assert "nests deeper than" in err and "RecursionError" not in err


def test_a_huge_file_is_refused_before_it_is_read(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "run"
    folder.mkdir()
    with open(folder / "results.json", "wb") as fh:       # sparse: nothing is stored
        fh.truncate(results_schema.MAX_BYTES + 1)
    read = []
    monkeypatch.setattr(results_schema.gate, "loads_json", lambda text, *a, **k: read.append(text))
    err = refused(capsys, ["benchmark-report", str(folder)], folder)
    assert "is over 1024 MiB" in err and read == []


def test_many_problems_are_listed_up_to_a_bound(tmp_path, capsys):
    rows = [{"class": "p2p", "pairs": 1, "size": 4, "proto": "udp", "client": "a", "rtt_us": "x"}] * 5000
    folder = _folder(tmp_path, json.dumps({"samples": rows}))
    err = refused(capsys, ["benchmark-report", str(folder)], folder)
    assert "samples[4].rtt_us: must be a number from 0 to 1000000000000, not 'x'" in err
    assert len(err.splitlines()) == results_schema.MAX_PROBLEMS + 2 and "and more problems" in err


@pytest.mark.parametrize("make", ["missing", "file", "results.json a folder", "results.json a pipe",
                                  "results.json a link to a device"])
def test_what_is_no_results_folder_is_named(make, tmp_path, capsys):
    folder = tmp_path / "run"
    if make == "file":
        folder.write_text("{}")
    elif make != "missing":
        folder.mkdir()
        target = folder / "results.json"
        {"results.json a folder": target.mkdir, "results.json a pipe": lambda: os.mkfifo(target),
         "results.json a link to a device": lambda: target.symlink_to("/dev/zero")}[make]()
    err = refused(capsys, ["benchmark-report", str(folder)], tmp_path)
    assert err.startswith(str(folder)) and err.count("\n") == 2
    word = {"missing": "no such folder", "file": "is a file, not a results folder",
            "results.json a folder": "a folder, not a file"}.get(make, "a pipe, socket or device")
    assert word in err


def test_the_figures_refuse_bad_folders_and_bad_outputs(good, tmp_path, capsys):
    (tmp_path / "afile").write_text("")
    bad = _folder(tmp_path, '{"tokex": [{"class": "p2p"}], "aggregate": 3}', "bad")
    out = tmp_path / "fig"
    err = refused(capsys, ["mesh-figure", "--single", str(good), "--mesh", str(bad), "-o", str(out)],
                  tmp_path)
    assert "bad/results.json: tokex[0].pairs: missing required key" in err
    assert "bad/results.json: aggregate: must be a list, not a number 3" in err and not out.exists()
    err = refused(capsys, ["bonded-figure", "--single", str(bad), "--bonded", str(tmp_path / "nothing"),
                           "-o", str(out)], tmp_path)
    assert "bad/results.json" in err and "nothing: no such folder" in err
    for output, words in (("", "-o: an empty value"), (str(good / "summary.md"), "lies inside"),
                          (str(tmp_path / "afile"), "is a file"),
                          (str(good), "is also what the command reads"),
                          (str(good / "sub"), "lies inside")):
        err = refused(capsys, ["bonded-figure", "--single", str(good), "--bonded", str(good), "-o", output],
                      tmp_path, good)
        assert words in err


def test_the_latency_figure_refuses_runs_of_another_topology(good, tmp_path, capsys):
    out = tmp_path / "fig"
    rows = [{"class": "p2p", "client": "node01", "server": "node03", "proto": "udp", "switches": 3,
             "routers": 0, "one_way_median_us": 50},
            {"class": "gateway-1", "client": "node-0-0", "server": "node-1-1", "proto": "tcp", "switches": 2,
             "routers": 1, "one_way_median_us": 80}]
    other = _folder(tmp_path, json.dumps({"latency": rows}), "other")
    err = refused(capsys, ["latency-figure", SC98, "--delays-on", str(other), "--delays-off", str(other),
                           "-o", str(out)], tmp_path)
    assert ("other/results.json: latency[0]: 3 switches and 0 routers, but the plan's path from node01 "
            "to node03 is e-e (the results of another topology?)") in err
    assert "latency[1]: the plan has no path from node-0-0 to node-1-1" in err
    assert "latency: class gateway-1 has no UDP row" in err and not out.exists()


def test_a_link_planted_in_a_results_folder_is_replaced_not_followed(good, tmp_path, capsys):
    folder = tmp_path / "run"
    shutil.copytree(good, folder)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    for name in ("summary.md", "tokex.csv", "round-trip.png", "results.json.link"):
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(victim)
    assert cli.main(["benchmark-report", str(folder)]) == 0
    assert victim.read_text() == "keep me\n"
    assert not (folder / "summary.md").is_symlink() and (folder / "summary.md").read_text().startswith("#")
    assert not (folder / "round-trip.png").is_symlink()
    assert json.loads((folder / "results.json").read_text())["format"] == results_schema.FORMAT
    (folder / "ring.csv").unlink()
    os.mkfifo(folder / "ring.csv")          # a pipe in its place is refused, not written into (no hang)
    err = refused(capsys, ["benchmark-report", str(folder)], victim.parent / "nothing")
    assert "ring.csv': a folder, pipe, socket or device, not a file" in err
    assert victim.read_text() == "keep me\n"


def test_a_link_planted_in_a_figure_folder_is_replaced_not_followed(good, tmp_path):
    out = tmp_path / "fig"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (out / "figure.json").symlink_to(victim)
    assert cli.main(["bonded-figure", "--single", str(good), "--bonded", str(good), "-o", str(out)]) == 0
    assert victim.read_text() == "keep me\n" and not (out / "figure.json").is_symlink()
    assert {p.name for p in tmp_path.iterdir()} == {"fig", "victim.txt"}


def test_results_of_another_topology_are_refused_with_topology(good, tmp_path, capsys):
    folder = tmp_path / "run"
    shutil.copytree(good, folder)
    err = refused(capsys, ["benchmark-report", str(folder), "--topology",
                           str(ROOT / "topologies/benchmarks/demo-tree.yml")], folder)
    assert "results.json: topology: the results of 'routed-mesh', not of 'demo-tree'" in err
    assert "results.json: schedule[0].pairs[0].client: node 'node-0-0' is not in the plan of demo-tree" in err


def test_a_good_folder_still_renders(good, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(good, folder)
    assert cli.main(["benchmark-report", str(folder), "--topology", MESH]) == 0
    assert results_schema.check(str(folder), "report")[1] == []


def test_the_schema_is_a_valid_draft_2020_12_schema():
    from jsonschema import Draft202012Validator
    for reader in results_schema.NEEDS:
        Draft202012Validator.check_schema(results_schema.schema(reader))


ROW_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2, 2),
                       st.sampled_from([10 ** 12, 10 ** 13, 1.5, -0.5, "udp", "tcp", "x" * 70]),
                       st.floats(allow_nan=False), st.text(max_size=5))


@settings(max_examples=300, deadline=None, database=None)
@given(st.sampled_from(["report", "exchange", "latency"]), st.sampled_from(results_schema.TABLES), st.data())
def test_the_fast_row_check_passes_nothing_the_schema_refuses(reader, table, data):
    """Large tables are checked column by column without jsonschema; whatever that
    passes, the schema passes too (what it refuses, jsonschema words)."""
    check = results_schema._row_check(reader, table)
    if check is None:
        return
    row_schema = results_schema.schema(reader)["properties"][table]["items"]
    row = {key: _valid(sub) if data.draw(st.integers(0, 7)) else data.draw(ROW_VALUES)
           for key, sub in row_schema["properties"].items() if data.draw(st.integers(0, 19))}
    row.update(data.draw(st.dictionaries(st.text(max_size=4), ROW_VALUES, max_size=1)))
    passed = check(row)
    event("passed by the fast check" if passed else "left to jsonschema")
    if passed:
        assert not list(strict_validator(row_schema).iter_errors(row)), row


def _valid(sub):
    """A value the column's schema takes (the first of its enum, its minimum, text)."""
    if "enum" in sub:
        return sub["enum"][0]
    kind = sub.get("type", "string")
    kind = kind[0] if isinstance(kind, list) else kind
    return {"integer": sub.get("minimum", 0), "number": sub.get("minimum", 0) + 0.5,
            "string": "a", "null": None, "boolean": True}.get(kind, "a")
