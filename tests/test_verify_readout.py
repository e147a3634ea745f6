"""verify.yml's one raw call per node: the command built on the controller, and its
output (a recorded one from a node of the metanode testbed lab, and variants of it)
read back into the state the agent collects and the result beonet_verify returns."""

import json
import os
import re
import subprocess

import pytest
from conftest import ROOT, needs_host
from test_live_proof import dual_plan, frr6_plan, only_plan, six_healthy, six_prefixes  # noqa: F401  (fixtures)

from beonet.agent import collect, readout, verify
from beonet.compiler import pipeline
from beonet.livestate import proof, state, task
from beonet.livestate import readout as controller
from beonet.outputs import plan as render

# recorded before the IPv6 readings: their sections as a node without IPv6 prints them
TEXT = (ROOT / "tests/livestate/read-node28.txt").read_text() + "".join(
    "%s out %s -\n[]\n\n%s err %s 0\n\n" % (readout.MARK, key, readout.MARK, key) for key in collect.SIX)
NODE = json.loads((ROOT / "tests/livestate/read-node28.json").read_text())
TARGETS = [(d, NODE["addresses"][d]) for d in sorted(NODE["expected"])]


def _result(text):
    out = readout.parse_output(text)
    return readout.node_result(NODE["node"], NODE["plan"], out, TARGETS, NODE["expected"])


def _section(text, key, rc, stdout, stderr=""):
    """The output with one command's section replaced."""
    start = text.index("%s out %s " % (readout.MARK, key))
    end = text.index("%s out " % readout.MARK, text.index("%s err %s " % (readout.MARK, key)))
    return text[:start] + "%s out %s %d\n%s\n%s err %s %d\n%s\n" % (
        readout.MARK, key, rc, stdout, readout.MARK, key, rc, stderr) + text[end:]


def test_the_recorded_output_splits_into_every_command_the_files_and_the_traces():
    out = readout.parse_output(TEXT)
    assert sorted(out.commands) == sorted(key for key, _argv in collect.COMMANDS)
    assert all(rc == 0 and err.strip() == "" for rc, _out, err in out.commands.values())
    assert out.files["/proc/sys/net/ipv4/ip_forward"] == "1\n"
    assert out.files["/proc/sys/net/ipv4/conf/eth0/ignore_routes_with_linkdown"] == "1\n"
    assert sorted(out.traces) == [0, 1, 2] and all(not silent for _rc, silent, _t in out.traces.values())


def test_the_recorded_output_makes_the_state_the_agent_makes_from_the_same_readings():
    out = readout.parse_output(TEXT)
    parsed = {key: json.loads(text) for key, (_rc, text, _err) in out.commands.items()}
    got = readout.state_of_output(out)
    assert got == collect.state_of(parsed, out.files.get)
    assert got["unread"] == [] and got["errors"] == []
    assert got["sysctl"]["forwarding"] == {"all": 1, "eth0": 1, "eth1": 1, "lo": 1}
    assert [c["policy"] for c in got["filter"]["chains"]] == ["drop"]
    parsed_state = state.parse(NODE["node"], got)
    assert parsed_state.links == {"lo": "up", "eth0": "up", "eth1": "up"}
    assert any(len(r.hops) == 3 for r in parsed_state.routes)           # every next hop of a multipath route


def test_the_recorded_traces_routes_and_forwarding_match_the_plan():
    result = _result(TEXT)
    assert result["checked"] == 3 and result["targets"] == sorted(NODE["expected"])
    assert result["mismatches"] == [] and result["silent"] == []
    assert result["problems"] == [] and result["route_diff"] == [] and result["forwarding"] is True


def test_a_terminals_line_ends_are_read_the_same():
    assert readout.parse_output(TEXT.replace("\n", "\r\n")) == readout.parse_output(TEXT)


def test_a_route_table_that_failed_twice_leaves_the_node_unreadable_and_named():
    text = _section(TEXT, "routes", 1, "", "Dump was interrupted and may be inconsistent.")
    got = readout.state_of_output(readout.parse_output(text))
    assert got["unread"] == ["routes"]
    interrupted = "Dump was interrupted and may be inconsistent."
    assert got["errors"] == ["%s: %s" % (" ".join(dict(collect.COMMANDS)["routes"]), interrupted),
                             "routes: no usable output"]
    problems = _result(text)["problems"]
    assert problems == ["node28: could not read its routes (ip -j -4 -d route show table main: Dump was "
                        "interrupted and may be inconsistent.); run verify again"]
    assert "run verify again" in proof.unreadable("node28", state.parse("node28", got))


