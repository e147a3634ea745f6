"""The VM lab provider: one QEMU virtual machine per node, each booting its own
Debian kernel (so bonding, reboots and link failures are real).

Everything of a lab lives in one network namespace named after the lab: a
Linux bridge per segment, point-to-point link or bond channel (shared segments
and channels with ageing time 0, i.e. hubs), a tap device per VM NIC, the
management bridge, and the QEMU processes themselves (started inside the
namespace so they can open its taps). Nothing is attached to the host's own
network: Ansible reaches each VM's management NIC through an SSH ProxyCommand
that runs a relay inside the namespace.

Per VM: a qcow2 overlay on the cached base image (scripts/build-vm-image.sh),
direct kernel boot, a management NIC plus one virtio NIC per plan NIC with MACs
chosen here, a QEMU monitor socket (``beonet lab fault --link`` uses ``set_link``) and
the console log in the lab's state folder. Link rates are shaped with a
wire-like tbf on each tap's egress, i.e. on the frames a VM receives on that
NIC (tap ingress cannot be shaped with tbf), so every direction of every link
is limited once. On a shared segment (a hub or coax) each tap's ingress is
redirected instead to the segment's ifb device, shaped to the segment's rate,
so every frame on the segment passes one shaped point.

Shared with the Docker lab (base.py): lab and state-folder names, the saved
state record (vm.json, from which `lab down` and `lab link` work without the
topology file), which segment each NIC sits on, bridge names and the tbf
command.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import socket
import subprocess
import time
from typing import Any

from ..agent.names import shown
from ..agent.procs import alive
from ..compiler import pipeline
from ..compiler.errors import CompileError
from ..outputs import plan as render
from . import VM_IMAGES
from .base import (
    DEFAULT_MTU,
    VM_STATE,
    LabError,
    LabUsageError,
    Plan,
    Record,
    check_kind,
    clean,
    clear_delay_commands,
    has_delay,
    lab_name,
    lab_segments,
    load_state,
    media,
    medium_commands,
    mtu,
    networks,
    node_delay_commands,
    node_networks,
    port_commands,
    rate,
    remove_state,
    save_state,
    short,
    state_dir,
    tbf,
)
from .base import run as _host_run

CACHE = os.environ.get("BEONET_VM_CACHE", "/var/cache/beonet/vm")
# The VM lab's settings from the environment: (default, least, most); a default of
# None is the host's cores. BEONET_VM_TB_CACHE is TCG's translated-code cache per VM
# in MB: QEMU's default on an x86-64 host is 1 GiB, which a Debian guest fills, so
# each VM would hold about 1.5 GB and 14 of them most of a 24 GB machine.
# BEONET_VM_BOOT_PARALLEL: VMs booted at once; more TCG guests than the host has
# cores take longer in all than the same guests booted one core's worth at a time
# (docs/labs.md).
SETTINGS: dict[str, tuple[int | None, int, int]] = {
    "BEONET_VM_MEMORY": (384, 192, 65_536),
    "BEONET_VM_TB_CACHE": (128, 16, 4_096),
    "BEONET_VM_BOOT_TIMEOUT": (600, 10, 86_400),
    "BEONET_VM_BOOT_PARALLEL": (None, 1, 64),
}


def settings() -> dict[str, int]:
    """Every setting of SETTINGS, read and checked together before anything is made:
    one LabUsageError names each that is not a whole number in its range."""
    out: dict[str, int] = {}
    wrong = []
    for name, (default, least, most) in SETTINGS.items():
        text = os.environ.get(name, "")
        if not text:
            out[name] = default if default is not None else os.cpu_count() or 1
        elif text.isascii() and text.isdigit() and len(text) <= 9 and least <= int(text) <= most:
            out[name] = int(text)
        else:
            wrong.append("%s: %s is not a whole number from %d to %d" % (name, shown(text), least, most))
    if wrong:
        raise LabUsageError("; ".join(wrong))
    return out


# Units a lab node does not need, masked from the kernel command line: every VM boots
# under TCG, and these take CPU from the others (a VM alone booted to multi-user in 76 s
# with them masked against 98 s). Nothing of the network's own services is among them.
BOOT_MASKED = ("getty@tty1.service", "serial-getty@ttyS0.service", "kmod-static-nodes.service",
               "systemd-binfmt.service", "proc-sys-fs-binfmt_misc.automount", "dev-hugepages.mount",
               "dev-mqueue.mount", "sys-kernel-debug.mount", "sys-kernel-tracing.mount",
               "sys-kernel-config.mount", "sys-fs-fuse-connections.mount", "modprobe@drm.service",
               "modprobe@fuse.service", "modprobe@configfs.service", "modprobe@efi_pstore.service",
               "systemd-pstore.service", "systemd-journal-flush.service", "e2scrub_reap.service")
MGMT_NET = (198 << 24) | (18 << 16)        # 198.18.0.0/16 inside the lab's namespace only
MGMT_PREFIX = 16
MGMT_HOST = MGMT_NET + 1                   # the namespace's end of the management bridge
MGMT_BRIDGE = "mgmt0"
IMAGES = VM_IMAGES
NIC_SLOT = 0x10                            # PCI slot of the management NIC; plan NICs follow
STATE = VM_STATE
PROC = "/proc"                             # where QEMU processes are looked for (a folder in tests)

# A relay from SSH's stdin/stdout to host:port, run inside the lab namespace
# as the ProxyCommand (stdlib only; the host has neither nc nor socat).
PROXY = r"""import os, selectors, socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.settimeout(None)
sel = selectors.DefaultSelector()
sel.register(0, selectors.EVENT_READ)
sel.register(s, selectors.EVENT_READ)
while True:
    for key, _ in sel.select():
        if key.fileobj == 0:
            data = os.read(0, 65536)
            if not data:
                s.shutdown(socket.SHUT_WR)
                sel.unregister(0)
                continue
            s.sendall(data)
        else:
            data = s.recv(65536)
            if not data:
                sys.exit(0)
            os.write(1, data)
