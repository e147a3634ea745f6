"""The embedded Docker lab: one container per node, one Docker network per
segment, point-to-point link or bond channel, link rates enforced with tbf on
both ends. A tree's leaf switches are Docker bridges joined to a root bridge
by veth uplinks, shaped to the uplink rate, so the uplink is a real bottleneck.

Docker networks are only the wire: their addresses come from an underlay pool
(a /16 of 100.64.0.0/10 per lab, each network's subnet sized by the containers
on it) and are flushed in the containers; the role adds the plan's addresses. Each
container NIC is matched to the plan by MAC address (never by order) and the
generated inventory maps the plan's logical names to the container's names.

`lab up` records in .lab/NAME/state.json what it creates on the host (lab
name, containers, networks, bridges, veths, DOCKER-USER rules, the host's
neighbour-table limits it found and raised: hostlimits.py); `lab down`
works from that record alone, so it needs neither the topology file nor the
plan it was built from. The per-container work (start, connect, wire) runs
BEONET_LAB_WORKERS (default 8) containers at a time.

With `--wiring scrambled` the lab looks like a new bare-metal cluster: NICs
named as firmware and udev name them (enp3s0f1, ens5, eno2, enx<MAC>, eth7),
attached in random order, one or two spare NICs per node going nowhere (a
veth whose host end is down: no carrier, or up: a wire to nothing), some
NICs left down, and `--miswire N` cables moved (a point-to-point cable to a
wrong node's spare NIC, a switch cable to another segment's switch), all
drawn from the seed. The inventory maps no NIC; the truth (every NIC, the
moved cables) is saved in .lab/NAME/wiring.json.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import random
import subprocess
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from ..cabling.sheet import NicEnd, Sheet
from ..cabling.sheet import sheet as cabling_sheet
from ..compiler import pipeline
from ..outputs import plan as render
from . import hostlimits
from .base import (
    DEFAULT_MTU,
    DOCKER_STATE,
    LabError,
    LabUsageError,
    Plan,
    Record,
    check_kind,
    has_delay,
    lab_name,
    lab_segments,
    load_state,
    media,
    medium_commands,
    mtu,
    netem_missing,
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
    wire_kind,
)
from .base import run as _host_run

__all__ = ["LabError", "down", "up"]

# The node image: BEONET_IMAGE, else the one scripts/build-image.sh builds for the
# Debian release BEONET_SUITE (default trixie) and the variant BEONET_IMAGE_VARIANT,
# else "frr" for a topology with routing.engine frr (node_image).
SUITE = "trixie"
# Both variants have FRR (the mpi one too, so that its labs run either routing engine).
IMAGES = {"": "beonet-node:%s-2", "mpi": "beonet-node-mpi:%s-3", "frr": "beonet-node-frr:%s-2"}
UNDERLAY = (100 << 24) | (64 << 16)      # 100.64.0.0/10: a /16 per lab
LAB_PREFIX = 16          # each lab's share of the underlay
RESERVED_ADDRESSES = 3   # addresses of a subnet no container gets: network, broadcast, Docker's gateway
WORKERS = 8              # containers started or wired at a time (BEONET_LAB_WORKERS)
LABEL = "beonet.lab"
STATE = DOCKER_STATE
WIRING = "wiring.json"
WIRINGS = ("plan", "scrambled")
Nets = dict[str, tuple[str, str]]
Nic = dict[str, Any]          # one container NIC: logical, segment, name, mac, carrier, up
Layout = dict[str, list[Nic]]  # node -> its NICs, in the order they are attached
T = TypeVar("T")


def image_variant(plan: Plan, env: Mapping[str, str] = os.environ) -> str:
    """The variant of scripts/build-image.sh the plan's nodes need: BEONET_IMAGE_VARIANT
    when set, else "frr" when a node's routing is FRR's, else the plain node image ("")."""
    variant = env.get("BEONET_IMAGE_VARIANT", "")
    frr = any((n.get("routing") or {}).get("engine") == "frr" for n in plan["nodes"].values())
    if variant and variant not in IMAGES:
        raise LabError("BEONET_IMAGE_VARIANT=%s: not one of %s"
                       % (variant, ", ".join(sorted(v for v in IMAGES if v))))
    return variant or ("frr" if frr else "")


def needed_variant(topology: str, env: Mapping[str, str] = os.environ) -> str:
    """The argument of scripts/build-image.sh that builds the image the topology's lab
    needs ("node": the plain node image)."""
    return image_variant(render.plan(pipeline.compile_file(topology)), env) or "node"


def variant_image(variant: str, env: Mapping[str, str] = os.environ) -> str:
    """The image scripts/build-image.sh VARIANT builds for the Debian release
    BEONET_SUITE (default trixie)."""
    return IMAGES[variant] % (env.get("BEONET_SUITE") or SUITE)


def node_image(plan: Plan, env: Mapping[str, str] = os.environ) -> str:
    """The Docker image of the plan's nodes: BEONET_IMAGE, else image_variant's image."""
    return env.get("BEONET_IMAGE") or variant_image(image_variant(plan, env), env)


def _run(cmd: list[str], check: bool = True) -> str:
    return _host_run(cmd, check=check)


def _ok(cmd: list[str]) -> bool:
    """Whether cmd succeeds (its output is discarded)."""
    return subprocess.run(cmd, capture_output=True).returncode == 0


def _say(msg: str) -> None:
    print("beonet lab: %s" % msg, flush=True)


# ---------------------------------------------------------------- up

def up(topology: str, root: str, label: str | None = None, wiring: str = "plan",
       miswire: int = 0, seed: int = 0) -> str:
    """Build the lab of a topology; returns the path of its inventory. wiring
    "scrambled" wires it like a new cluster with `miswire` cables moved."""
    if wiring not in WIRINGS:
        raise LabUsageError("unknown wiring %s (%s)" % (wiring, "|".join(WIRINGS)))
    if miswire and wiring != "scrambled":
        raise LabUsageError("--miswire needs --wiring scrambled")
    compiled = pipeline.compile_file(topology)
    plan = render.plan(compiled)
    lab = lab_name(plan, label)
    folder = state_dir(root, topology, label)
    nets = networks(plan, lab)
    moved: list[Record] = []
    if wiring == "scrambled":
        layout, moved = scramble(plan, nets, lab, miswire, seed)
    else:
        layout = {name: _plan_nics(plan, name, nets) for name in plan["nodes"]}
    image = node_image(plan)
    held = _hold_host(plan, lab, folder)
    try:
        subnets, kept = _make_room(lab, folder, nets, layout, image)
    except BaseException:
        _release_host(folder)
        raise
    record = _record(plan, lab, nets, topology, layout)
    record["host_limits"] = held
    save_state(folder, STATE, record)
    _create_networks(lab, nets, subnets, kept)
    _create_media(plan, lab)
    _start_containers(lab, nets, layout, image, has_ipv6(plan))
    if plan.get("switches"):
        _tree_uplinks(plan, nets, lab)
    hosts = _wire_nodes(plan, lab, nets, layout, record["wired"], wiring == "plan")
    key = {net: k for k, (net, _) in nets.items()}
    record["segments"] = lab_segments(plan, [(node, w["name"], key[w["network"]], w["logical"])
                                             for node, ws in record["wired"].items() for w in ws])
    save_state(folder, STATE, record)
    _set_delays(plan, lab, {n: _logical_map(w) for n, w in record["wired"].items()})
    inv = inventory(topology, lab, hosts)
    inv["all"] = {"vars": _discovery_vars(folder)}
    if wiring == "scrambled":
        save_state(folder, WIRING, _truth(layout, moved, seed, cabling_sheet(compiled)))
    path = os.path.join(folder, "inventory.yml")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(inv, fh, indent=2)
    _say("up: %d containers (%s wiring); inventory %s"
         % (len(hosts), wiring, os.path.relpath(path, root)))
    return path


def _hold_host(plan: Plan, lab: str, folder: str) -> Record:
    """Raise the host's neighbour-table limits to what the lab (and every other
    lab up) needs, before anything is created; what the state record keeps."""
    held = hostlimits.acquire(os.path.abspath(folder), lab, hostlimits.neighbour_need(plan))
    if held["set"]:
        _say("host: %s raised (its nodes can hold %d neighbour entries, all labs up %d)"
             % (", ".join("%s %d -> %d" % (k, held["found"][k], v) for k, v in sorted(held["set"].items())),
                held["need"], held["total"]))
    return held


def _release_host(folder: str) -> None:
    for line in hostlimits.release(os.path.abspath(folder)):
        _say("host: " + line)


def _make_room(lab: str, folder: str, nets: Nets, layout: Layout,
               image: str) -> tuple[dict[str, str], set[str]]:
    """Take down what is left of the lab, check the image, and place its
    networks in its /16: ({network: subnet}, the networks the engine kept)."""
    _take_down_existing(lab, folder)
    if not _ok(["docker", "image", "inspect", image]):
        variant = next((v for v, name in IMAGES.items() if name.split(":")[0] == image.split(":")[0]), "")
        raise LabError("image %s missing: run scripts/build-image.sh %s" % (image, variant or "node"))
    existing = _lab_subnets()
    kept = {net for net, (owner, _) in existing.items() if owner == lab}
    first = _underlay(lab, existing)
    taken = {net: subnet for net, (_, subnet) in existing.items() if subnet}
    members = _members(nets, layout)
    try:
        subnets = allocate(members, first, taken)
    except LabError as exc:
        raise LabError("lab %s: %s" % (lab, exc)) from exc
    for net in sorted(kept & set(members)):
        if subnets[net] != taken.get(net, subnets[net]):
            raise LabError("network %s, which the engine kept, has %s: too small for its %d "
                           "containers (restarting dockerd removes it)" % (net, taken[net], members[net]))
    return subnets, kept & set(members)


def _wire_nodes(plan: Plan, lab: str, nets: Nets, layout: Layout, wired: dict[str, list[Record]],
                mapped: bool) -> dict[str, Any]:
    """Wire every container (_prepare_node, several at a time) once all are
    connected; fills wired (node -> its wired NICs) in plan order and returns
    the inventory's hosts (with their NIC mapping when mapped)."""
    _say("matching NICs by MAC, flushing Docker's addresses and default route, shaping links")
    shared = media(plan, lab)
    # The host ends of every container's veths: read once all are connected.
    host_links = {link["ifindex"]: link["ifname"] for link in json.loads(_run(["ip", "-j", "link"]))}
    done = _each("wiring", {"%s-%s" % (lab, name): partial(_prepare_node, plan, name, lab, nets, host_links,
                                                           layout[name], shared)
                            for name in plan["nodes"]})
    hosts: dict[str, Any] = {}
    for name in plan["nodes"]:
        mapping, wired[name] = done["%s-%s" % (lab, name)]
        hosts[name] = {"ansible_host": "%s-%s" % (lab, name)}
        if mapped:
            hosts[name]["beonet_interfaces"] = mapping
    return hosts


