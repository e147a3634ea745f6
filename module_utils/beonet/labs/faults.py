"""Faults in the labs: a node stopped as if its power were cut and started
again; a NIC's link, a cable or a whole switch cut and restored.

The lab's state record keeps what is down (``faults``: stopped nodes, cut
links and cables as ``NODE:NIC``, switches down by name), so ``beonet lab
fault TOPOLOGY`` says what is down, a second stop or cut changes nothing, a
restore brings back only what no other fault still holds down, and ``lab
down`` works whatever is down.

* ``--link NODE:NIC``: that NIC loses carrier.
* ``--cable NODE:NIC``: the cable at that NIC is cut. On a point-to-point
  link both ends lose carrier; on a LAN (a switch, a hub, a bond channel)
  only that NIC, its switch port going dark.
* ``--switch NAME``: a segment or switch as the plan names it (a tree's leaf
  switch, a bonded LAN: all its channels) is down: every NIC on it loses
  carrier.

The segments and their NICs are the lab's record (``segments``, written by
``lab up``: base.lab_segments).

* Docker lab: a stopped node is a killed container (its NICs vanish; the
  switches its peers sit on stay up, so they keep carrier, as with a dead
  machine on a switch port). Started again, Docker attaches its NICs anew and
  the lab gives them their names, rates and no address back
  (``docker.rewire``): the node is up without its plan, as a machine that
  rebooted with nothing persistent; site.yml or heal.yml restores it. A NIC
  losing carrier is the host end of its veth set down.
* VM lab: a stopped node is its QEMU process ended (no shutdown in the
  guest); started again from the saved QEMU command, it boots its own disk
  and its network manager brings the plan back. A NIC losing carrier is
  QEMU's ``set_link off``; ``lab link`` is ``--link`` for the VM lab.

A node started again gets the cuts still recorded on its NICs back.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..agent.names import shown
from . import docker, vm
from .base import DOCKER_STATE, VM_STATE, LabError, LabUsageError, Record, load_state, save_state, state_dir
from .base import run as _run

NODE_ACTIONS = ("stop", "start")
LINK_ACTIONS = ("down", "up")
# What lab fault cuts, by its flag: the faults record's key and how it is said.
TARGETS = {"--link": ("links", "link"), "--cable": ("cables", "cable"), "--switch": ("switches", "switch")}
Nic = tuple[str, str]       # (node, the NIC's name in the lab)


def parse_link(text: str, flag: str = "--link") -> tuple[str, str]:
    """``NODE:NIC`` -> (node, nic)."""
    node, sep, nic = text.partition(":")
    if not sep or not node or not nic or ":" in nic:
        raise LabUsageError("%s: %s is not NODE:NIC" % (flag, shown(text)))
    return node, nic


def describe(record: Record) -> str:
    """What is down in a lab, in one line."""
    f = record.get("faults") or {}
    parts = ["%s: %s" % (label, ", ".join(f[kind])) for kind, label in (
        ("nodes", "stopped"), ("links", "links down"), ("cables", "cables cut"),
        ("switches", "switches down")) if f.get(kind)]
    return "%s: %s" % (record["lab"], "; ".join(parts) or "nothing is down")


def _nodes(record: Record) -> list[str]:
    if record["provider"] == "vm":
        return list(record["nodes"])
    return list(record.get("wired") or {})


def _load(root: str, topology: str, label: str | None, provider: str) -> tuple[str, Record]:
    if provider == "vm":
        vm.settings()                   # a wrong BEONET_VM_* refused before a node is touched
    folder = state_dir(root, topology, label)
    record = load_state(folder, VM_STATE if provider == "vm" else DOCKER_STATE)
    if record is None:
        raise LabError("no lab in %s: bring it up first (beonet lab up%s)"
                       % (os.path.relpath(folder, root), " --provider vm" if provider == "vm" else ""))
    if "faults" not in record:
        raise LabError("%s was built by an older beonet: take it down and up again to use "
                       "lab fault" % record["lab"])
    return folder, record


def fault(topology: str, root: str, label: str | None, provider: str,
          node: str | None = None, link: str | None = None, action: str | None = None,
          cable: str | None = None, switch: str | None = None) -> str:
    """Apply one fault (or none: just report) and return what is down. Every
    check is made before anything changes."""
    given = [(flag, value) for flag, value in (("--node", node), ("--link", link), ("--cable", cable),
                                               ("--switch", switch)) if value]
    _check_options(given, action)
    folder, record = _load(root, topology, label, provider)
    if not given:
        return describe(record)
    flag, value = given[0]
    if flag == "--node":
        if value not in _nodes(record):
            raise LabError(_no_node(record, value))
        _node(folder, record, value, action == "stop")
    else:
        _affected(record, flag, value)          # the node, NIC or switch exists
        _cut(folder, record, flag, value, action == "down")
    save_state(folder, VM_STATE if provider == "vm" else DOCKER_STATE, record)
    return describe(record)


def _check_options(given: list[tuple[str, str]], action: str | None) -> None:
    """LabUsageError unless the options name one fault with its action, or none (a report)."""
    if len(given) > 1:
        raise LabUsageError("give one of --node (with --stop or --start), --link, --cable or --switch "
                            "(with --down or --up), not both %s" % " and ".join(f for f, _ in given))
    if not given:
        if action:
            raise LabUsageError("--%s needs %s" % (action, "--node" if action in NODE_ACTIONS
                                                   else "--link, --cable or --switch"))
        return
    flag, value = given[0]
    if flag == "--node" and action not in NODE_ACTIONS:
        raise LabUsageError("--node %s needs --stop or --start" % value)
    if flag != "--node" and action not in LINK_ACTIONS:
        raise LabUsageError("%s %s needs --down or --up" % (flag, value))
    if flag in ("--link", "--cable"):
        parse_link(value, flag)


def _no_node(record: Record, node: str) -> str:
    return "no node %s in lab %s (its nodes: %s)" % (node, record["lab"], ", ".join(_nodes(record)))


def delays(topology: str, root: str, label: str | None, provider: str, on: bool) -> str:
    """The VM lab's per-hop delays off or on again in every VM."""
    if provider != "vm":
        raise LabUsageError("--delays: the VM lab only (the Docker lab sets its delays when it "
                       "comes up, where the host's kernel has netem)")
    folder, record = _load(root, topology, label, provider)
    if record["faults"]["nodes"]:
        raise LabError("--delays: start the stopped nodes first (%s)"
                       % ", ".join(record["faults"]["nodes"]))
    changed = vm.set_delays(folder, record, on)
    if not changed:
        return "%s: the topology has no per-hop delays (latency)" % record["lab"]
    return "%s: per-hop delays %s in %d VMs" % (record["lab"], "on" if on else "off", changed)