"""


def _say(msg: str) -> None:
    print("beonet lab (vm): %s" % msg, flush=True)


def _ip(n: int) -> str:
    return "%d.%d.%d.%d" % (n >> 24, (n >> 16) & 255, (n >> 8) & 255, n & 255)


def mac(lab_name: str, node_index: int, nic_index: int) -> str:
    """Locally administered unicast MAC, unique per (node, NIC) in a lab and
    different between labs: 52:54 (QEMU's range), a lab byte, the node index
    (16 bits), the NIC index (0 = management)."""
    lab_byte = int(hashlib.sha1(lab_name.encode()).hexdigest()[:2], 16)
    if node_index >= 1 << 16 or nic_index >= 1 << 8:
        raise LabError("too many nodes or NICs for the VM lab's MAC scheme")
    return "52:54:%02x:%02x:%02x:%02x" % (lab_byte, node_index >> 8, node_index & 255, nic_index)


def mgmt_address(node_index: int) -> str:
    """The management address of a VM (198.18.0.0/16, .1 is the namespace)."""
    if node_index + 10 >= (1 << (32 - MGMT_PREFIX)) - 1:
        raise LabError("too many nodes for the management network")
    return _ip(MGMT_NET + 10 + node_index)


def _bridges(plan: Plan, name: str) -> dict[str, tuple[str, bool]]:
    """{network name: (bridge, hub)}: the lab's wires (base.networks) as
    bridges; LANs and bond channels are hubs."""
    out = {}
    for seg, (net, bridge) in networks(plan, name).items():
        kind = plan["segments"].get(seg, {}).get("kind", "lan")
        out[net] = (bridge, kind != "p2p")
    return out


def layout(plan: Plan, name: str) -> dict[str, Any]:
    """Everything up() creates, as data: bridges, shared media (an ifb device
    per hub or coax segment: its rate and MTU), and per VM its management MAC
    and address and its plan NICs (logical name, bridge, tap, MAC, rate, MTU,
    the medium it sends through or None), and the segments `lab fault` cuts
    (base.lab_segments)."""
    if plan.get("switches"):
        raise LabError("the VM provider does not build switch trees (uplink bridges); "
                       "use the Docker lab (beonet lab up) for tree topologies")
    bridges = _bridges(plan, name)
    vms: dict[str, dict[str, Any]] = {}
    wires = networks(plan, name)
    shared = {wires[seg][0]: ifb for seg, ifb in media(plan, name).items()}
    key = {net: k for k, (net, _) in wires.items()}
    ports: list[tuple[str, str, str, str | None]] = []
    for i, node in enumerate(plan["nodes"]):
        nics = []
        for k, (logical, net) in enumerate(node_networks(plan, node, wires), 1):
            ports.append((node, logical, key[net], logical))
            nics.append({"logical": logical, "bridge": bridges[net][0],
                         "tap": short(name, "%s/%s" % (node, logical), "vt"),
                         "mac": mac(name, i, k), "rate_mbit": rate(plan, node, logical),
                         "mtu": mtu(plan, node, logical), "ifb": shared.get(net)})
        vms[node] = {"index": i, "mgmt_mac": mac(name, i, 0), "mgmt_address": mgmt_address(i),
                     "mgmt_tap": short(name, node + "/mgmt", "vt"), "nics": nics}
    used = {nic["bridge"] for vm in vms.values() for nic in vm["nics"]}
    segs = plan["segments"]
    return {"bridges": {b: hub for b, hub in bridges.values() if b in used}, "vms": vms,
            "segments": lab_segments(plan, ports),
            "media": {ifb: {"rate_mbit": segs[seg]["rate_mbit"], "mtu": segs[seg]["mtu"]}
                      for seg, ifb in sorted(media(plan, name).items())}}


def check_mgmt_overlap(plan: Plan) -> None:
    """The management network must not overlap the plan's prefixes."""
    lo, hi = MGMT_NET, MGMT_NET + (1 << (32 - MGMT_PREFIX)) - 1
    for seg, s in plan["segments"].items():
        if "prefix" not in s:
            continue
        addr, length = s["prefix"].split("/")
        a = sum(int(x) << (24 - 8 * k) for k, x in enumerate(addr.split(".")))
        b = a + (1 << (32 - int(length))) - 1
        if a <= hi and b >= lo:
            raise LabError("segment %s (%s) overlaps the VM lab's management network %s/%d"
                           % (seg, s["prefix"], _ip(MGMT_NET), MGMT_PREFIX))


def machine_id(lab_name: str, node: str) -> str:
    """A machine-id per VM, stable across reboots. All VMs share one base image;
    with one machine-id, systemd gives every node's bond0 the same MAC address."""
    return hashlib.sha256(("%s/%s" % (lab_name, node)).encode()).hexdigest()[:32]


def kernel_cmdline(node: str, vm: dict[str, Any], pubkey: str, lab_name: str) -> str:
    """The guest's kernel command line: root disk, serial console, hostname,
    machine-id, root's SSH key and the management NIC (read by beonet-vm-boot
    in the image), and the units masked for a faster boot."""
    key = pubkey.split()[1]
    return ("root=/dev/vda rw console=ttyS0 quiet systemd.hostname=%s systemd.machine_id=%s "
            "beonet.key=%s beonet.mgmt=%s,%s/%d %s"
            % (node, machine_id(lab_name, node), key, vm["mgmt_mac"], vm["mgmt_address"],
               MGMT_PREFIX, " ".join("systemd.mask=" + unit for unit in BOOT_MASKED)))


def qemu_argv(node: str, vm: dict[str, Any], image_dir: str, state: str, pubkey: str, lab_name: str,
              memory_mb: int, tb_cache_mb: int) -> list[str]:
    """The QEMU command that boots one VM (daemonized, inside the lab namespace)."""
    argv = ["qemu-system-x86_64", "-name", node, "-machine", "pc",
            "-accel", "tcg,tb-size=%d" % tb_cache_mb,
            "-cpu", "max", "-smp", "1", "-m", str(memory_mb),
            "-nodefaults", "-no-user-config", "-display", "none",
            "-kernel", os.path.join(image_dir, "vmlinuz"),
            "-initrd", os.path.join(image_dir, "initrd.img"),
            "-append", kernel_cmdline(node, vm, pubkey, lab_name),
            "-drive", "file=%s,if=virtio,format=qcow2,cache=unsafe" % os.path.join(state, node + ".qcow2"),
            "-serial", "file:%s" % os.path.join(state, node + ".console"),
            "-monitor", "unix:%s,server,nowait" % os.path.join(state, node + ".mon"),
            "-pidfile", os.path.join(state, node + ".pid"), "-daemonize"]
    nics = [("mgmt", vm["mgmt_tap"], vm["mgmt_mac"])] + [
        (n["logical"], n["tap"], n["mac"]) for n in vm["nics"]]
    for k, (nid, tap, address) in enumerate(nics):
        argv += ["-netdev", "tap,id=%s,ifname=%s,script=no,downscript=no" % (nid, tap),
                 "-device", "virtio-net-pci,netdev=%s,mac=%s,addr=0x%x" % (nid, address, NIC_SLOT + k)]
    return argv


def proxy_command(netns: str, state: str) -> str:
    """The ProxyCommand: the relay script (written by up()) run in the namespace."""
    return "ip netns exec %s python3 %s %%h %%p" % (netns, shlex.quote(os.path.join(state, "proxy.py")))


def ssh_options(netns: str, key: str, control_dir: str | None = None) -> list[str]:
    """SSH options reaching a VM through a relay inside the lab namespace."""
    proxy = proxy_command(netns, os.path.dirname(key))
    opts = ["-o", "ProxyCommand=%s" % proxy, "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-o", "IdentitiesOnly=yes", "-i", key]
    if control_dir:
        opts += ["-o", "ControlMaster=auto", "-o", "ControlPersist=60s",
                 "-o", "ControlPath=%s/%%C" % control_dir]
    return opts


def inventory(plan: Plan, topology: str, name: str, netns: str, key: str, layout_: dict[str, Any],
              mapping: dict[str, dict[str, str]], mgmt_names: dict[str, str],
              images: dict[str, str]) -> dict[str, Any]:
    """The Ansible inventory: SSH through the namespace, the real management NIC
    (never touched by site.yml), logical -> real NIC names, the backend."""
    proxy = proxy_command(netns, os.path.dirname(key))
    common = ("-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "
              "-o IdentitiesOnly=yes -o ProxyCommand=%s" % shlex.quote(proxy))
    hosts = {}
    for node, vm in layout_["vms"].items():
        h = {"ansible_host": vm["mgmt_address"], "beonet_interfaces": mapping[node],
             "beonet_management_interface": mgmt_names[node],
             "beonet_vm_monitor": os.path.join(os.path.dirname(key), node + ".mon"),
             "beonet_vm_image": images[node]}
        hosts[node] = h
    return {"beonet_nodes": {
        "vars": {"ansible_connection": "ssh", "ansible_user": "root",
                 "ansible_ssh_private_key_file": key,
                 "ansible_ssh_common_args": common,
                 "ansible_control_path_dir": os.path.join(os.path.dirname(key), "cp"),
                 "ansible_python_interpreter": "/usr/bin/python3",
                 "beonet_topology_file": os.path.abspath(topology),
                 "beonet_lab": name, "beonet_lab_provider": "vm", "beonet_lab_netns": netns},
        "hosts": hosts}}


def _run(cmd: list[str], check: bool = True, stdin: str | None = None) -> str:
    return _host_run(cmd, check=check, stdin=stdin)


def _ns(netns: str, *cmd: str) -> list[str]:
    return ["ip", "netns", "exec", netns, *cmd]


def _require(binary: str, package: str) -> None:
    if subprocess.run(["sh", "-c", "command -v %s" % binary], capture_output=True).returncode:
        raise LabError("%s not found: run scripts/build-vm-image.sh (installs %s)" % (binary, package))


def parse_node_images(text: str | None) -> dict[str, str]:
    """``NODE=IMAGE,NODE=IMAGE`` (the --node-images option) as a dict."""
    out = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        node, sep, image = item.partition("=")
        if not sep or not node.strip() or not image.strip():
            raise LabUsageError("--node-images: %r is not NODE=IMAGE" % item)
        out[node.strip()] = image.strip()
    return out


def _images(plan: Plan, image: str, node_images: dict[str, str]) -> dict[str, str]:
    """{node: image variant}: node_images where given, else image."""
    unknown = sorted(n for n in node_images if n not in plan["nodes"])
    if unknown:
        raise LabError("--node-images: no such node(s) in the topology: %s" % ", ".join(unknown))
    for what, value in [("--image", image)] + [("--node-images " + n, v) for n, v in node_images.items()]:
        if value not in IMAGES:
            raise LabError("%s: image %r is not one of %s" % (what, value, ", ".join(IMAGES)))
    return {node: node_images.get(node, image) for node in plan["nodes"]}


def _netns_exists(netns: str) -> bool:
    return os.path.exists("/run/netns/%s" % netns)


def _check_host(images: dict[str, str]) -> None:
    """The host tools and the cached base images the lab needs."""
    for tool, pkg in (("qemu-system-x86_64", "qemu-system-x86"), ("qemu-img", "qemu-utils"),
                      ("ssh-keygen", "openssh-client"), ("tc", "iproute2")):
        _require(tool, pkg)
    for v in sorted(set(images.values())):
        for f in ("disk.img", "vmlinuz", "initrd.img"):
            if not os.path.exists(os.path.join(CACHE, v, f)):
                raise LabError("VM image %s missing (%s): run scripts/build-vm-image.sh %s"
                               % (v, os.path.join(CACHE, v, f), v))


def record(name: str, topology: str, lay: dict[str, Any], images: dict[str, str],
           argv: dict[str, list[str]] | None = None) -> Record:
    """The lab's state record (vm.json): what `lab down`, `lab link` and `lab
    fault` need (a stopped VM starts again from its saved QEMU command)."""
    return {"provider": "vm", "lab": name, "netns": name, "topology": os.path.abspath(topology),
            "nodes": {n: {"image": images[n], "nics": [nic["logical"] for nic in vm["nics"]],
                          "address": vm["mgmt_address"], "qemu": (argv or {}).get(n, [])}
                      for n, vm in lay["vms"].items()},
            "segments": lay["segments"],
            "faults": {"nodes": [], "links": [], "cables": [], "switches": []}}


def up(topology: str, root: str, label: str | None = None, image: str = "networkd",
       node_images: dict[str, str] | None = None) -> str:
    """Boot the VM lab of a topology; returns the path of its inventory."""
    conf = settings()
    parallel = conf["BEONET_VM_BOOT_PARALLEL"]
    plan = render.plan(pipeline.compile_file(topology))
    name = lab_name(plan, label)
    check_mgmt_overlap(plan)
    lay = layout(plan, name)
    images = _images(plan, image, node_images or {})
    _check_host(images)
    state = state_dir(root, topology, label)
    check_kind(state, STATE)
    if _netns_exists(name) or os.path.exists(os.path.join(state, STATE)):
        old = load_state(state, STATE) or record(name, topology, lay, images)
        _say("%s exists; taking it down first" % old["lab"])
        _teardown(state, old)
    os.makedirs(os.path.join(state, "cp"), exist_ok=True)
    t0 = time.time()
    key = os.path.join(state, "id_ed25519")
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "beonet-%s" % name, "-f", key])
    with open(key + ".pub", encoding="utf-8") as fh:
        pubkey = fh.read().strip()
    with open(os.path.join(state, "proxy.py"), "w", encoding="utf-8") as fh:
        fh.write(PROXY)
    argv = {node: qemu_argv(node, vm, os.path.join(CACHE, images[node]), state, pubkey, name,
                            conf["BEONET_VM_MEMORY"], conf["BEONET_VM_TB_CACHE"])
            for node, vm in lay["vms"].items()}
    save_state(state, STATE, record(name, topology, lay, images, argv))
    _build_namespace(name, lay)
    _say("starting %d VMs, %d at a time (TCG, 1 vCPU, %d MB + %d MB of translated code each)"
         % (len(lay["vms"]), parallel, conf["BEONET_VM_MEMORY"], conf["BEONET_VM_TB_CACHE"]))
    nodes = list(lay["vms"])
    for first in range(0, len(nodes), parallel):
        wave = nodes[first:first + parallel]
        for node in wave:
            _run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b",
                  os.path.join(CACHE, images[node], "disk.img"), os.path.join(state, node + ".qcow2")])
            _run(_ns(name, *argv[node]))
        _wait_ssh(name, state, {"vms": {node: lay["vms"][node] for node in wave}}, key, time.time(),
                  conf["BEONET_VM_BOOT_TIMEOUT"])
    mapping, mgmt_names = _match_nics(name, state, lay)
    _set_delays(name, state, plan, lay, mapping)
    inv = inventory(plan, topology, name, name, key, lay, mapping, mgmt_names, images)
    path = os.path.join(state, "inventory.yml")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(inv, fh, indent=2)
    _say("up in %.0f s: %d VMs; inventory %s" % (time.time() - t0, len(lay["vms"]),
                                                  os.path.relpath(path, root)))
    return path


