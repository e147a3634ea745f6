"""Topology families as plug-ins: the registry's contract, a new family compiled
end to end from one module's worth of code, no family known by name outside
compiler/families, and a compiler that imports nothing from cabling."""

import ast
import pathlib
import re
import subprocess
import sys

import pytest
from conftest import ROOT

import beonet.compiler
from beonet.compiler import family, heal, load, pipeline, schema
from beonet.compiler.family import Bound, Family
from beonet.compiler.schema import MAX_NODES, obj
from beonet.view import layout

PACKAGE = ROOT / "module_utils" / "beonet"
FAMILIES_DIR = PACKAGE / "compiler" / "families"
NAMES = [f.name for f in family.families()]


# -- the registry ------------------------------------------------------------

def test_the_families_in_the_schema_order():
    assert NAMES == ["bonded", "mesh", "tree", "metagraph", "custom"]
    assert schema.SCHEMA["properties"]["family"]["enum"] == NAMES
    assert [k for k in schema.SCHEMA["properties"] if k in NAMES] == NAMES


def test_a_family_without_a_required_hook_fails_when_its_module_is_imported():
    with pytest.raises(TypeError, match="build"):
        Family(name="ring", schema=obj({}), size=_ring_size,  # type: ignore[call-arg]
               default_pattern="r{index}")


def test_a_family_cannot_be_changed_and_replace_makes_another():
    with pytest.raises(AttributeError, match="cannot be changed"):
        RING.size = _ring_size
    with pytest.raises(AttributeError, match="cannot be changed"):
        del RING.check
    other = RING.replace(default_pattern="n{index}")
    assert (other.default_pattern, RING.default_pattern) == ("n{index}", "r{index}")
    assert other.size is RING.size and other.schema is RING.schema


def test_replace_refuses_a_field_the_record_does_not_have():
    with pytest.raises(TypeError, match="Family has no field nodes, sizes"):
        RING.replace(sizes=3, nodes=4)
    graph = pipeline.compile_file(str(ROOT / "topologies" / "routed-mesh-2x2.yml")).graph
    with pytest.raises(TypeError, match="Graph has no field node"):
        graph.replace(node=[])
    live = graph.replace(nodes=graph.nodes[:1])
    assert live.nodes == graph.nodes[:1] and live.segments is graph.segments


@pytest.fixture
def registry(monkeypatch):
    """An empty registry for the test, the real one untouched."""
    monkeypatch.setattr(family, "REGISTRY", {})
    return family.REGISTRY


def test_registering_a_name_twice_is_refused(registry):
    family.register(RING)
    with pytest.raises(ValueError, match="'ring' is registered twice"):
        family.register(RING)


def test_a_schema_that_is_not_an_object_is_refused(registry):
    with pytest.raises(TypeError, match="'ring': its schema must be a JSON Schema object"):
        family.register(RING.replace(schema={"type": "array"}))


def test_a_hook_that_cannot_be_called_is_refused(registry):
    with pytest.raises(TypeError, match="'ring': size must be callable"):
        family.register(RING.replace(size=3))


def test_a_family_module_not_listed_in_the_order_is_refused(monkeypatch, registry):
    class Package:
        ORDER = ()
    registry["ring"] = RING
    monkeypatch.setattr(family, "_state", {})
    monkeypatch.setitem(sys.modules, "beonet.compiler.families", Package)
    monkeypatch.setattr(beonet.compiler, "families", Package, raising=False)
    with pytest.raises(RuntimeError, match="registered: ring; listed in families.ORDER: $"):
        family.families()


def test_asking_the_registry_while_the_families_load_is_refused(monkeypatch):
    monkeypatch.setitem(family._state, "families", "loading")
    with pytest.raises(RuntimeError, match="must not ask the registry at import time"):
        family.of("mesh")


def test_an_unknown_family_of_a_plan_file_has_no_entry():
    assert family.get("torus") is None
    assert family.get("mesh") is family.of("mesh")


def test_any_import_order_gives_the_whole_schema():
    """The family modules and the stages use each other: whichever is imported
    first, every family is registered and the schema lists them all."""
    for first in ("beonet.compiler.families.tree", "beonet.compiler.families.custom",
                  "beonet.compiler.metrics", "beonet.compiler.route", "beonet.compiler.load",
                  "beonet.compiler.family", "beonet.view.layout", "beonet.cabling.sheet"):
        code = ("import importlib, sys; importlib.import_module(%r); "
                "from beonet.compiler import schema; "
                "print(','.join(schema.SCHEMA['properties']['family']['enum']))" % first)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={"PYTHONPATH": str(ROOT / "module_utils")}, check=False)
        assert (out.returncode, out.stdout.strip(), out.stderr) == (0, ",".join(NAMES), ""), first


def test_every_family_bounds_its_size_before_anything_is_built(monkeypatch):
    for fam in family.families():
        small = fam.replace(size=lambda _p: Bound(11, 10, "it has %d nodes"))
        monkeypatch.setitem(family.REGISTRY, fam.name, small)
        problems = load.validate(*_minimal(fam.name))
        assert [(p.path, p.message) for p in problems.items] == [
            (fam.name, "it has 11 nodes; beonet supports at most 10")], fam.name


