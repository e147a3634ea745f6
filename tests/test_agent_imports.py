"""The node agent travels to the nodes inside the beonet_node and beonet_verify
modules: it may import only the standard library and itself."""

import ast
import sys

import pytest
from conftest import ROOT

AGENT = ROOT / "module_utils/beonet/agent"
FILES = sorted(AGENT.rglob("*.py"))
OLDEST_NODE_PYTHON = (3, 8)     # the oldest target Python ansible-core supports


def _imports(tree, depth=0):
    """(module, line) of every import that leaves the agent package: its top-level
    name, or the dotted relative name of one that climbs out of the package (from a
    module depth sub-packages down)."""
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                yield alias.name.split(".")[0], stmt.lineno
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0:
            yield (stmt.module or "").split(".")[0], stmt.lineno
        elif isinstance(stmt, ast.ImportFrom) and stmt.level > 1 + depth:
            yield "." * stmt.level + (stmt.module or ""), stmt.lineno


def _outside_stdlib(source, name="agent.py", depth=0):
    tree = ast.parse(source, name, feature_version=OLDEST_NODE_PYTHON)
    return ["%s:%d: imports %s" % (name, line, mod) for mod, line in _imports(tree, depth)
            if mod not in sys.stdlib_module_names and mod != "__future__"]


def test_the_agent_package_has_files():
    assert {"apply.py", "verify.py", "nodeplan.py", "files.py"} <= {f.name for f in FILES}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(AGENT)))
def test_the_agent_imports_only_the_standard_library(path):
    rel = path.relative_to(AGENT)
    assert _outside_stdlib(path.read_text(encoding="utf-8"), str(rel), len(rel.parts) - 1) == []


def test_an_import_outside_the_standard_library_is_found():
    source = ("import os\nfrom . import nodeplan\n\ndef f():\n    import yaml\n"
              "    from jsonschema import validators\n    from ..compiler import model\n")
    assert _outside_stdlib(source) == ["agent.py:5: imports yaml", "agent.py:6: imports jsonschema",
                                       "agent.py:7: imports ..compiler"]


def test_a_sub_package_may_reach_the_agent_but_not_climb_out_of_it():
    source = "from ..nodeplan import NodePlan\nfrom . import base\nfrom ...compiler import model\n"
    assert _outside_stdlib(source, "netbackends/x.py", 1) == ["netbackends/x.py:3: imports ...compiler"]
    assert FILES and any(p.parent.name == "netbackends" for p in FILES)