def namespace_script(lay: dict[str, Any]) -> list[str]:
    """The commands (run inside the new namespace) creating the management
    bridge, a bridge per wire, an ifb device per shared medium and a tap per VM
    NIC, shaped to its link rate on its egress (what the VM receives), or, on a
    shared segment, sending what the VM sends through the segment's medium."""
    script = ["ip link set lo up",
              "ip link add %s type bridge" % MGMT_BRIDGE,
              "ip addr add %s/%d dev %s" % (_ip(MGMT_HOST), MGMT_PREFIX, MGMT_BRIDGE),
              "ip link set %s up" % MGMT_BRIDGE]
    for bridge, hub in sorted(lay["bridges"].items()):
        script.append("ip link add %s type bridge%s" % (bridge, " ageing_time 0" if hub else ""))
        script.append("ip link set %s up" % bridge)
    for ifb, medium in sorted(lay.get("media", {}).items()):
        script += medium_commands(ifb, medium["rate_mbit"], medium["mtu"])
    for vm in lay["vms"].values():
        script += ["ip tuntap add dev %s mode tap" % vm["mgmt_tap"],
                   "ip link set %s master %s up" % (vm["mgmt_tap"], MGMT_BRIDGE)]
        for nic in vm["nics"]:
            script += ["ip tuntap add dev %s mode tap" % nic["tap"],
                       "ip link set %s master %s up" % (nic["tap"], nic["bridge"])]
            if nic.get("ifb"):
                script += port_commands(nic["tap"], nic["ifb"])
            elif nic["rate_mbit"]:
                script.append(tbf(nic["tap"], nic["rate_mbit"], nic.get("mtu", DEFAULT_MTU)))
    return script


