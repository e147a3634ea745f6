"""Whether data fits a JSON Schema, decided without jsonschema where that is sure.

Importing jsonschema costs a small compile more than the compile itself, and
almost every input is valid. ``fits`` answers True only when data is valid as
``validate.strict_validator`` reads the schema (draft 2020-12, integers that are
integers, patterns matching the whole text, the given formats): it knows the
keywords topologies use, and raises ``Unsure`` for any other keyword and for
values whose comparison jsonschema makes in its own way (an enum of numbers
against a float). On False or Unsure the caller asks jsonschema, which also
words the errors, so a valid input is never refused and every error reads the
same.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Formats = Mapping[str, Callable[[object], bool]]

# Keywords that only describe: they never make data invalid.
_NOTES = frozenset(("$id", "$schema", "$comment", "title", "description", "examples", "default"))


@functools.cache
def anchored(pattern: str) -> re.Pattern[str]:
    """A schema pattern as ECMA-262 reads it: '$' is the end of the text (Python's
    '$' also matches before a final line break: a name ending in one would pass)."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


class Unsure(Exception):
    """The schema or the data goes beyond what fits decides exactly."""


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES: dict[str, Callable[[object], bool]] = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": _is_number,
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _type(kind: Any, value: object) -> bool:
    kinds = kind if isinstance(kind, list) else [kind]
    if not all(k in _TYPES for k in kinds):
        raise Unsure("type %r" % (kind,))
    return any(_TYPES[k](value) for k in kinds)


def _equal(value: object, wanted: object) -> bool:
    """jsonschema's equality for the cases it is plain: a string, or the same scalar type."""
    if isinstance(value, str) or isinstance(wanted, str):
        return value == wanted
    if type(value) is type(wanted) and isinstance(value, (bool, int, float, type(None))):
        return value == wanted
    raise Unsure("enum or const of %r against %r" % (wanted, value))


def _object(schema: dict[str, Any], value: dict[Any, Any], formats: Formats) -> bool:
    if "patternProperties" in schema or "dependentRequired" in schema:
        raise Unsure("patternProperties")
    if not all(key in value for key in schema.get("required", ())):
        return False
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames")
    for key, item in value.items():
        if names is not None and not fits(names, key, formats):
            return False
        sub = props.get(key, extra) if isinstance(key, str) else extra
        if sub is False or (sub is not True and not fits(sub, item, formats)):
            return False
    return True


def _array(schema: dict[str, Any], value: list[Any], formats: Formats) -> bool:
    if "prefixItems" in schema or "contains" in schema or "uniqueItems" in schema:
        raise Unsure("prefixItems, contains or uniqueItems")
    if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
        return False
    items = schema.get("items", True)
    if isinstance(items, bool):
        return items or not value
    return all(fits(items, item, formats) for item in value)


def _scalar(schema: dict[str, Any], value: object, formats: Formats) -> bool:
    if _is_number(value):
        if value < schema.get("minimum", value) or value > schema.get("maximum", value):
            return False
    if isinstance(value, str):
        if "pattern" in schema and not anchored(schema["pattern"]).search(value):
            return False
        if not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
            return False
    if "format" in schema:
        check = formats.get(schema["format"])
        if check is None:
            raise Unsure("format %r" % schema["format"])
        try:
            return bool(check(value))
        except (ValueError, TypeError):
            return False
    return True


_KNOWN = _NOTES | frozenset((
    "type", "enum", "const", "required", "properties", "additionalProperties", "propertyNames",
    "items", "minItems", "maxItems", "minimum", "maximum", "pattern", "minLength", "maxLength",
    "format", "allOf", "oneOf", "anyOf", "not", "if", "then", "else"))


def _combined(schema: dict[str, Any], value: object, formats: Formats) -> bool:
    """allOf, anyOf, oneOf, not, if/then/else."""
    if not all(fits(s, value, formats) for s in schema.get("allOf", ())):
        return False
    if "anyOf" in schema and not any(fits(s, value, formats) for s in schema["anyOf"]):
        return False
    if "oneOf" in schema and sum(fits(s, value, formats) for s in schema["oneOf"]) != 1:
        return False
    if "not" in schema and fits(schema["not"], value, formats):
        return False
    if "if" in schema:
        branch = "then" if fits(schema["if"], value, formats) else "else"
        if branch in schema and not fits(schema[branch], value, formats):
            return False
    return True


def fits(schema: Any, value: object, formats: Formats) -> bool:
    """True when value is valid against schema, False when it is not; Unsure when
    that is not decided here."""
    if isinstance(schema, bool):
        return schema
    unknown = set(schema) - _KNOWN
    if unknown:
        raise Unsure("keywords %s" % ", ".join(sorted(unknown)))
    if "type" in schema and not _type(schema["type"], value):
        return False
    if "enum" in schema and not any(_equal(value, v) for v in schema["enum"]):
        return False
    if "const" in schema and not _equal(value, schema["const"]):
        return False
    if isinstance(value, dict) and not _object(schema, value, formats):
        return False
    if isinstance(value, list) and not _array(schema, value, formats):
        return False
    return _scalar(schema, value, formats) and _combined(schema, value, formats)
