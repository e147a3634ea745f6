"""Live-state checks (verify.py), the CLI's inventory handling and the lab's
underlay choice: pure functions, no node needed."""

import json

import pytest
from conftest import ROOT

from beonet import cli
from beonet.agent import verify
from beonet.compiler import pipeline
from beonet.labs import docker as lab
from beonet.outputs import inventory
from beonet.outputs import plan as render


@pytest.fixture(scope="module")
def mesh():
    return render.plan(pipeline.compile_file(str(ROOT / "topologies/routed-mesh.yml")))


def _ip_route(n, kernel=True):
    """What `ip -j -4 route show table main` prints on a node that follows plan n."""
    out = [{"dst": r["to"].replace("/32", ""), "protocol": "250", "prefsrc": r["src"], "flags": [],
            **({"nexthops": [{"gateway": h["via"], "dev": h["dev"], "weight": 1, "flags": []}
                             for h in r["nexthops"]]} if "nexthops" in r
               else {"gateway": r["via"], "dev": r["dev"]})} for r in n["routes"]]
    if kernel:
        out += [{"dst": i["addresses"][0], "dev": i["name"], "protocol": "kernel",
                 "scope": "link", "prefsrc": i["addresses"][0].split("/")[0]}
                for i in n["interfaces"] if i["addresses"]]
    return out


def test_live_table_equal_to_the_plan(mesh):
    n = mesh["nodes"]["node-1-2"]
    problems, diff = verify.route_problems("node-1-2", n, _ip_route(n))
    assert (problems, diff) == ([], [])


def test_missing_and_foreign_routes_are_named(mesh):
    n = mesh["nodes"]["node-1-2"]
    live = _ip_route(n)
    dropped = live.pop(0)
    live.append({"dst": "default", "gateway": "10.0.1.9", "dev": n["interfaces"][0]["name"],
                 "protocol": "static"})
    problems, diff = verify.route_problems("node-1-2", n, live)
    to = dropped["dst"] if "/" in dropped["dst"] else dropped["dst"] + "/32"
    assert problems == [
        "node-1-2: route missing: %s via %s dev %s src %s" % (to, dropped["gateway"],
                                                               dropped["dev"], dropped["prefsrc"]),
        "node-1-2: route not in the plan: default via 10.0.1.9 dev %s"
        % n["interfaces"][0]["name"]]
    assert diff[0] == "--- node-1-2 plan" and diff[1] == "+++ node-1-2 live"
    assert any(line.startswith("-%s via" % to) for line in diff)


def test_management_routes_are_not_the_plans_business(mesh):
    n = mesh["nodes"]["node-1-2"]
    live = _ip_route(n) + [{"dst": "default", "gateway": "192.0.2.1", "dev": "mgmt0"}]
    assert verify.route_problems("node-1-2", n, live) == ([], [])


@pytest.mark.parametrize("hosts, want", [
    ({"a": {"beonet_management_interface": "none"}, "b": {"beonet_management_interface": "none"}}, "none"),
    ({"a": {"beonet_management_interface": "eno1"}, "b": {}}, "eno1"),
    ({"a": {"beonet_management_interface": "eno1"}, "b": {"beonet_management_interface": "eno2"}}, None),
    ({"a": {}}, None),
])
def test_inventory_management_interface(hosts, want):
    assert inventory.management_of(hosts) == want


def test_build_writes_each_nodes_persistent_files(tmp_path):
    out = tmp_path / "build"
    assert cli.main(["build", str(ROOT / "topologies/bonded-dual-net.yml"), "-o", str(out),
                     "--backend", "networkmanager"]) == 0
    files = out / "nodes/node01/etc/NetworkManager/system-connections"
    bond = (files / "beonet-bond0.nmconnection").read_text()
    assert "type=bond" in bond and "mode=balance-rr" in bond
    assert "master=bond0" in (files / "beonet-eth1.nmconnection").read_text()
    plan = json.loads((out / "plan.json").read_text())
    assert len(list((out / "nodes").iterdir())) == len(plan["nodes"])


