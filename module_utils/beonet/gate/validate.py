"""Data checked against a JSON Schema as beonet reads every input: integers are
integers, patterns match the whole text, formats are beonet's, and each error
becomes a key path and a message a person can act on. jsonschema is imported
when first needed (an Ansible controller may lack it: checking then raises
ImportError naming it, and ``missing_libraries`` says what is missing); data
that ``fastcheck`` finds valid does not need it.
"""

from __future__ import annotations

import functools
import sys

from .fastcheck import Formats, Unsure, anchored, fits
from .yamlplain import PathPart, join_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any


@functools.cache
def _jsonschema() -> ModuleType | ImportError:
    """The jsonschema package, or the ImportError of importing it."""
    try:
        import jsonschema
    except ImportError as exc:
        return exc
    return jsonschema


def _found(name: str) -> bool:
    """Whether the top-level package can be imported, found without importing it: asked
    of each finder on sys.meta_path, as importlib.util.find_spec does (importing
    importlib.util, and contextlib with it, costs every compile about a millisecond)."""
    if name in sys.modules:             # None there: its import is blocked
        return sys.modules[name] is not None
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        try:
            if find_spec is not None and find_spec(name, None) is not None:
                return True
        except (ImportError, ValueError):
            return False
    return False


def _jsonschema_missing() -> ImportError | None:
    """Why jsonschema cannot be imported, or None."""
    if _found("jsonschema"):
        return None
    found = _jsonschema()
    return found if isinstance(found, ImportError) else None


def _yaml_missing() -> ImportError | None:
    """Why PyYAML cannot be imported, or None (yamltext imports it, when it is not found)."""
    if _found("yaml"):
        return None
    from .yamltext import YAML_IMPORT_ERROR
    return YAML_IMPORT_ERROR


def missing_libraries() -> str | None:
    """None when loading can work here, else which of PyYAML and jsonschema are missing and why."""
    missing = ["%s (%s)" % (name, error) for name, error in
               (("PyYAML", _yaml_missing()), ("jsonschema", _jsonschema_missing())) if error]
    return ", ".join(missing) or None


def require_libraries(missing: str | None = None) -> None:
    """ImportError naming what is missing (missing_libraries(), or missing when given)."""
    missing = missing or missing_libraries()
    if missing:
        raise ImportError("loading a topology needs the Python packages PyYAML and jsonschema; "
                          "missing: %s" % missing)


def surely_valid(schema: dict[str, Any], data: object, formats: Formats) -> bool:
    """True when data is valid against schema as strict_validator(schema, formats)
    reads it, decided without jsonschema; False when jsonschema must say."""
    try:
        return fits(schema, data, formats)
    except Unsure:
        return False


def _is_integer(_checker: object, value: object) -> bool:
    """Integers only: JSON Schema would also take 4.0 (and Python's True is an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _pattern(validator: Any, pattern: str, instance: Any, _schema: Any) -> Any:
    if validator.is_type(instance, "string") and not anchored(pattern).search(instance):
        yield _jsonschema().ValidationError(  # type: ignore[union-attr]
            "%r does not match %r" % (instance, pattern))


def strict_validator(schema: dict[str, Any],
                     formats: Formats | None = None) -> Any:
    """A draft 2020-12 validator of schema as beonet reads every input: integers
    are integers (not 4.0, not true), patterns match the whole text, and each
    format of formats is checked by its function (ValueError or False: refused)."""
    require_libraries()
    jsonschema: Any = _jsonschema()
    if isinstance(jsonschema, ImportError):         # found, but its import fails
        require_libraries("jsonschema (%s)" % jsonschema)
    draft = jsonschema.Draft202012Validator
    format_checker = jsonschema.FormatChecker(formats=())
    for name, check in (formats or {}).items():
        format_checker.checks(name, raises=(ValueError, TypeError))(check)
    validator_class = jsonschema.validators.extend(
        draft, validators={"pattern": _pattern},
        type_checker=draft.TYPE_CHECKER.redefine("integer", _is_integer))
    return validator_class(schema, format_checker=format_checker)


_TYPE_WORDS = {"integer": "an integer", "string": "a string", "object": "a mapping",
               "array": "a list", "number": "a number", "boolean": "true or false"}


def _describe(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if kind == "integer":
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if lo is not None and hi is not None:
            return "must be an integer from %d to %d" % (lo, hi)
        if lo is not None:
            return "must be an integer >= %d" % lo
        return "must be an integer"
    if kind == "number" and "minimum" in schema and "maximum" in schema:
        return "must be a number from %s to %s" % (schema["minimum"], schema["maximum"])
    if "enum" in schema:
        return "must be one of: %s" % ", ".join(str(v) for v in schema["enum"])
    if kind == "string" and schema.get("format") == "ipv4-network":
        return "must be an IPv4 network in CIDR form (e.g. 10.0.0.0/16)"
    if kind == "string" and schema.get("format") == "ipv6-network":
        return "must be an IPv6 network in CIDR form (e.g. fd12:3456:789a::/48)"
    if kind == "string" and "pattern" in schema:
        return "must be %s" % schema.get("description", "a string matching %s" % schema["pattern"])
    return "must be %s" % _TYPE_WORDS.get(str(kind), str(kind))


def schema_messages(error: Any) -> list[tuple[list[PathPart], str]]:
    """Turn one jsonschema error into (key path parts, message) pairs."""
    parts = list(error.absolute_path)
    v = error.validator
    if v == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        out: list[tuple[list[PathPart], str]] = []
        for key in sorted(set(error.instance) - set(allowed)):
            import difflib
            hint = difflib.get_close_matches(str(key), allowed, n=1)
            msg = "unknown key"
            if hint:
                msg += " (did you mean '%s'?)" % hint[0]
            else:
                msg += " (allowed: %s)" % ", ".join(allowed)
            out.append((parts + [key], msg))
        return out
    if v == "required":
        missing = error.message.split("'")[1]
        return [(parts + [missing], "missing required key")]
    if v in ("type", "minimum", "maximum", "enum", "pattern", "format", "const"):
        return [(parts, _describe(error.schema))]
    if v == "oneOf":
        return _one_of_messages(error, parts)
    if v in ("minItems", "maxItems"):
        return [(parts, "must have %s %d items" % (
            "at least" if v == "minItems" else "at most", error.validator_value))]
    if v == "minLength":
        return [(parts, "must not be empty")]
    return [(parts, error.message)]


def _one_of_messages(error: Any, parts: list[PathPart]) -> list[tuple[list[PathPart], str]]:
    """A value that fits none of several forms: what is wrong with the form of
    its own type (tree.fanout[1]: must be an integer ...), else the forms allowed."""
    kind = {list: "array", dict: "object", str: "string", int: "integer"}.get(type(error.instance))
    forms = error.schema["oneOf"]
    for k, form in enumerate(forms):
        found = [m for sub in error.context if sub.schema_path[0] == k
                 for m in schema_messages(sub)]
        if form.get("type") == kind and found:
            return found
    if "description" in error.schema:
        return [(parts, "must be %s" % " or ".join(_describe(f)[len("must be "):] for f in forms))]
    return [(parts, "must be a name or a mapping with 'name' (and 'id')")]


def path_text(parts: list[PathPart]) -> str:
    out = ""
    for p in parts:
        out = join_path(out, p)
    return out
