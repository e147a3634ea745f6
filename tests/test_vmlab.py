"""The VM lab provider's pure logic: MACs, layout, QEMU and kernel arguments,
SSH options, inventory, the monitor protocol, the CLI flags."""

import os
import shlex
import socket
import threading

import pytest
from conftest import ROOT

from beonet import cli
from beonet.compiler import pipeline
from beonet.labs import base as lab
from beonet.labs import vm as vmlab
from beonet.labs.base import LabError
from beonet.outputs import plan as render


def _plan(name):
    return render.plan(pipeline.compile_file(str(ROOT / "topologies" / name)))


@pytest.fixture(scope="module")
def bonded():
    return _plan("bonded-dual-net-4.yml")


@pytest.fixture(scope="module")
def mesh():
    return _plan("routed-mesh-2x3.yml")


def test_macs_unique_locally_administered_and_lab_specific(mesh):
    lay = vmlab.layout(mesh, "labA")
    macs = [vm["mgmt_mac"] for vm in lay["vms"].values()] + [
        n["mac"] for vm in lay["vms"].values() for n in vm["nics"]]
    assert len(macs) == len(set(macs)) == 6 * 3
    for m in macs:
        first = int(m.split(":")[0], 16)
        assert first & 2 and not first & 1        # locally administered, unicast
    other = vmlab.layout(mesh, "labB")
    assert not set(macs) & {vm["mgmt_mac"] for vm in other["vms"].values()}


def test_mac_layout_and_limits():
    assert vmlab.mac("x", 0x0102, 3).split(":")[3:] == ["01", "02", "03"]
    with pytest.raises(LabError):
        vmlab.mac("x", 1 << 16, 0)
    with pytest.raises(LabError):
        vmlab.mac("x", 0, 256)


def test_management_addresses():
    assert vmlab.mgmt_address(0) == "198.18.0.10"
    assert vmlab.mgmt_address(300) == "198.18.1.54"
    with pytest.raises(LabError):
        vmlab.mgmt_address(70000)


def test_bonded_layout_one_hub_per_channel(bonded):
    lay = vmlab.layout(bonded, "b")
    # Two channel bridges (hubs); the bond's own segment has no wire.
    assert sorted(lay["bridges"].values()) == [True, True]
    n1 = lay["vms"]["node01"]
    assert [n["logical"] for n in n1["nics"]] == ["eth1", "eth2"]
    assert [n["rate_mbit"] for n in n1["nics"]] == [100, 100]
    # Every node's eth1 is on the same bridge, eth2 on the other.
    for k in range(2):
        assert len({vm["nics"][k]["bridge"] for vm in lay["vms"].values()}) == 1
    assert n1["nics"][0]["bridge"] != n1["nics"][1]["bridge"]
    taps = [n["tap"] for vm in lay["vms"].values() for n in vm["nics"]]
    taps += [vm["mgmt_tap"] for vm in lay["vms"].values()]
    assert len(set(taps)) == len(taps) and all(len(t) <= 15 for t in taps)


def test_mesh_layout_matches_segments(mesh):
    lay = vmlab.layout(mesh, "m")
    assert len(lay["bridges"]) == len(mesh["segments"]) == 5
    seg_bridge = {seg: br for seg, (_, br) in lab.networks(mesh, "m").items()}
    for node, vm in lay["vms"].items():
        for nic, iface in zip(vm["nics"], mesh["nodes"][node]["interfaces"]):
            assert nic["bridge"] == seg_bridge[iface["segment"]]


def test_tree_is_refused_with_a_reason():
    with pytest.raises(LabError, match="tree"):
        vmlab.layout(_plan("switch-tree.yml"), "t")


def test_management_network_must_not_overlap():
    plan = {"segments": {"s": {"prefix": "198.18.4.0/24"}, "t": {"prefix": "10.0.0.0/24"}}}
    with pytest.raises(LabError, match="s \\(198.18.4.0/24\\) overlaps"):
        vmlab.check_mgmt_overlap(plan)
    vmlab.check_mgmt_overlap({"segments": {"t": {"prefix": "198.20.0.0/16"}}})