def _build_namespace(name: str, lay: dict[str, Any]) -> None:
    _say("namespace %s: %d bridges, %d taps" % (
        name, len(lay["bridges"]) + 1, sum(1 + len(v["nics"]) for v in lay["vms"].values())))
    _run(["ip", "netns", "add", name])
    _run(_ns(name, "sh", "-ec", "\n".join(namespace_script(lay))))


def _match_nics(name: str, state: str,
                lay: dict[str, Any]) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """({node: {logical: real NIC}}, {node: management NIC}), matched by MAC."""
    _say("matching NICs by MAC")
    mapping, mgmt_names = {}, {}
    for node, vm in lay["vms"].items():
        links = json.loads(ssh(name, state, vm["mgmt_address"], "ip -j link"))
        by_mac = {link.get("address"): link["ifname"] for link in links}
        missing = [n["mac"] for n in vm["nics"] if n["mac"] not in by_mac]
        if missing or vm["mgmt_mac"] not in by_mac:
            raise LabError("%s: no NIC with MAC %s in the VM"
                           % (node, ", ".join(missing or [vm["mgmt_mac"]])))
        mapping[node] = {n["logical"]: by_mac[n["mac"]] for n in vm["nics"]}
        mgmt_names[node] = by_mac[vm["mgmt_mac"]]
    return mapping, mgmt_names


