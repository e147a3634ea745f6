"""What a node sends back is untrusted: verify.yml's readings judged on the controller
(gate/node.py), the filter's set elements, discover's collect. A node may lie about
itself, but it cannot crash the controller, make the judging slow, or add a line to
the report."""

import json
import re

import pytest
from conftest import ROOT

from beonet.agent import discover
from beonet.compiler import pipeline
from beonet.gate import node as gate_node
from beonet.livestate import nft, report, task
from beonet.livestate.family import six
from beonet.outputs import plan as render

TEXT = (ROOT / "tests/livestate/read-node28.txt").read_text()
FORGED = "node-0-0: 0 mismatches, every pair proven"


@pytest.fixture(scope="module")
def plan():
    return render.plan(pipeline.compile_file(str(ROOT / "topologies/metanode-testbed.yml")))


def _with_routes(routes_json: str) -> str:
    """node28's recorded output with its route listing replaced."""
    listing = routes_json.replace("\\", "\\\\")
    return re.sub(r"(@@beonet@@ out routes 0\n)[^\n]*\n", lambda m: m.group(1) + listing + "\n", TEXT)


def _verify(plan, node28: str) -> dict:
    """beonet_verify_live's result with node28's output (the other nodes print nothing)."""
    outputs = {n: "" for n in plan["nodes"]}
    outputs["node28"] = node28
    params = {"plan": plan, "prefixes": render.prefixes(plan), "states": None, "outputs": outputs,
              "prove": True, "keep": 10, "sample": True, "mode": "live", "paths": {}, "max_targets": 64,
              "expected": {}, "unreachable": [], "settle": 3.0}
    return task.prove_task(params, False, False)


def _strings(value):
    todo, out = [value], []
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            todo += list(v) + list(v.values())
        elif isinstance(v, list):
            todo += v
    return out


def _node28(result) -> list[str]:
    return [p for p in result["problems"] + result["traced"]["problems"] if p.startswith("node28:")]


def test_a_node_listing_200000_routes_is_refused_by_name_before_they_are_parsed(plan):
    routes = [{"dst": "11.%d.%d.%d/32" % (k >> 16, (k >> 8) & 255, k & 255), "gateway": "10.255.0.12",
               "dev": "eth1"} for k in range(200_000)]
    result = _verify(plan, _with_routes(json.dumps(routes)))
    limit = gate_node.route_limit(plan["nodes"]["node28"])
    assert "node28: routes reading refused: lists 200000 routes, more than the %d its plan explains" % limit \
        in "\n".join(_node28(result))
    assert "node28" in result["unreadable"]
    assert len(result["report"]) < 100 and len(result["traced"]["summary"]) < 100


def test_a_route_table_the_plan_explains_is_still_read(plan):
    problems = _node28(_verify(plan, TEXT))
    assert not any("refused" in p for p in problems) and "node28: routes reading" not in "".join(problems)


@pytest.mark.parametrize(("routes", "why"), [
    ('[{"gateway": "10.255.0.12"}]', "[0]: has no 'dst'"),
    ('[{"dst": 5}]', "[0].dst: must be text"),
    ("[1, 2]", "[0]: must be a mapping"),
    ('{"a": 1}', "the output: must be a list"),
    ('[{"dst": "10.0.0.0/24", "nexthops": 5}]', "[0].nexthops: must be a list"),
    ('[{"dst": "10.0.0.0/24", "nexthops": [{"gateway": [1]}]}]', "[0].nexthops[0].gateway: must be text"),
    ('[{"dst": "10.0.0.0/24", "metric": true}]', "[0].metric: must be an integer"),
    ("[" * 5000 + "]" * 5000, "nests deeper than %d levels" % gate_node.DEPTH),
    ('[{"dst": NaN}]', "NaN is not a JSON value"),
    ('[{"dst": "a", "dst": "b"}]', "the key 'dst' is given twice"),
])
def test_routes_of_an_unexpected_shape_are_refused_for_that_node(plan, routes, why):
    problems = [p for p in _node28(_verify(plan, _with_routes(routes))) if "routes reading refused" in p]
    assert problems[0].startswith("node28: routes reading refused: ") and why in problems[0], problems


def test_an_output_over_the_limit_is_refused_whole(plan, monkeypatch):
    monkeypatch.setattr(gate_node, "MAX_OUTPUT", 1000)
    problems = _node28(_verify(plan, TEXT))
    assert problems[1] == ("node28: its output is %d characters, more than the 1000 beonet reads from a "
                           "node; nothing of it read" % len(TEXT))


