"""The embedded Docker lab: one container per node, one Docker network per
segment, point-to-point link or bond channel, link rates enforced with tbf on
both ends. A tree's leaf switches are Docker bridges joined to a root bridge
by veth uplinks, shaped to the uplink rate, so the uplink is a real bottleneck.

Docker networks are only the wire: their addresses come from an underlay pool
and are flushed in the containers; the role adds the plan's addresses. Each
container NIC is matched to the plan by MAC address (never by order) and the
generated inventory maps the plan's logical names to the container's names.

`lab up` records in .lab/NAME/state.json what it creates on the host (lab
name, containers, networks, bridges, veths, DOCKER-USER rules); `lab down`
works from that record alone, so it needs neither the topology file nor the
plan it was built from.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from typing import Any

from ..compiler import pipeline
from ..outputs import plan as render
from .base import (
    DOCKER_STATE,
    LabError,
    Plan,
    Record,
    check_kind,
    lab_name,
    load_state,
    networks,
    node_networks,
    rate,
    remove_state,
    save_state,
    short,
    state_dir,
    tbf,
)
from .base import run as _host_run

__all__ = ["LabError", "down", "main", "up"]

IMAGE = os.environ.get("BEONET_IMAGE", "beonet-node:bookworm-2")
UNDERLAY = (100 << 24) | (64 << 16)      # 100.64.0.0/10: a /16 per lab, a /24 per network
LABEL = "beonet.lab"
STATE = DOCKER_STATE
Nets = dict[str, tuple[str, str]]


def _run(cmd: list[str], check: bool = True) -> str:
    return _host_run(cmd, check=check)


def _ok(cmd: list[str]) -> bool:
    """Whether cmd succeeds (its output is discarded)."""
    return subprocess.run(cmd, capture_output=True).returncode == 0


def _say(msg: str) -> None:
    print("beonet lab: %s" % msg, flush=True)


# ---------------------------------------------------------------- up

def up(topology: str, root: str, label: str | None = None) -> str:
    """Build the lab of a topology; returns the path of its inventory."""
    plan = render.plan(pipeline.compile_file(topology))
    lab = lab_name(plan, label)
    folder = state_dir(root, topology, label)
    _take_down_existing(lab, folder)
    if not _ok(["docker", "image", "inspect", IMAGE]):
        raise LabError("image %s missing: run scripts/build-image.sh" % IMAGE)
    nets = networks(plan, lab)
    save_state(folder, STATE, _record(plan, lab, nets, topology))
    _create_networks(lab, nets)
    _start_containers(plan, lab, nets)
    if plan.get("switches"):
        _tree_uplinks(plan, nets, lab)
    _say("matching NICs by MAC, flushing Docker's addresses and default route, shaping links")
    host_links = {link["ifindex"]: link["ifname"] for link in json.loads(_run(["ip", "-j", "link"]))}
    hosts = {name: {"ansible_host": "%s-%s" % (lab, name),
                    "beonet_interfaces": _prepare_node(plan, name, lab, nets, host_links)}
             for name in plan["nodes"]}
    path = os.path.join(folder, "inventory.yml")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(inventory(topology, lab, hosts), fh, indent=2)
    _say("up: %d containers; inventory %s" % (len(hosts), os.path.relpath(path, root)))
    return path


def _take_down_existing(lab: str, folder: str) -> None:
    """A lab saved in folder, or containers of the same lab name, go first."""
    check_kind(folder, STATE)
    record = load_state(folder, STATE) if os.path.exists(os.path.join(folder, STATE)) else None
    if record is None and _run(["docker", "ps", "-aq", "--filter", "label=%s=%s" % (LABEL, lab)]).strip():
        record = {"lab": lab}
    if record is not None:
        _say("%s exists; taking it down first" % record["lab"])
        _teardown(record)
        remove_state(folder)


def _host_bridges(plan: Plan, nets: Nets, lab: str) -> dict[str, tuple[str, bool]]:
    """{switch: (its bridge, True when the lab creates it on the host)}: leaf
    switches are Docker networks' bridges, root and aggregation switches not."""
    out = {}
    for sw in plan.get("switches") or {}:
        key = "switch:" + sw
        out[sw] = (nets[key][1], False) if key in nets else (short(lab, sw, "bn"), True)
    return out


def _uplinks(plan: Plan, lab: str) -> list[tuple[str, str, str, int]]:
    """[(switch, veth on its side, veth on its parent's side, uplink rate)]."""
    return [(sw, short(lab, sw, "ua"), short(lab, sw, "ub"), s["uplink_mbit"])
            for sw, s in (plan.get("switches") or {}).items() if s["parent"]]


def _bridge_rule(bridge: str) -> list[str]:
    """The DOCKER-USER rule that lets frames through one of the lab's own bridges."""
    return ["DOCKER-USER", "-i", bridge, "-o", bridge, "-j", "ACCEPT"]


