"""Detecting the node's network manager: the decision table over fake snapshots,
and the probe over fake file trees."""

import os

import pytest

from beonet.agent import netmanager as nm
from beonet.agent.netmanager import Snapshot

NICS = ["bond0", "eth1", "eth2"]
ON, OFF, NONE = "enabled", "disabled", "absent"
SOURCES = "auto lo\niface lo inet loopback\nsource /etc/network/interfaces.d/*\n"


def _units(networkd=OFF, manager=NONE, ifupdown=NONE):
    return {"systemd-networkd.service": networkd, "NetworkManager.service": manager,
            "networking.service": ifupdown}


@pytest.mark.parametrize("snap,backend,renderer", [
    # Ubuntu server: netplan (cloud-init's file names only the management NIC)
    (Snapshot(_units(ON), True, {"/etc/netplan/50-cloud-init.yaml":
                                 "network:\n  ethernets:\n    eth0:\n      dhcp4: true\n"}),
     "netplan", "networkd"),
    # Ubuntu desktop: netplan rendering for NetworkManager
    (Snapshot(_units(OFF, ON), True, {"/etc/netplan/01-nm.yaml":
                                      "network:\n  version: 2\n  renderer: NetworkManager\n"}),
     "netplan", "networkmanager"),
    # RHEL family, Raspberry Pi OS: NetworkManager
    (Snapshot(_units(OFF, ON)), "networkmanager", "networkd"),
    # netplan installed without a configuration does nothing at boot
    (Snapshot(_units(OFF, ON), True, {}), "networkmanager", "networkd"),
    # networkd enabled on purpose
    (Snapshot(_units(ON, NONE, ON), interfaces=SOURCES), "networkd", "networkd"),
    # stock Debian server: ifupdown
    (Snapshot(_units(OFF, NONE, ON), interfaces=SOURCES), "ifupdown", "networkd"),
])
def test_decision_table(snap, backend, renderer):
    d = nm.decide("n1", snap, ["eth1"], bonds=False)
    assert (d.backend, d.renderer, d.problems) == (backend, renderer, [])


def test_nothing_at_boot_is_refused_naming_the_node_what_was_found_and_both_ways_out():
    d = nm.decide("n1", Snapshot(_units(OFF)), NICS, bonds=True)
    assert d.backend is None
    assert d.problems == [
        "n1: nothing would bring the cluster NICs up at boot (found: NetworkManager.service absent; "
        "networking.service absent; systemd-networkd.service disabled; /etc/network/interfaces "
        "absent); enable a network manager (for example 'systemctl enable systemd-networkd') or "
        "set beonet_node_backend to networkd, networkmanager, netplan or ifupdown"]
    # ifupdown without networking.service enabled brings nothing up either
    assert nm.decide("n1", Snapshot(_units(OFF, NONE, OFF), interfaces=SOURCES), NICS, False).backend is None


def test_an_explicit_backend_overrides_detection():
    d = nm.decide("n1", Snapshot(_units(OFF)), NICS, bonds=False, requested="networkd")
    assert (d.backend, d.problems) == ("networkd", [])


def test_ifupdown_needs_interfaces_d_sourced_and_ifenslave_for_bonds():
    snap = Snapshot(_units(OFF, NONE, ON), interfaces="auto lo\niface lo inet loopback\n")
    d = nm.decide("n1", snap, NICS, bonds=True)
    assert d.problems == [
        "n1: /etc/network/interfaces does not read /etc/network/interfaces.d (add the line "
        "'source /etc/network/interfaces.d/*')",
        "n1: the plan's bonds need ifupdown's bonding support: install the ifenslave package"]
    for line in ("source /etc/network/interfaces.d/*", "source-directory interfaces.d",
                 "source-directory /etc/network/interfaces.d/"):
        snap = Snapshot(_units(OFF, NONE, ON), interfaces=line + "\n", ifenslave=True)
        assert nm.decide("n1", snap, NICS, bonds=True).problems == []


def test_a_conflicting_ifupdown_stanza_or_netplan_file_is_refused_by_name():
    snap = Snapshot(_units(ON, NONE, ON), interfaces=SOURCES + "allow-hotplug eth1\niface eth1 inet dhcp\n",
                    interfaces_d={"/etc/network/interfaces.d/50-cloud-init": "auto eth2 # x\n"},
                    netplan={"/etc/netplan/50-cloud-init.yaml": "network:\n  ethernets:\n    eth2:\n"
                                                                "      dhcp4: true\n"})
    d = nm.decide("n1", snap, NICS, bonds=False)
    assert [p.split(": ifupdown")[0].split(": netplan")[0] for p in d.problems] == [
        "n1: /etc/network/interfaces:4 names eth1", "n1: /etc/network/interfaces:5 names eth1",
        "n1: /etc/network/interfaces.d/50-cloud-init:1 names eth2"]
    snap.netplan_installed = True
    d = nm.decide("n1", snap, NICS, bonds=False, requested="networkd")
    assert "n1: /etc/netplan/50-cloud-init.yaml names eth2: netplan manages that NIC" in "\n".join(d.problems)