def _workers() -> int:
    """How many containers are started or wired at a time: BEONET_LAB_WORKERS, else 8."""
    value = os.environ.get("BEONET_LAB_WORKERS", "").strip()
    if not value:
        return WORKERS
    if not value.isdigit() or int(value) < 1:
        raise LabError("BEONET_LAB_WORKERS=%s: not a number of workers (1 or more)" % value)
    return int(value)


def _each(what: str, jobs: Mapping[str, Callable[[], T]]) -> dict[str, T]:
    """Run jobs ({container: job}) _workers() at a time; their results, in the
    jobs' order. Every job runs even when others fail; the failures make one
    LabError naming each failed container and why."""
    results: dict[str, T] = {}
    errors: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=min(_workers(), max(1, len(jobs)))) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        for name, future in futures.items():
            try:
                results[name] = future.result()
            except Exception as exc:      # each container's failure is reported, the others go on
                errors[name] = str(exc) if isinstance(exc, LabError) else "%s: %s" % (type(exc).__name__, exc)
    if errors:
        shown = ["%s: %s" % (name, errors[name]) for name in list(errors)[:10]]
        more = " (and %d more)" % (len(errors) - 10) if len(errors) > 10 else ""
        raise LabError("%s failed on %d of %d containers%s: %s"
                       % (what, len(errors), len(jobs), more, "; ".join(shown)))
    return results