def test_a_program_the_node_lacks_is_named_as_the_agent_names_it():
    # the shell says "sh: 2: nft: not found"; the agent's own run says "nft is not installed"
    text = _section(TEXT, "nft", 127, "", "sh: 2: nft: not found")
    got = readout.state_of_output(readout.parse_output(text))
    assert got["filter"]["error"] == "nft -j list ruleset: nft is not installed"


def test_output_cut_off_before_the_commands_leaves_every_needed_reading_unread():
    got = readout.state_of_output(readout.parse_output("sh: 1: mktemp: not found\n"))
    assert got["unread"] == list(collect.NEEDED)
    assert got["errors"][0] == "ip -j link show: links: not run (the node's output has no section)"
    assert got["filter"]["error"].startswith("nft -j list ruleset: nft: not run")


def test_a_route_missing_on_the_node_is_named():
    out = readout.parse_output(TEXT)
    routes = [r for r in json.loads(out.commands["routes"][1]) if r["dst"] != "10.0.1.7"]
    result = _result(_section(TEXT, "routes", 0, json.dumps(routes)))
    assert result["problems"] == ["node28: route missing: 10.0.1.7/32 via 10.0.3.4 dev eth0 src 10.0.3.1"]


def test_forwarding_off_and_a_trace_that_stops_are_reported():
    text = TEXT.replace("/proc/sys/net/ipv4/ip_forward:1", "/proc/sys/net/ipv4/ip_forward:0")
    head = "%s trace 1 0 0\n" % readout.MARK
    start = text.index(head)
    end = text.index("%s trace 2 " % readout.MARK)
    text = text[:start] + "%s trace 1 0 1\n 1  10.0.3.4  0.1 ms\n 2  *\n" % readout.MARK + text[end:]
    result = _result(text)
    assert result["forwarding"] is False and result["silent"] == ["node10"]
    assert result["problems"] == ["node28: forwarding is off, the plan says on"]
    assert [(r["pair"], r["seen"]) for r in result["mismatches"]] == [("node28 -> node10", ["10.0.3.4", "*"])]


def test_a_trace_that_failed_and_one_missing_are_errors():
    start = TEXT.index("%s trace 0 " % readout.MARK)
    text = TEXT[:start] + "%s trace 0 1 0\nconnect: Network is unreachable\n" % readout.MARK
    result = _result(text)
    assert [(r["destination"], r["seen"]) for r in result["mismatches"]] == [
        ("node01", ["error: connect: Network is unreachable"]),
        ("node10", ["error: the node printed no trace"]), ("node19", ["error: the node printed no trace"])]


def test_a_bond_is_read_from_its_file_and_its_tso_from_ethtool():
    plan = dict(NODE["plan"], interfaces=NODE["plan"]["interfaces"] + [
        {"name": "bond0", "kind": "bond", "mode": "802.3ad", "members": ["eth2", "eth3"], "tso": False,
         "addresses": []}])
    bonding = ("Bonding Mode: IEEE 802.3ad Dynamic link aggregation\nSlave Interface: eth2\nMII Status: up\n"
               "Slave Interface: eth3\nMII Status: down\n")
    files = "".join("/proc/net/bonding/bond0:%s\n" % line for line in bonding.splitlines())
    text = TEXT.replace("%s files - 0\n" % readout.MARK, "%s files - 0\n%s" % (readout.MARK, files))
    text += "%s out tso:bond0 0\nFeatures for bond0:\ntcp-segmentation-offload: on\n%s err tso:bond0 0\n" % (
        readout.MARK, readout.MARK)
    out = readout.parse_output(text)
    problems = readout.node_result("node28", plan, out, TARGETS, NODE["expected"])["problems"]
    assert problems == ["node28: bond0 member eth3 is down",
                        "node28: bond0 has TCP segmentation offload on, the plan says off"]
    assert "ethtool -k bond0" in readout.read_command(plan, [])