def _mark(record: Record, kind: str, key: str, down: bool) -> bool:
    """Record key as down or not; False when it already was."""
    keys = set(record["faults"].get(kind, []))
    if (key in keys) == down:
        return False
    record["faults"][kind] = sorted(keys ^ {key})
    return True


def _node(folder: str, record: Record, node: str, stop: bool) -> None:
    if record["provider"] == "vm":
        if stop:
            done = vm.stop_node(folder, node)
        else:
            took = vm.start_node(folder, record, node)
            done = took is not None
            if took is not None:
                print("beonet lab (vm): %s answers SSH after %.0f s" % (node, took), flush=True)
    else:
        cont = "%s-%s" % (record["lab"], node)
        running = _run(["docker", "inspect", "-f", "{{.State.Running}}", cont]).strip() == "true"
        done = running == stop
        if done and stop:
            _run(["docker", "kill", cont])
        elif done:
            _run(["docker", "start", cont])
            docker.rewire(record["lab"], node, record["wired"][node])
    _mark(record, "nodes", node, stop)
    print("beonet lab: %s %s%s" % (node, "stopped" if stop else "started",
                                   "" if done else " (it already was)"), flush=True)
    if done and not stop:
        again = sorted(n for n in _held(record) if n[0] == node)
        if again:
            _carrier(folder, record, again, down=True)
            print("beonet lab: %s cut again (recorded as down)" % _shown(record, again), flush=True)


def _nic_names(record: Record, node: str) -> dict[str, str]:
    """{a name of a node's NIC: its name in the lab}: the plan's names (eth1,
    ...), and in the Docker lab the container's own names too."""
    if record["provider"] == "vm":
        return {n: n for n in record["nodes"][node]["nics"] + ["mgmt"]}
    names = {w["name"]: w["name"] for w in record["wired"][node]}
    names.update({w["logical"]: w["name"] for w in record["wired"][node] if w.get("logical")})
    return names


def _lab_nic(record: Record, node: str, nic: str) -> Nic:
    """(node, the NIC's name in the lab); LabError for an unknown node or NIC."""
    if node not in _nodes(record):
        raise LabError(_no_node(record, node))
    names = _nic_names(record, node)
    if nic not in names:
        raise LabError("%s has no NIC %s (%s NICs: %s)" % (
            node, nic, "plan" if record["provider"] == "vm" else "its", ", ".join(sorted(names))))
    return node, names[nic]


def _segments(record: Record, flag: str) -> dict[str, Any]:
    if "segments" not in record:
        raise LabError("%s was built by an older beonet: take it down and up again to use "
                       "lab fault %s" % (record["lab"], flag))
    segs: dict[str, Any] = record["segments"]
    return segs


