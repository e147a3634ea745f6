"""gate.fastcheck: a topology found valid without jsonschema is one jsonschema finds
valid, and every other answer goes to jsonschema (which words the errors)."""

import copy
import random

import pytest
import yaml
from conftest import ROOT

from beonet.compiler import load
from beonet.compiler.schema import SCHEMA
from beonet.gate.fastcheck import Unsure, fits
from beonet.gate.validate import strict_validator, surely_valid

SHIPPED = sorted((ROOT / "topologies").glob("*.yml"))
ODD_VALUES = [None, True, 0, -1, 1.5, 4.0, "", "x", "x\n", "10.0.0.1/16", "fd00::/64", [], {}, [1], {"a": 1}]


def _valid(data):
    return not any(True for _ in load._schema_validator().iter_errors(data))


def _paths(data, path=()):
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, path + (key,))
    elif isinstance(data, list):
        for k, value in enumerate(data):
            yield from _paths(value, path + (k,))


def _mutated(data, rng):
    out = copy.deepcopy(data)
    path = rng.choice([p for p in _paths(out) if p])
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    what = rng.randrange(3)
    if what == 0:
        parent[path[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
    elif what == 1 and isinstance(parent, dict):
        parent[rng.choice(["nmae", "extra", path[-1] + "s"])] = parent.pop(path[-1])
    elif isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent.append(copy.deepcopy(parent[-1]))
    return out


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_topology_is_found_valid_without_jsonschema(path):
    assert surely_valid(SCHEMA, yaml.safe_load(path.read_text()), load.FORMATS)


def test_a_mutated_topology_found_valid_is_valid_to_jsonschema():
    rng = random.Random(48)
    bases = [yaml.safe_load(p.read_text()) for p in SHIPPED]
    decided = refused = 0
    for _ in range(1500):
        data = _mutated(rng.choice(bases), rng)
        try:
            found = fits(SCHEMA, data, load.FORMATS)
        except Unsure:
            continue
        decided += 1
        refused += not found
        assert found == _valid(data), data
    assert decided > 1000 and refused > 300


@pytest.mark.parametrize("schema, value", [
    ({"type": "integer"}, 4.0), ({"type": "integer"}, True), ({"type": "number"}, False),
    ({"pattern": "^a$"}, "a\n"), ({"enum": ["a", "b"]}, 1), ({"const": "a"}, "b"),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 3), ({"not": {"type": "string"}}, "x"),
    ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "x"),
    ({"type": "array", "items": False}, [1]), ({"type": "array", "maxItems": 1}, [1, 2]),
    ({"type": "object", "additionalProperties": False}, {1: 2}),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, {"A": 1}), ({"minLength": 1}, ""),
    ({"required": ["a"]}, {}), ({"if": {"type": "string"}, "then": {"minLength": 2}}, "x"),
    ({"if": {"type": "string"}, "else": {"minimum": 2}}, 1),
    ({"format": "ipv4-network"}, "10.0.0.1/16"), ({"format": "ipv6-network"}, "fd00::%eth0/64"),
])
def test_what_jsonschema_refuses_is_refused_here(schema, value):
    assert fits(schema, value, load.FORMATS) is False
    assert not strict_validator(schema, load.FORMATS).is_valid(value)


@pytest.mark.parametrize("schema, value", [
    ({"$ref": "#/x"}, 1), ({"type": "integer", "multipleOf": 2}, 3), ({"format": "email"}, "x"),
    ({"enum": [1, 2]}, 1.0), ({"type": "custom"}, 1), ({"type": "object", "patternProperties": {}}, {}),
    ({"type": "array", "uniqueItems": True}, [1]),
])
def test_what_is_not_decided_here_goes_to_jsonschema(schema, value):
    with pytest.raises(Unsure):
        fits(schema, value, load.FORMATS)
    assert not surely_valid(schema, value, load.FORMATS)


def test_a_valid_topology_is_loaded_without_importing_jsonschema(tmp_path):
    import subprocess
    import sys
    code = ("import sys; from beonet.compiler import load; "
            "source, problems = load.load_file(sys.argv[1]); "
            "print(source is not None, not problems, 'jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "topologies" / "metanode-testbed.yml")],
                         capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "module_utils")}).stdout
    assert out == "True True False\n"


def test_a_jsonschema_that_is_found_but_fails_to_import_is_named(monkeypatch):
    from beonet.gate import validate
    monkeypatch.setattr(validate, "_jsonschema", lambda: ImportError("broken install"))
    with pytest.raises(ImportError, match=r"missing: jsonschema \(broken install\)$"):
        validate.strict_validator({"type": "integer"})
