"""YAML text through the gate: every topology and inventory is composed here.

YAML is composed node by node so every key path keeps its line number;
duplicate keys are errors (PyYAML would silently keep the last one).
Untrusted input stays bounded: a file is at most MAX_BYTES of UTF-8 text, nests
at most MAX_DEPTH levels and its aliases expand to at most MAX_ALIAS_NODES
nodes, so no document exhausts the stack or memory, and loading time grows
with the file size only. PyYAML is imported when present (an Ansible controller
may lack it: loading then raises ImportError naming it).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

try:
    import yaml
except ImportError as exc:
    YAML_IMPORT_ERROR: ImportError | None = exc
else:
    YAML_IMPORT_ERROR = None

from ..compiler.errors import Problems
from .yamlplain import MAX_BYTES, MAX_DEPTH, Lines, PathPart, join_path

__all__ = ["MAX_BYTES", "MAX_DEPTH", "YAML_IMPORT_ERROR", "Lines", "PathPart", "bounds_problems",
           "flow_depth", "join_path", "parse_yaml"]

MAX_ALIAS_NODES = 100_000
TOO_DEEP = "YAML nesting deeper than %d levels" % MAX_DEPTH
_BRACKETS = re.compile(r"[\[\]{}]")
_FAST: type | None = None if YAML_IMPORT_ERROR else getattr(yaml, "CSafeLoader", None)
if TYPE_CHECKING:
    from yaml import SafeLoader as _SafeLoader
else:
    _SafeLoader = object if YAML_IMPORT_ERROR else yaml.SafeLoader


def _require_yaml() -> None:
    if YAML_IMPORT_ERROR is not None:
        raise ImportError("reading YAML needs the Python package PyYAML: %s" % YAML_IMPORT_ERROR)


class _Refused(Exception):
    """The document cannot be read any further (too deep, too big, unreadable value)."""

    def __init__(self, message: str, line: int | None, path: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.path = path


_MERGE = "tag:yaml.org,2002:merge"


def _merged_pairs(node: yaml.MappingNode, sizes: dict[int, int], active: set[int]) -> int:
    """How many entries node has once its merge keys (<<) are flattened, each merged
    mapping counted whole (PyYAML copies it): memoised, so a chain of merges is
    sized in linear time before anything is copied. A merge into a mapping that
    contains it is refused."""
    if id(node) in sizes:
        return sizes[id(node)]
    if id(node) in active:
        raise _Refused("a YAML merge key (<<) refers to a mapping that contains it", _line(node))
    active.add(id(node))
    total = 0
    for key, value in node.value:
        if key.tag != _MERGE:
            total += 1
            continue
        for sub in value.value if isinstance(value, yaml.SequenceNode) else [value]:
            if isinstance(sub, yaml.MappingNode):
                total += _merged_pairs(sub, sizes, active)
        if total > MAX_ALIAS_NODES:
            break
    active.discard(id(node))
    sizes[id(node)] = total
    return total


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


class _Loader(_SafeLoader):
    """The safe loader, refusing nesting deeper than MAX_DEPTH.

    Flow collections are counted while scanning (the scanner would otherwise
    read all of ``[[[[...`` before the composer sees the first one), block
    ones while composing (the composer recurses once per level)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.depth = 0

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        if self.flow_level >= MAX_DEPTH:
            raise _Refused(TOO_DEEP, self.get_mark().line + 1)
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise _Refused(TOO_DEEP, self.peek_event().start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    return {int: "an integer", float: "a number"}.get(type(value), type(value).__name__)


class _Builder:
    """Python data from the composed node graph, with the line of every key path.

    Aliases make the graph a DAG (or, through an anchor inside itself, a
    cycle): each node met again counts towards MAX_ALIAS_NODES, a node met
    inside itself is refused."""

    def __init__(self, loader: _Loader, problems: Problems) -> None:
        self.loader = loader
        self.problems = problems
        self.lines: Lines = {}
        self.seen: set[int] = set()
        self.open: set[int] = set()
        self.expanded = 0
        self.merged: dict[int, int] = {}   # entries of each mapping once merge keys are flattened
        self.explicit: dict[str, int] = {}  # key path -> the mapping that wrote it explicitly

    def build(self, node: yaml.Node, path: str, depth: int = 1) -> Any:
        key = id(node)
        if key in self.open:
            raise _Refused("a YAML alias refers to a collection that contains it", _line(node), path)
        if depth > MAX_DEPTH:
            raise _Refused(TOO_DEEP + " (counting what aliases expand to)", _line(node), path)
        if key in self.seen:
            self.expanded += 1
            if self.expanded > MAX_ALIAS_NODES:
                raise _Refused("YAML aliases expand to more than %d nodes" % MAX_ALIAS_NODES,
                               _line(node), path)
        self.seen.add(key)
        self.lines.setdefault(path, _line(node))
        if not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            return self.scalar(node, path)
        self.open.add(key)
        try:
            if isinstance(node, yaml.MappingNode):
                return self.mapping(node, path, depth)
            return [self.build(item, join_path(path, i), depth + 1)
                    for i, item in enumerate(node.value)]
        finally:
            self.open.discard(key)

    def mapping(self, node: yaml.MappingNode, path: str, depth: int) -> dict[str, Any]:
        """The mapping's entries; merge keys (<<) give entries its own keys override
        (as YAML says), bounded before PyYAML copies them."""
        if _merged_pairs(node, self.merged, set()) > MAX_ALIAS_NODES:
            raise _Refused("YAML merge keys (<<) expand to more than %d entries" % MAX_ALIAS_NODES,
                           _line(node), path)
        own = sum(1 for k, _v in node.value if k.tag != _MERGE)
        self.loader.flatten_mapping(node)
        inherited = len(node.value) - own          # flattened: merged entries first
        out: dict[str, Any] = {}
        for k, (knode, vnode) in enumerate(node.value):
            key = self._key(knode, path)
            if key is None:
                continue
            sub = join_path(path, key)
            if k >= inherited and sub in self.lines and key in out and self.explicit.get(sub) == id(node):
                self.problems.add(sub, "duplicate key (first at line %d)" % self.lines[sub],
                                  line=_line(knode))
                continue
            if k >= inherited:
                self.explicit[sub] = id(node)
            self.lines[sub] = _line(knode)
            out[key] = self.build(vnode, sub, depth + 1)
        return out

    def _key(self, knode: yaml.Node, path: str) -> str | None:
        if not isinstance(knode, yaml.ScalarNode):
            self.problems.add(path, "keys must be strings", line=_line(knode))
            return None
        key = self.scalar(knode, path)
        if not isinstance(key, str):
            self.problems.add(path, "keys must be strings (got %s)" % _kind(key), line=_line(knode))
            return None
        return key

    def scalar(self, node: yaml.Node, path: str) -> Any:
        try:
            value = self.loader.construct_object(node, deep=True)
            if isinstance(value, float) and not math.isfinite(value):
                self.problems.add(path, "must be a finite number, not %s" % node.value,
                                  line=_line(node))
                return None
            return value
        except yaml.YAMLError:
            raise
        except Exception as exc:  # a tagged scalar PyYAML cannot convert (!!int x, !!bool y, ...)
            raise _Refused("cannot read the value %.40r as %s (%s)" % (
                node.value, node.tag.rsplit(":", 1)[-1], exc), _line(node), path) from exc


def _too_big(size: int, limit: int = MAX_BYTES, what: str = "a topology") -> str | None:
    if size <= limit:
        return None
    return "over %d MiB, the limit for %s" % (limit // (1024 * 1024), what)


def _syntax_message(exc: yaml.MarkedYAMLError) -> str:
    msg = "YAML syntax error: %s" % (exc.problem or exc.context)
    if exc.context and exc.problem:
        msg = "YAML syntax error: %s %s" % (exc.context, exc.problem)
    return msg


def flow_depth(text: str) -> int:
    """Deepest nesting of flow brackets, ignoring quoting (an upper bound)."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(text):
        depth = depth + 1 if match.group() in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


def _compose(text: str, problems: Problems, loader_class: type) -> tuple[Any, Lines]:
    """Compose with one loader class and build the data; problems collects what is wrong."""
    _require_yaml()
    loader: Any = None
    builder: _Builder | None = None
    data: Any = None
    try:
        loader = loader_class(text)
        builder = _Builder(loader, problems)
        node = loader.get_single_node()
        data = builder.build(node, "") if node is not None else None
    except _Refused as exc:
        problems.add(exc.path, exc.message, line=exc.line)
    except yaml.reader.ReaderError as exc:
        problems.add("", "not YAML text: %s (character #x%04x)" % (exc.reason, exc.character),
                     line=text.count("\n", 0, exc.position) + 1)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problems.add("", _syntax_message(exc), line=(mark.line + 1) if mark else None)
    except yaml.YAMLError as exc:
        problems.add("", "YAML error: %s" % exc)
    except RecursionError:  # merge keys through aliases (<<: *x) nest beyond the checks above
        problems.add("", TOO_DEEP + " (counting merge keys)")
    finally:
        if loader is not None:
            loader.dispose()
    return data, (builder.lines if builder is not None else {})


def parse_yaml(text: str, file: str | None, limit: int = MAX_BYTES,
               what: str = "a topology") -> tuple[Any, Lines, Problems]:
    """Parse YAML text; return (data, lines, problems).

    LibYAML's loader (when PyYAML has it) composes about ten times faster; the
    pure-Python one, with its depth checks while scanning, takes any text whose
    flow brackets nest deeper than MAX_DEPTH, and any text LibYAML finds fault
    with, so that every message comes from one parser."""
    problems = Problems(file)
    problems.stage = "load"
    big = _too_big(len(text), limit, what)
    if big:
        problems.add("", "the file is " + big)
        return None, {}, problems
    if _FAST is not None and flow_depth(text) <= MAX_DEPTH:
        data, lines = _compose(text, problems, _FAST)
        if not problems:
            return data, lines, problems
        problems = Problems(file)
        problems.stage = "load"
    data, lines = _compose(text, problems, _Loader)
    return (None if problems else data), lines, problems


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _expansion(root: yaml.Node) -> int | None:
    """How many nodes aliases add when the document is built (None: an alias
    inside the collection it names). Iterative, each node sized once."""
    size: dict[int, int] = {}
    gray: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            size[key] = 1 + sum(size[id(c)] for c in _children(node))
            gray.discard(key)
            continue
        if key in size:
            continue
        if key in gray:
            return None
        gray.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node))
    return size[id(root)] - len(size)


def bounds_problems(text: str, file: str, limit: int, what: str) -> Problems:
    """What keeps YAML that another program will read (an inventory) from being
    read within beonet's bounds: size, nesting, aliases, syntax. Nothing is built,
    so tags and keys other tools accept pass."""
    problems = Problems(file)
    problems.stage = "load"
    big = _too_big(len(text), limit, what)
    if big:
        problems.add("", "the file is " + big)
        return problems
    _require_yaml()
    loader = _Loader(text) if _FAST is None or flow_depth(text) > MAX_DEPTH else _FAST(text)
    try:
        root = loader.get_single_node()
        grown = 0 if root is None else _expansion(root)
        if grown is None:
            problems.add("", "a YAML alias refers to a collection that contains it")
        elif grown > MAX_ALIAS_NODES:
            problems.add("", "YAML aliases expand to more than %d nodes" % MAX_ALIAS_NODES)
    except _Refused as exc:
        problems.add(exc.path, exc.message, line=exc.line)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problems.add("", _syntax_message(exc), line=(mark.line + 1) if mark else None)
    except (yaml.YAMLError, RecursionError) as exc:
        problems.add("", "YAML error: %s" % (exc if isinstance(exc, yaml.YAMLError) else TOO_DEEP))
    finally:
        loader.dispose()
    return problems
