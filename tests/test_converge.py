"""How a node running FRR waits until its routing has settled (agent/frr.py settle_script):
site.yml's wait (roles/beonet_node/tasks/converge.yml, with the plan's route counts and
the repair of routes without a source address) and verify's read (without either). The
node's own shell loop runs here against fake `ip`, `vtysh` and `sleep` programs that
print files the test writes; the fake sleep returns at once and counts the polls."""

import json
import subprocess

import pytest
import yaml
from conftest import ROOT, ansible_render, needs_host

from beonet.agent import frr, readout

TASKS = yaml.safe_load((ROOT / "roles/beonet_node/tasks/converge.yml").read_text())

on_host = needs_host("the node's wait loop in the machine's sh, with fake ip, vtysh, sleep and date",
                     "sh", "grep", "cat", "wc")

MULTIPATH = ("10.0.0.0/24 nhid 20 proto ospf src 10.254.0.1 metric 20 \\\tnexthop via 10.0.1.4 dev eth0 "
             "weight 1 \\\tnexthop via 10.0.1.5 dev eth0 weight 1\n")
HOST = "10.254.0.2 via 10.0.1.4 dev eth0 proto ospf src 10.254.0.1 metric 20\n"
UNSOURCED = "10.254.0.3 via 10.0.1.5 dev eth0 proto ospf metric 20\n"
FULL = ("\nNeighbor ID     Pri State           Up Time         Dead Time Address         Interface\n"
        "10.254.0.4        1 Full/DROther    3m04s              3.953s 10.0.1.4        eth0:10.0.1.1\n"
        "10.254.0.5        1 Full/DROther    3m04s              3.953s 10.0.1.5        eth0:10.0.1.1\n")
BFD_UP = ("Session count: 2\nSessionId  LocalAddress  PeerAddress  Status\n=========  ============\n"
          "1394933945 10.0.1.1      10.0.1.4     up             \n"
          "2924216991 10.0.1.1      10.0.1.5     up             \n")

# the same in IPv6: a multipath route and a host route, with link-local next hops
MULTIPATH6 = ("fd00:0:0:8000::/127 nhid 40 proto ospf src fd00:0:0:ffff::1 metric 20 pref medium "
              "\\\tnexthop via fe80::4 dev eth0 weight 1 \\\tnexthop via fe80::5 dev eth0 weight 1\n")
HOST6 = ("fd00:0:0:ffff::2 nhid 41 via fe80::4 dev eth0 proto ospf src fd00:0:0:ffff::1 metric 20 "
         "pref medium\n")
UNSOURCED6 = "fd00:0:0:ffff::3 nhid 42 via fe80::5 dev eth0 proto ospf metric 20 pref medium\n"


def neighbours6(*states, spaced=True):
    """`show ipv6 ospf6 neighbor json` as FRR prints it (json-c's pretty print, or spaced)."""
    doc = {"neighbors": [{"neighborId": "10.254.0.%d" % (k + 4), "priority": 1, "deadTime": "00:00:03",
                          "state": state, "ifState": "PtMultipoint", "duration": "00:01:02",
                          "interfaceName": "eth0", "interfaceState": "PointToMultiPoint"}
                         for k, state in enumerate(states)]}
    return json.dumps(doc, indent=2, separators=(",", ": " if spaced else ":")) + "\n"


FAKES = {
    # ip -4 / -6: the family's table, or after that family's adjacencies were formed again
    # its table ".after"
    "ip": 'case "$1" in -6) t=table6 c=cleared6 ;; *) t=table c=cleared ;; esac; '
          'if [ -e "$FAKE/$c" ] && [ -e "$FAKE/$t.after" ]; then cat "$FAKE/$t.after"; '
          'else cat "$FAKE/$t"; fi; %(changes)s',
    "vtysh": 'case "$*" in *"clear ip ospf interface"*) : > "$FAKE/cleared" ;; '
             '*"clear ipv6 ospf6 interface"*) : > "$FAKE/cleared6" ;; '
             '*"ipv6 ospf6 neighbor json"*) cat "$FAKE/neighbours6" ;; '
             '*neighbor*) cat "$FAKE/neighbours" ;; *bfd*) cat "$FAKE/bfd" ;; esac',
    # sleep: a poll, and the clock `date +%s` reads moves on by $STEP seconds (1 unless set)
    "sleep": 'echo x >> "$FAKE/polls"; i=0; while [ $i -lt "${STEP:-1}" ]; do echo >> "$FAKE/clock"; '
             'i=$((i + 1)); done',
    "date": 'if [ -e "$FAKE/clock" ]; then wc -l < "$FAKE/clock"; else echo 0; fi',
}


