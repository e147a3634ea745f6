"""The registry of network backends: one module per backend, listed here.

Standard library only (runs on the nodes). Adding a backend is a module of this
package holding ``BACKEND = Backend(...)`` (base.py says what each field is) and
its name in the import and in ``_MODULES`` below; ``check`` refuses, at import, a
registry whose backends clash. ``NAMES`` is the one list of backend names: the
modules' ``backend`` choices, the role's argument specs, the CLI and the VM lab's
images take it from here (or a test holds them to it).
"""

from __future__ import annotations

from collections.abc import Iterable

from . import ifupdown, netplan, networkd, networkmanager
from .base import Backend

_MODULES = (networkd, networkmanager, netplan, ifupdown)      # the order of the choices


def check(backends: Iterable[Backend]) -> dict[str, Backend]:
    """{name: backend} in the order given; ValueError naming what clashes: a name or
    alias used twice, two backends tried at the same rank by ``auto``, or a name
    that is not a plain lower-case word."""
    out: dict[str, Backend] = {}
    seen: dict[str, str] = {}
    ranks: dict[int, str] = {}
    for b in backends:
        if not isinstance(b, Backend):
            raise ValueError("%r is not a Backend" % (b,))
        for name in (b.name,) + b.aliases:
            if not name.isalnum() or name != name.lower():
                raise ValueError("backend %s: name %r is not a lower-case word" % (b.name, name))
            if name in seen:
                raise ValueError("backend %s: name %s is already %s's" % (b.name, name, seen[name]))
            seen[name] = b.name
        if b.rank in ranks:
            raise ValueError("backend %s: rank %d is already %s's" % (b.name, b.rank, ranks[b.rank]))
        ranks[b.rank] = b.name
        out[b.name] = b
    return out


BACKENDS = check(m.BACKEND for m in _MODULES)
NAMES = tuple(BACKENDS)                 # networkd, networkmanager, netplan, ifupdown
ACCEPTED = NAMES + tuple(a for b in BACKENDS.values() for a in b.aliases)


def get(name: str) -> Backend:
    """The backend of this name or alias; ValueError naming the backends otherwise."""
    for b in BACKENDS.values():
        if name == b.name or name in b.aliases:
            return b
    raise ValueError("backend %r is not one of %s" % (name, ", ".join(NAMES)))


def canonical(name: str) -> str:
    """The backend's own name for a name or alias (ValueError as ``get``)."""
    return get(name).name


def by_rank() -> list[Backend]:
    """The backends in the order ``auto`` tries them."""
    return sorted(BACKENDS.values(), key=lambda b: b.rank)


def units() -> tuple[str, ...]:
    """The systemd units that bring NICs up, one per backend that has its own."""
    return tuple(b.unit for b in BACKENDS.values() if b.unit)


def in_words(names: Iterable[str] = NAMES) -> str:
    """'a, b, c or d'."""
    names = list(names)
    return names[0] if len(names) == 1 else "%s or %s" % (", ".join(names[:-1]), names[-1])
