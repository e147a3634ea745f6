"""routing.engine frr: loopback addresses, the node plan's routing object and FRR's files
rendered from it (golden files), and the errors of each."""

from __future__ import annotations

import ipaddress

import pytest
import yaml
from conftest import ROOT, golden, needs_host
from hypothesis import given, settings
from test_properties import SETTINGS, custom_topologies

from beonet.agent import frr, nodeplan
from beonet.compiler import pipeline
from beonet.compiler.errors import CompileError
from beonet.outputs import plan as render

GOLDEN = ROOT / "tests" / "golden" / "frr"


def compiled(family: str, params: dict, routing: dict | None = None, addressing: dict | None = None):
    topo = {"name": "t", "family": family, family: params, "routing": routing or {"engine": "frr"}}
    if addressing:
        topo["addressing"] = addressing
    return pipeline.compile_text(yaml.safe_dump(topo, sort_keys=False), "t.yml")


def test_every_node_gets_a_loopback_in_node_order():
    plan = render.plan(compiled("mesh", {"dims": [2, 3]}))
    loops = [n["routing"]["loopback"] for n in plan["nodes"].values()]
    assert loops == ["10.254.0.%d/32" % k for k in range(1, 7)]
    assert all(n["routing"]["bfd"] == {"interval_ms": 100, "multiplier": 3} for n in plan["nodes"].values())


def test_static_routes_give_no_routing_object():
    plan = render.plan(compiled("mesh", {"dims": [2, 2]}, routing={"engine": "static"}))
    assert not any("routing" in n for n in plan["nodes"].values())
    assert frr.frr_files(plan["nodes"]["node-0-0"]) == {}


@pytest.mark.parametrize("family,params,node", [
    ("mesh", {"dims": [2, 2]}, "node-0-0"),
    ("metagraph", {"groups": 4, "nodes_per_group": 3, "p2p_per_node": 1}, "node01"),
])
def test_frr_conf_golden(family, params, node):
    c = compiled(family, params, routing={"engine": "frr", "bfd": {"interval_ms": 50, "multiplier": 4}})
    n = render.plan(c)["nodes"][node]
    files = frr.frr_files(n)
    assert sorted(files) == [frr.FRR_DAEMONS, frr.FRR_CONF]
    golden(GOLDEN / ("%s-%s.conf" % (family, node)), files[frr.FRR_CONF])
    golden(GOLDEN / "daemons", files[frr.FRR_DAEMONS])


def test_p2p_nics_are_point_to_point_lans_point_to_multipoint():
    c = compiled("metagraph", {"groups": 4, "nodes_per_group": 3, "p2p_per_node": 1})
    plan = render.plan(c)
    name, n = next((k, v) for k, v in plan["nodes"].items() if any("peer" in i for i in v["interfaces"]))
    conf = frr.frr_conf(n, n["routing"])
    blocks = conf.split("interface ")[2:]
    p2p = [b for b in blocks if "network point-to-point" in b]
    lans = [b for b in blocks if "network point-to-multipoint" in b]
    assert len(p2p) == sum(1 for i in n["interfaces"] if "peer" in i) >= 1
    assert len(lans) == sum(1 for i in n["interfaces"] if "peer" not in i) >= 1
    assert len(blocks) == len(frr.ospf_nics(n)) and "ospf router-id 10.254." in conf


def test_routes_to_a_lans_members_leave_from_the_nodes_address_on_it():
    # the clause for each LAN comes before the loopback's: BFD's sessions with the LAN's
    # members keep the LAN's addresses at both ends
    n = render.plan(compiled("mesh", {"dims": [3, 3]}))["nodes"]["node-1-1"]
    lans = [i for i in n["interfaces"] if i["addresses"]]
    conf = frr.frr_conf(n, n["routing"])
    clauses = conf.split("route-map beonet-src permit ")[1:]
    assert [c.split("\n")[0] for c in clauses] == ["1", "2", "10"]
    for k, iface in enumerate(lans):
        address = ipaddress.ip_interface(iface["addresses"][0])
        assert "ip prefix-list beonet-src-lan%d seq 5 permit %s le 32" % (k + 1, address.network) in conf
        assert " set src %s\n" % address.ip in clauses[k]
    assert " set src %s\n" % n["address"] in clauses[2] and "match" not in clauses[2]


