"""The embedded Docker lab: one container per node, one Docker network per
segment, point-to-point link or bond channel, link rates enforced with tbf on
both ends. A tree's leaf switches are Docker bridges joined to a root bridge
by veth uplinks, shaped to the uplink rate, so the uplink is a real bottleneck.

Docker networks are only the wire: their addresses come from an underlay pool
and are flushed in the containers; the role adds the plan's addresses. Each
container NIC is matched to the plan by MAC address (never by order) and the
generated inventory maps the plan's logical names to the container's names.
"""

import hashlib
import json
import os
import subprocess
import sys
import time

from ..compiler import pipeline
from ..outputs import plan as render

IMAGE = os.environ.get("BEONET_IMAGE", "beonet-node:bookworm-2")
UNDERLAY = (100 << 24) | (64 << 16)      # 100.64.0.0/10: a /16 per lab, a /24 per network
LABEL = "beonet.lab"


def _run(cmd, check=True, capture=True, stdin=None):
    proc = subprocess.run(cmd, capture_output=capture, text=True, check=False, input=stdin)
    if check and proc.returncode != 0:
        raise LabError("%s failed: %s" % (" ".join(cmd[:4]), (proc.stderr or "").strip()[-400:]))
    return proc.stdout if capture else ""


class LabError(Exception):
    pass


def _short(lab, name, prefix):
    """A Linux interface name (<= 15 characters) that is stable for lab + name."""
    digest = hashlib.sha1(("%s/%s" % (lab, name)).encode()).hexdigest()[:10]
    return "%s%s" % (prefix, digest)


def _clean(text):
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)


def lab_name(plan, name=None):
    """Container and network prefix: the given lab name, or beonet-<topology name>."""
    return _clean(name) if name else "beonet-" + _clean(plan["topology"]["name"])


def state_dir(root, topology, name=None):
    """Where a lab's inventory lives: .lab/<name>/ or .lab/beonet-<topology file stem>/."""
    stem = os.path.splitext(os.path.basename(topology))[0]
    return os.path.join(root, ".lab", _clean(name) if name else "beonet-" + stem)


def _say(msg):
    print("beonet lab: %s" % msg, flush=True)


def _networks(plan, lab):
    """Docker networks to create: {segment name: (docker network, bridge name)}.
    A tree's LAN becomes one network per leaf switch."""
    out = {}
    switches = plan.get("switches") or {}
    for seg, s in plan["segments"].items():
        if switches and s["kind"] == "lan":
            continue
        out[seg] = ("%s-%s" % (lab, seg), _short(lab, seg, "bn"))
    for sw, s in switches.items():
        if s["nodes"]:
            out["switch:" + sw] = ("%s-%s" % (lab, sw), _short(lab, sw, "bn"))
    return out


def _node_networks(plan, node, nets):
    """[(logical NIC, docker network)] for one node."""
    out = []
    n = plan["nodes"][node]
    for iface in n["interfaces"]:
        if iface["kind"] != "ethernet":
            continue
        seg = iface["segment"]
        key = seg if seg in nets else "switch:" + n.get("switch", "")
        out.append((iface.get("logical", iface["name"]), nets[key][0]))
    return out


def up(topology, root, lab_label=None):
    compiled = pipeline.compile_file(topology)
    plan = render.plan(compiled)
    lab = lab_name(plan, lab_label)
    if _run(["docker", "ps", "-aq", "--filter", "label=%s=%s" % (LABEL, lab)]).strip():
        _say("%s exists; taking it down first" % lab)
        down(topology, root, lab_label)
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        raise LabError("image %s missing: run scripts/build-image.sh" % IMAGE)
    nets = _networks(plan, lab)
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
    nodes = list(plan["nodes"])
    _say("starting %d containers" % len(nodes))
    for name in nodes:
        links = _node_networks(plan, name, nets)
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
    if plan.get("switches"):
        _tree_uplinks(plan, nets, lab)
    _say("matching NICs by MAC, flushing Docker's addresses and default route, shaping links")
    host_links = {l["ifindex"]: l["ifname"] for l in json.loads(_run(["ip", "-j", "link"]))}
    inventory = {}
    for name in nodes:
        cont = "%s-%s" % (lab, name)
        info = json.loads(_run(["docker", "inspect", cont]))[0]
        macs = {net: v["MacAddress"] for net, v in info["NetworkSettings"]["Networks"].items()}
        live = json.loads(_run(["docker", "exec", cont, "ip", "-j", "link"]))
        by_mac = {l.get("address"): l for l in live}
        mapping = {}
        script = ["set -e", "mount -o remount,rw /proc/sys",
                  "ip route del default 2>/dev/null || true"]
        for logical, net in _node_networks(plan, name, nets):
            link = by_mac[macs[net]]
            mapping[logical] = link["ifname"]
            script.append("ip -4 addr flush dev %s" % link["ifname"])
            rate = _rate(plan, name, logical)
            if rate:
                script.append(_tbf(link["ifname"], rate))
                peer = host_links.get(link.get("link_index"))
                if peer:
                    _run(["sh", "-c", _tbf(peer, rate)])
        _run(["docker", "exec", cont, "sh", "-c", "\n".join(script)])
        inventory[name] = {"ansible_host": cont, "beonet_interfaces": mapping}
    folder = state_dir(root, topology, lab_label)
    os.makedirs(folder, exist_ok=True)
    inv = {"beonet_nodes": {
        "vars": {"ansible_connection": "community.docker.docker",
                 "ansible_python_interpreter": "/usr/bin/python3",
                 "beonet_topology_file": os.path.abspath(topology),
                 "beonet_management_interface": "none",
                 "beonet_lab": lab},
        "hosts": inventory}}
    path = os.path.join(folder, "inventory.yml")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(inv, fh, indent=2)
    _say("up: %d containers; inventory %s" % (len(nodes), os.path.relpath(path, root)))
    return path