def _set_delays(name: str, state: str, plan: Plan, lay: dict[str, Any],
                mapping: dict[str, dict[str, str]]) -> None:
    """netem in each VM for the plan's per-hop delays; the commands are kept
    in the lab's state for a VM started again (`beonet lab fault --start`)."""
    if not has_delay(plan):
        return
    _say("per-hop delays: netem in each VM")
    saved = load_state(state, STATE) or {}
    for node, vm in lay["vms"].items():
        commands = node_delay_commands(plan, node, mapping[node])
        if commands:
            _delay_node(name, state, node, vm["mgmt_address"], commands)
        saved["nodes"][node]["delay"] = commands
    save_state(state, STATE, saved)


def _delay_node(netns: str, state: str, node: str, address: str, commands: list[str]) -> None:
    try:
        ssh(netns, state, address, "set -e\n" + "\n".join(commands))
    except LabError as exc:
        raise LabError("%s: the per-hop delays (netem) could not be set: %s" % (node, exc)) from exc


def set_delays(state: str, saved: Record, on: bool) -> int:
    """Turn the lab's per-hop delays off (netem and the marking table removed)
    or on again (the saved commands); returns the VMs changed."""
    changed = 0
    for node, vm in saved["nodes"].items():
        commands = vm.get("delay") or []
        if not commands:
            continue
        if not on:
            commands = clear_delay_commands(commands)
        _delay_node(saved["netns"], state, node, vm["address"], commands)
        changed += 1
    return changed