def test_bond_members_are_not_in_ospf():
    n = render.plan(compiled("bonded", {"nodes": 3, "channels": 2}))["nodes"]["node01"]
    assert [i["kind"] for i in frr.ospf_nics(n)] == ["bond"]
    assert sum(1 for i in n["interfaces"] if "bond" in i) == 2


def test_the_loopback_pool_must_hold_every_node():
    with pytest.raises(CompileError) as err:
        compiled("mesh", {"dims": [4, 4]}, addressing={"loopback": "10.254.0.0/29"})
    text = str(err.value)
    assert "addressing.loopback" in text and "holds 6 loopback addresses; the topology needs 16" in text
    assert "use 10.254.0.0/27 or larger" in text


def test_the_loopback_pool_must_not_overlap_a_segment():
    with pytest.raises(CompileError) as err:
        compiled("mesh", {"dims": [2, 2]}, addressing={"loopback": "10.0.0.0/24"})
    assert "addressing.loopback" in str(err.value) and "overlaps 10.0.0.0/24 of segment" in str(err.value)


def test_a_loopback_pool_without_frr_is_an_error():
    with pytest.raises(CompileError) as err:
        compiled("mesh", {"dims": [2, 2]}, routing={"engine": "static"},
                 addressing={"loopback": "10.254.0.0/16"})
    assert "only routing.engine frr gives nodes loopback addresses (the engine is static)" in str(err.value)


@pytest.mark.parametrize("routing,key", [
    ({"engine": "ospf"}, "routing.engine"),
    ({"engine": "frr", "bfd": {"interval_ms": 5}}, "routing.bfd.interval_ms"),
    ({"engine": "frr", "bfd": {"multiplier": 1}}, "routing.bfd.multiplier"),
    ({"engine": "frr", "bfd": {"timer": 1}}, "routing.bfd"),
])
def test_bad_routing_settings_name_their_key(routing, key):
    with pytest.raises(CompileError) as err:
        compiled("mesh", {"dims": [2, 2]}, routing=routing)
    assert key in str(err.value)


def _node_plan():
    return render.plan(compiled("mesh", {"dims": [2, 2]}))["nodes"]["node-0-0"]


@pytest.mark.parametrize("routing,found", [
    ("frr", "plan.routing: must be a mapping, not text"),
    ({"engine": "static", "loopback": "10.254.0.1/32", "bfd": {"interval_ms": 100, "multiplier": 3}},
     "plan.routing.engine: must be frr"),
    ({"engine": "frr", "loopback": "10.254.0.1/24", "bfd": {"interval_ms": 100, "multiplier": 3}},
     "plan.routing.loopback: must be a /32"),
    ({"engine": "frr", "loopback": "nowhere", "bfd": {"interval_ms": 100, "multiplier": 3}},
     "plan.routing.loopback: 'nowhere' is not an IPv4 interface"),
    ({"engine": "frr", "loopback": "10.254.0.1/32", "bfd": {"interval_ms": 9, "multiplier": 3}},
     "plan.routing.bfd.interval_ms: must be a whole number from 10 to 60000"),
    ({"engine": "frr", "loopback": "10.254.0.1/32", "bfd": None}, "plan.routing.bfd: must be a mapping"),
])
def test_the_node_refuses_a_bad_routing_object(routing, found):
    n = _node_plan()
    n["routing"] = routing
    problems = nodeplan.plan_problems("node-0-0", n)
    assert any(found in p for p in problems), problems


def test_a_good_routing_object_passes():
    assert nodeplan.plan_problems("node-0-0", _node_plan()) == []


def test_the_forward_filter_admits_the_loopbacks():
    c = compiled("mesh", {"dims": [2, 3]})
    plan = render.plan(c)
    assert render.prefixes(plan) == render.graph_prefixes(c.graph)
    covered = {str(a) for p in render.prefixes(plan) if p.startswith("10.254.")
               for a in ipaddress.IPv4Network(p)}
    assert covered == {n["routing"]["loopback"].split("/")[0] for n in plan["nodes"].values()}
    static = compiled("mesh", {"dims": [2, 3]}, routing={"engine": "static"})
    assert not any(p.startswith("10.254.") for p in render.graph_prefixes(static.graph))