def test_kernel_cmdline_and_qemu_argv(bonded):
    vm = vmlab.layout(bonded, "b")["vms"]["node02"]
    key = "ssh-ed25519 AAAAKEY beonet-b"
    line = vmlab.kernel_cmdline("node02", vm, key, "b")
    assert "systemd.hostname=node02" in line.split()
    assert "systemd.machine_id=%s" % vmlab.machine_id("b", "node02") in line.split()
    assert "beonet.key=AAAAKEY" in line.split()
    assert "beonet.mgmt=%s,198.18.0.11/16" % vm["mgmt_mac"] in line.split()
    masked = {w.split("=", 1)[1] for w in line.split() if w.startswith("systemd.mask=")}
    assert masked == set(vmlab.BOOT_MASKED) and "serial-getty@ttyS0.service" in masked
    # nothing a node's network, its firewall, sysctl or SSH needs; within x86's 2,048 bytes
    needed = ("network", "Network", "nftables", "sysctl", "ssh", "udev", "beonet", "dbus")
    assert not [u for u in masked if any(n in u for n in needed)]
    assert len(line.encode()) < 2048
    argv = vmlab.qemu_argv("node02", vm, "/img", "/st", key, "b", memory_mb=512, tb_cache_mb=64)
    assert argv[0] == "qemu-system-x86_64"
    assert argv[argv.index("-accel") + 1] == "tcg,tb-size=64"     # not QEMU's 1 GiB per VM
    assert argv[argv.index("-m") + 1] == "512" and argv[argv.index("-smp") + 1] == "1"
    assert argv[argv.index("-kernel") + 1] == "/img/vmlinuz"
    assert argv[argv.index("-append") + 1] == line
    assert "file=/st/node02.qcow2,if=virtio,format=qcow2,cache=unsafe" in argv
    assert "unix:/st/node02.mon,server,nowait" in argv
    netdevs = [argv[i + 1] for i, a in enumerate(argv) if a == "-netdev"]
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]
    assert netdevs[0] == "tap,id=mgmt,ifname=%s,script=no,downscript=no" % vm["mgmt_tap"]
    assert [d.split(",")[0] for d in netdevs] == ["tap"] * 3
    assert devices[1] == "virtio-net-pci,netdev=eth1,mac=%s,addr=0x11" % vm["nics"][0]["mac"]
    # Never QEMU socket/multicast networking: only taps inside the namespace.
    assert not any("socket" in a or "mcast" in a for a in argv)


def test_machine_ids_differ_per_vm_and_lab():
    ids = {vmlab.machine_id(lab_name, n) for lab_name in ("a", "b") for n in ("n1", "n2")}
    assert len(ids) == 4
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_ssh_options_go_through_the_namespace():
    opts = vmlab.ssh_options("lab1", "/st/id_ed25519", control_dir="/st/cp")
    proxy = [o for o in opts if o.startswith("ProxyCommand=")][0]
    assert shlex.split(proxy.split("=", 1)[1]) == [
        "ip", "netns", "exec", "lab1", "python3", "/st/proxy.py", "%h", "%p"]
    assert opts[opts.index("-i") + 1] == "/st/id_ed25519"
    assert "ControlPath=/st/cp/%C" in opts


def test_inventory(bonded):
    lay = vmlab.layout(bonded, "b")
    mapping = {n: {"eth1": "ens17", "eth2": "ens18"} for n in lay["vms"]}
    mgmt = {n: "ens16" for n in lay["vms"]}
    images = {n: "networkd" for n in lay["vms"]}
    images["node04"] = "networkmanager"
    inv = vmlab.inventory(bonded, "topologies/bonded-dual-net-4.yml", "b", "b",
                          "/st/id_ed25519", lay, mapping, mgmt, images)
    group = inv["beonet_nodes"]
    v = group["vars"]
    assert v["ansible_connection"] == "ssh" and v["ansible_user"] == "root"
    assert v["ansible_ssh_private_key_file"] == "/st/id_ed25519"
    assert "ProxyCommand=" in v["ansible_ssh_common_args"]
    assert "ip netns exec b python3 /st/proxy.py %h %p" in v["ansible_ssh_common_args"]
    assert v["ansible_control_path_dir"] == "/st/cp"
    assert os.path.isabs(v["beonet_topology_file"])
    assert sorted(group["hosts"]) == ["node01", "node02", "node03", "node04"]
    h = group["hosts"]["node03"]
    assert h["ansible_host"] == "198.18.0.12"
    assert h["beonet_management_interface"] == "ens16"
    assert h["beonet_interfaces"] == {"eth1": "ens17", "eth2": "ens18"}
    # No backend in the inventory: the node role detects the image's manager.
    assert all("beonet_node_backend" not in h for h in group["hosts"].values())
    assert h["beonet_vm_image"] == "networkd"
    assert group["hosts"]["node04"]["beonet_vm_image"] == "networkmanager"


