"""Hostile inputs besides the topology: inventories (-i) and every CLI command's
options. Whatever they hold, a command ends in exit 0, 1 or 2 (no hang: HANG_LIMIT),
never with a traceback, and writes nothing outside its -o (the test
runs in an empty folder and checks what is left there)."""

import contextlib
import io
import json
import os
import pathlib
from typing import Any

import pytest
import yaml
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fuzz import FUZZ, HANG_LIMIT, VALUES, _mutate, time_limit

from beonet import cli

MESH = str(ROOT / "topologies/routed-mesh-2x2.yml")
HOSTS = ["node-0-0", "node-0-1", "node-1-0", "node-1-1"]
INVENTORY = {"beonet_nodes": {"hosts": {h: {"ansible_host": "192.0.2.%d" % k,
                                            "beonet_interfaces": {"eth1": "ens4", "eth2": "ens5"}}
                                        for k, h in enumerate(HOSTS, 1)},
                              "vars": {"beonet_management_interface": "eth0"}}}
# ansible-inventory starts in about a second: fewer cases than the topology's fuzzing
INVENTORY_FUZZ = settings(FUZZ, max_examples=max(5, FUZZ.max_examples // 4))
NAMES = st.one_of(st.sampled_from(["../x", "a/b", "..", ".", "", "eth0\nDNS=1", "x" * 16, "12", "-x",
                                   "ens4", "eth0", "a b", "e*", "\x00", "é"]),
                  st.text(max_size=18))


def run_cli(argv: list[str], folder: pathlib.Path) -> tuple[int, str]:
    """beonet ARGV in folder, in-process: (exit code, stderr); argparse's exits count."""
    err = io.StringIO()
    here = os.getcwd()
    os.chdir(folder)
    try:
        with time_limit(HANG_LIMIT), contextlib.redirect_stderr(err), \
                contextlib.redirect_stdout(io.StringIO()):
            try:
                code = cli.main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(here)
    text = err.getvalue()
    assert code in (0, 1, 2) and "Traceback" not in text, text
    return code, text


def _inventory_case(tmp: pathlib.Path, doc: Any) -> None:
    inv = tmp / "hosts.yml"
    inv.write_text(yaml.safe_dump(doc, allow_unicode=True) if not isinstance(doc, str) else doc,
                   encoding="utf-8")
    out = tmp / "out"
    out.mkdir()
    code, err = run_cli(["compile", MESH, "-i", str(inv), "-o", str(out / "plan.json")], tmp)
    assert os.path.exists(out / "plan.json") == (code == 0), err
    if code:
        lines = err.splitlines()
        assert lines[-1].startswith("beonet"), err
        for line in lines[:-1]:
            assert line.startswith(str(tmp)), line    # the inventory or a file beside it


@INVENTORY_FUZZ
@given(st.integers(1, 3), st.data())
def test_mutated_inventories(tmp_path_factory: pytest.TempPathFactory, count: int,
                             data: st.DataObject) -> None:
    doc = json.loads(json.dumps(INVENTORY))
    for _ in range(count):
        doc = _mutate(doc, data.draw)
    _inventory_case(tmp_path_factory.mktemp("inv"), doc)


@INVENTORY_FUZZ
@given(st.sampled_from(HOSTS), st.sampled_from(["eth1", "eth2"]), NAMES)
def test_inventory_nic_names(tmp_path_factory: pytest.TempPathFactory, host: str, nic: str,
                             name: str) -> None:
    doc = json.loads(json.dumps(INVENTORY))
    doc["beonet_nodes"]["hosts"][host]["beonet_interfaces"][nic] = name
    _inventory_case(tmp_path_factory.mktemp("inv"), doc)


@INVENTORY_FUZZ
@given(st.text(alphabet="[]{}:,-&*!<|>'\"#%@`?~\n\t abc019.=\x00", max_size=120))
def test_inventory_like_text(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    _inventory_case(tmp_path_factory.mktemp("inv"), text)


# -- every command's options ---------------------------------------------------------------

TEXT = st.one_of(NAMES, st.sampled_from(["node-0-0", "node-1-1", "all", "-", "0", "-1", "1e400",
                                         "nan", "inf", "1" + "0" * 30, "json", "yaml", "text"]))
OPTIONS: dict[str, list[str]] = {
    "compile": ["--format", "--down"], "routes": ["--node", "--down"],
    "paths": ["--from", "--to", "--format", "--down"], "metrics": ["--format", "--down"],
    "graph": ["--format", "--down"], "export": ["--slots", "--format", "--down"],
    "build": ["--backend", "--down"], "cabling": ["--discovered", "--report", "--host-vars"],
    "benchmark-report": ["--topology"], "latency-figure": ["--delays-on", "--delays-off"],
    "mesh-figure": ["--single", "--mesh", "--proto"],
    "bonded-figure": ["--single", "--bonded", "--proto"]}
POSITIONAL = {"export": ["hosts", "slurm", "hostfile", "mpich-hosts", "openmpi-mca", "cabling", "x"],
              "paths": ["--all"]}
NEEDS_OUTPUT = {"build", "latency-figure", "mesh-figure", "bonded-figure"}


def _argv(command: str, draw: Any) -> list[str]:
    argv = [command]
    if command not in ("benchmark-report", "mesh-figure", "bonded-figure"):
        argv.append(MESH)
    if command == "benchmark-report":
        argv.append(draw(st.sampled_from(["results", "missing", "."])))
    if command in POSITIONAL:
        argv.append(draw(st.sampled_from(POSITIONAL[command])))
    for option in draw(st.lists(st.sampled_from(OPTIONS[command]), unique=True)):
        argv += [option, draw(TEXT)]
    if command in NEEDS_OUTPUT or draw(st.booleans()):
        name = draw(st.one_of(st.sampled_from(["out", "o.txt", "-"]), NAMES))
        argv += ["-o", name if name in ("-", "") else "out/" + name.replace("/", "_").replace("..", "_")]
    return argv


@settings(FUZZ, max_examples=FUZZ.max_examples * 2)
@given(st.sampled_from(sorted(OPTIONS)), st.data())
def test_every_command_with_hostile_options(tmp_path_factory: pytest.TempPathFactory, command: str,
                                            data: st.DataObject) -> None:
    """Nothing is written but under out/ (the -o given) and nothing else changes."""
    tmp = tmp_path_factory.mktemp("cli")
    (tmp / "results").mkdir()
    (tmp / "results" / "results.json").write_text("{\"steps\": [1, 2, {\"x\": NaN}]}")
    before = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))
    argv = _argv(command, data.draw)
    run_cli(argv, tmp)
    after = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if not p.is_relative_to(tmp / "out"))
    assert after == before, argv


@FUZZ
@given(VALUES)
def test_values_in_options_files(tmp_path_factory: pytest.TempPathFactory, value: Any) -> None:
    """A discovery file of any JSON shape: cabling exits 1 or 2, never a traceback."""
    tmp = tmp_path_factory.mktemp("cab")
    try:
        text = json.dumps(value)
    except ValueError:
        text = "{"
    (tmp / "disc.json").write_text(text)
    run_cli(["cabling", MESH, "--discovered", str(tmp / "disc.json")], tmp)