def _plan_nics(plan: Plan, node: str, nets: Nets) -> list[Nic]:
    """A node's NICs as the plan wires them, in plan order (Docker's names kept)."""
    key = {net: k for k, (net, _) in nets.items()}
    return [{"logical": logical, "segment": key[net]} for logical, net in node_networks(plan, node, nets)]


def _discovery_vars(folder: str) -> dict[str, Any]:
    """What discovery and the pre-flight need in a lab: the lab's NICs are veths,
    and a mapping discovery finds goes beside the lab's inventory. Group all, so
    the controller's play (the implicit localhost) sees them too."""
    return {"beonet_discover_include_virtual": True,
            "beonet_host_vars_dir": os.path.join(folder, "host_vars")}


# ---------------------------------------------------------------- scrambled wiring

# How firmware and udev name NICs: PCI bus/slot/function, onboard, hotplug slot,
# MAC address ("enx" + the NIC's MAC, filled in once Docker has given it), kernel.
_NAMERS = (lambda r: "enp%ds0" % r.randint(1, 9),
           lambda r: "enp%ds0f%d" % (r.randint(1, 9), r.randint(0, 3)),
           lambda r: "ens%d" % r.randint(1, 20),
           lambda r: "eno%d" % r.randint(1, 4),
           lambda r: "enx",
           lambda r: "eth%d" % r.randint(0, 9))


