"""MPI exports: hostfiles by cluster address with slots, and the Open MPI settings
that keep MPI traffic on the networks every node routes to."""

import ipaddress

import pytest
from conftest import ROOT

from beonet import cli
from beonet.compiler import pipeline
from beonet.outputs import export
from beonet.outputs import plan as render


def _plan(name):
    return render.plan(pipeline.compile_file(str(ROOT / "topologies" / ("%s.yml" % name))))


def _routed_everywhere(plan, net):
    """Every node has a connected network or a route covering all of net."""
    net = ipaddress.ip_network(net)
    for node in plan["nodes"].values():
        nets = [ipaddress.ip_interface(a).network for i in node["interfaces"] for a in i["addresses"]]
        nets += [ipaddress.ip_network(r["to"]) for r in node["routes"]]
        if not any(net.subnet_of(n) or all(
                any(ipaddress.ip_network(s).subnet_of(m) for m in nets)
                for s in net.subnets(new_prefix=max(net.prefixlen, 24))) for n in nets):
            return False
    return True


@pytest.mark.parametrize("name", ["routed-mesh", "metanode-testbed", "custom-example", "switch-tree",
                                  "bonded-dual-net", "metanode-fig2"])
def test_node_networks_hold_every_node_address_and_no_other_address(name):
    plan = _plan(name)
    nets = [ipaddress.ip_network(n) for n in export.node_networks(plan)]
    nodes = {ipaddress.ip_address(n["address"]) for n in plan["nodes"].values()}
    others = {ipaddress.ip_interface(a).ip for n in plan["nodes"].values() for i in n["interfaces"]
              for a in i["addresses"]} - nodes
    assert all(any(a in n for n in nets) for a in nodes)
    assert not any(a in n for n in nets for a in others)
    assert all(_routed_everywhere(plan, n) for n in export.node_networks(plan))


def test_a_mesh_keeps_mpi_off_its_second_dimension():
    """routed-mesh: the row segments hold the node addresses; the column segments are
    not routed cluster-wide and stay out."""
    assert export.node_networks(_plan("routed-mesh")) == ["10.0.0.0/22"]
    text = export.openmpi_mca(_plan("routed-mesh"))
    assert "btl_tcp_if_include = 10.0.0.0/22\n" in text and "oob_tcp_if_include = 10.0.0.0/22\n" in text


def test_a_node_address_on_a_shared_point_to_point_link_is_a_host_network():
    plan = _plan("custom-example")
    seg = next(s for s in plan["segments"].values() if s["kind"] == "p2p")
    a, b = (m["address"] for m in seg["members"])
    plan["nodes"][seg["members"][0]["node"]]["address"] = a      # as if a's address were on the link
    nets = export.node_networks(plan)
    assert a + "/32" in nets and not any(ipaddress.ip_address(b) in ipaddress.ip_network(n) for n in nets)


def test_hostfiles_give_each_node_its_slots(capsys):
    plan = _plan("custom-example")
    lines = export.hostfile(plan, {"a1": 4}).splitlines()
    assert lines[0].startswith("#") and "10.20.0.11 slots=4 # a1" in lines
    assert "10.20.0.1 slots=1 # head" in lines
    assert export.mpich_hosts(plan, 2).splitlines()[0] == "10.20.0.1:2"
    assert cli.main(["export", "topologies/custom-example.yml", "mpich-hosts", "--slots", "3"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "10.20.1.23:3"


@pytest.mark.parametrize("args,message", [
    (["hosts", "--slots", "2"], "--slots goes with hostfile, mpich-hosts, slurm-nodes only"),
    (["hostfile", "--slots", "0"], "a whole number from 1 to 65536, not '0'"),
    (["hostfile", "--slots", "x"], "a whole number from 1 to 65536, not 'x'"),
    (["hostfile", "--slots", "1" + "0" * 26], "a whole number from 1 to 65536, not '1000000"),
    (["mpich-hosts", "--slots", "65537"], "a whole number from 1 to 65536, not '65537'")])
def test_bad_slots_are_refused(args, message, capsys):
    try:
        code = cli.main(["export", "topologies/routed-mesh.yml", *args])
    except SystemExit as exc:           # argparse's own usage error
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err
