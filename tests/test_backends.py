"""The four persistent backends, stale files, IPv6, and the module's use of them."""

import configparser
import copy
import json
import re

import pytest
import yaml
from conftest import ROOT, golden
from test_node import _blank_node, _Exit, _FakeModule, beonet_node  # noqa: F401 (fixture)

from beonet.agent import apply as node
from beonet.agent import backends, nodeplan
from beonet.agent.netbackends import base, ifupdown, netplan, networkd, networkmanager
from beonet.agent.verify import is_link_local, route_lines
from beonet.compiler import pipeline
from beonet.outputs import plan as render

SMALL = """name: small
family: custom
custom:
  nodes: [a1, a2, b1]
  segments:
    - {name: lan, members: [a1, a2], channels: 2, mode: balance-rr}
  links:
    - ends: [a2, b1]
"""


def _plan(tmp_path, text=SMALL):
    src = tmp_path / "t.yml"
    src.write_text(text)
    return render.plan(pipeline.compile_file(str(src)))


@pytest.fixture()
def lib(beonet_node):  # noqa: F811 (the fixture of test_node)
    return beonet_node


@pytest.fixture()
def small(tmp_path):
    return _plan(tmp_path)


def _dump(files):
    return "".join("==> %s <==\n%s" % (p, files[p]) for p in sorted(files))


@pytest.mark.parametrize("backend,renderer", [("networkd", "networkd"),
                                              ("networkmanager", "networkd"),
                                              ("netplan", "networkd"),
                                              ("netplan", "networkmanager"),
                                              ("ifupdown", "networkd")])
def test_each_backend_renders_a_bond_and_forwarded_routes(small, backend, renderer):
    """a1: a balance-rr bond with a route through a2; a2: the bond, a point-to-point
    NIC and forwarding."""
    assert small["nodes"]["a1"]["routes"] and small["nodes"]["a2"]["forwarding"]
    prefixes = render.prefixes(small)
    text = "".join("#### %s\n%s" % (host, _dump(node.persistent_files(small["nodes"][host], prefixes,
                                                                        backend, renderer)))
                   for host in ("a1", "a2"))
    name = backend if backend != "netplan" else "netplan-" + renderer
    golden(ROOT / "tests/golden" / ("small-custom.%s" % name), text)


def test_netplan_file_is_valid_yaml_with_source_addresses(small):
    n = small["nodes"]["a1"]
    doc = yaml.safe_load(netplan.netplan_files(n)[netplan.NETPLAN])["network"]
    bond = doc["bonds"]["bond0"]
    assert bond["interfaces"] == ["eth1", "eth2"]
    assert bond["parameters"] == {"mode": "balance-rr", "mii-monitor-interval": 100}
    assert bond["routes"] == [{"to": r["to"], "via": r["via"], "from": r["src"]} for r in n["routes"]]
    assert isinstance(bond["macaddress"], str) and "link-local" not in bond
    assert doc["renderer"] == "networkd"
    assert node.file_mode(netplan.NETPLAN) == 0o600


def test_ifupdown_bond_uses_ifenslave_options_and_routes_with_src(small):
    n = small["nodes"]["a1"]
    text = ifupdown.ifupdown_files(n)[ifupdown.IFUPDOWN]
    assert "auto bond0\niface bond0 inet static\n" in text
    assert "    bond-slaves eth1 eth2\n    bond-mode balance-rr\n    bond-miimon 100\n" in text
    r = n["routes"][0]
    assert "    up ip route replace %s via %s dev bond0 src %s proto 250\n" % (
        r["to"], r["via"], r["src"]) in text
    assert "iface eth1" not in text              # members: through bond-slaves only


def test_tso_off_bond_gets_a_udev_link_file_in_every_backend_but_networkmanager(small):
    n = small["nodes"]["a1"]
    link = "%s/10-beonet-bond0.link" % base.NETWORKD
    for backend in ("networkd", "netplan", "ifupdown"):
        assert "TCPSegmentationOffload=false" in backends.backend_files(n, backend)[link]
    keyfile = "%s/beonet-bond0.nmconnection" % networkmanager.NM
    assert "feature-tso=false" in networkmanager.nm_files(n)[keyfile]