def _record(plan: Plan, lab: str, nets: Nets, topology: str) -> Record:
    """What up() creates, saved before it creates anything: what down() removes."""
    bridges = [b for b, created in _host_bridges(plan, nets, lab).values() if created]
    return {"provider": "docker", "lab": lab, "topology": os.path.abspath(topology),
            "containers": ["%s-%s" % (lab, n) for n in plan["nodes"]],
            "networks": sorted(net for net, _ in nets.values()),
            # Deleting a veth deletes its peer; bridges go once nothing is enslaved.
            "links": [a for _, a, _, _ in _uplinks(plan, lab)] + bridges,
            "iptables": [_bridge_rule(b) for b in bridges]}


def _create_networks(lab: str, nets: Nets) -> None:
    _say("creating %d networks for %s" % (len(nets), lab))
    existing = _lab_subnets()
    first = _underlay(lab, existing)
    for i, (_, (net, bridge)) in enumerate(sorted(nets.items())):
        if existing.get(net, (None,))[0] == lab:
            _say("reusing network %s (the engine kept it, see `lab down`)" % net)
            continue
        base = first + (i << 8)
        sub = "%d.%d.%d.0/24" % (base >> 24, (base >> 16) & 255, (base >> 8) & 255)
        _run(["docker", "network", "create", "--driver", "bridge", "--subnet", sub,
              "--label", "%s=%s" % (LABEL, lab),
              "-o", "com.docker.network.bridge.name=%s" % bridge,
              "-o", "com.docker.network.bridge.enable_ip_masquerade=false", net])


def _start_containers(plan: Plan, lab: str, nets: Nets) -> None:
    _say("starting %d containers" % len(plan["nodes"]))
    for name in plan["nodes"]:
        links = node_networks(plan, name, nets)
        _run(["docker", "run", "-d", "--name", "%s-%s" % (lab, name), "--hostname", name,
              "--label", "%s=%s" % (LABEL, lab), "--network", links[0][1],
              # PID 1 that reaps zombies (daemonized benchmark servers leave them)
              "--init", "--cap-add", "NET_ADMIN", "--cap-add", "SYS_ADMIN",
              "--sysctl", "net.ipv4.ip_forward=0",
              "--sysctl", "net.ipv4.icmp_ratelimit=0",
              "--sysctl", "net.ipv4.conf.all.rp_filter=0",
              "--sysctl", "net.ipv4.conf.default.rp_filter=0",
              IMAGE, "sleep", "infinity"])
        for _, net in links[1:]:
            _run(["docker", "network", "connect", net, "%s-%s" % (lab, name)])


def _prepare_node(plan: Plan, name: str, lab: str, nets: Nets, host_links: dict[int, str]) -> dict[str, str]:
    """Match a container's NICs to the plan by MAC, flush Docker's addresses and
    default route, shape both ends of each link; returns {logical: real NIC}."""
    cont = "%s-%s" % (lab, name)
    info = json.loads(_run(["docker", "inspect", cont]))[0]
    macs = {net: v["MacAddress"] for net, v in info["NetworkSettings"]["Networks"].items()}
    live = json.loads(_run(["docker", "exec", cont, "ip", "-j", "link"]))
    by_mac = {link.get("address"): link for link in live}
    mapping = {}
    script = ["set -e", "mount -o remount,rw /proc/sys", "ip route del default 2>/dev/null || true"]
    for logical, net in node_networks(plan, name, nets):
        link = by_mac[macs[net]]
        mapping[logical] = link["ifname"]
        script.append("ip -4 addr flush dev %s" % link["ifname"])
        mbit = rate(plan, name, logical)
        if mbit:
            script.append(tbf(link["ifname"], mbit))
            peer = host_links.get(link.get("link_index"))
            if peer:
                _run(["sh", "-c", tbf(peer, mbit)])
    _run(["docker", "exec", cont, "sh", "-c", "\n".join(script)])
    return mapping


def inventory(topology: str, lab: str, hosts: dict[str, Any]) -> dict[str, Any]:
    """The Ansible inventory of the lab: the docker connection (no SSH, so no
    host keys to check), logical -> container NIC names."""
    return {"beonet_nodes": {
        "vars": {"ansible_connection": "community.docker.docker",
                 "ansible_python_interpreter": "/usr/bin/python3",
                 "beonet_topology_file": os.path.abspath(topology),
                 "beonet_management_interface": "none",
                 "beonet_lab": lab},
        "hosts": hosts}}


def _lab_subnets() -> dict[str, tuple[str | None, str]]:
    """{docker network name: (lab, subnet)} of every beonet lab network."""
    ids = _run(["docker", "network", "ls", "-q", "--filter", "label=" + LABEL]).split()
    out = {}
    for info in json.loads(_run(["docker", "network", "inspect", *ids])) if ids else []:
        cfg = (info.get("IPAM") or {}).get("Config") or [{}]
        out[info["Name"]] = ((info.get("Labels") or {}).get(LABEL), cfg[0].get("Subnet", ""))
    return out