def _names(rng: random.Random, count: int, avoid: set[str]) -> list[str]:
    """count distinct realistic NIC names, none in avoid."""
    out: list[str] = []
    while len(out) < count:
        name = rng.choice(_NAMERS)(rng)
        if name not in avoid and name not in out:
            out.append(name)
    return out


def scramble(plan: Plan, nets: Nets, lab: str, miswire: int, seed: int) -> tuple[Layout, list[Record]]:
    """The scrambled wiring, drawn from the seed and the topology's name: each
    node's NICs (plan NICs and one or two spares) in attachment order, with
    names unrelated to the plan, and the `miswire` moved cables."""
    rng = random.Random("%s/%d" % (plan["topology"]["name"], seed))
    logical = {i.get("logical", i["name"]) for n in plan["nodes"].values() for i in n["interfaces"]}
    layout: Layout = {}
    for node in plan["nodes"]:
        nics = _plan_nics(plan, node, nets)
        for nic in nics:
            nic["carrier"] = True
        nics += [{"logical": None, "segment": None, "carrier": rng.random() < 0.5}
                 for _ in range(rng.randint(1, 2))]
        rng.shuffle(nics)
        for nic, name in zip(nics, _names(rng, len(nics), logical)):
            nic.update(name=name, up=rng.random() < 0.7)
        layout[node] = nics
    moved = _miswire(plan, layout, rng, miswire)
    for node, nics in layout.items():
        for i, nic in enumerate(nics):
            if nic["segment"] is None:       # a veth from the host: its MAC is ours
                digest = hashlib.sha1(("%s/%s/%d" % (lab, node, i)).encode()).digest()
                nic.update(mac="0e:" + ":".join("%02x" % b for b in digest[:5]),
                           host_end=short(lab, "%s/%d" % (node, i), "bx"))
    return layout, moved


def _miswire(plan: Plan, layout: Layout, rng: random.Random, count: int) -> list[Record]:
    """Move count cables, alternately a point-to-point cable and a switch cable
    (the other kind when one runs out); every move touches nodes of its own."""
    used: set[str] = set()
    moves: list[Record] = []
    for k in range(count):
        movers = (_move_p2p, _move_switch) if k % 2 == 0 else (_move_switch, _move_p2p)
        move = movers[0](plan, layout, rng, used) or movers[1](plan, layout, rng, used)
        if move is None:
            raise LabError("--miswire %d: only %d cables of %s can be moved, each touching "
                           "nodes no other moved cable touches" % (count, k, plan["topology"]["name"]))
        moves.append(move)
    return moves


def _move_p2p(plan: Plan, layout: Layout, rng: random.Random, used: set[str]) -> Record | None:
    """One end of a point-to-point cable into a spare NIC of a wrong node; the
    NIC it left goes nowhere (no carrier)."""
    ends: dict[str, list[tuple[str, int]]] = {}
    for node, nics in layout.items():
        for i, nic in enumerate(nics):
            if nic["segment"] and wire_kind(plan, nic["segment"]) == "p2p":
                ends.setdefault(nic["segment"], []).append((node, i))
    cables = [seg for seg, e in sorted(ends.items()) if len(e) == 2 and not used & {n for n, _ in e}]
    rng.shuffle(cables)
    for seg in cables:
        (far, _), (node, i) = rng.sample(ends[seg], 2)
        spares = [(w, j) for w, nics in layout.items() if w not in used | {far, node}
                  for j, nic in enumerate(nics) if nic["segment"] is None and nic["logical"] is None]
        if spares:
            to, j = rng.choice(spares)
            layout[node][i].update(segment=None, carrier=False)
            layout[to][j].update(segment=seg, carrier=True)
            used.update((far, node, to))
            return {"kind": "p2p", "segment": seg, "far_node": far, "node": node,
                    "nic": layout[node][i]["logical"], "index": i, "to_node": to, "to_index": j}
    return None