@pytest.fixture(autouse=True)
def daemons(tmp_path, monkeypatch):
    """FRR's daemons file the wait reads (whether ospf6d runs): the test's own, without ospf6d;
    and the node's processes (/proc/PID/comm): FRR's zebra, ospfd and bfdd beside others."""
    path = tmp_path / "daemons"
    path.write_text("ospfd=yes\nospf6d=no\n")
    monkeypatch.setattr(frr, "FRR_DAEMONS", str(path))
    for pid, name in enumerate(("systemd", "zebra", "ospfd", "bfdd", "sshd"), 1):
        (tmp_path / "proc" / str(pid)).mkdir(parents=True)
        (tmp_path / "proc" / str(pid) / "comm").write_text(name + "\n")
    monkeypatch.setattr(frr, "PROC", str(tmp_path / "proc"))
    return path


def run(tmp_path, script, bound, table, neighbours=FULL, bfd=BFD_UP, after=None, changes=":", step=1,
        table6="", ospf6="", after6=None):
    """The script with the fakes; returns (its last line split, the polls it slept)."""
    for name, text in (("table", table), ("neighbours", neighbours), ("bfd", bfd), ("table.after", after),
                       ("table6", table6), ("neighbours6", ospf6), ("table6.after", after6)):
        if text is not None:
            (tmp_path / name).write_text(text)
    for name, body in FAKES.items():
        (tmp_path / name).write_text("#!/bin/sh\n" + body % {"changes": changes} + "\n")
        (tmp_path / name).chmod(0o755)
    out = subprocess.run(["sh", "-c", "T=%d; %s" % (bound, script)], capture_output=True, text=True,
                         timeout=60, env={"PATH": "%s:/usr/bin:/bin" % tmp_path, "FAKE": str(tmp_path),
                                          "STEP": str(step)})
    assert out.returncode == 0 and out.stderr == "", out.stderr
    polls = (tmp_path / "polls").read_text().count("x") if (tmp_path / "polls").exists() else 0
    return out.stdout.strip().splitlines()[-1], polls


@on_host
def test_a_settled_node_with_every_planned_route_ends_after_two_unchanged_polls(tmp_path):
    line, polls = run(tmp_path, frr.settle_script(frr.Learned(2, 3), repair=True), 30, MULTIPATH + HOST)
    assert line == "beonet-settle settled 2 2 3 0 0 0 0" and polls == 2
    assert frr.parse_settle(line) == frr.Settle(True, 2, 2, 3, 0, 0, 0, 0)


@on_host
def test_a_next_hop_still_missing_is_waited_for_until_the_bound(tmp_path):
    line, polls = run(tmp_path, frr.settle_script(frr.Learned(2, 4), repair=True), 3, MULTIPATH + HOST)
    assert line == "beonet-settle unsettled 3 2 3 0 0 0 0" and polls == 3


@on_host
def test_a_neighbour_not_full_or_a_bfd_session_down_is_not_settled_and_verify_names_it(tmp_path):
    forming = FULL.replace("Full/DROther", "Init/DROther", 1)
    down = BFD_UP.replace("up   ", "down ", 1)
    line, polls = run(tmp_path, frr.settle_script(), 4, MULTIPATH, neighbours=forming, bfd=down)
    assert line == "beonet-settle unsettled 4 1 2 0 1 1 0" and polls == 4
    assert readout.settle_problems("node07", line) == [
        "node07: routing not settled after 4 s (1 OSPF neighbour not Full, 1 BFD session not up); "
        "read as it was"]


@on_host
def test_routes_that_keep_changing_are_not_settled(tmp_path):
    changes = "echo $$"                      # another line each time (the fake's process id)
    line, polls = run(tmp_path, frr.settle_script(), 3, MULTIPATH, changes=changes)
    assert line.startswith("beonet-settle unsettled 3 ") and polls == 3
    assert readout.settle_problems("n", line) == [
        "n: routing not settled after 3 s (OSPF's routes still changing); read as it was"]


@on_host
def test_the_bound_is_time_on_the_node_clock_not_polls_when_each_poll_takes_longer(tmp_path):
    # a loaded node: each poll's second lasts 4 s on its clock; neighbours never Full
    forming = FULL.replace("Full/DROther", "Init/DROther", 1)
    line, polls = run(tmp_path, frr.settle_script(), 10, MULTIPATH, neighbours=forming, step=4)
    assert line == "beonet-settle unsettled 12 1 2 0 1 0 0" and polls == 3


