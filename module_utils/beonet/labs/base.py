"""What the Docker lab and the VM lab share: the lab's name and state folder,
the saved state record `lab down` works from, which wire each NIC sits on,
interface names, link rates, the wire-like tbf command and the shared media
(an ifb device per hub or coax segment), and running host commands.

A lab's state folder is .lab/NAME/, NAME being --name or beonet-<topology file
name without extension>, so `lab down` finds it without reading the topology.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any

from .. import gate
from ..agent.files import atomic_write
from ..agent.names import escaped, type_word

Plan = Mapping[str, Any]                 # a plan (outputs.plan.Plan) as the labs read it
Record = dict[str, Any]

DOCKER_STATE = "state.json"
STATE_BYTES = 64 << 20     # a 1,024-node lab's record takes about 2 MB
STATE_DEPTH = 16
VM_STATE = "vm.json"
# Each lab kind's state file, and what to run to take such a lab down.
STATE_FILES = {DOCKER_STATE: "a Docker lab: take it down with `beonet lab down` (no --provider vm)",
               VM_STATE: "a VM lab: take it down with `beonet lab down --provider vm`"}


class LabError(Exception):
    """A lab that cannot be built or taken down; the message says why."""


class LabUsageError(LabError):
    """A lab command given options that do not go together; the message says which."""


def run(cmd: list[str], check: bool = True, capture: bool = True, stdin: str | None = None) -> str:
    """Run a host command; its stdout, or LabError with the end of its stderr."""
    proc = subprocess.run(cmd, capture_output=capture, text=True, check=False, input=stdin)
    if check and proc.returncode != 0:
        raise LabError("%s failed: %s" % (" ".join(cmd[:4]), (proc.stderr or "").strip()[-400:]))
    return proc.stdout if capture else ""


def short(lab: str, name: str, prefix: str) -> str:
    """A Linux interface name (<= 15 characters) that is stable for lab + name."""
    digest = hashlib.sha1(("%s/%s" % (lab, name)).encode()).hexdigest()[:10]
    return "%s%s" % (prefix, digest)


def clean(text: str) -> str:
    """text with every character but letters, digits, - and _ replaced by -."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "-" for c in text)


def lab_name(plan: Plan, name: str | None = None) -> str:
    """Container, network and namespace prefix: the given lab name, or
    beonet-<topology name>."""
    return clean(name) if name else "beonet-" + clean(plan["topology"]["name"])


def state_dir(root: str, topology: str, name: str | None = None) -> str:
    """A lab's state folder: .lab/<name>/ or .lab/beonet-<topology file stem>/
    (from the file's name only: the file need not exist)."""
    stem = os.path.splitext(os.path.basename(topology))[0]
    return os.path.join(root, ".lab", clean(name) if name else "beonet-" + clean(stem))


def save_state(folder: str, filename: str, record: Record) -> None:
    """Write the state record (atomically: a crash never leaves half a record)."""
    atomic_write(os.path.join(folder, filename), json.dumps(record, indent=2) + "\n")


def load_state(folder: str, filename: str) -> Record | None:
    """The state record in folder, or None when the folder does not exist.
    A folder holding another lab kind's record, or none, is a LabError."""
    if not os.path.isdir(folder):
        return None
    path = os.path.join(folder, filename)
    if not os.path.exists(path):
        for name, hint in STATE_FILES.items():
            if os.path.exists(os.path.join(folder, name)):
                raise LabError("%s holds %s, not %s: %s" % (folder, name, filename, hint))
        raise LabError("%s has no %s: it was not made by `beonet lab up` (remove the folder "
                       "once you have checked nothing of the lab is left)" % (folder, filename))
    try:
        record = gate.load_json(path, STATE_BYTES, STATE_DEPTH, "a lab's state")
    except gate.GateError as exc:
        raise LabError("unreadable lab state: %s" % exc) from None
    if not isinstance(record, dict) or not isinstance(record.get("lab"), str):
        raise LabError("%s: not a lab's state (a mapping with the lab's name), "
                       "but %s: remove the folder once you have checked nothing of the lab is "
                       "left" % (escaped(path), type_word(record) if not isinstance(record, dict)
                                 else "a mapping of %s" % escaped(", ".join(sorted(record))[:80])))
    return record


def check_kind(folder: str, filename: str) -> None:
    """Refuse to build a lab in a state folder that holds another kind of lab."""
    for name, hint in STATE_FILES.items():
        if name != filename and os.path.exists(os.path.join(folder, name)):
            raise LabError("%s holds %s: %s first" % (folder, name, hint))