def _move_switch(plan: Plan, layout: Layout, rng: random.Random, used: set[str]) -> Record | None:
    """A node's switch cable into another segment's switch (one the node is not on)."""
    switches = sorted({n["segment"] for nics in layout.values() for n in nics
                       if n["segment"] and wire_kind(plan, n["segment"]) == "switch"})
    cands = [(node, i) for node, nics in layout.items() if node not in used
             for i, nic in enumerate(nics) if nic["logical"] and nic["segment"] in switches]
    rng.shuffle(cands)
    for node, i in cands:
        others = [s for s in switches if s not in {n["segment"] for n in layout[node]}]
        if others:
            nic = layout[node][i]
            move = {"kind": "switch", "node": node, "nic": nic["logical"], "index": i,
                    "from": nic["segment"], "to": rng.choice(others)}
            nic["segment"] = move["to"]
            used.add(node)
            return move
    return None


def _truth(layout: Layout, moved: list[Record], seed: int, sheet: Sheet) -> Record:
    """wiring.json: every node's NICs and planned mapping, and the moved cables
    (with the real NIC names and the cabling sheet's label)."""
    keys = ("name", "mac", "logical", "segment", "carrier", "up")
    moves = []
    for m in moved:
        cable = sheet.cable_at(NicEnd(m["node"], m["nic"]))
        m = dict(m, name=layout[m["node"]][m["index"]]["name"], cable=cable and cable.label)
        if "to_index" in m:
            m["to_name"] = layout[m["to_node"]][m.pop("to_index")]["name"]
        del m["index"]
        moves.append(m)
    return {"seed": seed, "moved": moves,
            "nodes": {node: {"mapping": {n["logical"]: n["name"] for n in nics if n["logical"]},
                             "nics": [{k: n.get(k) for k in keys} for n in nics]}
                      for node, nics in layout.items()}}


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


def _record(plan: Plan, lab: str, nets: Nets, topology: str, layout: Layout) -> Record:
    """What up() creates, saved before it creates anything: what down() removes."""
    bridges = [b for b, created in _host_bridges(plan, nets, lab).values() if created]
    spares = [n["host_end"] for nics in layout.values() for n in nics if "host_end" in n]
    ifbs = sorted(media(plan, lab).values())
    return {"provider": "docker", "lab": lab, "topology": os.path.abspath(topology),
            "containers": ["%s-%s" % (lab, n) for n in plan["nodes"]],
            "networks": sorted(net for net, _ in nets.values()),
            # Deleting a veth deletes its peer; bridges go once nothing is enslaved.
            "links": [a for _, a, _, _ in _uplinks(plan, lab)] + bridges + spares + ifbs,
            "iptables": [_bridge_rule(b) for b in bridges],
            # Filled once the containers are wired: each node's NICs (network,
            # name, rate), the segments they sit on, and what `lab fault`
            # has stopped or cut.
            "wired": {}, "segments": {},
            "faults": {"nodes": [], "links": [], "cables": [], "switches": []}}


def subnet_size(containers: int) -> int:
    """Addresses a Docker network for so many containers needs: theirs, the
    network and broadcast addresses and Docker's gateway, rounded up to a power
    of two (a point-to-point link: 8, a /29; a LAN of 32 nodes: 64, a /26)."""
    return 1 << (containers + RESERVED_ADDRESSES - 1).bit_length()