def test_ipv6_link_local_is_kept_unless_the_topology_turns_ipv6_off(small, tmp_path):
    on = small["nodes"]["a1"]
    off = _plan(tmp_path, SMALL + "ipv6: false\n")["nodes"]["a1"]
    assert "ipv6" not in on and off["ipv6"] is False
    bond = "%s/60-beonet-bond0.network" % base.NETWORKD
    keyfile = "%s/beonet-bond0.nmconnection" % networkmanager.NM
    assert "LinkLocalAddressing" not in networkd.networkd_files(on)[bond]
    assert "LinkLocalAddressing=no\n" in networkd.networkd_files(off)[bond]
    assert "[ipv6]\nmethod=link-local\n" in networkmanager.nm_files(on)[keyfile]
    assert "[ipv6]\nmethod=disabled\n" in networkmanager.nm_files(off)[keyfile]
    assert "link-local" not in netplan.netplan_files(on)[netplan.NETPLAN]
    assert "link-local: []" in netplan.netplan_files(off)[netplan.NETPLAN]
    assert "disable_ipv6" not in ifupdown.ifupdown_files(on)[ifupdown.IFUPDOWN]
    assert "up echo 1 > /proc/sys/net/ipv6/conf/bond0/disable_ipv6\n" in \
        ifupdown.ifupdown_files(off)[ifupdown.IFUPDOWN]


# A bonded LAN and a square of links: forwarding, a /127 link, a multipath /128 (a1 to
# b1's link address, through a2 or c1), compiled dual stack and IPv6-only.
SQUARE = """name: square
family: custom
custom:
  nodes: [a1, a2, b1, c1]
  segments:
    - {name: lan, members: [a1, a2], channels: 2, mode: balance-rr}
  links:
    - ends: [a2, b1]
    - ends: [a1, c1]
    - ends: [c1, b1]
"""
STACKS = {"dual": "addressing: {ipv6: true}\n", "only": "addressing: {ipv4: false, ipv6: true}\n"}
RENDERED = [("networkd", "networkd"), ("networkmanager", "networkd"), ("netplan", "networkd"),
            ("netplan", "networkmanager"), ("ifupdown", "networkd")]
IPV4 = re.compile(r"(?<![\w.:])\d{1,3}(?:\.\d{1,3}){3}(?![\w.])")


@pytest.fixture(scope="module")
def square(tmp_path_factory):
    """{stack: plan} of SQUARE, dual stack and IPv6-only."""
    return {stack: _plan(tmp_path_factory.mktemp(stack), SQUARE + text) for stack, text in STACKS.items()}


def _six_routes(n):
    return [r for r in n["routes"] if ":" in r["to"]]


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("backend,renderer", RENDERED)
def test_each_backend_renders_ipv6_dual_stack_and_ipv6_only(square, stack, backend, renderer):
    """a1, a2 and b1 of the square: every IPv6 address and route of the plan is in the
    files (the multipath one too) with the source of each route that states one (a1's
    multipath route, b1's through eth2; not a1's through bond0, which holds it alone),
    and an IPv6-only plan's files hold no IPv4 address."""
    plan = square[stack]
    n, b1 = plan["nodes"]["a1"], plan["nodes"]["b1"]
    assert any("nexthops" in r for r in _six_routes(n)) and plan["nodes"]["a2"]["forwarding"]
    assert [("nexthops" in r, "src" in r) for r in _six_routes(n)] == [(False, False), (True, True)]
    assert any("src" in r and "nexthops" not in r for r in _six_routes(b1))
    assert ("address" in n) == (stack == "dual")
    text = ""
    for host in ("a1", "a2", "b1"):
        files = backends.backend_files(plan["nodes"][host], backend, renderer)
        text += "#### %s\n%s" % (host, _dump(files))
        every = "".join(files.values())
        six = [a.split("/")[0] for i in plan["nodes"][host]["interfaces"] for a in i["addresses"] if ":" in a]
        assert six and all(a in every for a in six)
        assert all(r["to"] in every and r.get("src", "") in every for r in _six_routes(plan["nodes"][host]))
        assert (IPV4.findall(every) == []) == (stack == "only")
    name = backend if backend != "netplan" else "netplan-" + renderer
    golden(ROOT / "tests/golden" / ("square-%s.%s" % (stack, name)), text)


def test_networkd_ipv6_addresses_skip_dad_and_take_no_router_advertisement(square):
    for stack, plan in square.items():
        n = plan["nodes"]["a1"]
        text = networkd.networkd_files(n)["%s/60-beonet-eth3.network" % base.NETWORKD]
        six = [a for a in n["interfaces"][-1]["addresses"] if ":" in a]
        assert "[Address]\nAddress=%s\nDuplicateAddressDetection=none\n" % six[0] in text
        assert "IPv6AcceptRA=no\n" in text and "LinkLocalAddressing" not in text
        assert ("\nAddress=10." in text) == (stack == "dual")