def _minimal(name: str) -> tuple[dict, str, dict]:
    section = {"bonded": {"nodes": 2}, "mesh": {"dims": [2]},
               "tree": {"fanout": 1, "nodes_per_leaf": 1},
               "metagraph": {"groups": 2, "nodes_per_group": 2, "p2p_per_node": 1},
               "custom": {"nodes": ["a", "b"], "links": [{"ends": ["a", "b"]}]}}[name]
    return {"name": "t", "family": name, name: section}, "t.yml", {}


def test_the_drawing_styles_are_the_views():
    for fam in family.families():
        assert fam.drawing is None or fam.drawing in layout.STYLES, fam.name


def test_the_partial_graphs_of_a_heal_take_the_generic_rules():
    generic = family.of(heal.GENERIC)
    assert (generic.route, generic.shortest_sums, generic.cuts, generic.exact_cut) == (
        None, None, None, None)


# -- a new family, one module's worth of code --------------------------------

def _ring_size(p):
    return Bound(p["nodes"], MAX_NODES, "the ring has %d nodes")


def _ring_build(b, p):
    nodes = [b.new_node(b.node_name(i), i + 1) for i in range(p["nodes"])]
    names: set[str] = set()
    for i, a in enumerate(nodes):
        z = nodes[(i + 1) % len(nodes)]
        b.p2p(b.link_name(a, z, names), a, z, b.rate, slot=i)
    b.graph.params = {"nodes": len(nodes)}


RING = Family(name="ring", schema=obj({"nodes": {"type": "integer", "minimum": 3}},
                                      required=["nodes"]),
              size=_ring_size, build=_ring_build, default_pattern="r{index}")


def test_a_new_family_compiles_through_every_stage(monkeypatch):
    monkeypatch.setitem(family.REGISTRY, "ring", RING)
    assert schema.document()["properties"]["ring"] == RING.schema
    data = {"name": "ring", "family": "ring", "ring": {"nodes": 6}}
    compiled = pipeline.compile_source(load.Source(data, "r.yml", {}))
    assert [n.name for n in compiled.graph.nodes] == ["r1", "r2", "r3", "r4", "r5", "r6"]
    assert compiled.metrics["diameter"] == 3
    assert compiled.metrics["links"] == 6
    assert compiled.metrics["bisection"]["crossing_mbit"] == 2000


# -- no family known by name elsewhere ---------------------------------------

_QUOTED = "|".join(re.escape(n) for n in NAMES)
FAMILY_BRANCHES = [
    re.compile(r"""(==|!=)\s*["'](%s)["']""" % _QUOTED),
    re.compile(r"""["'](%s)["']\s*(==|!=)""" % _QUOTED),
    re.compile(r"""\bin\s*[(\[{](\s*["'][^"'\n]*["']\s*,)*\s*["'](%s)["']""" % _QUOTED),
    re.compile(r"""\bfamily\s*(==|!=)"""),
    re.compile(r"""getattr\([^)\n]*family"""),
]
_KEY = re.compile(r"""["'](%s)["']\s*:""" % _QUOTED)


def family_branches(text: str) -> list[str]:
    """Lines that compare with a family's name, test membership in a list of them,
    pick a method by it, or key a table by two or more of them."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        if any(p.search(code) for p in FAMILY_BRANCHES) or len(set(_KEY.findall(code))) > 1:
            out.append("%d: %s" % (number, line.strip()))
    return out


def test_the_branch_finder_finds_branches():
    assert family_branches('if graph.family == "mesh":\n    pass\n') == [
        '1: if graph.family == "mesh":']
    assert family_branches('x = {"mesh": a, "tree": b}\nif "metagraph" != f: pass\n'
                           'if kind in ("x", "custom"): pass\ngetattr(b, family)(p)\n') == [
        '1: x = {"mesh": a, "tree": b}', '2: if "metagraph" != f: pass',
        '3: if kind in ("x", "custom"): pass', '4: getattr(b, family)(p)']
    assert family_branches('if os_family in supported:\n    kind = "bonded"\n'
                           'for k, v in (("lan", 1), ("bonded", 2)): pass\n') == []


def test_no_file_outside_the_families_branches_on_a_family_name():
    found = []
    for top in (PACKAGE, ROOT / "library", ROOT / "action_plugins"):
        for path in sorted(top.rglob("*.py")):
            if FAMILIES_DIR in path.parents:
                continue
            found += ["%s:%s" % (path.relative_to(ROOT), hit)
                      for hit in family_branches(path.read_text(encoding="utf-8"))]
    assert found == []


# -- the compiler imports nothing from cabling -------------------------------

def imported_modules(path: pathlib.Path) -> set[str]:
    """Absolute names of the modules a file imports (relative imports resolved)."""
    module = ".".join(path.relative_to(ROOT / "module_utils").with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module[:-9]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[:len(base) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            out.add(name)
            out.update("%s.%s" % (name, alias.name) for alias in node.names)
    return out


def test_the_import_finder_resolves_relative_imports():
    assert "beonet.cabling.sheet" in imported_modules(PACKAGE / "outputs" / "drawing.py")
    assert "beonet.compiler.route" in imported_modules(FAMILIES_DIR / "mesh.py")


def test_no_compiler_module_imports_cabling():
    found = sorted("%s: %s" % (path.relative_to(PACKAGE), name)
                   for path in (PACKAGE / "compiler").rglob("*.py")
                   for name in imported_modules(path)
                   if name == "beonet.cabling" or name.startswith("beonet.cabling."))
    assert found == []