def allocate(members: Mapping[str, int], first: int, taken: Mapping[str, str] | None = None,
             prefix: int = LAB_PREFIX) -> dict[str, str]:
    """{network: subnet} for networks of members[network] containers each,
    packed in the /prefix from first: largest first (then by name), each
    aligned on its size, so the same networks always get the same subnets.
    Subnets in taken ({network: subnet} already on the engine) are avoided; a
    network of taken keeps its subnet when it has room enough (`lab up` reuses
    it). LabError when they do not fit."""
    taken = taken or {}
    end = first + (1 << (32 - prefix))
    busy = sorted(_span(subnet) for subnet in taken.values())
    out = {net: taken[net] for net, count in members.items()
           if net in taken and _span(taken[net])[1] - _span(taken[net])[0] >= subnet_size(count)}
    cursor = first
    for net in sorted(set(members) - set(out), key=lambda n: (-subnet_size(members[n]), n)):
        size = subnet_size(members[net])
        start = -(-cursor // size) * size
        for lo, hi in busy:
            if lo < start + size and start < hi:
                start = -(-hi // size) * size
        if start + size > end:
            need = sum(subnet_size(c) for c in members.values())
            raise LabError("%d networks (%d containers' NICs) need %d underlay addresses, more than the "
                           "/%d %s holds (%d): a Docker lab holds at most %d point-to-point links"
                           % (len(members), sum(members.values()), need, prefix,
                              ipaddress.ip_address(first), end - first, (end - first) // subnet_size(2)))
        out[net] = "%s/%d" % (ipaddress.ip_address(start), 32 - (size.bit_length() - 1))
        cursor = start + size
    return out


def _span(subnet: str) -> tuple[int, int]:
    """A subnet's first address and the one after its last, as integers."""
    net = ipaddress.ip_network(subnet, strict=False)
    return int(net.network_address), int(net.network_address) + net.num_addresses


def _members(nets: Nets, layout: Layout) -> dict[str, int]:
    """{Docker network: containers attached to it}, from the layout (a moved
    cable counts where it is plugged)."""
    key = {k: net for k, (net, _) in nets.items()}
    out = dict.fromkeys(sorted(key.values()), 0)
    for nics in layout.values():
        for nic in nics:
            if nic["segment"]:
                out[key[nic["segment"]]] += 1
    return out


def _create_networks(lab: str, nets: Nets, subnets: Mapping[str, str], kept: set[str]) -> None:
    _say("creating %d networks for %s" % (len(nets), lab))
    for _, (net, bridge) in sorted(nets.items()):
        if net in kept:
            _say("reusing network %s (the engine kept it, see `lab down`)" % net)
            continue
        _run(["docker", "network", "create", "--driver", "bridge", "--subnet", subnets[net],
              "--label", "%s=%s" % (LABEL, lab),
              "-o", "com.docker.network.bridge.name=%s" % bridge,
              "-o", "com.docker.network.bridge.enable_ip_masquerade=false", net])


def _create_media(plan: Plan, lab: str) -> None:
    """One ifb device per shared segment (a hub or coax), shaped to the
    segment's rate: the one point every frame sent onto the segment passes."""
    for seg, ifb in sorted(media(plan, lab).items()):
        if _ok(["ip", "link", "show", ifb]):       # left by an interrupted run
            _run(["ip", "link", "del", ifb])
        s = plan["segments"][seg]
        _run(["sh", "-ec", "\n".join(medium_commands(ifb, s["rate_mbit"], s["mtu"]))])


def has_ipv6(plan: Plan) -> bool:
    """Whether the plan gives the nodes IPv6 addresses (addressing.ipv6)."""
    return any("address6" in node for node in plan["nodes"].values())


# Docker starts a container with IPv6 off (no link-local address either); a plan with
# IPv6 needs it on inside the lab's containers, and only there: the host keeps its own.
IPV6_ON = ["--sysctl", "net.ipv6.conf.all.disable_ipv6=0",
           "--sysctl", "net.ipv6.conf.default.disable_ipv6=0"]


def _start_containers(lab: str, nets: Nets, layout: Layout, image: str, ipv6: bool = False) -> None:
    _say("starting %d containers of %s (%d at a time)" % (len(layout), image, min(_workers(), len(layout))))
    _each("starting", {"%s-%s" % (lab, name): partial(_start_container, lab, name, nets, nics, image, ipv6)
                       for name, nics in layout.items()})


def _start_container(lab: str, name: str, nets: Nets, nics: list[Nic], image: str,
                     ipv6: bool = False) -> None:
    """Run one node's container on its first network, connect the others and
    add its spare NICs; ipv6: with IPv6 on inside it."""
    cont = "%s-%s" % (lab, name)
    wires = [nets[n["segment"]][0] for n in nics if n["segment"]]
    _run(["docker", "run", "-d", "--name", cont, "--hostname", name,
          "--label", "%s=%s" % (LABEL, lab), "--network", wires[0] if wires else "none",
          # PID 1 that reaps zombies (daemonized benchmark servers leave them)
          "--init", "--cap-add", "NET_ADMIN", "--cap-add", "SYS_ADMIN",
          # FRR's daemons run above other work, as their systemd unit has them (agent/frr.py)
          "--cap-add", "SYS_NICE",
          "--sysctl", "net.ipv4.ip_forward=0",
          "--sysctl", "net.ipv4.icmp_ratelimit=0",
          "--sysctl", "net.ipv4.conf.all.rp_filter=0",
          "--sysctl", "net.ipv4.conf.default.rp_filter=0",
          *(IPV6_ON if ipv6 else []),
          image, "sleep", "infinity"])
    for net in wires[1:]:
        _run(["docker", "network", "connect", net, cont])
    _add_spares(cont, [n for n in nics if "host_end" in n])


def _add_spares(cont: str, spares: list[Nic]) -> None:
    """Spare NICs going nowhere: veths from the host into the container, the
    host end down (no carrier) or up with nothing behind it."""
    if not spares:
        return
    pid = str(json.loads(_run(["docker", "inspect", cont]))[0]["State"]["Pid"])
    for k, nic in enumerate(spares):
        _run(["ip", "link", "add", nic["host_end"], "type", "veth", "peer", "name", "bs%d" % k,
              "address", nic["mac"], "netns", pid])
        if nic["carrier"]:
            _run(["ip", "link", "set", nic["host_end"], "up"])


def _prepare_node(plan: Plan, name: str, lab: str, nets: Nets, host_links: dict[int, str],
                  nics: list[Nic], shared: dict[str, str]) -> tuple[dict[str, str], list[Record]]:
    """Match a container's NICs to the plan by MAC, give them their scrambled
    names, flush Docker's addresses and default route, shape both ends of each
    link (a shared segment's ports through its medium); returns ({logical:
    real NIC}, the wired NICs: network, name, rate, MTU and medium of each,
    what `rewire` needs to do it again after a restart)."""
    for nic in nics:
        if nic["segment"]:
            nic["network"] = nets[nic["segment"]][0]
            nic["rate"] = rate(plan, name, nic["logical"]) if nic["logical"] else None
            nic["mtu"] = mtu(plan, name, nic["logical"]) if nic["logical"] else DEFAULT_MTU
            nic["ifb"] = shared.get(nic["segment"])
    _wire("%s-%s" % (lab, name), nics, host_links)
    mapping = {nic["logical"]: nic["dev"] for nic in nics if nic["logical"]}
    wired = [{"network": n["network"], "name": n["dev"], "logical": n["logical"], "rate": n["rate"],
              "mtu": n["mtu"], "ifb": n["ifb"]}
             for n in nics if n["segment"]]
    return mapping, wired


def _logical_map(wired: list[Record]) -> dict[str, str]:
    return {w["logical"]: w["name"] for w in wired if w["logical"]}


def _set_delays(plan: Plan, lab: str, nics: dict[str, dict[str, str]]) -> None:
    """netem in each container for the plan's per-hop delays, where the host's
    kernel (the containers') has netem; a warning where it has not."""
    if not has_delay(plan):
        return
    missing = netem_missing()
    if missing:
        _say("warning: %s: the topology's per-hop delays (latency) are not emulated in "
             "this lab; the VM lab (--provider vm) emulates them in its VMs' kernels" % missing)
        return
    _say("per-hop delays: netem in each container")
    scripts = {"%s-%s" % (lab, name): "\n".join(commands) for name, mapping in nics.items()
               if (commands := node_delay_commands(plan, name, mapping))}
    _each("per-hop delays", {cont: partial(_run, ["docker", "exec", cont, "sh", "-ec", script])
                             for cont, script in scripts.items()})


def _wire(cont: str, nics: list[Nic], host_links: dict[int, str]) -> None:
    """Rename (where a NIC has a name), flush and shape a container's NICs; sets
    each NIC's "dev", its name in the container."""
    info = json.loads(_run(["docker", "inspect", cont]))[0]
    macs = {net: v["MacAddress"] for net, v in info["NetworkSettings"]["Networks"].items()}
    live = json.loads(_run(["docker", "exec", cont, "ip", "-j", "link"]))
    by_mac = {link.get("address"): link for link in live}
    script = ["set -e", "mount -o remount,rw /proc/sys", "ip route del default 2>/dev/null || true"]
    script += _rename(nics, by_mac, macs)
    for nic in nics:
        link = by_mac[nic["mac"]]
        nic["dev"] = dev = nic.get("name") or link["ifname"]
        if not nic["segment"]:
            continue
        script.append("ip -4 addr flush dev %s" % dev)
        if nic["rate"]:
            script.append(tbf(dev, nic["rate"], nic.get("mtu", DEFAULT_MTU)))
        peer = host_links.get(link.get("link_index"))
        if peer:
            _run(["sh", "-ec", "\n".join(_host_end(peer, nic))])
    _run(["docker", "exec", cont, "sh", "-c", "\n".join(script)])


def _host_end(peer: str, nic: Nic) -> list[str]:
    """What the host end of a container NIC's veth gets: the NIC's MTU (so the
    bridge passes the jumbo frames a plan sets), and on a shared segment its
    frames go through the segment's medium (the only limit on the hub side),
    else a tbf at the NIC's rate (what the NIC receives)."""
    size = nic.get("mtu", DEFAULT_MTU)
    out = ["ip link set dev %s mtu %d" % (peer, size)]
    if nic.get("ifb"):
        return out + port_commands(peer, nic["ifb"])
    return out + ([tbf(peer, nic["rate"], size)] if nic["rate"] else [])


def rewire(lab: str, node: str, wired: list[Record]) -> None:
    """A restarted container's NICs as `up` left them: Docker attaches them anew
    (in any order, with its own addresses): each gets its saved name back, is
    flushed and shaped again. The node's plan configuration is not restored:
    that is site.yml's (or heal.yml's) job, as on a machine that rebooted."""
    host_links = {link["ifindex"]: link["ifname"] for link in json.loads(_run(["ip", "-j", "link"]))}
    nics = [{"segment": w["network"], "network": w["network"], "name": w["name"], "rate": w["rate"],
             "mtu": w.get("mtu", DEFAULT_MTU), "ifb": w.get("ifb"), "up": True} for w in wired]
    _wire("%s-%s" % (lab, node), nics, host_links)


def _rename(nics: list[Nic], by_mac: dict[str, Any], macs: dict[str, str]) -> list[str]:
    """Commands giving each named NIC its name (through a temporary name, so a
    name Docker gave another NIC is free) and its link state; fills in each
    NIC's MAC (and an enx name)."""
    first: list[str] = []
    then: list[str] = []
    for i, nic in enumerate(nics):
        if nic["segment"]:
            nic["mac"] = macs[nic["network"]]
        if "name" not in nic:
            continue
        if nic["name"] == "enx":
            nic["name"] = "enx" + nic["mac"].replace(":", "")
        dev = by_mac[nic["mac"]]["ifname"]
        first.append("ip link set dev %s down && ip link set dev %s name bt%d" % (dev, dev, i))
        then.append("ip link set dev bt%d name %s" % (i, nic["name"]))
        if nic["up"]:
            then.append("ip link set dev %s up" % nic["name"])
    return first + then


def inventory(topology: str, lab: str, hosts: dict[str, Any]) -> dict[str, Any]:
    """The Ansible inventory of the lab: the docker connection (no SSH, so no
    host keys to check), logical -> container NIC names."""
    return {"beonet_nodes": {
        "vars": {"ansible_connection": "community.docker.docker",
                 "ansible_python_interpreter": "/usr/bin/python3",
                 "beonet_topology_file": os.path.abspath(topology),
                 "beonet_management_interface": "none",
                 # Containers never boot: no manager brings NICs up, so auto would refuse.
                 "beonet_node_backend": "networkd",
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


def _tree_mtu(plan: Plan) -> int:
    """The MTU of a tree's uplinks: the largest of its LAN."""
    return max((s["mtu"] for s in plan["segments"].values()), default=DEFAULT_MTU)


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
            _run(["sh", "-c", tbf(dev, mbit, _tree_mtu(plan))])


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
        _release_host(folder)           # what a `lab up` stopped before its state was saved raised
        _say("down: nothing to do, no lab state in %s (0 containers, 0 networks)"
             % os.path.relpath(folder, root))
        return
    conts, nets = _teardown(record)
    remove_state(folder)
    _release_host(folder)
    _say("down: %s removed (%d containers, %d networks)" % (record["lab"], conts, nets))