def test_networkmanager_ipv6_is_manual_and_ipv4_off_on_an_ipv6_only_plan(square):
    keyfile = "%s/beonet-bond0.nmconnection" % networkmanager.NM
    dual = networkmanager.nm_files(square["dual"]["nodes"]["a1"])[keyfile]
    only = networkmanager.nm_files(square["only"]["nodes"]["a1"])[keyfile]
    n = square["only"]["nodes"]["a1"]
    r = next(r for r in n["routes"] if r["dev"] == "bond0" and "nexthops" not in r)
    assert "\n[ipv4]\nmethod=manual\naddress1=10.0.0.1/30\n" in dual
    # bond0 holds the route's source alone: the kernel takes it, the keyfile names none
    assert "\n[ipv6]\nmethod=manual\naddress1=%s/64\nroute1=%s,%s\n" % (
        n["address6"], r["to"], r["via"]) in only and "_options" not in only
    assert "\n[ipv4]\nmethod=disabled\n\n[ipv6]\n" in only
    b1 = square["only"]["nodes"]["b1"]
    eth2 = networkmanager.nm_files(b1)["%s/beonet-eth2.nmconnection" % networkmanager.NM]
    r2 = next(r for r in b1["routes"] if r["dev"] == "eth2" and "nexthops" not in r)
    assert "route1=%s,%s\nroute1_options=src=%s\n" % (r2["to"], r2["via"], b1["address6"]) in eth2


@pytest.mark.parametrize("stack", STACKS)
def test_every_networkmanager_keyfile_has_one_section_and_key_of_each_name(square, stack):
    """A keyfile is a GLib key file: a second [ipv6] section or a second address1= in one
    would be merged or refused; every node's keyfiles read strictly as INI files."""
    for n in square[stack]["nodes"].values():
        for path, text in networkmanager.nm_files(n).items():
            if path.endswith(".nmconnection"):
                cp = configparser.ConfigParser(interpolation=None, strict=True)
                cp.read_string(text.split("\n", 1)[1])
                assert ("ipv4" in cp) == ("ipv6" in cp) == ("master=" not in text), path


def test_ifupdown_writes_an_inet6_stanza_without_dad_or_router_advertisement(square):
    dual = ifupdown.ifupdown_files(square["dual"]["nodes"]["a1"])[ifupdown.IFUPDOWN]
    only = ifupdown.ifupdown_files(square["only"]["nodes"]["a1"])[ifupdown.IFUPDOWN]
    six = square["only"]["nodes"]["a1"]["address6"]
    inet6 = "    address %s/64\n    accept_ra 0\n    autoconf 0\n    dad-attempts 0\n" % six
    assert "\niface bond0 inet static\n    address 10.0.0.1/30\n" in dual
    assert "\niface bond0 inet6 static\n" + inet6 in dual
    assert "\nauto bond0\niface bond0 inet6 static\n" + inet6 + "    hwaddress ether" in only
    assert " inet " not in only and "bond-slaves eth1 eth2\n" in only


def test_ifupdown_extra_ipv6_addresses_are_added_without_dad(square):
    n = copy.deepcopy(square["dual"]["nodes"]["a1"])
    n["interfaces"][-1]["addresses"] += ["fd00:0:0:9::1/64", "10.9.0.1/24"]
    text = ifupdown.ifupdown_files(n)[ifupdown.IFUPDOWN]
    assert "    up ip addr replace 10.9.0.1/24 dev eth3\n" in text
    assert "    up ip addr replace fd00:0:0:9::1/64 dev eth3 nodad\n" in text
    assert text.index("10.9.0.1/24") < text.index("iface eth3 inet6") < text.index("fd00:0:0:9::1")


def test_a_nic_without_an_address_on_an_ipv6_only_plan_keeps_only_ipv6_link_local(square):
    n = copy.deepcopy(square["only"]["nodes"]["c1"])
    n["interfaces"].append({"name": "eth9", "kind": "ethernet", "segment": "spare", "addresses": [],
                            "mtu": 9000})
    text = ifupdown.ifupdown_files(n)[ifupdown.IFUPDOWN]
    assert text.endswith("\nauto eth9\niface eth9 inet6 manual\n    mtu 9000\n")
    keyfile = networkmanager.nm_files(n)["%s/beonet-eth9.nmconnection" % networkmanager.NM]
    assert keyfile.endswith("\n[ipv4]\nmethod=disabled\n\n[ipv6]\nmethod=link-local\n")
    assert networkd.networkd_files(n)["%s/60-beonet-eth9.network" % base.NETWORKD].endswith(
        "[Network]\nIPv6AcceptRA=no\n")