def test_the_command_reads_from_no_terminal_in_the_c_locale_and_traces_eight_at_a_time():
    targets = [("10.0.%d.1" % k, 4, [["10.0.9.1", "10.0.%d.1" % k], ["10.0.9.2", "10.0.%d.1" % k]])
               for k in range(10)]
    cmd = readout.read_command(NODE["plan"], targets, settle=2)
    assert cmd.startswith("{ export LC_ALL=C PATH=") and cmd.endswith("; } </dev/null")
    for _key, argv in collect.COMMANDS:
        assert " ".join(argv) in cmd
    assert "r links 2 ip -j link show" in cmd and "r nft 1 nft -j list ruleset" in cmd
    assert "sleep 2" in cmd and "head -n %d" % collect.ASK_MAX in cmd
    assert len(re.findall(r"(?:[;&]|then) t \d+ ", cmd)) == 10 and cmd.count("& wait") == 2
    assert "t 9 10.0.9.1 4 '10.0.9.1 10.0.9.1' '10.0.9.2 10.0.9.1' >\"$d/t9\" & wait" in cmd
    assert "traceroute -n -I -N \"$n\" -q 1 -w \"$w\" -m \"$m\" \"$a\"" in cmd


def test_the_pick_gives_every_node_its_command_and_the_traceroute_mode_caps_the_destinations():
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/routed-mesh.yml")))
    prefixes = render.prefixes(plan)
    sample = proof.plan_sample(plan, prefixes)["sample"]
    live = controller.traced(plan, "live", sample, {}, 64)
    assert {n: e for n, e in live.items() if e} == sample
    paths = {n: {d: [[plan["nodes"][d]["address"]]] for d in plan["nodes"] if d != n} for n in plan["nodes"]}
    capped = controller.traced(plan, "traceroute", {}, paths, 2)
    assert all(len(e) == 2 and set(e) <= set(paths[n]) for n, e in capped.items())
    assert capped == controller.traced(plan, "traceroute", {}, paths, 2)          # fixed by the source's name
    assert controller.traced(plan, "traceroute", {}, paths, 64) == paths
    commands = controller.commands(plan, live, 3)
    assert set(commands) == set(plan["nodes"])
    src = next(iter(sample))
    assert all("t %d %s " % (k, plan["nodes"][d]["address"]) in commands[src]
               for k, d in enumerate(sorted(sample[src])))


@pytest.mark.parametrize("live", [True, False])
def test_the_proof_names_unreadable_and_dead_nodes_from_the_outputs(live):
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/routed-mesh.yml")))
    names = list(plan["nodes"])
    outputs = {n: "" for n in names[1:]}
    result = controller.judge(plan, render.prefixes(plan), outputs, {}, [names[0]], 10, live)
    assert result["traced"]["dead"] == [names[0]] and result["traced"]["checked"] == 0
    assert result["traced"]["summary"][0] == "nodes dead or unreachable (1): %s" % names[0]
    if live:
        assert result["dead"] == [names[0]] and result["unreadable"] == sorted(names[1:])
        assert result["proven"] == 0 and result["mismatched"] == 0
    else:
        assert "proven" not in result


FAKES = {
    # ip: its arguments as JSON; the route listing is cut short once (ip's warning, status 0)
    "ip": ('if [ "$*" = "-j -4 -d route show table main" ] && [ ! -e "$FAKE/routes-once" ]; then\n'
           '  : > "$FAKE/routes-once"; echo "[\\"cut\\"]"\n'
           '  echo "Dump was interrupted and may be inconsistent." >&2\n'
           '  exit 0; fi\n'
           'case "$*" in "-4 neigh show"*|"-6 neigh show"*) exit 0 ;; esac\n'
           'echo "[\\"$*\\"]"'),
    "nft": 'echo "nft: no such table" >&2; exit 1',
    "grep": 'echo "/proc/sys/net/ipv4/ip_forward:1"',
    # ping: 10.0.6.1 never answers
    "ping": 'for a; do :; done; [ "$a" != 10.0.6.1 ]',
    # traceroute: 10.0.5.1 is reached through 10.0.7.7 (on no allowed list), the rest through 10.0.9.1
    "traceroute": ('for a; do :; done; echo "$a" >> "$FAKE/traced"\n'
                   'h=10.0.9.1; [ "$a" = 10.0.5.1 ] && h=10.0.7.7\n'
                   'printf "traceroute to %s\\n 1  %s  0.1 ms\\n 2  %s  0.2 ms\\n" "$a" "$h" "$a"'),
}


