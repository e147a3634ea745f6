"""site.yml's wait for OSPF (roles/beonet_node/tasks/converge.yml): the node's own shell
loop, run here against a fake `ip` that prints a file the test writes."""

import subprocess
import time

import yaml
from conftest import ROOT, needs_host

TASKS = yaml.safe_load((ROOT / "roles/beonet_node/tasks/converge.yml").read_text())
WAIT = TASKS[0]["ansible.builtin.raw"]

on_host = needs_host("the node's wait loop in the machine's sh, with a fake ip", "sh", "grep", "cat")

MULTIPATH = ("10.0.0.0/24 nhid 20 proto ospf metric 20 \\\tnexthop via 10.0.1.4 dev eth0 weight 1 "
             "\\\tnexthop via 10.0.1.5 dev eth0 weight 1\n")


def run(tmp_path, want, timeout, table, changes=None):
    """The wait with a fake ip printing table (changes: a shell line run on each call);
    want: (routes, next hops)."""
    (tmp_path / "table").write_text(table)
    fake = tmp_path / "ip"
    fake.write_text("#!/bin/sh\n%s\ncat %s\n" % (changes or ":", tmp_path / "table"))
    fake.chmod(0o755)
    cmd = (WAIT.replace("{{ beonet_node_learned | length | int }}", str(want[0]))
           .replace("{{ beonet_node_learned_hops | int }}", str(want[1]))
           .replace("{{ beonet_node_converge_timeout | int }}", str(timeout)))
    start = time.monotonic()
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=60,
                         env={"PATH": "%s:/usr/bin:/bin" % tmp_path})
    return out.stdout.strip(), time.monotonic() - start


@on_host
def test_a_stable_table_with_every_route_ends_after_two_seconds(tmp_path):
    # one multipath route (one line with ip -o) and a /32: 2 routes, 3 next hops
    count, took = run(tmp_path, (2, 3), 30, MULTIPATH + "10.254.0.2 via 10.0.1.4 dev eth0 proto ospf\n")
    assert count == "2 3" and 1.8 < took < 6


@on_host
def test_every_route_but_a_next_hop_missing_is_waited_for_until_the_timeout(tmp_path):
    # an adjacency still forming: the routes are there, one of their next hops is not yet
    count, took = run(tmp_path, (1, 3), 3, MULTIPATH)
    assert count == "1 2" and took >= 2.8


@on_host
def test_a_table_that_keeps_changing_is_waited_for_until_the_timeout(tmp_path):
    count, took = run(tmp_path, (1, 2), 3, MULTIPATH, changes="date +%N >> " + str(tmp_path / "table"))
    assert count != "1 2" and took >= 2.8


@on_host
def test_too_few_routes_reports_the_count_at_the_timeout(tmp_path):
    count, took = run(tmp_path, (5, 6), 2, MULTIPATH)
    assert count == "1 2" and 1.8 < took < 6
    assert "OSPF installed" in TASKS[1]["ansible.builtin.assert"]["fail_msg"]
