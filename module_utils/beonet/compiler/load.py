"""Stage 1: load a topology file and validate it.

The text comes through the gate: read (``gate.read_text``), composed as YAML
with every key path's line (``gate.yamltext``: size, nesting and aliases
bounded, duplicate keys refused) and checked against the topology's JSON Schema
(``gate.validate``). Then the semantic rules the schema cannot express: each
family's size bound before anything is built, its own checks, the settings the
routing engine ignores, pools outside unicast space.
"""

from __future__ import annotations

import functools
from ipaddress import IPv4Network, IPv6Network

from .. import gate
from ..gate.validate import (
    missing_libraries,
    path_text,
    require_libraries,
    schema_messages,
    strict_validator,
    surely_valid,
)
from ..gate.yamlplain import MAX_BYTES, Lines, parse_yaml
from . import family
from .errors import Problems
from .schema import SCHEMA

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_BYTES", "Lines", "Source", "load_file", "load_text", "missing_libraries", "parse_yaml",
           "read_text", "validate"]


class Source:
    """A loaded topology: data, the file it came from and key-path lines."""

    def __init__(self, data: dict[str, Any], file: str, lines: Lines) -> None:
        self.data = data
        self.file = file
        self.lines = lines

    def problems(self) -> Problems:
        return Problems(self.file, self.lines)