def test_zebra_puts_the_loopback_on_lo():
    n = render.plan(compiled("mesh", {"dims": [2, 2]}))["nodes"]["node-0-1"]
    conf = frr.frr_conf(n, n["routing"])
    assert "interface lo\n ip address 10.254.0.2/32\n ip ospf area 0\n ip ospf passive\n" in conf


# -- the routes OSPF installs, proven like static ones ----------------------------

def _with_engine(topo: dict, engine: str):
    return pipeline.compile_text(yaml.safe_dump({**topo, "routing": {"engine": engine}},
                                                sort_keys=False), "t.yml")


@pytest.mark.parametrize("name", ["metanode-testbed", "routed-mesh", "custom-example",
                                  "backends-chain", "switch-tree", "bonded-dual-net"])
def test_frr_paths_are_as_short_as_the_static_ones(name):
    topo = yaml.safe_load((ROOT / "topologies" / ("%s.yml" % name)).read_text())
    static, ospf = _with_engine(topo, "static"), _with_engine(topo, "frr")
    assert ospf.proof.pairs == static.proof.pairs == len(static.graph.nodes) * (
        len(static.graph.nodes) - 1)
    assert sorted(ospf.proof.hops.items()) == sorted(static.proof.hops.items())


def test_frr_plan_installs_no_route_and_names_nodes_by_loopback():
    c = compiled("mesh", {"dims": [3, 3]})
    plan = render.plan(c)
    assert all(n["routes"] == [] for n in plan["nodes"].values())
    assert [n["address"] for n in plan["nodes"].values()] == ["10.254.0.%d" % k for k in range(1, 10)]
    # the compiler still holds what OSPF will install: a /32 to every other loopback and to
    # every address another node holds on a LAN (point-to-multipoint), each over all equal
    # next hops; the routes to the members of the node's own LANs leave from its address there
    x = c.graph.by_name["node-0-0"]
    loops = [r for r in x.routes if r.net in {n.loopback for n in c.graph.nodes}]
    assert len(loops) == 8 and len(x.routes) == 8 + 8 * 2
    diagonal = next(r for r in loops if r.net == c.graph.by_name["node-1-1"].loopback)
    assert len(diagonal.nexthops()) == 2
    mine = {(i.addresses[0] >> 8): i.addresses[0] for i in x.interfaces}
    assert all(r.src == (mine.get(r.net >> 8) or x.loopback) for r in x.routes)
    assert sum(r.src != x.loopback for r in x.routes) == 2 * 2        # 2 LANs of 3 nodes
    assert all(r.plen == 32 for r in x.routes)


def test_frr_forwarding_on_every_node_a_failure_may_make_a_transit():
    c = compiled("metagraph", {"groups": 4, "nodes_per_group": 3, "p2p_per_node": 1})
    for node in c.graph.nodes:
        assert node.forwarding == (len([i for i in node.interfaces if i.addresses]) > 1)


def test_frr_proof_finds_a_missing_learned_route(monkeypatch):
    from beonet.compiler import route

    real = route.ospf

    def lose_one(graph):
        real(graph)
        graph.nodes[0].routes = [r for r in graph.nodes[0].routes if r.net != graph.nodes[3].loopback]
    monkeypatch.setattr(route, "ospf", lose_one)
    with pytest.raises(CompileError, match="no route to 10.254.0.4"):
        compiled("mesh", {"dims": [2, 2]})


@given(custom_topologies(max_nodes=10))
@settings(**SETTINGS)
def test_frr_proof_holds_on_any_connected_custom_graph(topo):
    c = _with_engine(topo, "frr")
    n = len(c.graph.nodes)
    assert c.proof.pairs == n * (n - 1)
    assert c.graph.nodes[0].address == c.graph.nodes[0].loopback


# -- FRR on the node: its files beside the network backend's, started, reloaded, stopped ----

def _frr_node():
    return render.plan(compiled("mesh", {"dims": [2, 2]}))["nodes"]["node-0-0"]


def test_frr_files_are_among_the_persistent_files_and_no_route_is_installed():
    from beonet.agent import apply

    n = _frr_node()
    files = apply.persistent_files(n, ["10.0.0.0/16", "10.254.0.0/30"], "networkd")
    assert files[frr.FRR_CONF] == frr.frr_conf(n, n["routing"]) and frr.FRR_DAEMONS in files
    actions = apply.actions_on_blank_node(n, "node-0-0")
    assert not any(a[:3] == ["ip", "route", "replace"] for a in actions)
    assert actions[-1] == ["systemctl", "enable", "--now", "frr"]


