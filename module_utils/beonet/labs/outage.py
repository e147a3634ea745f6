"""What one failure costs on a running Docker lab: the pairs whose paths cross it
probed every 100 ms while it happens, then every pair once.

``beonet lab outage TOPOLOGY --node N | --cable NODE:NIC | --switch NAME``:

1. the pairs whose planned paths (any branch) cross the failure: through the node,
   over the cable (a hop between its node and a node on the cable's segment), or
   across the switch (a hop between two nodes on it); pairs of a stopped node
   are not counted;
2. the lab must have settled first: every ordered pair of live nodes is asked once,
   again every second until all answer and, with FRR, every node has a BFD session up
   and an OSPF adjacency (Full) with each neighbour, none still forming (at most
   SETTLE seconds, else the outage is refused): an earlier failure just undone is still being repaired
   (adjacencies and BFD sessions forming again; OSPF drops a neighbour on BFD's word
   only once its session was up), and a failure made then is measured with the
   repair's delay in it;
3. each source of such a pair pings each of its destinations every 100 ms
   (``ping -D``: the reply times; the kernels share the host's clock) at the address
   the plan's tools reach it at: its IPv4 address, on an IPv6-only plan its IPv6 one
   (``ping -6``; the outcome names the family); once every
   probe has had its first answer (a ping started after the failure would find no
   route and end at once, on a busy host ``docker exec`` can take seconds), the
   failure is made (labs/faults.py) after a quiet second, and the probes run for
   the window (--family 6: the IPv6 address of a dual-stack plan);
4. each pair's outage is the time from the failure to the first answer after
   its last lost probe (0 when none was lost), never-answered ones are lost;
5. with the failure still in place, every ordered pair of live nodes is asked
   once (three probes 200 ms apart): those that answer none are lost for good;
   with FRR, the BFD sessions that went down since the probes started although the
   failure did not take them down are named (``bfd_dropped``, labs/frrstate.py): a
   pair never back, or slow, behind such a session waited for an adjacency to form
   again, not for the failure;
6. the failure is undone (the lab is left as it was found).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..agent.names import escaped, shown
from ..outputs.ipfamily import cluster_address
from . import faults, frrstate
from .base import DOCKER_STATE, LabError, LabUsageError, load_state, state_dir

INTERVAL = 0.1                 # seconds between the probes of one pair
QUIET = 1.0                    # seconds of probing before the failure
SETTLE = 60.0                  # seconds the lab may take to answer every pair before it
READY = 10.0                   # seconds the probes may take to get their first answers
EXECS = 8                      # docker execs at a time
PROBES = "/tmp/beonet-outage"  # the probes' output in each source container
_REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from [0-9a-f.:]+: icmp_seq=(\d+)")
_SENT = re.compile(r"^\[(\d+\.\d+)\] no answer yet for icmp_seq=(\d+)")      # ping -O

Pair = tuple[str, str]


@dataclass
class Outcome:
    """One failure's measurement."""

    fault: str
    engine: str
    probed: list[Pair] = field(default_factory=list)
    back: dict[str, float] = field(default_factory=dict)     # "SRC>DST" -> seconds to come back
    never: list[str] = field(default_factory=list)           # probed pairs that never came back
    live_pairs: int = 0
    lost: list[str] = field(default_factory=list)            # live pairs lost for good
    window: float = 0.0
    settled: float = 0.0                                     # seconds until every pair answered
    bfd_dropped: list[str] = field(default_factory=list)     # "NODE>PEER on SEGMENT": not the failure's
    family: str = "IPv4"                                     # of the addresses probed
    restarted: str = ""                                      # the node stopped and started again

    def as_dict(self) -> dict[str, Any]:
        worst = max(self.back.items(), key=lambda kv: kv[1], default=("", 0.0))
        return {"fault": self.fault, "engine": self.engine, "family": self.family, "probed": len(self.probed),
                "back_max_s": round(worst[1], 2), "worst": worst[0],
                "never_back": self.never, "live_pairs": self.live_pairs,
                "lost_for_good": self.lost, "window_s": self.window, "settled_s": round(self.settled, 1),
                "bfd_dropped": self.bfd_dropped, "restarted": self.restarted,
                "back_s": {k: round(v, 2) for k, v in sorted(self.back.items())}}

    def line(self) -> str:
        d = self.as_dict()
        drops = self.bfd_dropped
        return ("outage: %s, %s: %d pairs probed (%s) every %d ms, %s; %d of %d live pairs lost for good%s"
                % (d["engine"], d["fault"], d["probed"], d["family"], INTERVAL * 1000,
                   "all back after %.2f s (worst %s)" % (d["back_max_s"], d["worst"] or "none")
                   if not d["never_back"] else "%d never back within %.0f s" % (len(d["never_back"]),
                                                                               self.window),
                   len(d["lost_for_good"]), d["live_pairs"],
                   "; BFD dropped %d session%s the failure did not touch (%s%s)"
                   % (len(drops), "" if len(drops) == 1 else "s", ", ".join(escaped(d) for d in drops[:3]),
                      ", ..." if len(drops) > 3 else "") if drops else "")
                + (RESTARTED % (self.restarted, self.restarted) if self.restarted else ""))