@on_host
def test_routes_without_their_source_are_learned_again_once_in_site_and_only_read_in_verify(tmp_path):
    line, _polls = run(tmp_path, frr.settle_script(frr.Learned(2, 2), repair=True), 30, HOST + UNSOURCED,
                       after=HOST + UNSOURCED.replace("metric", "src 10.254.0.1 metric"))
    assert line == "beonet-settle settled 5 2 2 0 0 0 1" and (tmp_path / "cleared").exists()
    (tmp_path / "cleared").unlink()
    (tmp_path / "polls").unlink()
    line, _polls = run(tmp_path, frr.settle_script(), 30, HOST + UNSOURCED)
    assert line == "beonet-settle settled 2 2 2 1 0 0 0" and not (tmp_path / "cleared").exists()


@on_host
def test_a_source_still_missing_after_the_repair_is_repaired_once_and_reported(tmp_path):
    # the table the same before and after: settled again, one route still without its
    # source: site.yml's check fails naming it
    line, _polls = run(tmp_path, frr.settle_script(frr.Learned(2, 2), repair=True), 30, HOST + UNSOURCED)
    assert line == "beonet-settle settled 4 2 2 1 0 0 1"


@on_host
@pytest.mark.parametrize("want", [None, frr.Learned(2, 3)])
def test_a_node_where_frr_does_not_run_says_so_after_two_reads_not_that_it_has_not_settled(tmp_path, want):
    for pid in (2, 3, 4):                                  # zebra, ospfd and bfdd gone
        (tmp_path / "proc" / str(pid) / "comm").write_text("bash\n")
    line, polls = run(tmp_path, frr.settle_script(want), 30, "", neighbours="", bfd="")
    assert line == "beonet-settle stopped 1 0 0 0 0 0 0" and polls == 1      # read twice, a second apart
    assert frr.parse_settle(line) == frr.Settle(False, 1, 0, 0, 0, 0, 0, 0, stopped=True)
    assert readout.settle_problems("node07", line) == [
        "node07: FRR is not running (none of its daemons has a process); its routing was read as it was"]


@on_host
def test_one_of_frr_s_daemons_running_is_frr_running(tmp_path):
    for pid in (2, 3):                                     # zebra and ospfd gone, bfdd left
        (tmp_path / "proc" / str(pid) / "comm").write_text("bash\n")
    line, _polls = run(tmp_path, frr.settle_script(), 30, MULTIPATH)
    assert line == "beonet-settle settled 2 1 2 0 0 0 0"


def test_what_a_node_says_is_read_only_from_a_whole_settle_line():
    assert frr.parse_settle("noise\nbeonet-settle settled 2 87 166 0 0 0 1\n") == \
        frr.Settle(True, 2, 87, 166, 0, 0, 0, 1)
    for bad in ("", "beonet-settle settled 2 87", "beonet-settle fine 2 87 166 0 0 0 1",
                "beonet-settle settled 2 87 166 0 0 0 -1", "beonet-settle settled 2 87 166 0 0 0 1 9",
                "beonet-settle settled \u0662 87 166 0 0 0 1"):
        assert frr.parse_settle(bad) is None, bad
    assert readout.settle_problems("node01", "node01: 0 mismatches\n") == [
        "node01: did not say whether its routing had settled (no settle line in its output)"]
    assert readout.settle_problems("node01", None) == readout.settle_problems("node01", "")


def test_site_waits_with_the_plans_counts_and_fails_naming_what_is_missing():
    assert TASKS[0]["ansible.builtin.raw"].startswith("T={{ beonet_node_converge_timeout | int }}; ")
    assert "beonet_plan_result.settle[inventory_hostname]" in TASKS[0]["ansible.builtin.raw"]
    assert "without a source address" in TASKS[1]["ansible.builtin.assert"]["fail_msg"]
    assert frr.learned_counts({"learned": [{"to": "a", "via": "b", "dev": "c"},
                                           {"to": "d", "nexthops": [{}, {}, {}]}]}) == (2, 4, 0, 0)
    assert frr.learned_counts({"learned": [{"to": "10.0.0.1/32", "via": "10.0.1.4", "dev": "eth0"},
                                           {"to": "fd00::1/128", "via": "fd00:1::4", "dev": "eth0"},
                                           {"to": "fd00::2/128", "nexthops": [{}, {}]}]}) == (1, 1, 2, 3)