@pytest.mark.parametrize("is_running,systemd,want", [
    (False, True, [["systemctl", "enable", "--now", "frr"]]),
    (False, False, [frr.service("start", False)]),
    (True, True, []),
])
def test_frr_is_started_where_it_does_not_run(is_running, systemd, want):
    assert frr.start_actions(_frr_node(), is_running, systemd) == want
    static = render.plan(compiled("mesh", {"dims": [2, 2]}, routing={"engine": "static"}))
    assert frr.start_actions(static["nodes"]["node-0-0"], False, systemd) == []


def test_a_node_with_routes_of_an_earlier_static_plan_loses_them():
    from beonet.agent import apply

    n = _frr_node()
    old = {"dst": "10.0.1.0/24", "gateway": "10.0.0.2", "dev": "eth1", "protocol": "beonet"}
    ospf = {"dst": "10.0.2.0/24", "gateway": "10.0.0.3", "dev": "eth1", "protocol": "ospf"}
    actions, problems = apply.runtime_actions(n, "node-0-0", [{"ifname": i["name"], "flags": ["UP"],
                                                               "mtu": 1500} for i in n["interfaces"]],
                                              [], [old, ospf])
    deleted = [a for a in actions if a[:3] == ["ip", "route", "del"]]
    assert not problems and len(deleted) == 1 and "10.0.1.0/24" in deleted[0]


@pytest.mark.parametrize("changed,text,systemd,want", [
    ([frr.FRR_CONF], frr.HEADER + "x", True, [["systemctl", "reload", "frr"]]),
    ([frr.FRR_CONF, frr.FRR_DAEMONS], frr.HEADER + "x", False, [frr.service("restart", False)]),
    ([frr.FRR_CONF], None, True, []),            # removed: stopped before (leave_actions)
    ([frr.FRR_CONF], "! the node's own\n", False, [frr.service("stop", False)]),   # rolled back
    (["/etc/systemd/network/10-beonet-eth1.network"], None, True, []),
])
def test_frr_is_told_of_its_files(changed, text, systemd, want):
    assert frr.service_commands(changed, text, systemd) == want


def test_running_reads_the_daemons_names(tmp_path):
    for pid, name in ((1, "init"), (20, "zebra"), (21, "ospfd")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "comm").write_text(name + "\n")
    (tmp_path / "self").mkdir()
    assert not frr.running(str(tmp_path))
    (tmp_path / "22").mkdir()
    (tmp_path / "22" / "comm").write_text("bfdd\n")
    assert frr.running(str(tmp_path))
    assert not frr.running(str(tmp_path / "none"))


@pytest.mark.parametrize("addressing,ospf6", [(None, False), ({"ipv6": True}, True),
                                               ({"ipv4": False, "ipv6": True}, True)])
def test_a_plan_with_ipv6_needs_ospf6d_running_too(tmp_path, addressing, ospf6):
    n = render.plan(compiled("mesh", {"dims": [2, 2]}, addressing=addressing))["nodes"]["node-0-0"]
    assert frr.watched(n) == frr.WATCHED + (("ospf6d",) if ospf6 else ())
    for pid, name in ((20, "zebra"), (21, "ospfd"), (22, "bfdd")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "comm").write_text(name + "\n")
    assert frr.running(str(tmp_path), frr.watched(n)) == (not ospf6)
    (tmp_path / "23").mkdir()
    (tmp_path / "23" / "comm").write_text("ospf6d\n")
    assert frr.running(str(tmp_path), frr.watched(n))
    from beonet.agent import fast

    watch = "ps -C %s -o pid=,comm=;" % ",".join(frr.watched(n))
    assert watch in fast.dump_command(n) and ("ospf6d" in fast.dump_command(n)) == ospf6


def test_the_plan_carries_what_ospf_installs_for_the_live_proof():
    plan = render.plan(compiled("mesh", {"dims": [2, 2]}))
    n = plan["nodes"]["node-0-0"]
    assert n["routes"] == [] and len(n["learned"]) == 3 + 3 * 2   # 3 loopbacks, 3 nodes x 2 LAN addresses
    assert nodeplan.plan_problems("node-0-0", n) == []
    bad = dict(n, learned=[{"to": "10.254.0.2/32", "via": "nope", "dev": "eth1", "src": "10.254.0.1"}])
    assert any("learned[0]" in p for p in nodeplan.plan_problems("node-0-0", bad))