def _run_on_fakes(tmp_path, cmd, fakes=None):
    """The command run by sh with the node's programs replaced by FAKES (the rest of
    what it runs is the shell's own or coreutils')."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name, body in dict(FAKES, **(fakes or {})).items():
        (fake / name).write_text("#!/bin/sh\n" + body + "\n")
        (fake / name).chmod(0o755)
    cmd = cmd.replace("PATH=/usr/sbin:/usr/bin:/sbin:/bin", "PATH=%s:/usr/bin:/bin" % fake)
    res = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=60,
                         env={"FAKE": str(fake), "PATH": os.environ["PATH"], "TMPDIR": str(tmp_path)})
    traced = (fake / "traced").read_text().split() if (fake / "traced").exists() else []
    return res, traced


in_a_shell = needs_host("the command as a node's POSIX shell runs it, with fake ip, nft, ping, traceroute",
                        "sh", "head", "mktemp", "cat", "rm")


@in_a_shell
@pytest.mark.parametrize("count", [1, 10])
def test_the_command_runs_every_reading_once_a_cut_listing_twice_and_each_trace(tmp_path, count):
    targets = [("10.0.%d.1" % k, 2, [["10.0.9.1", "10.0.%d.1" % k]]) for k in range(count)]
    res, traced = _run_on_fakes(tmp_path, readout.read_command(NODE["plan"], targets, settle=2))
    assert res.returncode == 0 and res.stderr == "", res.stderr
    out = readout.parse_output(res.stdout)
    assert out.commands["routes"] == (0, '["-j -4 -d route show table main"]\n', "")      # the second try
    assert out.commands["links"] == (0, '["-j link show"]\n', "")
    assert out.commands["nft"] == (1, "", "nft: no such table")
    assert out.files == {"/proc/sys/net/ipv4/ip_forward": "1\n"}
    assert sorted(out.traces) == list(range(count))
    for k, (rc, silent, text) in out.traces.items():
        first = "10.0.7.7" if k == 5 else "10.0.9.1"
        assert rc == 0 and silent == (k == 6) and verify.parse_traceroute(text) == [first, "10.0.%d.1" % k]
    # a trace on no allowed list is tried three times (waiting longer), a silent target once
    assert sorted(traced) == sorted(["10.0.%d.1" % k for k in range(count)] + ["10.0.5.1"] * 2 * (count > 5))
    assert list(tmp_path.glob("tmp.*")) == []


@in_a_shell
@pytest.mark.parametrize("failed", ["-4", "-6"])
def test_failed_neighbours_of_either_family_are_asked_again_before_their_table_is_read(tmp_path, failed):
    """A FAILED entry (a neighbour down once, since back) is asked once more, of IPv6 as
    of IPv4, and both tables are read after that, not before."""
    entry = {"-4": "10.0.0.2 dev eth1 FAILED", "-6": "fd00::2 dev eth1 router FAILED"}[failed]
    fakes = {"ip": ('echo "ip $*" >> "$FAKE/log"\n'
                    'case "$*" in "%s neigh show nud failed"*) echo "%s"; exit 0 ;; '
                    '*"neigh show nud"*) exit 0 ;; esac\n'
                    'echo "[]"' % (failed, entry)),
             "ping": 'echo "ping $*" >> "$FAKE/log"'}
    res, _traced = _run_on_fakes(tmp_path, readout.read_command(NODE["plan"], [], settle=0), fakes)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    log = (tmp_path / "bin" / "log").read_text().splitlines()
    pinged = [k for k, line in enumerate(log) if line.startswith("ping ")]
    address = entry.split()[0]
    assert [log[k] for k in pinged] == ["ping -n -q -c 1 -W %d -I eth1 %s" % (collect.ASK_WAIT, address)]
    assert log.index("ip -j -4 neigh show") > pinged[0] and log.index("ip -j -6 neigh show") > pinged[0]
    out = readout.parse_output(res.stdout)
    assert out.commands["neigh"][:2] == out.commands["neigh6"][:2] == (0, "[]\n")


def test_a_trace_is_judged_by_the_paths_the_live_tables_allow_as_well_as_the_plans():
    """FRR's zebra can leave a route without the source address the plan gives it: the
    node then traces from its NIC's address and the hop answers from its own address on
    that link. The live tables the proof walked allow exactly that; a hop no table
    allows is still a mismatch."""
    from beonet.livestate import synthetic
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/metanode-testbed-frr.yml")))
    prefixes = render.prefixes(plan)
    states = {n: synthetic.plan_state(node, prefixes) for n, node in plan["nodes"].items()}
    for r in states["node32"]["routes"]:
        if r["proto"] == "ospf":
            r["src"] = None
    result, nets = proof.prove_live(plan, prefixes, states, 10, False)
    assert result["mismatched"] == 0 and list(nets) == ["IPv4"]
    planned = [["10.254.0.17", "10.254.0.10"]]
    traced = {"node32": {"node10": planned}, "node01": {"node10": [["x"]]}}
    allowed = controller.allowed_by_tables(nets, traced)
    assert allowed["node32"]["node10"] == planned + [["10.255.0.26", "10.254.0.10"]]
    assert allowed["node01"]["node10"] == [["x"], ["10.254.0.10"]]
    seen = {"node10": ["10.255.0.26", "10.254.0.10"]}
    judged = verify.node_result("node32", plan["nodes"]["node32"], allowed["node32"], seen, [],
                                lambda _p: None, {}, [], [])
    assert judged["mismatches"] == []
    wrong = verify.node_result("node32", plan["nodes"]["node32"], allowed["node32"],
                               {"node10": ["10.255.0.26", "10.254.0.9", "10.254.0.10"]}, [],
                               lambda _p: None, {}, [], [])
    assert [r["pair"] for r in wrong["mismatches"]] == ["node32 -> node10"]
    assert controller.allowed_by_tables(nets, {"nodeX": {"node10": planned}}) == \
        {"nodeX": {"node10": planned}}


# --- IPv6 pairs traced and judged beside the IPv4 ones

def test_the_sample_traces_ipv6_pairs_to_the_nodes_address6(dual):
    picked = controller.pick(dual, six_prefixes(dual), "live", {}, 64, 0)
    mine = picked["expected"]["node-0-0"]
    keys6 = [k for k in mine if k.endswith(verify.SIX)]
    assert keys6 and all(mine[k][0][-1] == dual["nodes"][verify.target_node(k)]["address6"] for k in keys6)
    assert "traceroute -n -I" in picked["commands"]["node-0-0"]
    for k in keys6:
        assert " %s " % dual["nodes"][verify.target_node(k)]["address6"] in picked["commands"]["node-0-0"]


def test_traceroute_mode_on_an_ipv6_only_plan_traces_every_node_over_ipv6(only):
    picked = controller.pick(only, [], "traceroute", {}, 64, 0)
    mine = picked["expected"]["node-0-0"]
    assert sorted(mine) == sorted(verify.target_key(n, True) for n in only["nodes"] if n != "node-0-0")
    assert all(branch[-1] == only["nodes"][verify.target_node(k)]["address6"]
               for k, lists in mine.items() for branch in lists)


def _listed(routes):
    """beonet's routes of a state (OSPF's under FRR) as ``ip -j route`` lists them."""
    return [dict({"dst": r["dst"], "prefsrc": r["src"]},
                 **({"gateway": r["hops"][0]["via"], "dev": r["hops"][0]["dev"]} if len(r["hops"]) == 1 else
                    {"nexthops": [{"gateway": h["via"], "dev": h["dev"]} for h in r["hops"]]}))
            for r in routes if r.get("proto") in ("250", "ospf")]


def _output(plan, name, states, traces):
    """The raw call's output of a node: each command's section, its traces."""
    st = states[name]
    listed = {"links": [{"ifname": k, "flags": ["UP", "LOWER_UP"]} for k in st["links"]],
              "addrs": [{"ifname": k, "addr_info": [{"family": "inet", "local": a.split("/")[0],
                                                     "prefixlen": int(a.split("/")[1])} for a in v]}
                        for k, v in st["addrs"].items()],
              "routes": _listed(st["routes"]), "neigh": [], "rules": [], "nft": {"nftables": []},
              "addrs6": [{"ifname": k, "addr_info": [{"family": "inet6", "local": a.split("/")[0],
                                                      "prefixlen": int(a.split("/")[1])} for a in v]}
                         for k, v in st["addrs6"].items()],
              "routes6": _listed(st["routes6"]),
              "neigh6": [], "netconf6": []}
    text = "".join("%s out %s -\n%s\n\n%s err %s 0\n\n" % (readout.MARK, k, json.dumps(v), readout.MARK, k)
                   for k, v in listed.items())
    return text + "".join("%s trace %d 0 0\n%s\n" % (readout.MARK, k, t) for k, t in enumerate(traces))


def test_the_traces_and_routes_of_a_node_are_judged_per_family(dual):
    states = six_healthy(dual)
    picked = controller.pick(dual, six_prefixes(dual), "live", {}, 64, 0)
    mine = picked["expected"]["node-0-0"]
    targets = controller._targets(dual, mine)
    traces = ["\n".join(" %d  %s  0.1 ms" % (k + 1, h) for k, h in enumerate(mine[key][0]))
              for key, _a in targets]
    six_key = next(k for k, _a in targets if k.endswith(verify.SIX))
    wrong = targets.index((six_key, dual["nodes"][verify.target_node(six_key)]["address6"]))
    traces[wrong] = " 1  fd00::dead  0.1 ms"
    states["node-0-0"]["routes6"] = [r for r in states["node-0-0"]["routes6"] if r["dst"] != "fd00::/8"]
    dropped = next(r for r in states["node-0-0"]["routes6"] if r.get("proto") == "250")
    states["node-0-0"]["routes6"].remove(dropped)
    outputs = {"node-0-0": _output(dual, "node-0-0", states, traces)}
    got = controller.judge(dual, six_prefixes(dual), outputs, picked["expected"], [], 10, False)["traced"]
    assert [(r["pair"], r["destination"], r["family"]) for r in got["mismatches"]] == \
        [("node-0-0 -> %s" % six_key, verify.target_node(six_key), "IPv6")]
    hop = dropped["hops"][0]
    assert [p for p in got["problems"] if "route" in p] == [
        "node-0-0: route missing: %s via %s dev %s src %s"
        % (dropped["dst"], hop["via"], hop["dev"], dropped["src"])]


def test_the_module_reports_ipv6_mismatches_on_one_line_each(dual):
    states = six_healthy(dual)
    states["node-0-0"]["routes6"] = [r for r in states["node-0-0"]["routes6"] if r.get("proto") != "250"]
    params = {p: v.get("default") for p, v in task.ARGUMENT_SPEC.items()}
    params.update(plan=dual, prefixes=six_prefixes(dual), states=states)
    result = task.prove_task(params, False, False)
    assert result["mismatched"] > 0 and all(line.isprintable() for line in result["report"])
    assert any(" (IPv6) | fd" in line for line in result["report"])


@pytest.mark.parametrize("live", [True, False])
def test_ospfv3_routes_compare_with_the_plan_through_their_link_local_next_hops(frr6, live):
    states = six_healthy(frr6)
    outputs = {n: _output(frr6, n, states, []) for n in frr6["nodes"]}
    assert "fe80::" in outputs["node01"]
    judged = controller.judge(frr6, six_prefixes(frr6), outputs, {}, [], 10, live)["traced"]
    assert [p for p in judged["problems"] if "route" in p] == []
    # without node02's link-local address on the LAN its neighbours' routes through it
    # are not the plan's (the walk names the address no node holds)
    lost = next(a for a in states["node02"]["addrs6"]["eth1"] if a.startswith("fe80:"))
    states["node02"]["addrs6"]["eth1"].remove(lost)
    outputs["node02"] = _output(frr6, "node02", states, [])
    judged = controller.judge(frr6, six_prefixes(frr6), outputs, {}, [], 10, live)["traced"]
    missing = [p for p in judged["problems"] if p.startswith("node01: route missing: fd")]
    assert missing and all(" via %s " % frr6["nodes"]["node02"]["interfaces"][0]["addresses"][1].split("/")[0]
                           in p for p in missing)
