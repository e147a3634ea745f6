"""Golden files: every shipped topology's plan and dry run, every error message."""

import json
import os

import pytest
from conftest import ROOT, golden

from beonet import cli
from beonet.compiler import pipeline
from beonet.outputs import dryrun
from beonet.outputs import plan as render

TOPOLOGIES = sorted(p.stem for p in (ROOT / "topologies").glob("*.yml"))
ERRORS = sorted(p.stem for p in (ROOT / "tests/errors").glob("*.yml")
                if not p.name.endswith(".inventory.yml"))


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_plan(name):
    compiled = pipeline.compile_file("topologies/%s.yml" % name)
    plan = render.plan(compiled)
    golden(ROOT / "tests/golden" / ("%s.json" % name), render.dumps(plan))
    routes = "\n".join(dryrun.ip_route_text(v, k) for k, v in plan["nodes"].items())
    golden(ROOT / "tests/golden" / ("%s.routes" % name), routes)


@pytest.mark.parametrize("name", ERRORS)
def test_error(name, tmp_path, capsys):
    out = tmp_path / "plan.json"
    argv = ["compile", "tests/errors/%s.yml" % name, "-o", str(out)]
    inv = ROOT / "tests/errors" / ("%s.inventory.yml" % name)
    if inv.exists():
        argv += ["-i", "tests/errors/%s.inventory.yml" % name]
    assert cli.main(argv) == 2
    assert not out.exists(), "an output file was written despite errors"
    assert os.listdir(tmp_path) == [], "a temporary file was left behind"
    golden(ROOT / "tests/errors" / ("%s.txt" % name), capsys.readouterr().err)


def test_schema_file_matches_compiler(capsys):
    assert cli.main(["schema"]) == 0
    shipped = (ROOT / "topologies/beonet.schema.json").read_text()
    assert json.loads(capsys.readouterr().out) == json.loads(shipped)


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_examples_name_the_schema(name):
    first = (ROOT / "topologies" / ("%s.yml" % name)).read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=beonet.schema.json"


@pytest.mark.parametrize("what", ["hosts", "slurm", "hostfile", "mpich-hosts", "openmpi-mca"])
@pytest.mark.parametrize("name", ["switch-tree", "metanode-testbed", "custom-example"])
def test_exports(name, what, capsys):
    assert cli.main(["export", "topologies/%s.yml" % name, what]) == 0
    golden(ROOT / "tests/golden" / ("%s.%s" % (name, what)), capsys.readouterr().out)


@pytest.mark.parametrize("fmt", ["dot", "mermaid"])
@pytest.mark.parametrize("name", ["routed-mesh", "switch-tree", "metanode-fig2", "bonded-dual-net",
                                  "custom-example"])
def test_drawings(name, fmt, capsys):
    assert cli.main(["graph", "topologies/%s.yml" % name, "--format", fmt]) == 0
    golden(ROOT / "tests/golden" / ("%s.%s" % (name, fmt)), capsys.readouterr().out)