def ssh(netns: str, state: str, address: str, command: str, timeout: int = 30) -> str:
    key = os.path.join(state, "id_ed25519")
    proc = subprocess.run(["ssh", *ssh_options(netns, key), "-o", "BatchMode=yes",
                           "-o", "ConnectTimeout=5", "root@%s" % address, command],
                          capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode:
        raise LabError("ssh %s %r failed: %s" % (address, command, proc.stderr.strip()[-300:]))
    return proc.stdout


def _port_open(netns: str, address: str) -> bool:
    probe = ("import socket,sys\ns=socket.socket()\ns.settimeout(1)\n"
             "sys.exit(s.connect_ex((%r, 22)))" % address)
    return subprocess.run(_ns(netns, "python3", "-c", probe), capture_output=True).returncode == 0


def _wait_ssh(netns: str, state: str, lay: dict[str, Any], key: str, t0: float, timeout: float) -> None:
    """Wait until every VM answers on SSH, printing progress."""
    pending = dict(lay["vms"])
    last = 0.0
    while pending:
        for node in list(pending):
            pid = _pid(state, node)
            if pid is None or not _alive(pid):
                tail = _tail(os.path.join(state, node + ".console"))
                raise LabError("%s: QEMU exited while booting; console:\n%s" % (node, tail))
            if _port_open(netns, pending[node]["mgmt_address"]):
                try:
                    ssh(netns, state, pending[node]["mgmt_address"], "true", timeout=20)
                except (LabError, subprocess.TimeoutExpired):
                    continue
                del pending[node]
                _say("%s: ssh up after %.0f s" % (node, time.time() - t0))
        elapsed = time.time() - t0
        if pending and elapsed > timeout:
            node = sorted(pending)[0]
            raise LabError("%s: no SSH after %d s (BEONET_VM_BOOT_TIMEOUT); console tail:\n%s"
                           % (node, timeout, _tail(os.path.join(state, node + ".console"))))
        if pending and elapsed - last >= 10:
            last = elapsed
            _say("booting: %d of %d VMs answer SSH (%.0f s)"
                 % (len(lay["vms"]) - len(pending), len(lay["vms"]), elapsed))
        if pending:
            time.sleep(2)


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return "(no console log)"


def _pid(state: str, node: str) -> int | None:
    try:
        with open(os.path.join(state, node + ".pid"), encoding="utf-8") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """Whether QEMU runs under that pid (not another process given the pid since)."""
    if not alive(pid):
        return False
    try:
        with open(os.path.join(PROC, str(pid), "cmdline"), "rb") as fh:
            return b"qemu-system" in fh.read()
    except OSError:
        return False


def monitor(state: str, node: str, command: str, timeout: float = 5) -> str:
    """Send one command to a VM's QEMU monitor; return its reply."""
    path = os.path.join(state, node + ".mon")
    if not os.path.exists(path):
        raise LabError("%s: no monitor socket %s (is the VM lab up?)" % (node, path))
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(path)
    out = b""
    try:
        while b"(qemu)" not in out:
            out += s.recv(4096)
        s.sendall(command.encode() + b"\n")
        out = b""
        while out.count(b"(qemu)") < 1:
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
    finally:
        s.close()
    text = out.decode(errors="replace").replace("\r", "")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("(qemu)")
             and command not in line]
    return "\n".join(lines)


