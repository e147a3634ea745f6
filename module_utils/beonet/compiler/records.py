"""What the compiler's plain classes with __slots__ share (they are not dataclasses:
a dataclass costs a compile's start-up some tenths of a millisecond to build, and
importing the dataclasses module several milliseconds), and the lazy names of the
TypedDicts that describe its outputs (each costs some tenths of a millisecond too).

It also gives ``cast`` and ``NamedTuple`` at run time without importing ``typing``
(about 4 ms of a compile's start-up, a third of a bare Python start): the modules a
compile imports take their annotations' names from ``typing`` only for the type
checker (``TYPE_CHECKING``, which mypy takes as true by its name), and these two from
here. For mypy they are typing's own."""

from __future__ import annotations

import importlib
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple, TypeVar, cast

    T = TypeVar("T")
else:
    from collections import namedtuple

    def cast(_type, value):
        """typing.cast at run time: the value itself."""
        return value

    class _NamedTupleType(type):
        """Makes ``class X(NamedTuple): a: int; b: str = ""`` what typing makes of it:
        collections.namedtuple's class of the annotated fields (defaults from their
        values), with the class body's docstring and methods."""

        def __new__(mcs, name, bases, body):
            if not bases:
                return super().__new__(mcs, name, bases, body)
            fields = list(body.get("__annotations__", {}))
            base = namedtuple(name, fields, defaults=[body[f] for f in fields if f in body],
                              module=body.get("__module__"))
            rest = {k: v for k, v in body.items() if k not in fields and k != "__annotations__"}
            return type(name, (base,), dict(rest, __slots__=()))

    class NamedTuple(metaclass=_NamedTupleType):
        """typing.NamedTuple's class form at run time (see _NamedTupleType)."""

__all__ = ["NamedTuple", "cast", "replaced", "shape_types"]


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