# A container started again has lost what was set at run time (its network namespace is
# new): the lab rewires its NICs, site.yml applies the node's plan again.
RESTARTED = "; %s was started again without its run-time network state: site.yml --limit %s applies its plan"


def segments_of(plan: dict[str, Any]) -> dict[str, set[str]]:
    """node -> the segments its addressed NICs (or bonds) sit on."""
    return {name: {i["segment"] for i in n["interfaces"] if i["addresses"]}
            for name, n in plan["nodes"].items()}


def crosses(hops: Iterable[Pair], kind: str, what: str, segs: dict[str, set[str]],
            cable_seg: str | None = None) -> bool:
    """Whether a branch (its node-to-node hops) crosses the failure."""
    for a, b in hops:
        shared = segs[a] & segs[b]
        if kind == "node" and a == what:
            return True
        if kind == "switch" and what in shared:
            return True
        if kind == "cable" and what in (a, b) and cable_seg in shared:
            return True
    return False


def failed_at(plan: dict[str, Any], kind: str, what: str) -> tuple[str, str | None]:
    """(the failed node, switch or cable's node; a cable's segment)."""
    if kind != "cable":
        return what, None
    node, nic = what.split(":", 1)
    return node, next((i["segment"] for i in plan["nodes"][node]["interfaces"] if i["name"] == nic), None)


def affected(plan: dict[str, Any], paths: dict[str, dict[str, list[list[str]]]], kind: str,
             what: str) -> list[Pair]:
    """The ordered pairs (neither end the failed node) some branch of which crosses it.
    paths: {src: {dst: [[hop node, ...], ...]}} (the destination last in each branch)."""
    segs = segments_of(plan)
    what, cable_seg = failed_at(plan, kind, what)
    out = []
    for src, dests in paths.items():
        for dst, branches in dests.items():
            if kind == "node" and what in (src, dst):
                continue
            if any(crosses(zip([src] + b[:-1], b), kind, what, segs, cable_seg) for b in branches):
                out.append((src, dst))
    return sorted(out)


def outage_of(lines: Iterable[str], fault_at: float) -> float | None:
    """Seconds from the failure to the first answer after the last probe lost since it
    (0: none lost; None: none answered after it). lines: ``ping -D -O`` output."""
    replies, sent = {}, set()
    for line in lines:
        m = _REPLY.match(line)
        if m:
            replies[int(m.group(2))] = float(m.group(1))
            continue
        m = _SENT.match(line)
        if m:
            sent.add(int(m.group(2)))
    if not replies:
        return None
    seq0 = min(replies)
    t0 = replies[seq0] - (seq0 - 1) * INTERVAL             # when probe 1 was sent, about
    last = max(sent | set(replies))
    after = [s for s in range(max(1, int((fault_at - t0) / INTERVAL) + 1), last + 1)]
    lost = [s for s in after if s not in replies]
    if not lost:
        return 0.0
    back = [s for s in after if s > lost[-1] and s in replies]
    if not back:
        return None
    return max(0.0, t0 + (back[0] - 1) * INTERVAL - fault_at)


