"""What the compiler's plain classes with __slots__ share (they are not dataclasses:
a dataclass costs a compile's start-up some tenths of a millisecond to build, and
importing the dataclasses module several milliseconds)."""

from __future__ import annotations

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