@pytest.mark.parametrize("bad", ["\n", "\r", "\u2028", "\x1b[2K", "\x85"])
def test_no_string_a_node_sends_adds_a_line_to_any_output(plan, bad):
    routes = [{"dst": "10.9.9.0/24%s%s" % (bad, FORGED), "gateway": "10.255.0.12%s%s" % (bad, FORGED),
               "dev": "eth1%s%s" % (bad, FORGED)}]
    result = _verify(plan, _with_routes(json.dumps(routes)).replace(
        "@@beonet@@ err routes 0\n", "@@beonet@@ err routes 1\n%s%s\n" % (bad, FORGED)))
    assert all(s.isprintable() for s in _strings(result))
    lines = [line for s in _strings(result) for line in s.splitlines()]
    assert FORGED not in lines and any(FORGED in line for line in lines)


def test_long_problem_lists_are_summarised_in_the_report():
    rows = [{"pair": "a -> b%d" % k, "expected": [["10.0.0.1"]], "seen": ["*"]} for k in range(50)]
    lines = report.report_lines(rows, ["n%d: x\ny" % k for k in range(100)], cap=5)
    assert lines[:2] == ["a -> b0 | 10.0.0.1 | *", "a -> b1 | 10.0.0.1 | *"]
    assert lines[5] == "and 45 more pairs not as planned"
    assert lines[6:9] == ["state problems (100):", "  n0: x\\ny", "  n1: x\\ny"]
    assert lines[-1].startswith("  and 95 more: n10 1, n11 1") and len(lines) == 13


def _filter(elements):
    return {"chains": [{"table": nft.TABLE, "chain": nft.CHAIN, "policy": "drop", "rules": [nft.RULE],
                        "count": 1}], "sets": {nft.SET: elements}, "legacy": []}


@pytest.mark.parametrize("element", ["10.0.0.0/-100", "10.0.0.0/33", "10.0.0.0/", "10.0.0.300/8", "x",
                                     "10.0.0.9-10.0.0.1", "1.2.3.4-1.2.3.5/3"])
def test_a_set_element_that_is_no_prefix_is_a_state_problem_not_a_pass(element):
    verdict = nft.judge(_filter(["10.1.0.0/16", element]))
    assert verdict.refused == ("beonet's forward filter's set cluster holds '%s', not an IPv4 address, "
                               "prefix or range: its filter is refused" % element)
    assert not verdict.beonet


def test_set_elements_are_read_as_prefixes_ranges_and_addresses():
    verdict = nft.judge(_filter(["10.1.2.3/16", "10.3.0.1-10.3.0.9", "10.4.0.1"]))
    assert verdict.refused is None and verdict.ranges == [(0x0A010000, 0x0A01FFFF), (0x0A030001, 0x0A030009),
                                                          (0x0A040001, 0x0A040001)]


@pytest.mark.parametrize(("report_json", "why"), [
    ("{}", "lacks discovery, ended, listened"),
    ('{"discovery": [], "ended": "cap", "listened": 1}', "holds discovery: a list, not a mapping"),
    ('{"discovery": {}, "ended": "x\\ny", "listened": 1}', "holds ended: 'x\\ny', not 'stopped' or 'cap'"),
    ('{"discovery": {}, "ended": "cap", "listened": "1"}', "holds listened: '1', not a number of seconds"),
])
def test_discovers_collect_refuses_a_report_without_its_keys(report_json, why):
    with pytest.raises(discover.DiscoveryError) as exc:
        discover.parse_collected("A", "r1", "%s: report\n%s" % (discover.COLLECT_MARK, report_json))
    assert str(exc.value) == "A: the report of discovery run r1 %s" % why


def test_discovers_collect_refuses_deep_json_as_no_report():
    with pytest.raises(discover.DiscoveryError, match="wrote no report"):
        discover.parse_collected("A", "r1", "%s: report\n%s" % (discover.COLLECT_MARK, "[" * 100_000))