def test_netplan_ipv6_addresses_and_routes_with_their_source(square):
    n = square["only"]["nodes"]["a1"]
    doc = yaml.safe_load(netplan.netplan_files(n)[netplan.NETPLAN])["network"]
    bond = doc["bonds"]["bond0"]
    assert bond["addresses"] == ["%s/64" % n["address6"]] and bond["accept-ra"] is False
    assert "link-local" not in bond and bond["dhcp4"] is False
    assert bond["routes"] == [{"to": r["to"], "via": r["via"]}     # bond0 holds their source alone
                              for r in n["routes"] if r["dev"] == "bond0" and "nexthops" not in r]
    b1 = square["only"]["nodes"]["b1"]
    eth2 = yaml.safe_load(netplan.netplan_files(b1)[netplan.NETPLAN])["network"]["ethernets"]["eth2"]
    assert eth2["routes"] == [{"to": r["to"], "via": r["via"], "from": b1["address6"]}
                              for r in b1["routes"] if r["dev"] == "eth2" and "nexthops" not in r] != []
    assert "networkmanager" not in bond


def test_netplan_for_networkmanager_turns_ipv4_off_on_an_ipv6_only_plan(square):
    """netplan would write ipv4.method=link-local (an IPv4 link-local address) for a NIC
    without an IPv4 address: its keyfile passthrough turns IPv4 off instead."""

    def bond(stack):
        files = netplan.netplan_files(square[stack]["nodes"]["a1"], "networkmanager")
        return yaml.safe_load(files[netplan.NETPLAN])["network"]["bonds"]["bond0"]
    assert bond("only")["networkmanager"] == {"passthrough": {"ipv4.method": "disabled"}}
    assert "networkmanager" not in bond("dual")


def test_link_local_addresses_and_routes_are_ignored_by_apply_and_verify(small):
    n = small["nodes"]["a1"]
    assert is_link_local("fe80::1") and is_link_local("fe80::/64") and not is_link_local("10.0.0.1")
    assert not is_link_local("default") and not is_link_local("fd00::1")
    links = [{"ifname": i["name"], "flags": ["UP"], "mtu": i.get("mtu", 1500), "master": i.get("bond"),
              "address": i.get("mac", "")} for i in n["interfaces"]]
    addrs = [{"ifname": "bond0", "addr_info": [
        {"family": "inet", "local": n["interfaces"][-1]["addresses"][0].split("/")[0],
         "prefixlen": int(n["interfaces"][-1]["addresses"][0].split("/")[1])},
        {"family": "inet6", "local": "fe80::be:1", "prefixlen": 64}]}]
    routes = [{"dst": r["to"], "gateway": r["via"], "dev": r["dev"], "prefsrc": r["src"],
               "protocol": "250"} for r in n["routes"]]
    ll = [{"dst": "fe80::/64", "dev": "bond0", "protocol": "kernel"},
          {"dst": "fe80::/64", "gateway": "fe80::1", "dev": "bond0", "protocol": "250"}]
    actions, problems = node.runtime_actions(n, "a1", links, addrs, routes + ll)
    assert (actions, problems) == ([], [])
    assert node.routes_text(routes + ll) == node.routes_text(routes)
    planned, live = route_lines(n, routes + ll)
    assert planned == live


def test_stale_files_are_only_beonets_and_only_those_the_plan_dropped():
    recorded = "/etc/systemd/network/60-beonet-eth1.network\n/etc/netplan/60-beonet.yaml\n" \
               "/etc/passwd\nrelative-beonet\n\n"
    assert backends.stale_paths(recorded, ["/etc/netplan/60-beonet.yaml"]) == [
        "/etc/systemd/network/60-beonet-eth1.network"]
    assert backends.stale_paths(None, []) == []
    assert backends.record_text(["/b", "/a"]) == "/a\n/b\n"


def test_unmanaged_file_names_every_cluster_nic():
    files = networkmanager.unmanaged_file(["bond0", "eth1"])
    assert files[networkmanager.NM_UNMANAGED].endswith(
        "[keyfile]\nunmanaged-devices+=interface-name:bond0,interface-name:eth1\n")
    assert networkmanager.unmanaged_file([]) == {}