def test_exports_name_nodes_by_loopback_and_keep_mpi_on_the_cluster_networks():
    from beonet.outputs import export, mpi

    topo = yaml.safe_load((ROOT / "topologies" / "metanode-testbed.yml").read_text())
    plan = render.plan(_with_engine(topo, "frr"))
    static = render.plan(_with_engine(topo, "static"))
    hosts = export.EXPORTS["hosts"](plan)
    assert "10.254.0.1 " in hosts and "10.254.0.36 " in hosts
    mca = export.openmpi_mca(plan)
    assert "10.254." not in mca
    segments = [ipaddress.IPv4Network(s["prefix"]) for s in plan["segments"].values() if s.get("prefix")]
    nets = [ipaddress.IPv4Network(n) for n in mpi.node_networks(plan)]
    assert all(any(s.subnet_of(n) for n in nets) for s in segments)
    for name, node in plan["nodes"].items():
        assert mpi.cluster_interface(node)["name"] == mpi.cluster_interface(static["nodes"][name])["name"]
    assert export.EXPORTS["slurm"](plan) == export.EXPORTS["slurm"](static)
    assert "10.254.0.1" in export.EXPORTS["slurm-nodes"](plan)


def test_frr_metrics_give_the_routed_failures_and_no_static_figures():
    topo = yaml.safe_load((ROOT / "topologies" / "metanode-testbed.yml").read_text())
    m = _with_engine(topo, "frr").metrics
    assert not m["resilience"]["computed"] and "frr" in m["resilience"]["reason"]
    assert m["failures"]["static"] == {"computed": False, "reason": m["failures"]["static"]["reason"]}
    static = _with_engine(topo, "static").metrics
    assert m["failures"]["routed"] == static["failures"]["routed"]
    assert m["hops"] == static["hops"] and m["forwarding_nodes"] == 36


def test_installed_looks_for_every_daemon(tmp_path):
    lib = tmp_path / "usr" / "lib" / "frr"
    lib.mkdir(parents=True)
    for d in ("zebra", "ospfd"):
        (lib / d).write_text("")
        (lib / d).chmod(0o755)
    assert not frr.installed(str(tmp_path))
    (lib / "bfdd").write_text("")
    (lib / "bfdd").chmod(0o755)
    assert not frr.installed(str(tmp_path))          # no reload tool (frr-pythontools)
    (lib / frr.RELOAD).write_text("")
    (lib / frr.RELOAD).chmod(0o755)
    assert frr.installed(str(tmp_path))
    # a plan with IPv6 needs ospf6d too
    six = {"routing": {"engine": "frr", "loopback6": "fd00::1/128"}}
    assert frr.watched(six) == frr.WATCHED + ("ospf6d",)
    assert not frr.installed(str(tmp_path), frr.watched(six))
    (lib / "ospf6d").write_text("")
    (lib / "ospf6d").chmod(0o755)
    assert frr.installed(str(tmp_path), frr.watched(six))


def test_frrs_init_script_runs_with_its_output_in_a_log_not_the_callers_pipes():
    cmd = frr.service("reload", False)
    assert cmd[:2] == ["sh", "-c"]
    assert cmd[2].startswith("s=0; nice -n -5 %s reload </dev/null >%s 2>&1 " % (frr.FRRINIT, frr.INIT_LOG))
    assert frr.service("disable", True) == ["systemctl", "disable", "--now", "frr"]


FAKE_INIT = {
    # the init script: says what it was asked
    "frrinit.sh": 'echo "$1" >> "$FAKE/asked"; [ "$1" != fail ]',
    "sleep": 'echo slept >> "$FAKE/asked"',
    "nice": 'shift 2; "$@"',
}