def test_the_wait_is_skipped_for_a_node_without_frr_wherever_the_role_is_run():
    """heal.yml runs the role whole (main.yml imports this file for every plan): each task
    waits only on a node routed by FRR, and never in check mode."""
    main = yaml.safe_load((ROOT / "roles/beonet_node/tasks/main.yml").read_text())
    assert any(t.get("ansible.builtin.import_tasks") == "converge.yml" for t in main)
    for task in TASKS:
        assert task["when"] == ["beonet_plan_result.plan.nodes[inventory_hostname].routing is defined",
                                "not ansible_check_mode"], task["name"]


# -- IPv6: OSPFv3's neighbours and routes beside OSPFv2's -----------------------------

def _ospf6_runs(daemons):
    daemons.write_text("ospfd=yes\nospf6d=yes\n")


@on_host
@pytest.mark.parametrize("spaced", [False, True])
def test_a_dual_stack_node_settles_with_both_families_counted(tmp_path, daemons, spaced):
    _ospf6_runs(daemons)
    line, polls = run(tmp_path, frr.settle_script(frr.Learned(2, 3, 2, 3), repair=True), 30,
                      MULTIPATH + HOST, table6=MULTIPATH6 + HOST6,
                      ospf6=neighbours6("Full", "Full", spaced=spaced))
    assert line == "beonet-settle settled 2 4 6 0 0 0 0" and polls == 2


@on_host
def test_each_family_must_hold_its_own_count_not_only_the_sum(tmp_path, daemons):
    # 2 + 2 routes over 3 + 3 next hops: the plan's sum, but one IPv4 route too many
    _ospf6_runs(daemons)
    line, polls = run(tmp_path, frr.settle_script(frr.Learned(1, 1, 3, 5)), 3, MULTIPATH + HOST,
                      table6=MULTIPATH6 + HOST6, ospf6=neighbours6("Full"))
    assert line == "beonet-settle unsettled 3 4 6 0 0 0 0" and polls == 3


@on_host
def test_an_ospfv3_neighbour_not_full_is_forming(tmp_path, daemons):
    _ospf6_runs(daemons)
    line, polls = run(tmp_path, frr.settle_script(), 3, MULTIPATH, table6=MULTIPATH6,
                      ospf6=neighbours6("Full", "ExStart", "Init"))
    assert line == "beonet-settle unsettled 3 2 4 0 2 0 0" and polls == 3
    assert readout.settle_problems("node07", line) == [
        "node07: routing not settled after 3 s (2 OSPF neighbours not Full); read as it was"]


@on_host
def test_ospfv3_is_not_asked_where_ospf6d_does_not_run(tmp_path):
    # the daemons file turns ospf6d off: its neighbours (here a fake's forming one) are not read
    line, polls = run(tmp_path, frr.settle_script(frr.Learned(2, 3)), 30, MULTIPATH + HOST,
                      ospf6=neighbours6("Init"))
    assert line == "beonet-settle settled 2 2 3 0 0 0 0" and polls == 2


@on_host
def test_ipv6_routes_without_their_source_form_only_ospfv3s_adjacencies_again(tmp_path, daemons):
    _ospf6_runs(daemons)
    line, _polls = run(tmp_path, frr.settle_script(frr.Learned(2, 2, 2, 2), repair=True), 30, HOST + HOST,
                       table6=HOST6 + UNSOURCED6, ospf6=neighbours6("Full"),
                       after6=HOST6 + UNSOURCED6.replace("metric", "src fd00:0:0:ffff::1 metric"))
    assert line == "beonet-settle settled 5 4 4 0 0 0 1"
    assert (tmp_path / "cleared6").exists() and not (tmp_path / "cleared").exists()


def _fail_msg(got: list[str]) -> str:
    """The wait's assert message (converge.yml) for the loop's last line GOT."""
    task = next(t for t in TASKS if "ansible.builtin.assert" in t)
    want = ["12", "14", "0"]
    return str(ansible_render(task["ansible.builtin.assert"]["fail_msg"], {"got": got, "want": want}))


def test_the_wait_says_when_frr_is_not_running():
    msg = _fail_msg(["beonet-settle", "stopped", "0", "0", "0", "0", "0", "0", "0"])
    assert msg.startswith("localhost: FRR is not running (none of its daemons has a process)")
    assert "OSPF installed" not in msg


def test_the_wait_names_what_did_not_settle():
    msg = _fail_msg(["beonet-settle", "unsettled", "60", "10", "12", "1", "2", "3", "0"])
    assert msg.startswith("localhost: after 60 s OSPF installed 10 routes over 12 next hops (1 without")
    assert "the plan expects 12 over 14; 2 OSPF neighbours not Full, 3 BFD sessions not up" in msg
    assert "show ipv6 ospf6 neighbor" in msg
