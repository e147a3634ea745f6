"""Without PyYAML or jsonschema (an Ansible controller may lack them) beonet's
module_utils still import, and loading a topology says what is missing."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from beonet.compiler import load

TOPOLOGY = "name: m\nfamily: mesh\nmesh: {dims: [2, 2]}\n"


def _run(blocked: str, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run code in a fresh Python on which importing `blocked` fails."""
    prelude = "import sys\nsys.modules[%r] = None\n" % blocked
    return subprocess.run([sys.executable, "-c", prelude + code, *args], cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT / "module_utils")},
                          capture_output=True, text=True, timeout=60, check=False)


def test_nothing_is_missing_where_the_command_runs():
    assert load.missing_libraries() is None


@pytest.mark.parametrize(("blocked", "package", "call"), [
    ("yaml", "PyYAML", "load.load_text(%r, 't.yml')" % TOPOLOGY),
    ("jsonschema", "jsonschema", "load.validate({'name': 'm'}, 't.yml', {})"),
])
def test_loading_without_a_library_raises_import_error_naming_it(blocked, package, call):
    code = ("from beonet.compiler import load, pipeline\nfrom beonet.outputs import plan\n"
            "print(load.missing_libraries())\n"
            "try:\n    %s\nexcept ImportError as exc:\n    print(exc)\n" % call)
    out = _run(blocked, code)
    assert out.returncode == 0, out.stderr
    missing, error = out.stdout.splitlines()
    assert missing.startswith(package + " (")
    assert error == ("loading a topology needs the Python packages PyYAML and jsonschema; "
                     "missing: " + missing)


def test_the_topology_module_fails_naming_the_missing_library(tmp_path):
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"topology": "x.yml"}}))
    code = ("import runpy, ansible.module_utils, beonet\n"
            "sys.modules['ansible.module_utils.beonet'] = beonet\n"
            "ansible.module_utils.beonet = beonet\n"
            "runpy.run_path('library/beonet_topology.py', run_name='__main__')\n")
    out = _run("yaml", code, str(args))
    result = json.loads(out.stdout)
    assert result["failed"] is True
    assert result["msg"].startswith("beonet needs the Python packages PyYAML and jsonschema on the "
                                    "controller (run `make setup`); missing: PyYAML (")


def test_a_package_is_found_without_importing_it(monkeypatch):
    from beonet.gate import validate
    monkeypatch.delitem(sys.modules, "jsonschema", raising=False)
    assert validate._found("jsonschema") and "jsonschema" not in sys.modules
    assert not validate._found("beonet_no_such_package")
    monkeypatch.setitem(sys.modules, "yaml", None)        # its import blocked
    assert not validate._found("yaml")