def test_images_per_node(bonded):
    assert vmlab._images(bonded, "networkd", {"node02": "networkmanager"})["node02"] == "networkmanager"
    assert vmlab._images(bonded, "networkmanager", {})["node01"] == "networkmanager"
    with pytest.raises(LabError, match="node99"):
        vmlab._images(bonded, "networkd", {"node99": "networkmanager"})
    with pytest.raises(LabError, match="node02: image 'wicked' is not one of "
                                       "networkd, networkmanager, netplan, ifupdown"):
        vmlab._images(bonded, "networkd", {"node02": "wicked"})
    with pytest.raises(LabError, match="--image: image 'nm' is not one of networkd, networkmanager"):
        vmlab._images(bonded, "nm", {})          # one name per backend: the registry's, no alias


def test_proxy_relays_both_ways(tmp_path):
    """The ProxyCommand relay: stdin to the socket, the socket to stdout."""
    import subprocess
    import sys
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def echo():
        conn, _ = srv.accept()
        data = b""
        while not data.endswith(b"\n"):
            data += conn.recv(100)
        conn.sendall(data.upper())
        conn.close()
    t = threading.Thread(target=echo)
    t.start()
    script = tmp_path / "proxy.py"
    script.write_text(vmlab.PROXY)
    out = subprocess.run([sys.executable, str(script), "127.0.0.1", str(srv.getsockname()[1])],
                         input=b"hello vm\n", capture_output=True, timeout=10)
    t.join()
    srv.close()
    assert out.stdout == b"HELLO VM\n"


def test_monitor_protocol(tmp_path):
    """monitor(): wait for the prompt, send one command, return the reply."""
    path = tmp_path / "n1.mon"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen(1)
    got = []

    def fake_qemu():
        conn, _ = srv.accept()
        conn.sendall(b"QEMU 7.2.0 monitor - type 'help' for more information\r\n(qemu) ")
        data = b""
        while not data.endswith(b"\n"):
            data += conn.recv(100)
        got.append(data)
        conn.sendall(data.replace(b"\n", b"\r\n") + b"Invalid parameter 'eth9'\r\n(qemu) ")
        conn.close()
    t = threading.Thread(target=fake_qemu)
    t.start()
    reply = vmlab.monitor(str(tmp_path), "n1", "set_link eth9 off")
    t.join()
    srv.close()
    assert got == [b"set_link eth9 off\n"]
    assert reply == "Invalid parameter 'eth9'"


def test_monitor_missing_socket(tmp_path):
    with pytest.raises(LabError, match="no monitor socket"):
        vmlab.monitor(str(tmp_path), "n1", "info status")


def test_cli_flags():
    args = cli.parser().parse_args(["lab", "up", "--provider", "vm", "t.yml", "--name", "x",
                                    "--node-images", "a=networkmanager,b=ifupdown"])
    assert (args.provider, args.name, args.node_images, args.image) == (
        "vm", "x", "a=networkmanager,b=ifupdown", "networkd")
    assert vmlab.parse_node_images(args.node_images) == {"a": "networkmanager", "b": "ifupdown"}
    assert vmlab.parse_node_images(None) == {}
    args = cli.parser().parse_args(["lab", "link", "t.yml", "--provider", "vm", "--node", "n",
                                    "--nic", "eth1", "--state", "down"])
    assert (args.action, args.node, args.nic, args.state) == ("link", "n", "eth1", "down")
    assert cli.parser().parse_args(["lab", "up", "t.yml"]).provider == "docker"


def test_link_needs_vm_provider(capsys):
    assert cli.main(["lab", "link", "topologies/bonded-dual-net-4.yml"]) == 2
    assert "needs --provider vm" in capsys.readouterr().err



@pytest.mark.parametrize("text", ["a", "a=", "=networkmanager", "a=networkmanager,b"])
def test_node_images_malformed(text):
    with pytest.raises(LabError, match="is not NODE=IMAGE"):
        vmlab.parse_node_images(text)


def test_cli_node_images_malformed_exits_2(capsys):
    assert cli.main(["lab", "up", "--provider", "vm", "t.yml", "--node-images", "node01"]) == 2
    assert "--node-images: 'node01' is not NODE=IMAGE" in capsys.readouterr().err