def _is_ipv4_network(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return str(IPv4Network(value, strict=False)) == value   # canonical: no host bits, mask, spaces


def _is_ipv6_network(value: object) -> bool:
    if not isinstance(value, str):
        return True
    # a length, no host bits, no zone (fd00::%eth0)
    return "/" in value and "%" not in value and IPv6Network(value, strict=True).prefixlen >= 0


FORMATS = {"ipv4-network": _is_ipv4_network, "ipv6-network": _is_ipv6_network}


@functools.cache
def _schema_validator() -> Any:
    """The JSON Schema validator of topologies, with beonet's formats and integer type."""
    return strict_validator(SCHEMA, FORMATS)


def _schema_problems(data: dict[str, Any], problems: Problems) -> None:
    """Each schema error of data, in line order (jsonschema is asked only when
    the data is not surely valid)."""
    if surely_valid(SCHEMA, data, FORMATS):
        return
    for error in sorted(_schema_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        if error.validator in ("if", "allOf"):
            continue
        for parts, msg in schema_messages(error):
            problems.add(path_text(parts), msg)
    problems.items.sort(key=lambda p: (p.line or 0, p.path))


def _size(data: dict[str, Any], problems: Problems) -> None:
    """Bound the node count before anything is built."""
    fam = family.of(data["family"])
    bound = fam.size(data[fam.name])
    if bound.count > bound.limit:
        problems.add(fam.name, (bound.what + "; beonet supports at most %d")
                     % (bound.count, bound.limit))


def validate(data: Any, file: str | None, lines: Lines) -> Problems:
    problems = Problems(file, lines)
    problems.stage = "validate"
    if not isinstance(data, dict):
        problems.add("", "a topology must be a YAML mapping (got %s)"
                     % ("an empty file" if data is None else type(data).__name__))
        return problems
    _schema_problems(data, problems)
    chosen = data.get("family")
    for other in SCHEMA["properties"]["family"]["enum"]:
        if other != chosen and other in data:
            problems.add(other, "section does not match family '%s'" % chosen)
    if not problems:
        _size(data, problems)
        check = family.of(data["family"]).check
        if check is not None:
            check(data, problems)
        _settings(data, problems)
    return problems


# Address space that is not unicast a node can hold: "this network", loopback, link-local,
# multicast and the reserved block with the broadcast address.
NOT_UNICAST = {IPv4Network("0.0.0.0/8"): "'this network' (0.0.0.0/8)",
               IPv4Network("127.0.0.0/8"): "loopback space (127.0.0.0/8)",
               IPv4Network("169.254.0.0/16"): "link-local space (169.254.0.0/16)",
               IPv4Network("224.0.0.0/4"): "multicast space (224.0.0.0/4)",
               IPv4Network("240.0.0.0/4"): "reserved space (240.0.0.0/4)"}
NOT_UNICAST6 = {IPv6Network("::/8"): "reserved space (::/8: the unspecified, loopback and "
                                     "IPv4-mapped addresses)",
                IPv6Network("fe80::/10"): "link-local space (fe80::/10)",
                IPv6Network("fec0::/10"): "deprecated site-local space (fec0::/10)",
                IPv6Network("ff00::/8"): "multicast space (ff00::/8)"}
# The IPv4 keys of addressing, refused on an IPv6-only cluster.
IPV4_KEYS = ("lan", "lan_prefix", "p2p", "p2p_prefix", "loopback")
# Settings only routing.engine frr reads: (section, key) -> what frr does with it.
FRR_ONLY = {("addressing", "loopback"): "gives nodes loopback addresses",
            ("routing", "bfd"): "runs BFD"}


def _settings(data: dict[str, Any], problems: Problems) -> None:
    """Values that cannot work: an address pool outside unicast space, a setting the
    chosen routing engine ignores."""
    pools = data.get("addressing") or {}
    for key in ("lan", "p2p", "loopback"):
        if isinstance(pools.get(key), str):
            _unicast("addressing." + key, IPv4Network(pools[key], strict=False), NOT_UNICAST, problems)
    six = pools.get("ipv6")
    for key, text in (six.items() if isinstance(six, dict) else ()):
        _unicast("addressing.ipv6." + key, IPv6Network(text), NOT_UNICAST6, problems)
    _families(data, problems)
    engine = (data.get("routing") or {}).get("engine", "static")
    for (section, key), what in FRR_ONLY.items():
        if engine != "frr" and key in (data.get(section) or {}):
            problems.add("%s.%s" % (section, key), "only routing.engine frr %s (the engine is %s)"
                         % (what, engine))


def _unicast(path: str, pool: IPv4Network | IPv6Network,
             spaces: dict[Any, str], problems: Problems) -> None:
    for space, what in spaces.items():
        if pool.overlaps(space):
            problems.add(path, "pool %s lies in %s: a node's address must be unicast" % (pool, what))


def _families(data: dict[str, Any], problems: Problems) -> None:
    """addressing.ipv4 and ipv6 together: at least one family, no IPv4 pool on an
    IPv6-only cluster, no IPv6 pool where the topology turns IPv6 off."""
    pools = data.get("addressing") or {}
    six = pools.get("ipv6", False) is not False
    if pools.get("ipv4", True) is False:
        if not six:
            problems.add("addressing.ipv4", "an IPv6-only cluster needs addressing.ipv6 "
                                            "(true, or its pools)")
        for key in IPV4_KEYS:
            if key in pools:
                problems.add("addressing." + key, "an IPv4 setting; addressing.ipv4 is false")
    if six and data.get("ipv6", True) is False:
        problems.add("ipv6", "false turns IPv6 off on the cluster NICs, where addressing.ipv6 "
                             "puts its addresses")


def load_text(text: str, file: str) -> tuple[Source | None, Problems]:
    """Parse and validate; return (Source or None, Problems)."""
    require_libraries()
    data, lines, problems = parse_yaml(text, file)
    if problems:
        return None, problems
    problems = validate(data, file, lines)
    if problems:
        return None, problems
    return Source(data, file, lines), problems


def read_text(path: str, limit: int = MAX_BYTES,
              what: str = "a topology") -> tuple[str | None, Problems]:
    """The file as text, through the gate: a regular file of at most limit bytes,
    UTF-8 (the problems say why not)."""
    problems = Problems(path)
    problems.stage = "load"
    try:
        return gate.read_text(path, limit, what), problems
    except gate.GateError as exc:
        problems.add(exc.path, exc.message, line=exc.line)
        return None, problems


def load_file(path: str) -> tuple[Source | None, Problems]:
    text, problems = read_text(path)
    if text is None:
        return None, problems
    return load_text(text, path)