def set_nic_link(state: str, saved: Record, node: str, nic: str, down: bool) -> None:
    """Take a VM NIC's link down or up (QEMU monitor set_link: carrier loss).
    nic: a plan NIC (eth1, ...) or mgmt."""
    nics = saved["nodes"][node]["nics"] + ["mgmt"]
    if nic not in nics:
        raise LabError("%s has no NIC %s (plan NICs: %s)" % (node, nic, ", ".join(nics)))
    reply = monitor(state, node, "set_link %s %s" % (nic, "off" if down else "on"))
    if reply.strip():
        raise LabError("%s: set_link %s: %s" % (node, nic, reply.strip()))


def stop_node(state: str, node: str) -> bool:
    """Power a VM off at once, as a dead machine (QEMU exits: no shutdown in the
    guest). False when it was not running."""
    pid = _pid(state, node)
    if not pid or not _alive(pid):
        return False
    _stop([pid])
    return True


def start_node(state: str, saved: Record, node: str, timeout: float | None = None) -> float | None:
    """Boot a stopped VM again from its saved QEMU command (same disk, NICs and
    MACs); wait until it answers SSH. Returns the seconds it took, None when it
    was running. timeout: BEONET_VM_BOOT_TIMEOUT unless given."""
    pid = _pid(state, node)
    if pid and _alive(pid):
        return None
    if timeout is None:
        timeout = settings()["BEONET_VM_BOOT_TIMEOUT"]
    vm = saved["nodes"][node]
    if not vm.get("qemu"):
        raise LabError("%s: the lab's state has no QEMU command for it (built by an older "
                       "beonet): take the lab down and up again" % node)
    t0 = time.time()
    _run(_ns(saved["netns"], *vm["qemu"]))
    while not _port_open(saved["netns"], vm["address"]):
        if time.time() - t0 > timeout:
            raise LabError("%s: no SSH after %d s; console tail:\n%s"
                           % (node, timeout, _tail(os.path.join(state, node + ".console"))))
        time.sleep(2)
    if vm.get("delay"):
        _delay_node(saved["netns"], state, node, vm["address"], vm["delay"])
    return time.time() - t0