def _run_init(tmp_path, monkeypatch, verb, left=()):
    """The command with a fake init script and a fake /proc holding the FRR processes
    left (pids that are no process: their kill fails quietly) and one of another name."""
    import subprocess

    for name, body in FAKE_INIT.items():
        (tmp_path / name).write_text("#!/bin/sh\n%s\n" % body)
        (tmp_path / name).chmod(0o755)
    proc = tmp_path / "proc"
    for pid, name in [(999999990, "sshd")] + [(999999991 + k, n) for k, n in enumerate(left)]:
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "comm").write_text(name + "\n")
    monkeypatch.setattr(frr, "PROC", str(proc))
    monkeypatch.setattr(frr, "FRRINIT", str(tmp_path / "frrinit.sh"))
    monkeypatch.setattr(frr, "INIT_LOG", str(tmp_path / "init.log"))
    done = subprocess.run(frr.service(verb, False), capture_output=True, text=True, check=False,
                          env={"PATH": "%s:/usr/bin:/bin" % tmp_path, "FAKE": str(tmp_path)})
    asked = (tmp_path / "asked").read_text().split() if (tmp_path / "asked").exists() else []
    return done, asked


@needs_host("the init command in the machine's sh, with a fake frrinit.sh, nice, sleep and /proc", "sh")
@pytest.mark.parametrize("verb,asked", [("start", ["slept", "start"]), ("stop", ["stop", "slept"]),
                                        ("restart", ["stop", "slept", "start"]), ("reload", ["reload"])])
def test_without_systemd_frrs_processes_left_over_are_ended_around_a_stop_and_a_start(
        tmp_path, monkeypatch, verb, asked):
    # a bfdd and a zebra left over: ended (TERM, a second, then KILL where still there)
    done, got = _run_init(tmp_path, monkeypatch, verb, left=("bfdd", "zebra"))
    assert done.returncode == 0 and done.stderr == "" and got == asked
    assert {"bfdd", "ospfd", "zebra", "watchfrr", "mgmtd", "staticd"} <= set(frr.PROCESSES)


@needs_host("the init command in the machine's sh, with a fake frrinit.sh, nice and /proc", "sh")
def test_nothing_left_over_is_not_waited_for(tmp_path, monkeypatch):
    done, got = _run_init(tmp_path, monkeypatch, "start")
    assert done.returncode == 0 and got == ["start"]


@needs_host("the init command in the machine's sh, with a fake frrinit.sh that fails", "sh")
def test_a_failing_init_script_fails_the_command_with_its_logs_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(frr, "FRRINIT", str(tmp_path / "frrinit.sh"))
    done, got = _run_init(tmp_path, monkeypatch, "fail")
    assert done.returncode == 1 and got == ["fail"]


@needs_host("runs the init command with the machine's sh and nice, a fake init script behind it",
            "sh", "nice")
def test_without_systemd_frr_runs_at_the_priority_of_its_unit_or_says_why_not(tmp_path, monkeypatch):
    import os
    import subprocess

    init, log = tmp_path / "frrinit.sh", tmp_path / "init.log"
    init.write_text("#!/bin/sh\necho \"$1 at $(nice)\"\n")
    init.chmod(0o755)
    monkeypatch.setattr(frr, "PROC", str(tmp_path / "no-proc"))      # never the controller's processes
    monkeypatch.setattr(frr, "FRRINIT", str(init))
    monkeypatch.setattr(frr, "INIT_LOG", str(log))
    done = subprocess.run(frr.service("start", False), capture_output=True, text=True, check=False)
    said = log.read_text()
    assert done.returncode == 0 and done.stdout == ""
    base = os.nice(0)
    # raised where the caller may (root, CAP_SYS_NICE), else nice's warning in the log
    assert "start at %d" % (base + frr.NICE) in said or ("cannot set niceness" in said
                                                         and "start at %d" % base in said)


def test_a_plan_that_leaves_frr_stops_it_before_its_files_go():
    from beonet.agent import apply, backends

    plan = render.plan(compiled("mesh", {"dims": [2, 2]}, routing={"engine": "static"}))
    static = plan["nodes"]["node-0-0"]
    ours = frr.frr_conf(_frr_node(), _frr_node()["routing"])
    live = dict(apply.blank_live_state(static), frr_conf=ours, frr_running=True, systemd=False)
    assert apply.leave_actions(static, live) == [frr.service("stop", False)]
    lo = [{"ifname": "lo", "addr_info": [{"local": "127.0.0.1", "prefixlen": 8},
                                         {"local": "10.254.0.1", "prefixlen": 32}]}]
    assert apply.leave_actions(static, dict(live, addrs=lo, frr_running=False)) == [
        ["ip", "address", "del", "10.254.0.1/32", "dev", "lo"]]
    assert apply.leave_actions(static, dict(live, frr_running=False)) == []
    assert apply.leave_actions(static, dict(live, frr_conf="! the node's own\n")) == []
    assert apply.leave_actions(_frr_node(), live) == []
    # FRR's files are stale once the plan leaves FRR, but removed only when beonet wrote them
    record = backends.record_text([frr.FRR_CONF, frr.FRR_DAEMONS, "/etc/frr/vtysh.conf"])
    assert backends.stale_paths(record, []) == [frr.FRR_DAEMONS, frr.FRR_CONF]
    assert frr.written_by_beonet(frr.FRR_CONF, ours) and frr.written_by_beonet(frr.FRR_DAEMONS, frr.daemons())
    assert not frr.written_by_beonet(frr.FRR_CONF, "frr defaults traditional\n")
    assert frr.written_by_beonet("/etc/sysctl.d/90-beonet.conf", None)