def test_networkmanager_leaves_the_nics_to_another_backend_or_yields_to_beonets_profile():
    dhcp = {"/etc/NetworkManager/system-connections/Wired.nmconnection":
            "[connection]\nid=Wired\ntype=ethernet\ninterface-name=eth1\n\n[ipv4]\nmethod=auto\n"}
    d = nm.decide("n1", Snapshot(_units(ON, ON), nm_connections=dhcp), NICS, False, "networkd")
    assert d.unmanage == NICS and d.notes == []
    d = nm.decide("n1", Snapshot(_units(OFF, ON), nm_connections=dhcp), NICS, False)
    assert d.backend == "networkmanager" and d.unmanage == []
    assert d.notes == ["n1: /etc/NetworkManager/system-connections/Wired.nmconnection names eth1: "
                       "beonet's profile takes precedence (autoconnect-priority)"]
    # netplan rendering for NetworkManager is NetworkManager's own profile: nothing to unmanage
    nm_netplan = Snapshot(_units(OFF, ON), True,
                          {"/etc/netplan/01.yaml": "network:\n  renderer: NetworkManager\n"})
    assert nm.decide("n1", nm_netplan, NICS, False).unmanage == []
    # no NetworkManager: nothing to tell it
    assert nm.decide("n1", Snapshot(_units(ON)), NICS, False).unmanage == []


def _tree(root, files):
    for path, target in files.items():
        p = root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        if target.startswith("->"):
            os.symlink(target[2:], p)
        else:
            p.write_text(target)


def test_probe_reads_units_and_files_from_a_tree(tmp_path):
    _tree(tmp_path, {
        "/lib/systemd/system/systemd-networkd.service": "",
        "/etc/systemd/system/multi-user.target.wants/systemd-networkd.service":
            "->/lib/systemd/system/systemd-networkd.service",
        "/usr/lib/systemd/system/NetworkManager.service": "",
        "/etc/systemd/system/NetworkManager.service": "->/dev/null",
        "/lib/systemd/system/networking.service": "",
        "/etc/network/interfaces": SOURCES,
        "/etc/network/interfaces.d/60-beonet": "auto bond0\n",
        "/etc/network/interfaces.d/other": "auto eth9\n",
        "/usr/sbin/netplan": "", "/etc/netplan/60-beonet.yaml": "x", "/etc/netplan/50-a.yaml": "y",
        "/sbin/ifenslave": "",
        "/etc/NetworkManager/system-connections/beonet-eth1.nmconnection": "x",
    })
    snap = nm.probe(str(tmp_path))
    assert snap.units == {"systemd-networkd.service": "enabled", "NetworkManager.service": "masked",
                          "networking.service": "disabled"}
    assert snap.netplan_installed and snap.netplan == {"/etc/netplan/50-a.yaml": "y"}
    assert snap.interfaces == SOURCES and snap.ifenslave
    assert snap.interfaces_d == {"/etc/network/interfaces.d/other": "auto eth9\n"}
    assert snap.nm_connections == {}            # beonet's own files are not claims
    empty = nm.probe(str(tmp_path / "nothing"))
    assert empty == Snapshot(_units(NONE)) and nm.decide("n1", empty, NICS, False).backend is None


def test_nm_devices_reads_terse_nmcli_output():
    text = "eth1:lab-dhcp\nbond0:beonet-bond0\nlo:\neth9:a\\:b\nens3:--\n\n"
    assert nm.nm_devices(text) == {"eth1": "lab-dhcp", "bond0": "beonet-bond0", "lo": "",
                                           "eth9": "a:b", "ens3": ""}


def test_a_cluster_nic_held_by_another_profile_is_given_beonets():
    n = {"interfaces": [{"name": "eth1", "kind": "ethernet", "bond": "bond0"},
                        {"name": "bond0", "kind": "bond"},
                        {"name": "eth3", "kind": "ethernet"},
                        {"name": "eth4", "kind": "ethernet"}]}
    active = {"eth1": "Wired connection 1", "bond0": "lab-dhcp", "eth3": "beonet-eth3", "eth4": "",
              "ens16": "mgmt"}
    # bonds and plain NICs first, then members; a NIC on no profile gets beonet's too (the
    # external connection NetworkManager makes for it next would hold it); beonet's is left
    assert nm.nm_takeovers(n, active) == ["beonet-bond0", "beonet-eth4", "beonet-eth1"]
    assert nm.nm_takeovers(n, {}) == []


def test_an_active_profile_whose_keyfile_changed_is_activated_again_with_its_bonds_members():
    """NetworkManager keeps the routes of the old keyfile until the profile is activated again."""
    n = {"interfaces": [{"name": "eth1", "kind": "ethernet", "bond": "bond0"},
                        {"name": "eth2", "kind": "ethernet", "bond": "bond0"},
                        {"name": "bond0", "kind": "bond"},
                        {"name": "eth3", "kind": "ethernet"}]}
    active = {i["name"]: nm.nm_id(i["name"]) for i in n["interfaces"]}
    assert nm.nm_takeovers(n, active) == []
    assert nm.nm_takeovers(n, active, frozenset({"beonet-eth3"})) == ["beonet-eth3"]
    assert nm.nm_takeovers(n, active, frozenset({"beonet-bond0"})) == [
        "beonet-bond0", "beonet-eth1", "beonet-eth2"]
    assert nm.nm_takeovers(n, {}, frozenset({"beonet-eth3"})) == []