def _affected(record: Record, flag: str, key: str) -> set[Nic]:
    """The NICs a fault holds down: --link: the NIC; --cable: both ends of a
    point-to-point link, else the NIC; --switch: every NIC on it."""
    if flag == "--switch":
        segs = _segments(record, flag)
        if key not in segs:
            raise LabError("no switch or segment %s in lab %s (its switches and segments: %s)"
                           % (key, record["lab"], ", ".join(sorted(segs))))
        return {_split(n) for n in segs[key]["nics"]}
    nic = _lab_nic(record, *parse_link(key, flag))
    if flag == "--link":
        return {nic}
    on = [seg for seg in _segments(record, flag).values() if "%s:%s" % nic in seg["nics"]]
    if not on:
        raise LabError("--cable %s: the NIC is on no segment of the plan (no cable to cut)" % key)
    ends = [seg for seg in on if seg["kind"] == "p2p"]
    return {_split(n) for n in ends[0]["nics"]} if ends else {nic}


def _split(text: str) -> Nic:
    node, _, nic = text.partition(":")
    return node, nic


def _recorded(record: Record, flag: str, key: str) -> str | None:
    """The recorded fault that is the same as flag key (a NIC named either
    way), None when there is none."""
    kind = TARGETS[flag][0]
    for old in record["faults"].get(kind, []):
        if old == key or (flag != "--switch" and _affected(record, "--link", old)
                          == _affected(record, "--link", key)):
            return str(old)
    return None


def _held(record: Record, skip: tuple[str, str] | None = None) -> set[Nic]:
    """Every NIC the recorded faults hold down (but the fault skip: (kind, key))."""
    out: set[Nic] = set()
    for flag, (kind, _) in TARGETS.items():
        for key in record["faults"].get(kind, []):
            if (kind, key) != skip:
                out |= _affected(record, flag, key)
    return out


def _cut(folder: str, record: Record, flag: str, key: str, down: bool) -> None:
    """Take down or restore a link, cable or switch: only the NICs no other
    recorded fault holds down change."""
    kind, what = TARGETS[flag]
    nics = _affected(record, flag, key)
    old = _recorded(record, flag, key)
    if (old is not None) == down:
        print("beonet lab: %s %s %s (it already was)" % (what, key, "down" if down else "up"), flush=True)
        return
    stopped = sorted({node for node, _ in nics} & set(record["faults"]["nodes"]))
    if stopped:
        raise LabError("%s is stopped: start it before changing its links" % ", ".join(stopped))
    change = sorted(nics - _held(record, None if down else (kind, old or key)))
    _carrier(folder, record, change, down)
    _mark(record, kind, key if down else (old or key), down)
    print("beonet lab: %s %s %s: %s" % (what, key, "down" if down else "up",
                                        _said(record, sorted(nics), change, down)), flush=True)


def _said(record: Record, nics: list[Nic], change: list[Nic], down: bool) -> str:
    """Which NICs lost or got back carrier, and which another fault holds down."""
    text = _shown(record, change) or "no NIC changed"
    if change:
        text += " lost carrier" if down else " have carrier again"
    held = [n for n in nics if n not in change]
    if held:
        text += "; %s down by another fault" % _shown(record, held)
    return text


def _shown(record: Record, nics: list[Nic]) -> str:
    """NODE:NIC, ... by the plan's names of the NICs where they have one."""
    out = []
    for node, nic in nics:
        names = {lab: plan for plan, lab in _nic_names(record, node).items() if plan != lab}
        out.append("%s:%s" % (node, names.get(nic, nic)))
    return ", ".join(out)


def _carrier(folder: str, record: Record, nics: list[Nic], down: bool) -> None:
    """Take NICs' carrier away or give it back."""
    if record["provider"] == "vm":
        for node, nic in nics:
            vm.set_nic_link(folder, record, node, nic, down)
        return
    host = {h["ifindex"]: h["ifname"] for h in json.loads(_run(["ip", "-j", "link"]))} if nics else {}
    for node, nic in nics:
        _docker_link(record, node, nic, down, host)


def _docker_link(record: Record, node: str, nic: str, down: bool, host: dict[int, str]) -> None:
    """Set the host end of a container NIC's veth down or up (the NIC loses or
    regains carrier). nic: its name in the container; host: {ifindex: name} of
    the host's links."""
    cont = "%s-%s" % (record["lab"], node)
    (link,) = json.loads(_run(["docker", "exec", cont, "ip", "-j", "link", "show", "dev", nic]))
    peer = host.get(link.get("link_index"))
    if not peer:
        raise LabError("%s %s: no host end of its veth found" % (node, nic))
    _run(["ip", "link", "set", "dev", peer, "down" if down else "up"])
