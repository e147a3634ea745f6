"""What a topology family is to the compiler, and the registry of families.

A family is one module of ``compiler/families`` that registers a ``Family``:
its schema section, how many nodes a topology of it has (read before anything
is built), how its graph is built, its default node names, and optional fast
paths the stages use instead of their generic rule (routing, shortest paths,
cuts for the bisection, family figures in the metrics, address pools, the
style of its drawing).

The stages ask the registry for a graph's family (``of``); nothing else in the
compiler knows a family by name. The family modules are imported on the first
question, so the stages and the families can use each other's helpers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .records import replaced

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .errors import Problems
    from .load import Source
    from .model import Graph, Segment
    from .normalise import Builder

Params = dict[str, "Any"]        # the family's section of the topology


class Bound:
    """A topology's node count, the most the family allows, and the message
    naming the count (``%d``) when it is over."""

    __slots__ = ("count", "limit", "what")

    def __init__(self, count: int, limit: int, what: str) -> None:
        self.count = count
        self.limit = limit
        self.what = what


class Family:
    """One topology family. The fields without a default are required: a family
    module that leaves one out fails when it is imported."""

    __slots__ = ("name", "schema", "size", "build", "default_pattern", "check", "route", "shortest_sums",
                 "cuts", "exact_cut", "bisection_link", "bisection_extras", "metrics_extras",
                 "pool_dims", "lans_sized_by_members", "prefix_path", "drawing")

    name: str                                            # the `family:` value and its section
    schema: dict[str, Any]                               # JSON Schema of its section
    size: Callable[[Params], Bound]                      # node count, before building
    build: Callable[[Builder, Params], None]             # nodes, segments, switches, params
    default_pattern: str | None                          # node names; None: the topology names them
    check: Callable[[dict[str, Any], Problems], None] | None  # rules the schema cannot state
    route: Callable[[Graph], None] | None                # static routes (else route.generic)
    shortest_sums: Callable[[Graph], list[int]] | None   # per source, hops to all others
    cuts: Callable[[Graph], Iterator[list[int]]] | None  # structure-aligned balanced cuts
    exact_cut: Callable[[Graph], tuple[int, str]] | None  # (least crossing, method)
    bisection_link: Callable[[Graph], int] | None        # the rate the bisection is counted in
    bisection_extras: Callable[[Graph], dict[str, Any]] | None  # added to the bisection
    metrics_extras: Callable[[Graph], dict[str, Any]] | None  # added to the metrics
    pool_dims: Callable[[Graph], int] | None             # LAN pool split in this many blocks
    lans_sized_by_members: bool                          # no lan_prefix: each LAN as small as fits
    prefix_path: Callable[[Source, Segment], str] | None  # key path of a segment's prefix
    drawing: str | None             # how the page and the drawings place it (view.layout.STYLES)

    def __init__(self, *, name: str, schema: dict[str, Any], size: Callable[[Params], Bound],
                 build: Callable[[Builder, Params], None], default_pattern: str | None,
                 check: Callable[[dict[str, Any], Problems], None] | None = None,
                 route: Callable[[Graph], None] | None = None,
                 shortest_sums: Callable[[Graph], list[int]] | None = None,
                 cuts: Callable[[Graph], Iterator[list[int]]] | None = None,
                 exact_cut: Callable[[Graph], tuple[int, str]] | None = None,
                 bisection_link: Callable[[Graph], int] | None = None,
                 bisection_extras: Callable[[Graph], dict[str, Any]] | None = None,
                 metrics_extras: Callable[[Graph], dict[str, Any]] | None = None,
                 pool_dims: Callable[[Graph], int] | None = None, lans_sized_by_members: bool = False,
                 prefix_path: Callable[[Source, Segment], str] | None = None,
                 drawing: str | None = None) -> None:
        for field, value in (("name", name), ("schema", schema), ("size", size), ("build", build),
                             ("default_pattern", default_pattern), ("check", check), ("route", route),
                             ("shortest_sums", shortest_sums), ("cuts", cuts), ("exact_cut", exact_cut),
                             ("bisection_link", bisection_link), ("bisection_extras", bisection_extras),
                             ("metrics_extras", metrics_extras), ("pool_dims", pool_dims),
                             ("lans_sized_by_members", lans_sized_by_members),
                             ("prefix_path", prefix_path), ("drawing", drawing)):
            object.__setattr__(self, field, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a topology family cannot be changed (Family.replace makes another)")

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)

    def replace(self, **changes: Any) -> Family:
        """A new family with these fields changed and the others as in this one."""
        return replaced(self, changes)


REGISTRY: dict[str, Family] = {}
_REQUIRED = ("size", "build")


def register(fam: Family) -> Family:
    """Add a family (from its module, at import); refuse a duplicate name or a
    hook that cannot be called."""
    if fam.name in REGISTRY:
        raise ValueError("topology family '%s' is registered twice" % fam.name)
    if not isinstance(fam.schema, dict) or fam.schema.get("type") != "object":
        raise TypeError("topology family '%s': its schema must be a JSON Schema object"
                        % fam.name)
    for key in _REQUIRED:
        if not callable(getattr(fam, key)):
            raise TypeError("topology family '%s': %s must be callable" % (fam.name, key))
    REGISTRY[fam.name] = fam
    return fam


_LOADING, _LOADED = "loading", "loaded"
_state: dict[str, str] = {}


def _load() -> None:
    """Import the families package once; a family module that asks the registry
    while the families are being imported would see only some of them."""
    state = _state.get("families")
    if state == _LOADED:
        return
    if state == _LOADING:
        raise RuntimeError("the topology families are being imported: a family module "
                           "must not ask the registry at import time")
    _state["families"] = _LOADING
    try:
        # imported here, not at the top: the family modules use the stages,
        # which use this registry (a static import, so Ansible ships the package)
        from . import families as package
    finally:
        del _state["families"]
    listed = [f.name for f in package.ORDER]
    if sorted(listed) != sorted(REGISTRY):
        raise RuntimeError("topology families registered: %s; listed in families.ORDER: %s"
                           % (", ".join(sorted(REGISTRY)), ", ".join(listed)))
    ordered = {name: REGISTRY[name] for name in listed}
    REGISTRY.clear()
    REGISTRY.update(ordered)
    _state["families"] = _LOADED


def families() -> list[Family]:
    """Every family, in the order the families package lists them."""
    _load()
    return list(REGISTRY.values())


def get(name: str) -> Family | None:
    """The family of that name, or None (a plan read from a file may name any)."""
    _load()
    return REGISTRY.get(name)


def of(name: str) -> Family:
    """The family a topology or a graph names (validated before: it exists)."""
    _load()
    return REGISTRY[name]
