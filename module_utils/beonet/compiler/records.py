"""What the compiler's plain classes with __slots__ share (they are not dataclasses:
a dataclass costs a compile's start-up some tenths of a millisecond to build, and
importing the dataclasses module several milliseconds), and the lazy names of the
TypedDicts that describe its outputs (each costs some tenths of a millisecond too)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def replaced(record: T, changes: dict[str, Any]) -> T:
    """A new record of the same class with these fields changed and the others
    shared with record (as dataclasses.replace does); TypeError naming a field
    the class does not have."""
    cls = type(record)
    fields: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]
    unknown = sorted(set(changes) - set(fields))
    if unknown:
        raise TypeError("%s has no field %s" % (cls.__name__, ", ".join(unknown)))
    new = cls.__new__(cls)
    for name in fields:
        object.__setattr__(new, name, changes.get(name, getattr(record, name)))
    return new


def shape_types(module: str, shape: str) -> Callable[[str], Any]:
    """A module's __getattr__ giving the names of the module ``shape`` (its TypedDicts,
    imported when first asked for: a compile needs none), as if module defined them."""
    def __getattr__(name: str) -> Any:
        if not name.startswith("__"):
            names = vars(importlib.import_module(shape))
            if name in names:
                return names[name]
        raise AttributeError("module %r has no attribute %r" % (module, name))
    return __getattr__