# Folders a lab's state folder may hold: the SSH control sockets of the VM lab,
# and the host variables discovery writes beside a scrambled lab's inventory.
STATE_SUBFOLDERS = ("cp", "host_vars")


def remove_state(folder: str) -> None:
    """Delete a lab's state folder: its files, sockets, SSH control folder and
    the host variables written beside its inventory."""
    if not os.path.isdir(folder):
        return
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if entry in STATE_SUBFOLDERS and os.path.isdir(path):
            shutil.rmtree(path)
        elif not os.path.isdir(path):
            os.unlink(path)
    os.rmdir(folder)


def networks(plan: Plan, lab: str) -> dict[str, tuple[str, str]]:
    """The wires of a lab: {segment name: (network name, bridge name)}.
    A tree's LAN becomes one wire per leaf switch (key switch:NAME)."""
    out = {}
    switches = plan.get("switches") or {}
    for seg, s in plan["segments"].items():
        if switches and s["kind"] == "lan":
            continue
        out[seg] = ("%s-%s" % (lab, seg), short(lab, seg, "bn"))
    for sw, s in switches.items():
        if s["nodes"]:
            out["switch:" + sw] = ("%s-%s" % (lab, sw), short(lab, sw, "bn"))
    return out


def node_networks(plan: Plan, node: str, nets: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """[(logical NIC, network name)] for one node's Ethernet NICs, in plan order."""
    out = []
    n = plan["nodes"][node]
    for iface in n["interfaces"]:
        if iface["kind"] != "ethernet":
            continue
        seg = iface["segment"]
        key = seg if seg in nets else "switch:" + n.get("switch", "")
        out.append((iface.get("logical", iface["name"]), nets[key][0]))
    return out


def wire_kind(plan: Plan, wire: str) -> str:
    """p2p for a point-to-point link, switch for a LAN, bond channel or leaf switch."""
    seg = plan["segments"].get(wire)
    return "p2p" if seg and seg["kind"] == "p2p" else "switch"


def lab_segments(plan: Plan, ports: list[tuple[str, str, str, str | None]]) -> dict[str, Record]:
    """What `lab fault --cable/--switch` acts on, saved in the lab's record:
    {name: {"kind": p2p|switch, "nics": ["NODE:NIC", ...]}} for each wire (a
    segment, or a tree's leaf switch, by its name in the plan) with the NICs
    on it, and for each LAN carried by several wires (a bonded LAN's channels,
    a tree's LAN) with all of theirs. ports: (node, NIC as the lab names it,
    wire key of networks(), the NIC's plan name or None)."""
    segs = plan["segments"]
    out: dict[str, Record] = {}
    carried: dict[str, list[str]] = {}
    for node, nic, key, logical in ports:
        name = key.partition("switch:")[2] or key
        out.setdefault(name, {"kind": wire_kind(plan, key), "nics": []})["nics"].append(
            "%s:%s" % (node, nic))
        iface = _nic(plan, node, logical) if logical else None
        lan = segs[key].get("carries") if key in segs else iface and iface["segment"]
        if lan:
            carried.setdefault(lan, []).append("%s:%s" % (node, nic))
    for lan, nics in carried.items():
        out.setdefault(lan, {"kind": "switch", "nics": nics})
    return out


# Link rates are shaped with tbf, as close to a wire as a token bucket gets.
DEFAULT_MTU = 1500
ETH_HEADER = 14         # counted by the kernel in every frame it queues
WIRE_OVERHEAD = 24      # on the wire, not in the kernel's count: preamble 8, FCS 4, gap 12
TIMER_SLACK_US = 250    # how late the host's timers may wake a shaper without costing rate
QUEUE_FRAMES = 100      # the queue holds at least this many full frames (a 64 KB TSO burst is 45)
QUEUE_MS = 20           # ... or this long at the link rate, whichever is more


def _nic(plan: Plan, node: str, logical: str) -> Mapping[str, Any] | None:
    """A node's NIC in the plan by its logical name, None when it has none."""
    for iface in plan["nodes"][node]["interfaces"]:
        if iface.get("logical", iface["name"]) == logical:
            return iface
    return None


def rate(plan: Plan, node: str, logical: str) -> int | None:
    """The planned rate (Mbit/s) of a node's NIC, None when unshaped."""
    iface = _nic(plan, node, logical)
    value: int | None = iface.get("rate_mbit") if iface else None
    return value


def mtu(plan: Plan, node: str, logical: str) -> int:
    """The planned MTU of a node's NIC (1500 when the plan gives none)."""
    iface = _nic(plan, node, logical)
    value: int = (iface.get("mtu") if iface else None) or DEFAULT_MTU
    return value


def frame_bytes(mtu_: int) -> int:
    """What one full frame costs a wire-like shaper: MTU, Ethernet header and
    the wire's own overhead."""
    return mtu_ + ETH_HEADER + WIRE_OVERHEAD


def tbf_sizes(rate_mbit: int, mtu_: int = DEFAULT_MTU) -> tuple[int, int]:
    """(burst, limit) in bytes of a wire-like tbf. The bucket holds two full
    frames, or what the link carries in TIMER_SLACK_US where that is more
    (above ~100 Mbit/s), so an idle direction saves almost nothing up and a
    stream still reaches the rate when a timer wakes late; the queue holds
    QUEUE_FRAMES frames or QUEUE_MS of traffic."""
    frame = frame_bytes(mtu_)
    burst = max(2 * frame, rate_mbit * TIMER_SLACK_US // 8)
    limit = max(QUEUE_FRAMES * frame, rate_mbit * QUEUE_MS * 125)
    return burst, limit


# A saved-up bucket drains no faster than this, in thousandths of the rate, one
# frame at a time: the part of a token that fits in the bucket no longer
# leaves at the speed of the host (an 8 KB ping-pong at 100 Mbit/s: 111 % of
# the link instead of 134 %); closer to the rate, a late timer costs a stream
# what it cannot catch up (1.05: 88 % of the rate, 1.2: 94 %, as on a wire).
# Up to this rate only (measured there): above it a frame lasts a few µs, and
# a timer per frame costs the stream more than the bucket of 250 µs gives away.
PEAK_PERMILLE, PEAK_UP_TO_MBIT = 1200, 100


def tbf(dev: str, rate_mbit: int, mtu_: int = DEFAULT_MTU) -> str:
    """The tc command shaping dev's egress to rate_mbit like a wire: every
    frame charged with the wire's overhead, a bucket of about two frames
    drained (up to 100 Mbit/s) at most at 1.2 times the rate."""
    burst, limit = tbf_sizes(rate_mbit, mtu_)
    peak = (" peakrate %dkbit mtu %d" % (rate_mbit * PEAK_PERMILLE, frame_bytes(mtu_))
            if rate_mbit <= PEAK_UP_TO_MBIT else "")
    return ("tc qdisc replace dev %s root tbf rate %dmbit burst %d limit %d overhead %d%s"
            % (dev, rate_mbit, burst, limit, WIRE_OVERHEAD, peak))


def media(plan: Plan, lab: str) -> dict[str, str]:
    """{segment: its medium device} for each shared segment NICs sit on (a
    bonded LAN's channels, not the LAN they carry): an ifb device per segment
    through which every frame sent onto it passes."""
    segments = plan["segments"]
    carried = {s["carries"] for s in segments.values() if "carries" in s}
    return {seg: short(lab, seg, "bm") for seg, s in segments.items()
            if s.get("medium") == "shared" and seg not in carried}


def medium_commands(ifb: str, rate_mbit: int, mtu_: int = DEFAULT_MTU) -> list[str]:
    """Bring up a shared segment's medium: an ifb device shaped like a wire at
    the segment's rate. Frames redirected to it are handed back to the port
    they came in on once shaped."""
    return ["ip link add %s type ifb" % ifb, "ip link set %s mtu %d up" % (ifb, mtu_),
            tbf(ifb, rate_mbit, mtu_)]


def port_commands(dev: str, ifb: str) -> list[str]:
    """Send every frame arriving on a shared segment's port (what the member
    sends) through the segment's medium before the bridge sees it."""
    return ["tc qdisc replace dev %s handle ffff: ingress" % dev,
            "tc filter replace dev %s parent ffff: protocol all prio 1 u32 match u32 0 0 "
            "action mirred egress redirect dev %s" % (dev, ifb)]


# Per-hop delay (the topology's `latency`), emulated with netem on the node's
# own NICs: each frame sent onto a segment waits the segment's one-way delay,
# a forwarded one also the forwarding node's (marked in the forward hook, so
# the node's own traffic does not pay it). Needs netem in the node's kernel.
FORWARD_MARK = 0x6265
NETEM_LIMIT = 10000     # packets netem holds while they wait (the default 1000 drops a fast stream)
LAB_TABLE = "beonet_lab"


def nic_delay(plan: Plan, node: str, logical: str) -> float:
    """The one-way delay (us) of the segment a node's NIC sends onto, 0 when none."""
    iface = _nic(plan, node, logical)
    seg = plan["segments"].get(iface["segment"], {}) if iface else {}
    return float(seg.get("delay_us", 0.0))


def forward_delay(plan: Plan, node: str) -> float:
    """The one-way delay (us) a node adds to what it forwards, 0 when none."""
    return float(plan.get("latency", {}).get("forward_us", {}).get(node, 0.0))


def _us(value: float) -> str:
    """A delay for tc: microseconds, a fraction allowed (the kernel keeps 64 ns steps)."""
    return ("%.3f" % value).rstrip("0").rstrip(".") + "us"


def delay_commands(dev: str, link_us: float, forward_us: float) -> list[str]:
    """netem on dev's egress: link_us for every frame, link_us + forward_us for
    the frames the node forwards (FORWARD_MARK). No netem where a frame gets
    no delay: each netem costs a timer per frame (some 65 us under TCG)."""
    if not forward_us:
        return ["tc qdisc replace dev %s root netem delay %s limit %d"
                % (dev, _us(link_us), NETEM_LIMIT)]
    return ["tc qdisc replace dev %s root handle 1: prio bands 2 priomap %s"
            % (dev, " ".join(["0"] * 16)),
            ("tc qdisc replace dev %s parent 1:1 handle 10: netem delay %s limit %d"
             % (dev, _us(link_us), NETEM_LIMIT)) if link_us else
            "tc qdisc replace dev %s parent 1:1 handle 10: pfifo limit %d" % (dev, NETEM_LIMIT),
            "tc qdisc replace dev %s parent 1:2 handle 20: netem delay %s limit %d"
            % (dev, _us(link_us + forward_us), NETEM_LIMIT),
            "tc filter replace dev %s parent 1: protocol all prio 1 handle %#x fw flowid 1:2"
            % (dev, FORWARD_MARK)]


UNMARK = "nft delete table inet %s 2>/dev/null || true" % LAB_TABLE


def mark_commands() -> list[str]:
    """An nftables table of the lab's own marking what the node forwards."""
    return [UNMARK,
            "nft add table inet %s" % LAB_TABLE,
            "nft 'add chain inet %s forward { type filter hook forward priority -200 ; }'"
            % LAB_TABLE,
            "nft add rule inet %s forward meta mark set %#x" % (LAB_TABLE, FORWARD_MARK)]


def node_delay_commands(plan: Plan, node: str, nics: Mapping[str, str]) -> list[str]:
    """What gives a node the plan's per-hop delays; nics: {logical: real NIC}
    of its physical NICs (bond members, not bonds). [] when it has none."""
    forward = forward_delay(plan, node)
    out: list[str] = []
    for logical, real in sorted(nics.items()):
        link = nic_delay(plan, node, logical)
        if link or forward:
            out += delay_commands(real, link, forward)
    return (mark_commands() + out) if (out and forward) else out


def delay_devices(commands: list[str]) -> list[str]:
    """The NICs a node's delay commands (node_delay_commands) put a root qdisc on."""
    return sorted({c.split()[4] for c in commands if c.startswith("tc qdisc replace dev")
                   and c.split()[5] == "root"})


def clear_delay_commands(commands: list[str]) -> list[str]:
    """What undoes a node's delay commands: the marking table and the root
    qdiscs they made removed."""
    return [UNMARK] + ["tc qdisc del dev %s root 2>/dev/null || true" % d
                       for d in delay_devices(commands)]


def has_delay(plan: Plan) -> bool:
    """Whether the plan asks for any per-hop delay."""
    return bool(plan.get("latency", {}).get("forward_us")) or any(
        s.get("delay_us") for s in plan["segments"].values())


def netem_missing(release: str | None = None, root: str = "/") -> str | None:
    """Why this kernel cannot run netem (None: it can): neither loaded, built in
    nor a module of it."""
    if os.path.isdir(os.path.join(root, "sys/module/sch_netem")):
        return None
    moddir = os.path.join(root, "lib/modules", release or os.uname().release)
    try:
        with open(os.path.join(moddir, "modules.builtin"), encoding="utf-8") as fh:
            if "/sch_netem.ko" in fh.read():
                return None
    except OSError:
        pass
    sched = os.path.join(moddir, "kernel/net/sched")
    if os.path.isdir(sched) and any(f.startswith("sch_netem.ko") for f in os.listdir(sched)):
        return None
    return "the kernel %s has no netem (sch_netem)" % (release or os.uname().release)
