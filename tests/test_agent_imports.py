"""The node agent travels to the nodes inside the beonet_node and beonet_verify
modules: it may import only the standard library and itself."""

import ast
import sys

import pytest
from conftest import ROOT

AGENT = ROOT / "module_utils/beonet/agent"
FILES = sorted(AGENT.glob("*.py"))
OLDEST_NODE_PYTHON = (3, 8)     # the oldest target Python ansible-core supports


def _imports(tree):
    """(module, line) of every import that leaves the agent package: its top-level
    name, or the dotted relative name of one that climbs out of the package."""
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                yield alias.name.split(".")[0], stmt.lineno
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0:
            yield (stmt.module or "").split(".")[0], stmt.lineno
        elif isinstance(stmt, ast.ImportFrom) and stmt.level > 1:
            yield "." * stmt.level + (stmt.module or ""), stmt.lineno


def _outside_stdlib(source, name="agent.py"):
    tree = ast.parse(source, name, feature_version=OLDEST_NODE_PYTHON)
    return ["%s:%d: imports %s" % (name, line, mod) for mod, line in _imports(tree)
            if mod not in sys.stdlib_module_names and mod != "__future__"]


def test_the_agent_package_has_files():
    assert {"apply.py", "verify.py", "nodeplan.py", "files.py"} <= {f.name for f in FILES}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_agent_imports_only_the_standard_library(path):
    assert _outside_stdlib(path.read_text(encoding="utf-8"), path.name) == []


def test_an_import_outside_the_standard_library_is_found():
    source = ("import os\nfrom . import nodeplan\n\ndef f():\n    import yaml\n"
              "    from jsonschema import validators\n    from ..compiler import model\n")
    assert _outside_stdlib(source) == ["agent.py:5: imports yaml", "agent.py:6: imports jsonschema",
                                       "agent.py:7: imports ..compiler"]
