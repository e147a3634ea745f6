"""Stage 1: load a topology file and validate it.

YAML is composed node by node so every key path keeps its line number;
duplicate keys are errors (PyYAML would silently keep the last one). The data
is then checked against the JSON Schema and by the semantic rules the schema
cannot express (unique names, pool sizes are checked later by addressing).
"""

import difflib

import yaml
from jsonschema import Draft202012Validator, FormatChecker
from netaddr import AddrFormatError, IPNetwork

from .errors import Problems
from .schema import SCHEMA


def join_path(path, key):
    if isinstance(key, int):
        return "%s[%d]" % (path, key)
    return "%s.%s" % (path, key) if path else str(key)


class Source:
    """A loaded topology: data, the file it came from and key-path lines."""

    def __init__(self, data, file, lines):
        self.data = data
        self.file = file
        self.lines = lines

    def problems(self):
        return Problems(self.file, self.lines)


def _build(loader, node, path, lines, problems):
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out = {}
        for knode, vnode in node.value:
            key = loader.construct_object(knode, deep=True)
            if not isinstance(key, (str, int)):
                problems.add(path, "keys must be strings", line=knode.start_mark.line + 1)
                continue
            sub = join_path(path, str(key))
            if key in out:
                problems.add(sub, "duplicate key (first at line %d)" % lines[sub],
                             line=knode.start_mark.line + 1)
                continue
            lines[sub] = knode.start_mark.line + 1
            out[key] = _build(loader, vnode, sub, lines, problems)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, item, join_path(path, i), lines, problems)
                for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def parse_yaml(text, file):
    """Parse YAML text; return (data, lines, problems)."""
    problems = Problems(file)
    problems.stage = "load"
    lines = {}
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = _build(loader, node, "", lines, problems) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        msg = "YAML syntax error: %s" % (exc.problem or exc.context)
        if exc.context and exc.problem:
            msg = "YAML syntax error: %s %s" % (exc.context, exc.problem)
        problems.add("", msg, line=(mark.line + 1) if mark else None)
        return None, lines, problems
    except yaml.YAMLError as exc:
        problems.add("", "YAML error: %s" % exc)
        return None, lines, problems
    finally:
        loader.dispose()
    return data, lines, problems


_format_checker = FormatChecker()


@_format_checker.checks("ipv4-network", raises=(AddrFormatError, ValueError, TypeError))
def _is_ipv4_network(value):
    if not isinstance(value, str):
        return True
    net = IPNetwork(value, version=4)
    return "/" in value and str(net.cidr) == str(net)


_validator = Draft202012Validator(SCHEMA, format_checker=_format_checker)
_TYPE_WORDS = {"integer": "an integer", "string": "a string", "object": "a mapping",
               "array": "a list", "number": "a number", "boolean": "true or false"}


def _schema_at(path_parts):
    """The schema fragment for a key path (for 'did you mean' suggestions)."""
    node = SCHEMA
    for part in path_parts:
        if isinstance(part, int):
            node = node.get("items", {})
            if "oneOf" in node:
                node = next((n for n in node["oneOf"] if n.get("type") == "object"), {})
        else:
            node = node.get("properties", {}).get(part, {})
    return node


def _describe(schema):
    kind = schema.get("type")
    if kind == "integer":
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if lo is not None and hi is not None:
            return "must be an integer from %d to %d" % (lo, hi)
        if lo is not None:
            return "must be an integer >= %d" % lo
        return "must be an integer"
    if "enum" in schema:
        return "must be one of: %s" % ", ".join(str(v) for v in schema["enum"])
    if kind == "string" and schema.get("format") == "ipv4-network":
        return "must be an IPv4 network in CIDR form (e.g. 10.0.0.0/16)"
    if kind == "string" and "pattern" in schema:
        return "must be %s" % schema.get("description", "a string matching %s" % schema["pattern"])
    return "must be %s" % _TYPE_WORDS.get(kind, str(kind))


