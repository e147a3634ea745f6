"""What the Docker lab and the VM lab share: the lab's name and state folder,
the saved state record `lab down` works from, which wire each NIC sits on,
interface names, link rates and the tbf command, and running host commands.

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

from ..agent.files import atomic_write

Plan = Mapping[str, Any]                 # a plan (outputs.plan.Plan) as the labs read it
Record = dict[str, Any]

DOCKER_STATE = "state.json"
VM_STATE = "vm.json"
# Each lab kind's state file, and what to run to take such a lab down.
STATE_FILES = {DOCKER_STATE: "a Docker lab: take it down with `beonet lab down` (no --provider vm)",
               VM_STATE: "a VM lab: take it down with `beonet lab down --provider vm`"}


class LabError(Exception):
    """A lab that cannot be built or taken down; the message says why."""


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
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)


def lab_name(plan: Plan, name: str | None = None) -> str:
    """Container, network and namespace prefix: the given lab name, or
    beonet-<topology name>."""
    return clean(name) if name else "beonet-" + clean(plan["topology"]["name"])


def state_dir(root: str, topology: str, name: str | None = None) -> str:
    """A lab's state folder: .lab/<name>/ or .lab/beonet-<topology file stem>/
    (from the file's name only: the file need not exist)."""
    stem = os.path.splitext(os.path.basename(topology))[0]
    return os.path.join(root, ".lab", clean(name) if name else "beonet-" + stem)


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
        with open(path, encoding="utf-8") as fh:
            record: Record = json.load(fh)
    except (OSError, ValueError) as exc:
        raise LabError("%s: unreadable lab state: %s" % (path, exc)) from exc
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


def rate(plan: Plan, node: str, logical: str) -> int | None:
    """The planned rate (Mbit/s) of a node's NIC, None when unshaped."""
    for iface in plan["nodes"][node]["interfaces"]:
        if iface.get("logical", iface["name"]) == logical:
            value: int | None = iface.get("rate_mbit")
            return value
    return None


def tbf(dev: str, rate_mbit: int) -> str:
    """The tc command shaping dev's egress to rate_mbit (about 10 ms of burst)."""
    burst = max(32, rate_mbit * 1000 // 8 // 100)      # ~10 ms of traffic, in kbit
    return ("tc qdisc replace dev %s root tbf rate %dmbit burst %dkbit latency 50ms"
            % (dev, rate_mbit, burst))