def _tree(root, files):
    for path, text in files.items():
        p = root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _run(lib, monkeypatch, tmp_path, params, n, check_mode=False):
    """The module on a blank node whose files live under tmp_path/root."""
    root = tmp_path / "root"
    monkeypatch.setattr(lib, "NODE_ROOT", str(root))
    monkeypatch.setattr(lib, "read_text", lambda p: _read(root, p))
    monkeypatch.setattr(lib, "atomic_write", lambda p, text, mode: _tree(root, {p: text}))
    monkeypatch.setattr(lib, "_remove", lambda p: (root / p.lstrip("/")).unlink())
    monkeypatch.setattr(lib.beonet, "live_tso", lambda _n: {})
    fake = _FakeModule(lib, params, _blank_node(n), check_mode)
    # sysctls go to /proc on a node: here to the recorded commands, never the host's
    monkeypatch.setattr(lib.beonet, "_write_sysctl",
                        lambda text: fake.commands.append(["sysctl", "-w", text]))
    fake.params["prefixes"] = []
    monkeypatch.setattr(lib, "AnsibleModule", lambda **_: fake)
    with pytest.raises(_Exit) as exc:
        lib.main()
    return exc.value.result


def _read(root, path):
    p = root / path.lstrip("/")
    return p.read_text() if p.is_file() else None


def _enabled(unit):
    return {"/lib/systemd/system/%s" % unit: "",
            "/etc/systemd/system/multi-user.target.wants/%s" % unit: ""}


def test_the_module_detects_the_manager_removes_stale_files_and_records_its_own(
        lib, monkeypatch, tmp_path, small):
    n = small["nodes"]["a1"]
    old = "/etc/systemd/network/60-beonet-old.network"
    _tree(tmp_path / "root", {**_enabled("NetworkManager.service"), **_enabled("systemd-networkd.service"),
                              old: "x", backends.RECORD_PATH: old + "\n/etc/keep-me\n",
                              "/etc/keep-me": "y"})
    params = {"node": "a1", "plan": n, "plan_format": nodeplan.PLAN_FORMAT, "prefixes": []}
    result = _run(lib, monkeypatch, tmp_path, params, n)
    assert result["backend"] == "networkmanager" and result["removed"] == [old]
    assert not (tmp_path / "root" / old.lstrip("/")).exists()
    assert (tmp_path / "root/etc/keep-me").exists()
    record = _read(tmp_path / "root", backends.RECORD_PATH).splitlines()
    assert record == sorted(node.persistent_files(n, [], "networkmanager"))
    assert backends.stale_paths("\n".join(record), record) == []     # a second run removes nothing


def test_another_backend_tells_networkmanager_to_leave_the_cluster_nics(lib, monkeypatch,
                                                                         tmp_path, small):
    n = small["nodes"]["a1"]
    _tree(tmp_path / "root", _enabled("NetworkManager.service"))
    params = {"node": "a1", "plan": n, "plan_format": nodeplan.PLAN_FORMAT, "prefixes": [],
              "backend": "networkd"}
    result = _run(lib, monkeypatch, tmp_path, params, n, check_mode=True)
    assert networkmanager.NM_UNMANAGED in result["files"]
    assert json.dumps(result)   # serialisable


def test_the_module_refuses_a_node_where_nothing_brings_the_nics_up(lib, monkeypatch,
                                                                     tmp_path, small):
    n = small["nodes"]["a1"]
    _tree(tmp_path / "root", {"/lib/systemd/system/systemd-networkd.service": ""})
    params = {"node": "a1", "plan": n, "plan_format": nodeplan.PLAN_FORMAT, "prefixes": [],
              "validate_only": True}
    root = tmp_path / "root"
    monkeypatch.setattr(lib, "NODE_ROOT", str(root))
    fake = _FakeModule(lib, params, _blank_node(n), True)
    monkeypatch.setattr(lib, "AnsibleModule", lambda **_: fake)
    monkeypatch.setattr(lib.beonet, "live_tso", lambda _n: {})
    with pytest.raises(_Exit) as exc:
        lib.main()
    assert exc.value.failed and not exc.value.result["changed"]
    assert exc.value.result["msg"].startswith(
        "a1: nothing would bring the cluster NICs up at boot (found: NetworkManager.service absent; "
        "networking.service absent; systemd-networkd.service disabled; /etc/network/interfaces absent)")
    assert "systemctl enable systemd-networkd" in exc.value.result["msg"]
    assert "set beonet_node_backend" in exc.value.result["msg"]
    assert [c for c in fake.commands if c[:2] not in (["ip", "-j"], ["nft", "list"])] == []