# -- IPv6: OSPFv3 beside OSPFv2 (dual stack) or alone (IPv6-only) ---------------------

DUAL, ONLY = {"ipv6": True}, {"ipv4": False, "ipv6": True}
_TESTBEDS: dict = {}


def _testbed(addressing: dict | None) -> dict:
    """The FRR testbed's plan (36 nodes, four LANs and point-to-point links) with addressing."""
    key = yaml.safe_dump(addressing)
    if key not in _TESTBEDS:
        topo = yaml.safe_load((ROOT / "topologies" / "metanode-testbed-frr.yml").read_text())
        if addressing:
            topo["addressing"] = addressing
        _TESTBEDS[key] = render.plan(pipeline.compile_text(yaml.safe_dump(topo, sort_keys=False), "t.yml"))
    return _TESTBEDS[key]


@pytest.mark.parametrize("variant,addressing", [("dual", DUAL), ("only", ONLY)])
def test_ipv6_frr_conf_golden(variant, addressing):
    # node36: a gateway, on its group's LAN and a point-to-point link
    n = _testbed(addressing)["nodes"]["node36"]
    files = frr.frr_files(n)
    golden(GOLDEN / ("metanode-testbed-frr-%s-node36.conf" % variant), files[frr.FRR_CONF])
    golden(GOLDEN / "daemons-ipv6", files[frr.FRR_DAEMONS])


def test_dual_stack_adds_ospfv3_and_changes_no_line_of_the_ipv4_configuration():
    ipv4, dual = _testbed(None)["nodes"], _testbed(DUAL)["nodes"]
    for name in ("node01", "node27", "node36"):
        # the IPv4 file's lines, each found in the dual stack's in the same order
        lines = iter(frr.frr_conf(dual[name], dual[name]["routing"]).splitlines())
        ipv4_lines = frr.frr_conf(ipv4[name], ipv4[name]["routing"]).splitlines()
        assert all(line in lines for line in ipv4_lines), name


@pytest.mark.parametrize("addressing", [DUAL, ONLY])
def test_every_cluster_nic_runs_ospfv3_lans_point_to_multipoint_links_broadcast(addressing):
    for n in _testbed(addressing)["nodes"].values():
        conf = frr.frr_conf(n, n["routing"])
        for iface in frr.ospf_nics(n):
            block = conf.split("interface %s\n" % iface["name"])[1].split("exit\n")[0]
            network = "broadcast" if "peer" in iface else "point-to-multipoint"
            assert " ipv6 ospf6 area 0\n ipv6 ospf6 cost 10\n" in block
            assert (" ipv6 ospf6 network %s\n ipv6 ospf6 bfd\n ipv6 ospf6 bfd profile beonet\n"
                    % network) in block
            assert (" ip ospf area 0\n" in block) == ("loopback" in n["routing"])
        assert "interface lo\n" in conf and " ipv6 address %s\n ipv6 ospf6 area 0\n ipv6 ospf6 passive\n" % (
            n["routing"]["loopback6"]) in conf


def test_the_router_id_is_the_ipv4_loopback_or_on_ipv6_only_the_nodes_index_plus_one():
    dual = _testbed(DUAL)["nodes"]["node36"]
    assert frr.router_id(dual, dual["routing"]) == "10.254.0.36"
    ids = []
    for n in _testbed(ONLY)["nodes"].values():
        conf = frr.frr_conf(n, n["routing"])
        rid = str(ipaddress.IPv4Address(n["index"] + 1))
        assert " ospf router-id %s\n" % rid in conf and " ospf6 router-id %s\n" % rid in conf
        ids.append(rid)
    assert len(set(ids)) == len(ids) == 36 and "0.0.0.0" not in ids


