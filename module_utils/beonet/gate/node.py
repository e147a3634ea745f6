"""What a node sends back, read as untrusted (verify.yml's readings on the controller).

A node may lie about itself, but what it prints cannot crash the controller, take
longer than a time budget to judge, or add a line to a report. Each node's output
is checked here before the state and the checks read it:

* its size: at most MAX_OUTPUT characters (else the whole output is refused);
* each command's output (ip -j, nft -j): strict JSON (gate.loads_json: no NaN, no
  key twice, at most DEPTH levels) of the shape its readers take (SHAPES: a list of
  mappings whose known keys hold the types ip gives them);
* its routes of each family: at most ``route_limit`` of the node's plan (ROUTE_FACTOR
  times what its plan and NICs explain, and ROUTE_SLACK more: the kernel's own IPv6
  routes, fe80::/64 and ff00::/8 on every NIC, fit in it), counted before they are
  parsed.

IPv6 readings (addrs6, routes6, neigh6, netconf6) are read as the IPv4 ones; an
address with a zone id (fe80::1%eth0) passes here as text and is refused where the
state is parsed (livestate.state).

A refused reading becomes a failed command whose error says why: the state names
it unread (the node is not proven, "run verify again") and the node's problems
name it. ``one_line`` escapes every string of a result: whatever a node sent is
shown on one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..agent.names import escaped, escaped_all
from .read import GateError, loads_json

MAX_OUTPUT = 64 << 20          # characters of one node's output
DEPTH = 24                     # nesting of one command's JSON (nft -j's is the deepest, ~12)
ROUTE_FACTOR = 4
ROUTE_SLACK = 1024
NUMBER = (int,)
Spec = Any                     # a type, a tuple of types, [item spec] or {key: spec}

REQUIRED = ""                   # a mapping spec's key naming the keys every such mapping must have
_HOP: dict[str, Spec] = {"gateway": str, "dev": str, "flags": [str]}
_ROUTE: dict[str, Spec] = {**_HOP, REQUIRED: ("dst",), "dst": str, "prefsrc": str, "protocol": (str, int),
                           "metric": int, "type": str, "scope": str, "nexthops": [_HOP]}
_ADDRS: Spec = [{REQUIRED: ("ifname",), "ifname": str,
                 "addr_info": [{"local": str, "prefixlen": int, "family": str, "dadfailed": bool}]}]
_NEIGH: Spec = [{"dst": str, "dev": str, "state": (str, list)}]
_SWITCH = (bool, str, int)       # a netconf switch: true/false, "on"/"off" of older iproute2
# command key -> the shape of its JSON
SHAPES: dict[str, Spec] = {
    "links": [{REQUIRED: ("ifname",), "ifname": str, "flags": [str], "master": str}],
    "addrs": _ADDRS,
    "routes": [_ROUTE],
    "neigh": _NEIGH,
    "rules": [{"priority": int}],
    "nft": {"nftables": list},
    "addrs6": _ADDRS,
    "routes6": [{**_ROUTE, "pref": str, "expires": int}],
    "neigh6": _NEIGH,
    "netconf6": [{"family": str, "interface": str, "forwarding": _SWITCH,
                  "ignore_routes_with_linkdown": _SWITCH}],
}
ROUTED = ("routes", "routes6")   # the readings whose routes are counted before they are parsed
# Every reader on the controller of what nodes send ("module:function": what it reads).
# tests/test_fuzz.py feeds each hostile data and fails for a reader it has no case for.
READERS = {
    "beonet.livestate.readout:judge": "verify.yml's raw output of each node",
    "beonet.livestate.proof:prove": "the states the nodes collected (beonet_verify_live states=)",
    "beonet.agent.discover:parse_collected": "a background discovery's report (beonet_discover's collect)",
    "beonet.agent.fast:matches": "the fast path's line (beonet_node's action plugin)",
    "beonet.benchmarks.report:collect": "the benchmark's output files of each node",
}
_WORDS = {str: "text", int: "an integer", list: "a list", dict: "a mapping"}


def route_limit(plan_node: Mapping[str, Any]) -> int:
    """The routes a node may list: ROUTE_FACTOR times its planned routes and NICs, and
    ROUTE_SLACK more (the kernel's and the management network's)."""
    planned = len(plan_node.get("routes") or []) + len(plan_node.get("learned") or [])
    return ROUTE_FACTOR * (planned + len(plan_node.get("interfaces") or [])) + ROUTE_SLACK


def _kind_ok(value: Any, kinds: type | tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in (kinds if isinstance(kinds, tuple) else (kinds,))
    return isinstance(value, kinds)


def _kind_word(spec: Spec) -> str:
    if isinstance(spec, list):
        return "a list"
    if isinstance(spec, dict):
        return "a mapping"
    kinds = spec if isinstance(spec, tuple) else (spec,)
    return " or ".join(_WORDS.get(k, k.__name__) for k in kinds)


def shape_problem(value: Any, spec: Spec) -> str | None:
    """Where value differs from spec (the first place in order, as 'KEY PATH: must be ...'),
    or None. A walk with a list, not recursion; keys spec does not name are not checked,
    those spec[REQUIRED] names must be there."""
    todo: list[tuple[Any, Spec, str]] = [(value, spec, "")]
    while todo:
        v, s, path = todo.pop()
        if isinstance(s, list):
            if not isinstance(v, list):
                return "%s: must be a list" % (path.lstrip(".") or "the output")
            todo += reversed([(item, s[0], "%s[%d]" % (path, k)) for k, item in enumerate(v)])
        elif isinstance(s, dict):
            if not isinstance(v, dict):
                return "%s: must be a mapping" % (path.lstrip(".") or "the output")
            missing = [k for k in s.get(REQUIRED, ()) if k not in v]
            if missing:
                return "%s: has no '%s'" % (path.lstrip(".") or "the output", missing[0])
            todo += reversed([(v[k], sub, "%s.%s" % (path, k)) for k, sub in s.items() if k and k in v])
        elif not _kind_ok(v, s):
            return "%s: must be %s" % (path.lstrip("."), _kind_word(s))
    return None


def section_problem(key: str, text: str, plan_node: Mapping[str, Any]) -> str | None:
    """Why one command's output cannot be read (None: it can)."""
    if key in ROUTED and text.count('"dst"') > route_limit(plan_node):
        return ("lists %d routes, more than the %d its plan explains (%d times its planned routes "
                "and NICs, and %d more)" % (text.count('"dst"'), route_limit(plan_node), ROUTE_FACTOR,
                                            ROUTE_SLACK))
    if key not in SHAPES or not text.strip():
        return None
    try:
        doc = loads_json(text, None, DEPTH)
    except GateError as exc:
        return "its output %s" % exc.message.replace("is not JSON", "is not strict JSON")
    why = shape_problem(doc, SHAPES[key])
    return None if why is None else "its output is not of the shape ip and nft print: %s" % why


def screen(name: str, text: str, commands: dict[str, tuple[int, str, str]],
           plan_node: Mapping[str, Any]) -> list[str]:
    """Refuse the readings of one node that cannot be read safely: each becomes a
    failed command (commands is changed in place) whose error says why; the problems
    (one per refusal, naming the node) are returned. An output over MAX_OUTPUT
    characters is refused whole (commands emptied)."""
    who = escaped(name)
    if len(text) > MAX_OUTPUT:
        commands.clear()
        return ["%s: its output is %d characters, more than the %d beonet reads from a node; "
                "nothing of it read" % (who, len(text), MAX_OUTPUT)]
    problems = []
    for key, (rc, out, _err) in list(commands.items()):
        why = section_problem(key, out, plan_node) if rc == 0 else None
        if why is not None:
            commands[key] = (1, "", "refused by the controller: %s" % why)
            problems.append("%s: %s reading refused: %s" % (who, escaped(key), escaped(why)))
    return problems


def one_line(value: Any) -> Any:
    """value with every string in it (keys too) escaped to one line of printable text."""
    return escaped_all(value)