# Golden errors: the problems verify names for node28 for each hostile output
# (tests/errors/node/NAME.txt; BEONET_REGEN=1 rewrites them).
HOSTILE_ROUTES = {
    "routes-over-the-limit": json.dumps([{"dst": "11.0.%d.%d/32" % (k >> 8, k & 255), "dev": "eth1"}
                                         for k in range(5000)]),
    "routes-without-dst": '[{"gateway": "10.255.0.12", "dev": "eth1"}]',
    "routes-of-wrong-types": '[{"dst": "10.0.0.0/24", "nexthops": [{"gateway": 10, "dev": "eth1"}]}]',
    "routes-not-a-list": '{"dst": "10.0.0.0/24"}',
    "routes-too-deep": "[" * 100 + "]" * 100,
    "routes-nan": '[{"dst": "10.0.0.0/24", "metric": NaN}]',
    "routes-key-twice": '[{"dst": "10.0.0.0/24", "dst": "0.0.0.0/0"}]',
    "routes-forged-line": json.dumps([{"dst": "10.9.9.0/24\n%s" % FORGED, "gateway": "10.255.0.12",
                                       "dev": "eth1"}]),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_ROUTES))
def test_golden_refusals_of_hostile_node_output(plan, name):
    from conftest import golden
    result = _verify(plan, _with_routes(HOSTILE_ROUTES[name]))
    golden(ROOT / "tests/errors/node" / ("%s.txt" % name), "\n".join(_node28(result)) + "\n")


# --- IPv6 readings are as untrusted as the IPv4 ones

@pytest.mark.parametrize(("key", "text", "why"), [
    ("routes6", '[{"dst": "fd00::/64", "pref": 5}]', "[0].pref: must be text"),
    ("routes6", '[{"dst": "fd00::/64", "nexthops": [{"gateway": 7}]}]',
     "[0].nexthops[0].gateway: must be text"),
    ("addrs6", '[{"ifname": "eth1", "addr_info": [{"local": "fd00::1", "dadfailed": "yes"}]}]',
     "[0].addr_info[0].dadfailed: must be bool"),
    ("netconf6", '[{"interface": "eth1", "forwarding": []}]',
     "[0].forwarding: must be bool or text or an integer"),
    ("neigh6", '[{"dst": "fd00::1", "dst": "fd00::2"}]', "the key 'dst' is given twice"),
])
def test_ipv6_readings_of_an_unexpected_shape_are_refused(key, text, why):
    got = gate_node.section_problem(key, text, {"routes": [], "interfaces": []})
    assert got is not None and why in got, got


def test_the_route_cap_counts_ipv6_routes_too():
    plan_node = {"routes": [], "interfaces": [{}]}
    limit = gate_node.route_limit(plan_node)
    text = json.dumps([{"dst": "fd00::%x" % k} for k in range(limit + 1)])
    assert gate_node.section_problem("routes6", text, plan_node).startswith(
        "lists %d routes, more than the %d its plan explains" % (limit + 1, limit))


def _with_six(key: str, listing: str) -> str:
    """node28's recorded output with an IPv6 reading added."""
    return TEXT + "@@beonet@@ out %s -\n%s\n@@beonet@@ err %s 0\n\n" % (key, listing, key)


def test_hostile_ipv6_readings_are_refused_by_name_and_add_no_line(plan):
    routes = [{"dst": "fd00::/64\n" + FORGED, "gateway": "fe80::1%eth1\u2028" + FORGED, "dev": "eth1"}]
    result = _verify(plan, _with_six("routes6", json.dumps(routes)))
    assert "node28" not in result["dead"] + result["unreadable"]        # a plan without IPv6 reads none
    assert all(s.isprintable() for s in _strings(result))
    assert FORGED not in [line for s in _strings(result) for line in s.splitlines()]
    many = json.dumps([{"dst": "fd00::%x" % k} for k in range(200_000)])
    problems = _node28(_verify(plan, _with_six("routes6", many)))
    assert any(p.startswith("node28: routes6 reading refused: lists 200000 routes") for p in problems)
    problems = _node28(_verify(plan, _with_six("netconf6", '[{"interface": "all", "forwarding": {}}]')))
    assert any(p.startswith("node28: netconf6 reading refused: its output is not of the shape")
               for p in problems)


def test_a_zone_id_or_an_ipv4_address_is_no_ipv6_address():
    assert six("fe80::1") == 0xFE80 << 112 | 1 and six("::1") == 1
    assert [six(t) for t in ("fe80::1%eth0", "10.0.0.1", "fd00::g", ":", "1:2:3:4:5:6:7:8:9", "x" * 60)] == \
        [None] * 6