def _lab_subnets():
    """{docker network name: (lab, subnet)} of every beonet lab network."""
    ids = _run(["docker", "network", "ls", "-q", "--filter", "label=" + LABEL]).split()
    out = {}
    for info in json.loads(_run(["docker", "network", "inspect", *ids])) if ids else []:
        cfg = (info.get("IPAM") or {}).get("Config") or [{}]
        out[info["Name"]] = ((info.get("Labels") or {}).get(LABEL), cfg[0].get("Subnet", ""))
    return out


def _underlay(lab, existing):
    """First address of this lab's /16 of 100.64.0.0/10: the one its surviving
    networks use, else a free one (starting from a hash of the name), so labs
    running side by side never overlap."""
    def slot(subnet):
        a, b = subnet.split(".")[:2]
        return (int(a) << 24 | int(b) << 16) - UNDERLAY >> 16
    taken = {}
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


def _rate(plan, node, logical):
    for iface in plan["nodes"][node]["interfaces"]:
        if iface.get("logical", iface["name"]) == logical:
            return iface.get("rate_mbit")
    return None


def _tbf(dev, rate):
    burst = max(32, rate * 1000 // 8 // 100)      # ~10 ms of traffic, in kbit
    return ("tc qdisc replace dev %s root tbf rate %dmbit burst %dkbit latency 50ms"
            % (dev, rate, burst))


def _tree_uplinks(plan, nets, lab):
    """Root (and aggregation) switches as Linux bridges; veth uplinks shaped to
    the uplink rate on both ends."""
    switches = plan["switches"]
    bridge = {}
    for sw, s in switches.items():
        key = "switch:" + sw
        bridge[sw] = nets[key][1] if key in nets else _short(lab, sw, "bn")
        if key not in nets:
            _run(["ip", "link", "add", bridge[sw], "type", "bridge"])
            _run(["ip", "link", "set", bridge[sw], "up"])
            _allow_bridge(bridge[sw], True)
    for sw, s in switches.items():
        if not s["parent"]:
            continue
        a, b = _short(lab, sw, "ua"), _short(lab, sw, "ub")
        _run(["ip", "link", "add", a, "type", "veth", "peer", "name", b])
        _run(["ip", "link", "set", a, "master", bridge[sw], "up"])
        _run(["ip", "link", "set", b, "master", bridge[s["parent"]], "up"])
        for dev in (a, b):
            _run(["sh", "-c", _tbf(dev, s["uplink_mbit"])])


def _allow_bridge(bridge, add):
    """Docker's FORWARD policy drops bridged frames (br_netfilter) on bridges it
    does not own; accept them on ours, and remove the rule on teardown."""
    rule = ["DOCKER-USER", "-i", bridge, "-o", bridge, "-j", "ACCEPT"]
    present = subprocess.run(["iptables", "-C", *rule], capture_output=True).returncode == 0
    if add and not present:
        _run(["iptables", "-I", *rule])
    elif not add and present:
        _run(["iptables", "-D", *rule])


def down(topology, root, name=None):
    compiled = pipeline.compile_file(topology)
    plan = render.plan(compiled)
    lab = lab_name(plan, name)
    conts = _run(["docker", "ps", "-aq", "--filter", "label=%s=%s" % (LABEL, lab)]).split()
    for cont in conts:
        # One at a time: Docker 20.10 can lose count of a network's endpoints
        # when containers on it are removed concurrently.
        _run(["docker", "rm", "-f", cont])
    nets = _run(["docker", "network", "ls", "-q", "--filter", "label=%s=%s" % (LABEL, lab)]).split()
    for attempt in range(5):
        # The engine can report endpoints of just-removed containers for a moment.
        left = _run(["docker", "network", "ls", "-q", "--filter", "label=%s=%s" % (LABEL, lab)]).split()
        if not left:
            break
        if subprocess.run(["docker", "network", "rm", *left], capture_output=True).returncode == 0:
            break
        time.sleep(0.5 * (attempt + 1))
    else:
        _say("warning: the engine still counts endpoints on %s although no container is "
             "attached (a Docker 20.10 bookkeeping bug); the next `lab up` of %s reuses it, "
             "restarting dockerd removes it" % (" ".join(left), lab))
    for sw, s in (plan.get("switches") or {}).items():
        for prefix in ("ua", "bn"):
            dev = _short(lab, sw, prefix)
            if subprocess.run(["ip", "link", "show", dev], capture_output=True).returncode == 0:
                _run(["ip", "link", "del", dev])
            if prefix == "bn":
                _allow_bridge(dev, False)
    folder = state_dir(root, topology, name)
    path = os.path.join(folder, "inventory.yml")
    if os.path.exists(path):
        os.unlink(path)
        os.rmdir(folder)
    _say("down: %s removed (%d containers, %d networks)" % (lab, len(conts), len(nets)))


def main(argv, name=None):
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