def test_underlay_avoids_other_labs_and_keeps_its_own():
    other = {"x-a": ("x", "100.64.0.0/24")}
    for name in ("mol-a", "bench-b", "beonet-c"):
        first = lab._underlay(name, other)
        assert first != lab.UNDERLAY or name == "x"
    taken = {"n%d" % k: ("lab%d" % k, "100.%d.0.0/24" % (64 + k)) for k in range(63)}
    assert lab._underlay("new", taken) == lab.UNDERLAY + (63 << 16)
    assert lab._underlay("lab5", taken) == lab.UNDERLAY + (5 << 16)
    taken["last"] = ("lab63", "100.127.0.0/24")
    with pytest.raises(lab.LabError, match="all 64 underlay"):
        lab._underlay("new", taken)


def test_forwarding_differs_from_the_plan():
    assert verify.forwarding_problem("r1", "1\n", True) is None
    assert verify.forwarding_problem("r1", "0\n", False) is None
    assert verify.forwarding_problem("r1", "0\n", True) == "r1: forwarding is off, the plan says on"
    assert verify.forwarding_problem("r1", "", False) is None      # unreadable reads as off


BONDING = """Ethernet Channel Bonding Driver: v6.1.0

Bonding Mode: load balancing (round-robin)
MII Status: up

Slave Interface: eth1
MII Status: up

Slave Interface: eth2
MII Status: down
"""


def test_a_bond_is_checked_for_mode_and_members():
    bond = {"name": "bond0", "kind": "bond", "segment": "net0", "addresses": [],
            "members": ["eth1", "eth2", "eth3"], "mode": "balance-rr"}
    assert verify.bond_problems("n1", bond, None) == ["n1: bond bond0 does not exist"]
    assert verify.bond_problems("n1", bond, BONDING) == ["n1: bond0 member eth2 is down",
                                                        "n1: bond0 member eth3 is absent"]
    assert verify.bond_problems("n1", dict(bond, mode="active-backup", members=["eth1"]), BONDING) == [
        "n1: bond0 mode is load balancing (round-robin), the plan says active-backup"]


def test_the_verify_module_documentation_parses():
    import os
    import subprocess
    import sys
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "-M", "library",
                          "beonet_verify"], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0 and "route_diff" in res.stdout, res.stderr


def test_an_inventory_that_is_not_utf8_is_an_input_error(tmp_path, capsys):
    inv = tmp_path / "hosts.yml"
    inv.write_bytes(b"beonet_nodes:\n  hosts:\n    node01: {}\n# caf\xe9\n")
    assert cli.main(["routes", str(ROOT / "topologies/single-net.yml"), "-i", str(inv)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith(str(inv) + ":")


def test_traceroute_traces_an_ipv6_address_over_ipv6():
    assert verify.traceroute_command("fd00::1", 5, 1)[:3] == ["traceroute", "-n", "-6"]
    assert "-6" not in verify.traceroute_command("10.0.0.1", 5, 1)


def test_ospfv3_routes_seen_from_the_node_alone_are_matched_by_device():
    from test_live_proof import FRR6, six_healthy
    from test_verify_readout import _listed

    plan = render.plan(pipeline.compile_text(FRR6, "frr6.yml"))
    node = plan["nodes"]["node01"]
    learned6 = [r for r in node["learned"] if ":" in r["to"]]
    live = _listed(six_healthy(plan)["node01"]["routes6"])
    assert len(live) == len(learned6) > 0
    assert all(h["gateway"].startswith("fe80::") for r in live for h in r.get("nexthops", [r]))
    assert verify.route_problems("node01", node, live, True, by_device=True) == ([], [])
    # compared by address, the node alone cannot tell who holds a link-local next hop
    assert len(verify.route_problems("node01", node, live, True)[0]) == len(learned6)
    one = next(k for k, r in enumerate(live) if "gateway" in r)
    gone = live[one]
    rest = live[:one] + live[one + 1:]
    want = "node01: route missing: %s via link-local dev %s src %s" % (
        gone["dst"], gone["dev"], gone["prefsrc"])
    assert verify.route_problems("node01", node, rest, True, by_device=True)[0] == [want]
    # a global next hop is not OSPFv3's: not in the plan
    odd = dict(gone, gateway=node["address6"].replace("::1", "::9"))
    problems = verify.route_problems("node01", node, rest + [odd], True, by_device=True)[0]
    assert problems[-1].startswith("node01: route not in the plan: %s via %s" % (gone["dst"], odd["gateway"]))