def _docker(args: list[str], timeout: float = 60) -> str:
    done = subprocess.run(["docker"] + args, capture_output=True, text=True, check=False,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    if done.returncode:
        raise LabError("docker %s: %s" % (" ".join(args[:3]), done.stderr.strip()[:300]))
    return done.stdout


def ping(address: str) -> str:
    """The ping of the address's family: ``ping -6`` for an IPv6 one (iputils' ping picks
    the family by itself; busybox's and older ones do not)."""
    return "ping -6" if ":" in address else "ping"


def _probe_script(addrs: list[str], seconds: float) -> str:
    """The pings of one source in the background: prints ``ready`` once each has had an
    answer (``waiting ADDR ...`` after READY seconds), then reads from stdin how many
    seconds more they run (the window, given once the failure is made) and ends them.
    No ``ping -w``: with a deadline, ping ends at its first ICMP error (a router's
    "unreachable" while the routing repairs), and the pair would read as never back."""
    pings = " ".join("timeout %d %s -n -D -O -i %.1f %s > %s/%s 2>&1 & p=\"$p $!\";"
                     % (int(seconds + READY) + 30, ping(a), INTERVAL, a, PROBES, a) for a in addrs)
    check = ("w='%s'; n=0; while [ -n \"$w\" ] && [ $n -lt %d ]; do sleep %.1f; r=; "
             "for a in $w; do grep -q 'bytes from' %s/$a || r=\"$r $a\"; done; w=$r; n=$((n+1)); done; "
             "[ -z \"$w\" ] && echo ready || echo \"waiting$w\";"
             % (" ".join(addrs), int(READY / INTERVAL), INTERVAL, PROBES))
    return ("rm -rf %s; mkdir -p %s; p=; %s %s read s; sleep \"${s:-0}\"; kill $p 2>/dev/null; wait"
            % (PROBES, PROBES, pings, check))


def _once_script(addrs: list[str]) -> str:
    asks = " ".join("(%s -n -c 3 -i 0.2 -W 1 %s >/dev/null 2>&1 && echo ok %s || echo lost %s) &"
                    % (ping(a), a, a, a)
                    for a in addrs)
    return "%s wait" % asks


def _paths(compiled: Any, names: list[str]) -> dict[str, dict[str, list[list[str]]]]:
    out: dict[str, dict[str, list[list[str]]]] = {}
    for a in names:
        for b in names:
            if a != b:
                out.setdefault(a, {})[b] = [[h["node"] for h in branch]
                                            for branch in compiled.path(a, b) or []]
    return out


def _probe(lab: str, plan: dict[str, Any], pairs: list[Pair], seconds: float) -> list[subprocess.Popen[str]]:
    """Start the probes: one docker exec per source, its pings in the background."""
    by_src: dict[str, list[str]] = {}
    for src, dst in pairs:
        by_src.setdefault(src, []).append(cluster_address(plan["nodes"][dst]))
    return [subprocess.Popen(["docker", "exec", "-i", "%s-%s" % (lab, src), "sh", "-c",
                              _probe_script(addrs, seconds)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            for src, addrs in sorted(by_src.items())]


def _started(procs: list[subprocess.Popen[str]], owner: dict[str, str], lab: str) -> list[str]:
    """Wait until every source's probes have had their first answers (each prints one
    line); the sources (nodes) some of whose probes never did, with those destinations."""
    waiting = []
    for p in procs:
        said = p.stdout.readline().split() if p.stdout else []
        if said != ["ready"]:
            src = p.args[3].removeprefix(lab + "-") if isinstance(p.args, list) else "?"
            waiting.append("%s to %s" % (src, ", ".join(owner.get(a, a) for a in said[1:]) or "?"))
    return waiting


def _ready(lab: str, plan: dict[str, Any], live: list[str], frr: bool, pairs: list[Pair],
           seconds: float) -> tuple[float, list[subprocess.Popen[str]]]:
    """Settle the lab (_settle), then start the probes; when some get no first answer
    (the lab is still repairing an earlier failure), end them and settle again.
    Returns the seconds it took and the running probes."""
    start = time.monotonic()
    owner = {cluster_address(plan["nodes"][n]): n for n in plan["nodes"]}
    while True:
        settled = _settle(lab, plan, live, frr, start)
        procs = _probe(lab, plan, pairs, seconds)
        waiting = _started(procs, owner, lab)
        if not waiting:
            return settled, procs
        _run_for(procs, 0)
        if time.monotonic() - start > SETTLE:
            raise LabError("outage: probes without an answer before the failure (%s); nothing was failed"
                           % "; ".join(waiting[:3]))


def _run_for(procs: list[subprocess.Popen[str]], seconds: float) -> None:
    """Let the probes run this many seconds more, then wait for them to end."""
    for p in procs:
        if p.stdin:
            p.stdin.write("%.1f\n" % max(0.0, seconds))
            p.stdin.close()
    for p in procs:
        p.wait(timeout=max(0.0, seconds) + 30)


def _outages(lab: str, plan: dict[str, Any], pairs: list[Pair], fault_at: float, out: Outcome) -> None:
    for src in sorted({s for s, _d in pairs}):
        text = _docker(["exec", "%s-%s" % (lab, src), "sh", "-c",
                        "for f in %s/*; do echo \"== $f\"; cat \"$f\"; done" % PROBES])
        files: dict[str, list[str]] = {}
        for line in text.splitlines():
            if line.startswith("== "):
                cur = files.setdefault(os.path.basename(line[3:]), [])
            elif files:
                cur.append(line)
        for s, dst in pairs:
            if s == src:
                took = outage_of(files.get(cluster_address(plan["nodes"][dst]), []), fault_at)
                key = "%s>%s" % (src, dst)
                if took is None:
                    out.never.append(key)
                else:
                    out.back[key] = took


def _each(lab: str, commands: dict[str, list[str]], timeout: float = 30) -> dict[str, str]:
    """One docker exec per node, several at a time: {node: its command's output}."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=EXECS) as pool:
        done = {n: pool.submit(_docker, ["exec", "%s-%s" % (lab, n)] + cmd, timeout)
                for n, cmd in commands.items()}
    return {n: f.result() for n, f in done.items()}


def _every_pair(lab: str, plan: dict[str, Any], live: list[str], out: Outcome) -> None:
    """Every ordered pair of live nodes asked once (one docker exec per source): three
    probes 200 ms apart, an answer to any of them is an answer (one probe lost to a
    route being replaced at that instant is not a pair lost)."""
    owner = {cluster_address(plan["nodes"][n]): n for n in live}
    asks = {src: [cluster_address(plan["nodes"][d]) for d in live if d != src] for src in live}
    said = _each(lab, {src: ["sh", "-c", _once_script(addrs)] for src, addrs in asks.items()})
    for src in live:
        out.live_pairs += len(asks[src])
        out.lost += ["%s>%s" % (src, owner[w.split()[1]]) for w in said[src].splitlines()
                     if w.startswith("lost ")]
    out.lost.sort()


def _families(plan: dict[str, Any]) -> tuple[bool, bool]:
    """(the plan has IPv4, it has IPv6)."""
    nodes = plan["nodes"].values()
    return any("address" in n for n in nodes), any("address6" in n for n in nodes)


def _frr_behind(lab: str, plan: dict[str, Any], live: list[str]) -> list[str]:
    """With FRR: the live nodes without a BFD session up and an OSPF neighbour settled
    for every live neighbour (one per segment they share) of each family the plan has
    (OSPFv2 for IPv4, OSPFv3 for IPv6, a BFD session for each), or with an adjacency still
    forming: OSPF drops a neighbour when BFD does only once its session was up, and a
    failure made while an adjacency forms would measure the forming, not the failure."""
    segs = segments_of(plan)
    four, six = _families(plan)
    behind = []
    said = _each(lab, {n: list(frrstate.state_command(six)) for n in live})
    for n in live:
        want = sum(len(segs[n] & segs[m]) for m in live if m != n)
        bfd, ospf, ospf6 = frrstate.sections(said[n])
        up = frrstate.bfd_up(bfd)
        ospfs = [("OSPF", frrstate.ospf_settled(ospf))] if four else []
        ospfs += [("OSPFv3", frrstate.ospf6_settled(ospf6))] if six else []
        if up < want * len(ospfs):
            behind.append("%s (%d of %d BFD sessions up)" % (n, up, want * len(ospfs)))
            continue
        behind += ["%s (%d of %d %s neighbours settled%s)" % (
            n, settled, want, name, "; forming on " + ", ".join(forming) if forming else "")
            for name, (settled, forming) in ospfs if settled < want or forming][:1]
    return behind


def _bfd_read(lab: str, live: list[str]) -> dict[str, str]:
    """What each live node's ``show bfd peers json`` printed."""
    return _each(lab, {n: list(frrstate.BFD) for n in live})


def _sessions(said: dict[str, str]) -> dict[str, frrstate.Sessions]:
    return {n: frrstate.sessions_up(text) for n, text in said.items()}


def nic_segments(record: dict[str, Any]) -> dict[str, str]:
    """"NODE:NIC" (the lab's NIC names) -> its segment, from the lab's state record."""
    segments = record.get("segments")
    return {nic: seg for seg, info in (segments.items() if isinstance(segments, dict) else ())
            if isinstance(info, dict) for nic in info.get("nics", []) if isinstance(nic, str)}


class Peers:
    """Who a BFD peer is: the node and segment of a plan address, or of a link-local
    ADDRESS%NIC (the lab's NIC) by the nodes' own link-local addresses."""

    def __init__(self, plan: dict[str, Any], segment_of: dict[str, str] | None = None,
                 link_local: dict[tuple[str, str], str] | None = None) -> None:
        self.owner = {a.split("/")[0]: (name, i["segment"]) for name, n in plan["nodes"].items()
                      for i in n["interfaces"] for a in i["addresses"]}
        self.segment_of, self.link_local = segment_of or {}, link_local or {}

    def of(self, node: str, peer: str) -> tuple[str, str]:
        """(the peer's node, the segment) of node's session to peer; (peer, "?"): unknown."""
        if peer in self.owner:
            return self.owner[peer]
        address, zone, nic = peer.partition("%")
        seg = self.segment_of.get("%s:%s" % (node, nic)) if zone else None
        if seg is None:
            return peer, "?"
        return self.link_local.get((address, seg), address), seg


def bfd_dropped(plan: dict[str, Any], kind: str, what: str, before: dict[str, frrstate.Sessions],
                after: dict[str, frrstate.Sessions], between: float, peers: Peers | None = None) -> list[str]:
    """The BFD sessions that went down between two readings `between` seconds apart
    although the failure did not take them down: "NODE>PEER on SEGMENT"."""
    peers = peers or Peers(plan)
    where, cable_seg = failed_at(plan, kind, what)
    out = []
    for n in sorted(before):
        for peer in frrstate.went_down(before[n], after.get(n, {}), between):
            m, seg = peers.of(n, peer)
            touched = (where in (n, m) if kind == "node" else seg == where if kind == "switch"
                       else seg == cable_seg and where in (n, m))
            if not touched:
                out.append("%s>%s on %s" % (n, m, seg))
    return out


def _settle(lab: str, plan: dict[str, Any], live: list[str], frr: bool, start: float) -> float:
    """Seconds since start until every ordered pair of live nodes answered and, with FRR,
    every BFD session was up and every OSPF adjacency formed (asked again every second)."""
    limit = SETTLE
    while True:
        asked = Outcome("settle", "")
        _every_pair(lab, plan, live, asked)
        waiting = []
        if asked.lost:
            waiting.append("%d of %d pairs do not answer (e.g. %s)"
                           % (len(asked.lost), asked.live_pairs, ", ".join(asked.lost[:3])))
        if not waiting and frr:
            behind = _frr_behind(lab, plan, live)
            waiting = ["FRR is not settled everywhere: %s" % ", ".join(behind[:3])] if behind else []
        if not waiting:
            return time.monotonic() - start
        if time.monotonic() - start > limit:
            raise LabError("outage: the lab has not settled after %.0f s: %s; nothing was failed"
                           % (limit, waiting[0]))
        time.sleep(1.0)


FAULTS = {"node": ("stop", "start"), "cable": ("down", "up"), "switch": ("down", "up")}


def probed_plan(plan: dict[str, Any], version: int | None) -> tuple[dict[str, Any], str]:
    """The plan as the probes see it, and the IP family's name: each node's ``address``
    that of the IP version probed (4 or 6; None: IPv4 where the plan has it)."""
    four, six = _families(plan)
    version = version or (4 if four else 6)
    if version not in (4, 6) or not (four if version == 4 else six):
        raise LabUsageError("outage: --family %s: the plan has no IPv%s addresses" % (version, version))
    if version == 4 or not four:
        return plan, "IPv%d" % version
    nodes = {n: dict(node, address=node["address6"]) for n, node in plan["nodes"].items()}
    return dict(plan, nodes=nodes), "IPv6"


def measure(topology: str, root: str, label: str | None, kind: str, what: str,
            window: float = 10.0, family: int | None = None) -> Outcome:
    """Make one failure on the Docker lab, measure it (see the module's docstring), undo it."""
    from ..compiler import pipeline
    from ..outputs import plan as render

    if kind not in FAULTS:
        raise LabError("outage: give --node, --cable or --switch")
    node, nic = faults.parse_link(what, "--cable") if kind == "cable" else (what, "")
    folder = state_dir(root, topology, label)
    record = load_state(folder, DOCKER_STATE)
    if record is None:
        raise LabError("no Docker lab in %s: bring it up first (beonet lab up)"
                       % os.path.relpath(folder, root))
    compiled = pipeline.compile_file(topology)
    plan: dict[str, Any] = dict(render.plan(compiled))
    if kind != "switch" and node not in plan["nodes"]:
        raise LabError("outage: no node %s in the plan" % shown(node))
    if nic and nic not in {i["name"] for i in plan["nodes"][node]["interfaces"]}:
        raise LabError("outage: --cable %s: %s has no NIC %s in the plan" % (
            escaped(what), node, shown(nic)))
    stopped = set((record.get("faults") or {}).get("nodes", []))
    live = [n for n in plan["nodes"] if n not in stopped and not (kind == "node" and n == what)]
    pairs = [p for p in affected(plan, _paths(compiled, list(plan["nodes"])), kind, what)
             if p[0] in live and p[1] in live]
    probed, name = probed_plan(plan, family)
    out = Outcome("%s %s" % (kind, what), compiled.graph.engine, pairs, window=window, family=name,
                  restarted=what if kind == "node" else "")
    down, up = FAULTS[kind]
    args = {"node": what} if kind == "node" else {kind: what}
    frr = compiled.graph.engine == "frr"
    up_now = [n for n in plan["nodes"] if n not in stopped]
    out.settled, procs = _ready(record["lab"], probed, up_now, frr, pairs, QUIET + window)
    try:
        said, read_at = (_bfd_read(record["lab"], up_now) if frr else {}), time.monotonic()
        segment_of = nic_segments(record)
        peers = Peers(plan, segment_of, frrstate.link_local_holders(said, segment_of))
        time.sleep(QUIET)
        fault_at = time.time()
        faults.fault(topology, root, label, "docker", action=down, **args)
        _run_for(procs, fault_at + window - time.time())
        _outages(record["lab"], probed, pairs, fault_at, out)
        _every_pair(record["lab"], probed, live, out)
        if frr:
            between = time.monotonic() - read_at
            out.bfd_dropped = bfd_dropped(plan, kind, what, _sessions(said),
                                          _sessions(_bfd_read(record["lab"], live)), between, peers)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        faults.fault(topology, root, label, "docker", action=up, **args)
    return out


def report(outcome: Outcome, fmt: str) -> str:
    return json.dumps(outcome.as_dict(), indent=2) if fmt == "json" else outcome.line()