def _underlay(lab: str, existing: dict[str, tuple[str | None, str]]) -> int:
    """First address of this lab's /16 of 100.64.0.0/10: the one its surviving
    networks use, else a free one (starting from a hash of the name), so labs
    running side by side never overlap."""
    def slot(subnet: str) -> int:
        a, b = subnet.split(".")[:2]
        return (int(a) << 24 | int(b) << 16) - UNDERLAY >> 16
    taken: dict[int, str | None] = {}
    for owner, subnet in existing.values():
        if subnet:
            taken.setdefault(slot(subnet), owner)
    mine = [k for k, owner in taken.items() if owner == lab]
    if mine:
        return UNDERLAY + (mine[0] << 16)
    start = int(hashlib.sha1(lab.encode()).hexdigest(), 16) % 64
    for k in range(64):
        free = (start + k) % 64
        if free not in taken:
            return UNDERLAY + (free << 16)
    raise LabError("all 64 underlay /16s of 100.64.0.0/10 are in use by other labs")


def _tree_uplinks(plan: Plan, nets: Nets, lab: str) -> None:
    """Root (and aggregation) switches as Linux bridges; veth uplinks shaped to
    the uplink rate on both ends."""
    bridge = _host_bridges(plan, nets, lab)
    for dev, created in bridge.values():
        if created:
            _run(["ip", "link", "add", dev, "type", "bridge"])
            _run(["ip", "link", "set", dev, "up"])
            rule = _bridge_rule(dev)
            # Docker's FORWARD policy drops bridged frames (br_netfilter) on
            # bridges it does not own: accept them on ours.
            if not _ok(["iptables", "-C", *rule]):
                _run(["iptables", "-I", *rule])
    for sw, a, b, mbit in _uplinks(plan, lab):
        _run(["ip", "link", "add", a, "type", "veth", "peer", "name", b])
        _run(["ip", "link", "set", a, "master", bridge[sw][0], "up"])
        _run(["ip", "link", "set", b, "master", bridge[plan["switches"][sw]["parent"]][0], "up"])
        for dev in (a, b):
            _run(["sh", "-c", tbf(dev, mbit)])


# ---------------------------------------------------------------- down

def _teardown(record: Record) -> tuple[int, int]:
    """Remove the lab a state record describes; (containers, networks) removed.
    Containers and networks are found by the lab's label, host links and
    DOCKER-USER rules are the record's, each removed only if still there."""
    lab = record["lab"]
    conts = _run(["docker", "ps", "-aq", "--filter", "label=%s=%s" % (LABEL, lab)]).split()
    for cont in conts:
        # One at a time: Docker 20.10 can lose count of a network's endpoints
        # when containers on it are removed concurrently.
        _run(["docker", "rm", "-f", cont])
    nets = _run(["docker", "network", "ls", "-q", "--filter", "label=%s=%s" % (LABEL, lab)]).split()
    _remove_networks(lab)
    for dev in record.get("links", []):
        if _ok(["ip", "link", "show", dev]):
            _run(["ip", "link", "del", dev])
    for rule in record.get("iptables", []):
        if _ok(["iptables", "-C", *rule]):
            _run(["iptables", "-D", *rule])
    return len(conts), len(nets)


def _remove_networks(lab: str) -> None:
    left: list[str] = []
    for attempt in range(5):
        # The engine can report endpoints of just-removed containers for a moment.
        left = _run(["docker", "network", "ls", "-q", "--filter", "label=%s=%s" % (LABEL, lab)]).split()
        if not left or _ok(["docker", "network", "rm", *left]):
            return
        time.sleep(0.5 * (attempt + 1))
    _say("warning: the engine still counts endpoints on %s although no container is "
         "attached (a Docker 20.10 bookkeeping bug); the next `lab up` of %s reuses it, "
         "restarting dockerd removes it" % (" ".join(left), lab))


def down(topology: str, root: str, name: str | None = None) -> None:
    """Take down the lab saved in .lab/NAME/ (the topology file is not read:
    only its name, for NAME when no name is given)."""
    folder = state_dir(root, topology, name)
    record = load_state(folder, STATE)
    if record is None:
        _say("down: nothing to do, no lab state in %s (0 containers, 0 networks)"
             % os.path.relpath(folder, root))
        return
    conts, nets = _teardown(record)
    remove_state(folder)
    _say("down: %s removed (%d containers, %d networks)" % (record["lab"], conts, nets))


def main(argv: list[str], name: str | None = None) -> int:
    action, topology = argv[0], argv[1]
    root = os.getcwd()
    try:
        if action == "up":
            up(topology, root, name)
        elif action == "down":
            down(topology, root, name)
        else:
            raise LabError("unknown action %s (up|down)" % action)
    except LabError as exc:
        print("beonet lab: %s" % exc, file=sys.stderr)
        return 1
    return 0
