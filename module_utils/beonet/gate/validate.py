"""Data checked against a JSON Schema as beonet reads every input: integers are
integers, patterns match the whole text, formats are beonet's, and each error
becomes a key path and a message a person can act on. jsonschema is imported
when present (an Ansible controller may lack it: checking then raises
ImportError naming it, and ``missing_libraries`` says what is missing).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable
from typing import Any

try:
    from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
except ImportError as exc:
    JSONSCHEMA_IMPORT_ERROR: ImportError | None = exc
else:
    JSONSCHEMA_IMPORT_ERROR = None

from .yamltext import YAML_IMPORT_ERROR, PathPart, join_path


def missing_libraries() -> str | None:
    """None when loading can work here, else which of PyYAML and jsonschema are missing and why."""
    missing = ["%s (%s)" % (name, error) for name, error in
               (("PyYAML", YAML_IMPORT_ERROR), ("jsonschema", JSONSCHEMA_IMPORT_ERROR)) if error]
    return ", ".join(missing) or None


def require_libraries() -> None:
    missing = missing_libraries()
    if missing:
        raise ImportError("loading a topology needs the Python packages PyYAML and jsonschema; "
                          "missing: %s" % missing)


def _is_integer(_checker: object, value: object) -> bool:
    """Integers only: JSON Schema would also take 4.0 (and Python's True is an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


@functools.cache
def anchored(pattern: str) -> re.Pattern[str]:
    """A schema pattern as ECMA-262 reads it: '$' is the end of the text (Python's
    '$' also matches before a final line break: a name ending in one would pass)."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


def _pattern(validator: Any, pattern: str, instance: Any, _schema: Any) -> Any:
    if validator.is_type(instance, "string") and not anchored(pattern).search(instance):
        yield ValidationError("%r does not match %r" % (instance, pattern))


def strict_validator(schema: dict[str, Any],
                     formats: dict[str, Callable[[object], bool]] | None = None) -> Any:
    """A draft 2020-12 validator of schema as beonet reads every input: integers
    are integers (not 4.0, not true), patterns match the whole text, and each
    format of formats is checked by its function (ValueError or False: refused)."""
    require_libraries()
    format_checker = FormatChecker(formats=())
    for name, check in (formats or {}).items():
        format_checker.checks(name, raises=(ValueError, TypeError))(check)
    validator_class = validators.extend(
        Draft202012Validator, validators={"pattern": _pattern},
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))
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