# ------------------------------------------------------------------ wire-like shaping, shared media

def test_tbf_is_wire_like():
    # Two full frames (MTU, Ethernet header, preamble, FCS, gap) or 250 us of traffic.
    assert lab.frame_bytes(1500) == 1538 and lab.frame_bytes(9000) == 9038
    assert lab.tbf_sizes(10) == (3076, 153800)
    assert lab.tbf_sizes(100) == (3125, 250000)
    assert lab.tbf_sizes(1000) == (31250, 2500000)
    assert lab.tbf_sizes(100, 9000) == (18076, 903800)
    # the bucket drains at most at 1.2 times the rate, one frame at a time
    assert lab.tbf("eth1", 100) == ("tc qdisc replace dev eth1 root tbf rate 100mbit burst 3125 "
                                    "limit 250000 overhead 24 peakrate 120000kbit mtu 1538")
    assert lab.tbf("eth1", 1000).endswith("burst 31250 limit 2500000 overhead 24")
    # the bucket never holds what 10 ms of traffic was (a ping-pong's direction saves up)
    for rate in (10, 100, 1000, 10000):
        assert lab.tbf_sizes(rate)[0] < rate * 10_000 // 8 / 4


def test_nic_rate_and_mtu(bonded):
    assert lab.rate(bonded, "node01", "eth1") == 100
    assert lab.mtu(bonded, "node01", "eth1") == 1500
    assert lab.rate(bonded, "node01", "eth9") is None
    assert lab.mtu(bonded, "node01", "eth9") == 1500


def test_medium_and_port_commands():
    assert lab.medium_commands("bm1", 10, 9000) == [
        "ip link add bm1 type ifb", "ip link set bm1 mtu 9000 up", lab.tbf("bm1", 10, 9000)]
    assert lab.port_commands("vt1", "bm1") == [
        "tc qdisc replace dev vt1 handle ffff: ingress",
        "tc filter replace dev vt1 parent ffff: protocol all prio 1 u32 match u32 0 0 "
        "action mirred egress redirect dev bm1"]


def _topology(tmp_path, text):
    path = tmp_path / "t.yml"
    path.write_text(text)
    return render.plan(pipeline.compile_file(str(path)))


def test_shared_bonded_net_has_one_medium_per_channel(tmp_path):
    plan = _topology(tmp_path, "name: hubs\nfamily: bonded\nlink: {rate_mbit: 10}\n"
                               "bonded: {nodes: 4, channels: 2, medium: shared}\n")
    assert [s.get("medium") for s in plan["segments"].values()] == ["shared"] * 3
    assert lab.media(plan, "h") == {"net0-ch0": lab.short("h", "net0-ch0", "bm"),
                                    "net0-ch1": lab.short("h", "net0-ch1", "bm")}
    switched = _topology(tmp_path, "name: sw\nfamily: bonded\nbonded: {nodes: 4}\n")
    assert lab.media(switched, "s") == {}
    assert all("medium" not in s for s in switched["segments"].values())


def test_vm_shared_segment_taps_go_through_the_medium():
    plan = _plan("hub-and-switch.yml")
    lay = vmlab.layout(plan, "h")
    ifb = lab.short("h", "hub", "bm")
    assert lay["media"] == {ifb: {"rate_mbit": 100, "mtu": 1500}}
    n1 = lay["vms"]["n1"]["nics"]
    assert [(n["logical"], n["ifb"], n["mtu"]) for n in n1] == [("eth1", ifb, 1500), ("eth2", None, 1500)]
    script = vmlab.namespace_script(lay)
    medium = lab.medium_commands(ifb, 100)
    start = script.index(medium[0])
    assert script[start:start + 3] == medium
    for vm in lay["vms"].values():
        hub_tap, switch_tap = (n["tap"] for n in vm["nics"])
        assert all(c in script for c in lab.port_commands(hub_tap, ifb))
        assert lab.tbf(switch_tap, 100) in script
        assert not any("dev %s root" % hub_tap in c for c in script), "a hub port adds no second limit"
        assert script.index(lab.port_commands(hub_tap, ifb)[0]) > start


def test_shared_mesh_has_one_medium_per_segment(tmp_path):
    plan = _topology(tmp_path, "name: m\nfamily: mesh\nmesh: {dims: [2, 2], medium: shared}\n")
    assert sorted(lab.media(plan, "m")) == sorted(plan["segments"]) == ["d0-0", "d0-1", "d1-0", "d1-1"]