def _stop(pids: list[int]) -> None:
    """SIGTERM, up to 15 s, then SIGKILL, up to 5 s more."""
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    deadline = time.time() + 15
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.2)
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 5
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.2)
    left = [p for p in pids if _alive(p)]
    if left:
        raise LabError("QEMU processes %s did not exit" % left)


def _teardown(state: str, saved: Record) -> int:
    """Stop the record's VMs, delete its namespace (and with it every bridge and
    tap in it) and the state folder; returns how many QEMU processes ran."""
    pids = [p for p in (_pid(state, n) for n in saved["nodes"]) if p and _alive(p)]
    _stop(pids)
    if _netns_exists(saved["netns"]):
        _run(["ip", "netns", "del", saved["netns"]])
    remove_state(state)
    return len(pids)


def _orphans(state: str) -> list[int]:
    """QEMU processes started from a state folder that is gone (an interrupted run)."""
    mark = (os.path.abspath(state) + os.sep).encode()
    pids = []
    for entry in os.listdir(PROC):
        try:
            with open(os.path.join(PROC, entry, "cmdline"), "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if entry.isdigit() and b"qemu-system" in cmdline and mark in cmdline:
            pids.append(int(entry))
    return pids


def _down_without_state(topology: str, root: str, state: str, label: str | None) -> None:
    """No saved state: stop what an interrupted run may have left under the lab's
    name (its namespace, QEMU processes started from its folder), or say nothing is up."""
    name = clean(label) if label else None
    if name is None and os.path.exists(topology):
        try:
            name = lab_name(render.plan(pipeline.compile_file(topology)))
        except CompileError:        # a topology with errors names no lab
            name = None
    pids = _orphans(state)
    _stop(pids)
    if name and _netns_exists(name):
        _run(["ip", "netns", "del", name])
        _say("down: no lab state in %s; namespace %s and %d QEMU processes left by an "
             "interrupted run removed" % (os.path.relpath(state, root), name, len(pids)))
        return
    _say("down: nothing to do, no lab state in %s (%d QEMU processes)"
         % (os.path.relpath(state, root), len(pids)))


def down(topology: str, root: str, label: str | None = None) -> None:
    """Take down the VM lab saved in .lab/NAME/ (the topology file is read only
    when no state is saved; else only its name, for NAME when no name is given)."""
    state = state_dir(root, topology, label)
    saved = load_state(state, STATE)
    if saved is None:
        _down_without_state(topology, root, state, label)
        return
    count = _teardown(state, saved)
    _say("down: %s removed (%d QEMU processes, namespace with its bridges and taps)"
         % (saved["lab"], count))


def require_root() -> None:
    """LabError unless this process may make namespaces, taps and bridges."""
    if os.geteuid() != 0:
        raise LabError("the VM lab needs root (network namespaces, taps, bridges)")