@pytest.mark.parametrize("addressing", [DUAL, ONLY])
def test_ipv6_routes_leave_from_the_nodes_lan_address_or_its_ipv6_loopback(addressing):
    n = _testbed(addressing)["nodes"]["node36"]
    conf = frr.frr_conf(n, n["routing"])
    lan = next(a for a in n["interfaces"][0]["addresses"] if ":" in a)
    network = ipaddress.ip_interface(lan).network
    assert "ipv6 prefix-list beonet-src6-lan1 seq 5 permit %s le 128\n" % network in conf
    clauses = conf.split("route-map beonet-src6 permit ")[1:]
    assert [c.split("\n")[0] for c in clauses] == ["1", "10"]
    assert " match ipv6 address prefix-list beonet-src6-lan1\n set src %s\n" % lan.split("/")[0] in clauses[0]
    assert " set src %s\n" % n["address6"] in clauses[1] and "match" not in clauses[1]
    assert "ipv6 protocol ospf6 route-map beonet-src6\n" in conf
    assert ("ip protocol ospf route-map beonet-src\n" in conf) == (addressing is DUAL)
    # every learned IPv6 route's source is one of the two the route map gives
    assert {r["src"] for r in n["learned"] if ":" in r["to"]} == {lan.split("/")[0], n["address6"]}


@pytest.mark.parametrize("addressing,on", [(None, False), (DUAL, True), (ONLY, True)])
def test_ospf6d_runs_only_where_the_plan_has_ipv6(addressing, on):
    n = _testbed(addressing)["nodes"]["node01"]
    text = frr.frr_files(n)[frr.FRR_DAEMONS]
    assert ("ospf6d=yes\n" in text, "ospf6d=no\n" in text) == (on, not on)
    assert "ospfd=yes\n" in text and "bfdd=yes\n" in text
    assert ("router ospf6\n" in frr.frr_conf(n, n["routing"])) == on


@pytest.mark.parametrize("addressing", [None, DUAL, ONLY])
def test_the_wait_counts_each_familys_learned_routes(addressing):
    n = _testbed(addressing)["nodes"]["node36"]
    got = frr.learned_counts(n)
    six = [r for r in n["learned"] if ":" in r["to"]]
    assert got.routes + got.routes6 == len(n["learned"]) and got.routes6 == len(six)
    assert got.hops6 == sum(len(r.get("nexthops") or [0]) for r in six)
    assert (got.routes6 > 0) == (addressing is not None) and (got.routes > 0) == (addressing is not ONLY)


@pytest.mark.parametrize("addressing", [DUAL, ONLY])
def test_a_plan_that_leaves_frr_removes_every_loopback_zebra_put_on_lo(addressing):
    from beonet.agent import apply

    n = _testbed(addressing)["nodes"]["node01"]
    static = render.plan(compiled("mesh", {"dims": [2, 2]}, routing={"engine": "static"}))
    static = static["nodes"]["node-0-0"]
    conf = frr.frr_conf(n, n["routing"])
    loops = [n["routing"][k] for k in ("loopback", "loopback6") if k in n["routing"]]
    assert frr.loopbacks_of(conf) == loops
    on_lo = [{"local": "127.0.0.1", "prefixlen": 8}, {"local": "::1", "prefixlen": 128}]
    lo = [{"ifname": "lo", "addr_info": on_lo + [{"local": a.split("/")[0], "prefixlen": int(a.split("/")[1])}
                                                 for a in loops]}]
    live = dict(apply.blank_live_state(static), frr_conf=conf, frr_running=False, systemd=False, addrs=lo)
    assert apply.leave_actions(static, live) == [["ip", "address", "del", a, "dev", "lo"] for a in loops]


def test_loopbacks_are_read_only_from_los_own_block():
    assert frr.loopbacks_of("interface eth1\n ip address 10.0.0.1/24\nexit\n") == []
    text = ("interface lo\n ipv6 address fd00::1/128\n ipv6 ospf6 passive\nexit\n"
            "interface eth1\n ip address 10.0.0.1/24\n")
    assert frr.loopbacks_of(text) == ["fd00::1/128"]
