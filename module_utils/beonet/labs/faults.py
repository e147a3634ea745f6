"""Faults in the labs: a node stopped as if its power were cut and started
again, a link cut at one NIC and restored.

The lab's state record keeps what is down (``faults``: stopped nodes, cut
links as ``NODE:NIC``), so ``beonet lab fault TOPOLOGY`` says what is down,
a second stop or cut changes nothing, and ``lab down`` works whatever is down.

* Docker lab: a stopped node is a killed container (its NICs vanish; the
  switches its peers sit on stay up, so they keep carrier, as with a dead
  machine on a switch port). Started again, Docker attaches its NICs anew and
  the lab gives them their names, rates and no address back
  (``docker.rewire``): the node is up without its plan, as a machine that
  rebooted with nothing persistent; site.yml or heal.yml restores it. A cut
  link is the host end of the NIC's veth set down: the NIC loses carrier.
* VM lab: a stopped node is its QEMU process ended (no shutdown in the
  guest); started again from the saved QEMU command, it boots its own disk
  and its network manager brings the plan back. A cut link is QEMU's
  ``set_link off`` (carrier loss); ``lab link`` is the same for the VM lab.
"""

from __future__ import annotations

import json
import os

from . import docker, vm
from .base import DOCKER_STATE, VM_STATE, LabError, Record, load_state, save_state, state_dir
from .base import run as _run

NODE_ACTIONS = ("stop", "start")
LINK_ACTIONS = ("down", "up")


def parse_link(text: str) -> tuple[str, str]:
    """``NODE:NIC`` -> (node, nic)."""
    node, sep, nic = text.partition(":")
    if not sep or not node or not nic or ":" in nic:
        raise LabError("--link: %r is not NODE:NIC" % text)
    return node, nic


def describe(record: Record) -> str:
    """What is down in a lab, in one line."""
    f = record.get("faults") or {"nodes": [], "links": []}
    if not f["nodes"] and not f["links"]:
        return "%s: nothing is down" % record["lab"]
    return "%s: %s" % (record["lab"], "; ".join(
        ["stopped: " + ", ".join(f["nodes"])] * bool(f["nodes"])
        + ["links down: " + ", ".join(f["links"])] * bool(f["links"])))


def _nodes(record: Record) -> list[str]:
    if record["provider"] == "vm":
        return list(record["nodes"])
    return list(record.get("wired") or {})


def _load(root: str, topology: str, label: str | None, provider: str) -> tuple[str, Record]:
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
          node: str | None = None, link: str | None = None, action: str | None = None) -> str:
    """Apply one fault (or none: just report) and return what is down."""
    folder, record = _load(root, topology, label, provider)
    if node and link:
        raise LabError("give --node (with --stop or --start) or --link (with --down or --up), not both")
    if node or link:
        target = node or parse_link(link or "")[0]
        if target not in _nodes(record):
            raise LabError("no node %s in lab %s (its nodes: %s)"
                           % (target, record["lab"], ", ".join(_nodes(record))))
        if node and action not in NODE_ACTIONS:
            raise LabError("--node %s needs --stop or --start" % node)
        if link and action not in LINK_ACTIONS:
            raise LabError("--link %s needs --down or --up" % link)
        if node:
            _node(folder, record, node, action == "stop")
        else:
            _link(folder, record, *parse_link(link or ""), down=action == "down")
        save_state(folder, VM_STATE if provider == "vm" else DOCKER_STATE, record)
    elif action:
        raise LabError("--%s needs %s" % (action, "--node" if action in NODE_ACTIONS else "--link"))
    return describe(record)


def delays(topology: str, root: str, label: str | None, provider: str, on: bool) -> str:
    """The VM lab's per-hop delays off or on again in every VM."""
    if provider != "vm":
        raise LabError("--delays: the VM lab only (the Docker lab sets its delays when it "
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
    keys = set(record["faults"][kind])
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


def _link(folder: str, record: Record, node: str, nic: str, down: bool) -> None:
    if node in record["faults"]["nodes"]:
        raise LabError("%s is stopped: start it before changing its links" % node)
    if record["provider"] == "vm":
        vm.set_nic_link(folder, record, node, nic, down)
    else:
        _docker_link(record, node, nic, down)
    _mark(record, "links", "%s:%s" % (node, nic), down)
    print("beonet lab: %s %s link %s" % (node, nic, "down" if down else "up"), flush=True)


def _docker_link(record: Record, node: str, nic: str, down: bool) -> None:
    """Set the host end of a container NIC's veth down or up (the NIC loses or
    regains carrier). nic: the plan's logical NIC (eth1, ...) or its name in
    the container."""
    names = {w["name"]: w["name"] for w in record["wired"][node]}
    names.update({w["logical"]: w["name"] for w in record["wired"][node] if w.get("logical")})
    if nic not in names:
        raise LabError("%s has no NIC %s (its NICs: %s)" % (node, nic, ", ".join(sorted(names))))
    nic = names[nic]
    cont = "%s-%s" % (record["lab"], node)
    (link,) = json.loads(_run(["docker", "exec", cont, "ip", "-j", "link", "show", "dev", nic]))
    peers = [h["ifname"] for h in json.loads(_run(["ip", "-j", "link"]))
             if h["ifindex"] == link.get("link_index")]
    if not peers:
        raise LabError("%s %s: no host end of its veth found" % (node, nic))
    _run(["ip", "link", "set", "dev", peers[0], "down" if down else "up"])