def _schema_messages(error):
    """Turn one jsonschema error into (key path parts, message) pairs."""
    parts = list(error.absolute_path)
    v = error.validator
    if v == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        out = []
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
        return [(parts, "must be a name or a mapping with 'name' (and 'id')")]
    if v in ("minItems", "maxItems"):
        return [(parts, "must have %s %d items" % (
            "at least" if v == "minItems" else "at most", error.validator_value))]
    if v == "minLength":
        return [(parts, "must not be empty")]
    return [(parts, error.message)]


def path_text(parts):
    out = ""
    for p in parts:
        out = join_path(out, p)
    return out


def _unique(values, base, problems, what):
    seen = {}
    for i, v in values:
        if v in seen:
            problems.add(join_path(base, i), "duplicate %s '%s' (first at %s)"
                         % (what, v, join_path(base, seen[v])))
        else:
            seen[v] = i


def _semantic(data, problems):
    """Rules the schema cannot state: unique names and references."""
    custom = data.get("custom")
    if data.get("family") != "custom" or not isinstance(custom, dict):
        return
    if "nodes" in data:
        problems.add("nodes", "naming applies to generated families; a custom topology "
                     "names its nodes in custom.nodes")
    names = []
    for i, n in enumerate(custom.get("nodes", [])):
        names.append((i, n if isinstance(n, str) else n.get("name")))
    _unique(names, "custom.nodes", problems, "node name")
    ids = [(i, n.get("id")) for i, n in enumerate(custom.get("nodes", []))
           if isinstance(n, dict) and "id" in n]
    _unique(ids, "custom.nodes", problems, "node id")
    known = {v for _, v in names}
    segs = custom.get("segments", [])
    links = custom.get("links", [])
    _unique([(i, s["name"]) for i, s in enumerate(segs)], "custom.segments",
            problems, "segment name")
    for i, seg in enumerate(segs):
        base = "custom.segments[%d]" % i
        members = seg.get("members", [])
        for j, m in enumerate(members):
            if m not in known:
                problems.add("%s.members[%d]" % (base, j), "unknown node '%s'" % m)
        _unique(list(enumerate(members)), base + ".members", problems, "member")
        if len(set(members)) < 2:
            problems.add(base + ".members",
                         "a segment needs at least 2 members (has %d)" % len(set(members)))
        bond_keys = [k for k in ("mode", "miimon", "tso") if k in seg]
        if bond_keys and seg.get("channels", 1) < 2:
            problems.add("%s.%s" % (base, bond_keys[0]), "bond settings need channels >= 2")
    for i, link in enumerate(links):
        ends = link.get("ends", [])
        for j, m in enumerate(ends):
            if m not in known:
                problems.add("custom.links[%d].ends[%d]" % (i, j), "unknown node '%s'" % m)
        if len(ends) == 2 and ends[0] == ends[1]:
            problems.add("custom.links[%d].ends" % i, "a link needs two different nodes")


def validate(data, file, lines):
    problems = Problems(file, lines)
    problems.stage = "validate"
    if not isinstance(data, dict):
        problems.add("", "a topology must be a YAML mapping (got %s)"
                     % ("an empty file" if data is None else type(data).__name__))
        return problems
    for error in sorted(_validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        if error.validator in ("if", "allOf"):
            continue
        for parts, msg in _schema_messages(error):
            problems.add(path_text(parts), msg)
    problems.items.sort(key=lambda p: (p.line or 0, p.path))
    family = data.get("family")
    for other in SCHEMA["properties"]["family"]["enum"]:
        if other != family and other in data:
            problems.add(other, "section does not match family '%s'" % family)
    if not problems:
        _semantic(data, problems)
    return problems


def load_text(text, file):
    """Parse and validate; return (Source or None, Problems)."""
    data, lines, problems = parse_yaml(text, file)
    if problems:
        return None, problems
    problems = validate(data, file, lines)
    if problems:
        return None, problems
    return Source(data, file, lines), problems


def load_file(path):
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        problems = Problems(path)
        problems.stage = "load"
        problems.add("", "cannot read file: %s" % exc.strerror)
        return None, problems
    return load_text(text, path)
