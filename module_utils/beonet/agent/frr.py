"""FRR's configuration for a node of a topology with ``routing: {engine: frr}``.

Standard library only (rendered on the node, from its plan, with its NICs' real
names, like the network backends' files). The protocol is OSPFv2 in one area:

* the node's loopback address (``loopback``, a /32 of its own pool) is put on
  ``lo`` by FRR's zebra itself (no network backend involved: the address lives
  exactly as long as the routing that makes it reachable), advertised, and never
  talks OSPF (passive), so it stays reachable while any of the node's cluster
  NICs is;
* every cluster NIC (an ethernet NIC not in a bond, or a bond) runs OSPF with the
  same cost, so each pair's routes are the topology's shortest paths in hops,
  and FRR installs every equal one (ECMP, ``maximum-paths``) as the kernel's
  multipath routes do; a point-to-point segment uses OSPF's point-to-point
  network type, a LAN point-to-multipoint: every member adjacent with every
  other and no designated router, so the death of any member costs the same
  (with a designated router, its death made the LAN elect another and its
  members originate their LSAs again: up to 2.6 s where any other member's took
  0.7); each member advertises its own address on the LAN (a /32), and the
  routes to the members of a node's own LANs leave from its address there, as
  the LAN's connected route would (BFD's sessions need it);
* BFD runs on every adjacency with the topology's timers (``bfd``); OSPF drops
  a neighbour as soon as BFD does, so a dead node or a cut cable costs
  interval x multiplier plus an SPF run, not OSPF's dead interval;
* the management NIC is not in the plan and so never in OSPF.

Why OSPF and not IS-IS or OpenFabric: it is the IGP every Linux admin has met,
FRR's most used, numbered links are what beonet already gives every segment,
and its point-to-multipoint mode runs on the papers' switched segments as they are;
OpenFabric is built for leaf-spine fabrics and IS-IS needs NETs the topology
does not have.
"""

from __future__ import annotations

import ipaddress
import os
from typing import NamedTuple

from .names import file_text
from .nodeplan import Interface, NodePlan, Routing

LOOPBACK_NIC = "lo"               # zebra adds the /32 beside 127.0.0.1/8
FRR_CONF = "/etc/frr/frr.conf"
FRR_DAEMONS = "/etc/frr/daemons"
FILES = (FRR_CONF, FRR_DAEMONS)
OSPF_COST = 10                     # the same on every NIC: hops decide
MAX_PATHS = 64                     # FRR's upper bound; the kernel takes as many
# BFD finds a dead neighbour; OSPF's own timers only decide how soon adjacencies form
# and are the backstop where BFD is not up (4 s, not 40)
HELLO_S, DEAD_S = 1, 4
# a database packet or an LSA without an answer is sent again after this, not FRR's 5 s:
# an adjacency forming again (after BFD dropped a neighbour that was in fact alive: a
# node busy for a second misses its packets) often needs one more database packet, and
# a lost LSA holds a stale route until sent again (FRR acknowledges within a second,
# so 2 s does not send every LSA twice; 1 s would)
RETRANSMIT_S = 2
LSA_INTERVAL_MS, LSA_ARRIVAL_MS = 50, 20
BFD_PROFILE = "beonet"
SOURCE_MAP = "beonet-src"         # learned routes leave from the loopback
LOOPBACK_CLAUSE = 10              # its clause's number (the LANs' clauses come first: 1, 2, ...)
HEADER = "! beonet: written from the cluster plan; changes here are replaced\n"
DAEMONS_HEADER = "# beonet: written from the cluster plan; changes here are replaced\n"
FRRINIT = "/usr/lib/frr/frrinit.sh"   # FRR's init script, where systemd does not run
# FRR's own systemd unit runs its daemons at Nice=-5, so that a node whose cores are busy
# (an MPI job on every core) still answers BFD in time; started without systemd, they get
# the same (where the node may not raise a priority, nice says so in the log and runs on)
NICE = -5
INIT_LOG = "/var/log/beonet-frr-init.log"
WATCHED = ("zebra", "ospfd", "bfdd")  # the daemons the plan needs
RELOAD = "frr-reload.py"              # what a reload runs (frr-pythontools on Debian)


def ospf_nics(n: NodePlan) -> list[Interface]:
    """The NICs that run OSPF: those holding a cluster address (bond members do not)."""
    return [i for i in n["interfaces"] if i["addresses"] and "bond" not in i]


def _interface(iface: Interface) -> list[str]:
    p2p = "peer" in iface
    return (["interface %s" % iface["name"],
             " ip ospf area 0",
             " ip ospf cost %d" % OSPF_COST,
             " ip ospf hello-interval %d" % HELLO_S,
             " ip ospf dead-interval %d" % DEAD_S,
             " ip ospf retransmit-interval %d" % RETRANSMIT_S]
            + [" ip ospf network %s" % ("point-to-point" if p2p else "point-to-multipoint")]
            + [" ip ospf bfd",
               " ip ospf bfd profile %s" % BFD_PROFILE,
               "exit",
               "!"])


def _sources(n: NodePlan, router_id: str) -> list[str]:
    """The route map that gives OSPF's routes their source address: a route to a
    member of one of the node's LANs leaves from the node's own address on that LAN
    (as the LAN's connected route would: BFD's sessions and the LAN's own traffic
    keep the LAN's addresses at both ends), every other route from the loopback
    (clause LOOPBACK_CLAUSE, after them: the same number whatever the LANs, so a
    reload that adds or drops a LAN's clause leaves that one as it is)."""
    lines = []
    lans = [i for i in ospf_nics(n) if "peer" not in i]
    for k, iface in enumerate(lans, 1):
        address = iface["addresses"][0]
        network = ipaddress.ip_interface(address).network
        lines += ["ip prefix-list %s-lan%d seq 5 permit %s le 32" % (SOURCE_MAP, k, network),
                  "!",
                  "route-map %s permit %d" % (SOURCE_MAP, k),
                  " match ip address prefix-list %s-lan%d" % (SOURCE_MAP, k),
                  " set src %s" % address.split("/")[0],
                  "exit",
                  "!"]
    return lines + ["route-map %s permit %d" % (SOURCE_MAP, max(LOOPBACK_CLAUSE, len(lans) + 1)),
                    " set src %s" % router_id,
                    "exit",
                    "!"]


def frr_conf(n: NodePlan, frr: Routing) -> str:
    """/etc/frr/frr.conf of a node (FRR's integrated configuration; FRR takes the
    host name from the system)."""
    router_id = frr["loopback"].split("/")[0]
    bfd = frr["bfd"]
    lines = ["frr defaults traditional",
             "log syslog informational",
             "service integrated-vtysh-config",
             "!",
             "interface %s" % LOOPBACK_NIC,
             " ip address %s" % frr["loopback"],
             " ip ospf area 0",
             " ip ospf passive",
             "exit",
             "!"]
    for iface in ospf_nics(n):
        lines += _interface(iface)
    lines += _sources(n, router_id)
    lines += ["ip protocol ospf route-map %s" % SOURCE_MAP,
              "!",
              "router ospf",
              " ospf router-id %s" % router_id,
              " maximum-paths %d" % MAX_PATHS,
              " timers throttle spf 0 50 1000",
              # OSPF's defaults hold a changed LSA back up to 5 s (and drop a copy that
              # arrives within 1 s of the last): a second change in a failure would wait
              " timers throttle lsa all %d" % LSA_INTERVAL_MS,
              " timers lsa min-arrival %d" % LSA_ARRIVAL_MS,
              "exit",
              "!",
              "bfd",
              " profile %s" % BFD_PROFILE,
              "  detect-multiplier %d" % bfd["multiplier"],
              "  receive-interval %d" % bfd["interval_ms"],
              "  transmit-interval %d" % bfd["interval_ms"],
              " exit",
              " !",
              "exit",
              "!"]
    return HEADER + file_text(lines, "frr.conf")


DAEMONS_ON = ("ospfd", "bfdd")
DAEMONS_OFF = ("bgpd", "ospf6d", "ripd", "ripngd", "isisd", "pimd", "pim6d", "ldpd", "nhrpd", "eigrpd",
               "babeld", "sharpd", "pbrd", "fabricd", "vrrpd", "pathd")
# every process FRR's init script may start (watchfrr, and the daemons it always runs)
PROCESSES = ("watchfrr", "zebra", "mgmtd", "staticd") + DAEMONS_ON + DAEMONS_OFF


def daemons() -> str:
    """/etc/frr/daemons: zebra (always started), ospfd and bfdd; the rest off."""
    on, off = DAEMONS_ON, DAEMONS_OFF
    lines = ["%s=%s" % (d, "yes" if d in on else "no") for d in on + off]
    lines += ["vtysh_enable=yes",
              'zebra_options="  -A 127.0.0.1 -s 90000000"',
              'mgmtd_options="  -A 127.0.0.1"',
              'ospfd_options="  -A 127.0.0.1"',
              'staticd_options="-A 127.0.0.1"',
              'bfdd_options="   -A 127.0.0.1"']
    return DAEMONS_HEADER + file_text(lines, "/etc/frr/daemons")


def frr_files(n: NodePlan) -> dict[str, str]:
    """{path: text} of FRR's files for this node (none with static routes)."""
    frr = n.get("routing")
    if frr is None:
        return {}
    return {FRR_CONF: frr_conf(n, frr), FRR_DAEMONS: daemons()}


def running(proc: str = "/proc") -> bool:
    """Whether every daemon the plan needs has a process (their names in /proc/PID/comm)."""
    names = set()
    try:
        pids = [p for p in os.listdir(proc) if p.isdigit()]
    except OSError:
        return False
    for pid in pids:
        try:
            with open(os.path.join(proc, pid, "comm"), encoding="utf-8", errors="replace") as fh:
                names.add(fh.read().strip())
        except OSError:
            continue            # gone meanwhile
    return all(d in names for d in WATCHED)


# Without systemd nothing holds FRR's processes together: a daemon that outlives the init
# script's stop (slow to end on a busy node, its pid file already gone) is left running,
# and one started beside it shares its sockets: a second bfdd took the BFD packets of the
# new one, whose sessions stayed down. So every FRR process left over is ended (TERM,
# then KILL a second later) after a stop and before a start.
_REAP = ('f() {{ p=; for c in {proc}/[0-9]*/comm; do n=; {{ read -r n < "$c"; }} 2>/dev/null; '
         'case "$n" in {names}) c=${{c%/comm}}; p="$p ${{c##*/}}" ;; esac; done; }}; f; '
         'if [ -n "$p" ]; then kill $p 2>/dev/null; sleep 1; f; '
         'if [ -n "$p" ]; then kill -9 $p 2>/dev/null; fi; fi')
PROC = "/proc"


def _reap() -> str:
    """Every FRR process left ended, found by name in /proc (the shell's own reads: pgrep
    may be missing, and newer ones match no pattern longer than 15 characters)."""
    return _REAP.format(proc=PROC, names="|".join(PROCESSES))


def _init(verb: str, first: bool = True, check: bool = True) -> str:
    """FRR's init script at its unit's priority; the daemons it starts must not hold the
    caller's pipes: their output goes to a log (the first step starts it, the others add).
    check: its failure is the command's (the log's tail said), else only logged."""
    run = "nice -n %d %s %s </dev/null %s%s 2>&1" % (NICE, FRRINIT, verb, ">" if first else ">>", INIT_LOG)
    return run + (" || { s=1; tail -n 5 %s >&2; }" % INIT_LOG if check else " || :")


def service(verb: str, systemd: bool) -> list[str]:
    """The command that starts, reloads, restarts or stops FRR: through systemd where it
    runs (start and disable also set the next boot), else FRR's own init script at the
    priority FRR's unit gives it, FRR's processes left over ended after a stop and before
    a start (a restart is both)."""
    if not systemd:
        steps = {"start": [_reap(), _init("start")], "stop": [_init("stop"), _reap()],
                 "restart": [_init("stop", check=False), _reap(), _init("start", first=False)],
                 }.get(verb, [_init(verb)])
        return ["sh", "-c", "s=0; %s; exit $s" % "; ".join(steps)]
    if verb in ("start", "disable"):        # for the next boot too
        return ["systemctl", "enable" if verb == "start" else "disable", "--now", "frr"]
    return ["systemctl", verb, "frr"]


def start_actions(n: NodePlan, is_running: bool, systemd: bool) -> list[list[str]]:
    """FRR started where the plan runs it and it does not run (after its files are written)."""
    return [service("start", systemd)] if "routing" in n and not is_running else []


def ours(text: str | None) -> bool:
    return bool(text and text.startswith(HEADER))


def written_by_beonet(path: str, text: str | None) -> bool:
    """Whether one of FRR's files holds what beonet wrote (else it is the node's own)."""
    header = HEADER if path == FRR_CONF else DAEMONS_HEADER
    return path not in FILES or bool(text and text.startswith(header))


def service_commands(changed: list[str], conf_text: str | None, systemd: bool) -> list[list[str]]:
    """What tells FRR that its files changed: a reload (a restart when the daemons to run
    changed) when the configuration is beonet's, a stop when it is no longer beonet's (a
    rollback put the node's own files back); nothing when it is gone."""
    if FRR_CONF not in changed and FRR_DAEMONS not in changed:
        return []
    if conf_text is None:
        return []           # gone: FRR was stopped before its files went (leave_actions)
    if not ours(conf_text):
        return [service("stop", systemd)]
    return [service("restart" if FRR_DAEMONS in changed else "reload", systemd)]


def loopback_of(conf_text: str) -> str | None:
    """The loopback address beonet's frr.conf has zebra put on lo ("ADDR/32")."""
    lines = conf_text.splitlines()
    for k, line in enumerate(lines[:-1]):
        if line == "interface %s" % LOOPBACK_NIC and lines[k + 1].startswith(" ip address "):
            return lines[k + 1].split()[-1]
    return None


def leave_actions(n: NodePlan, conf_text: str | None, is_running: bool, systemd: bool,
                  on_lo: list[str]) -> list[list[str]]:
    """FRR stopped on a node whose plan no longer runs it, while beonet's files are still
    there to stop it by (run before the files go), and the loopback zebra put on lo
    (on_lo: the addresses lo has) removed."""
    if "routing" in n or not ours(conf_text):
        return []
    out = [service("disable" if systemd else "stop", systemd)] if is_running else []
    loop = loopback_of(conf_text or "")
    if loop in on_lo:
        out.append(["ip", "address", "del", str(loop), "dev", LOOPBACK_NIC])
    return out


def installed(root: str = "/") -> bool:
    """Whether FRR's daemons and its reload tool are on the node (Debian's and Red Hat's
    packages put them here; Debian's frr-pythontools brings the tool)."""
    return all(os.access(os.path.join(root, "usr/lib/frr", d), os.X_OK) for d in WATCHED + (RELOAD,))


def systemd_runs(root: str = "/") -> bool:
    """Whether systemd is the node's init (the test systemd's own tools use)."""
    return os.path.isdir(os.path.join(root, "run/systemd/system"))


def notify(changed: list[str]) -> list[list[str]]:
    """``service_commands`` on this node: its configuration as it is now, its init."""
    if FRR_CONF not in changed and FRR_DAEMONS not in changed:
        return []
    try:
        with open(FRR_CONF, encoding="utf-8", errors="replace") as fh:
            text: str | None = fh.read()
    except OSError:
        text = None
    return service_commands(changed, text, systemd_runs())


# How a node running FRR tells that its routing has settled, polled once a second for at
# most $T seconds of the node's clock (the caller sets T; a poll on a loaded node can take
# longer than a second, so the bound counts time, not polls): every OSPF neighbour Full, every BFD session up,
# OSPF's routes in the kernel the same two polls running (and, given, as many routes and
# next hops as the plan's learned). One shell command, no module: it runs in verify's read
# and in site.yml's wait. Its last line: "beonet-settle settled|unsettled SECONDS ROUTES
# NEXTHOPS UNSOURCED FORMING BFD_DOWN RESET" (UNSOURCED: routes without a source address;
# FORMING: neighbours not Full; RESET: 1 when the adjacencies were formed again, see REPAIR).
SETTLE_MARK = "beonet-settle"
SETTLED_POLLS = 2
_SETTLE = r"""k=0 s=0 x=0 l=- t=$(date +%%s)
while :; do r=$(ip -4 -o route show proto ospf)
n=$(printf '%%s\n' "$r" | grep -c '^[0-9]'); v=$(printf '%%s\n' "$r" | grep -o ' via ' | wc -l)
o=$(printf '%%s\n' "$r" | grep '^[0-9]' | grep -vc ' src ')
f=$(vtysh -c 'show ip ospf neighbor' 2>/dev/null | grep '^[0-9]' | grep -vc ' Full/')
b=$(vtysh -c 'show bfd peers brief' 2>/dev/null | grep '^[0-9]' | grep -vc ' up *$')
if [ "$r" = "$l" ] && [ "$f$b" = 00 ]%(want)s; then s=$((s + 1)); else s=0; fi
%(repair)sk=$(($(date +%%s) - t)); if [ $s -ge %(polls)d ] || [ $k -ge "$T" ]; then break; fi
l=$r; sleep 1; done
if [ $s -ge %(polls)d ]; then w=settled; else w=unsettled; fi
echo "%(mark)s $w $k $n $v $o $f $b $x"
"""
# FRR's zebra gives a route its source address (the route map ``ip protocol ospf`` names)
# only when OSPF hands it the route after zebra has that configuration; FRR applies the
# daemons' parts of frr.conf side by side at its start, so the routes OSPF learns first can
# stay without one (FRRouting/frr#19611: ``ip protocol`` applies to new routes only). Once
# settled with such routes, the node forms its adjacencies again, once, so that OSPF hands
# zebra every route anew.
REPAIR = ("if [ $s -ge %d ] && [ \"$o\" != 0 ] && [ $x = 0 ]; then "
          "vtysh -c 'clear ip ospf interface' >/dev/null 2>&1; x=1 s=0; fi\n")


def settle_script(want: tuple[int, int] | None = None, repair: bool = False) -> str:
    """The wait (see _SETTLE); want: (routes, next hops) OSPF is to install; repair: form
    the adjacencies again once when routes lack their source address."""
    return (_SETTLE % {"want": ' && [ "$n $v" = "%d %d" ]' % want if want else "",
                       "repair": REPAIR % SETTLED_POLLS if repair else "",
                       "polls": SETTLED_POLLS, "mark": SETTLE_MARK}).strip()


def learned_counts(n: NodePlan) -> tuple[int, int]:
    """(routes, next hops) OSPF is to install on the node: its plan's learned routes."""
    learned = n.get("learned", [])
    return len(learned), sum(len(r.get("nexthops") or [0]) for r in learned)


class Settle(NamedTuple):
    """The settle script's last line (see _SETTLE)."""

    settled: bool
    seconds: int
    routes: int
    hops: int
    unsourced: int
    forming: int
    bfd_down: int
    reset: int


def parse_settle(text: str) -> Settle | None:
    """The settle script's last line; None when the text holds none (the node did not run it)."""
    for line in reversed(text.splitlines()):
        words = line.split()
        if len(words) == 9 and words[0] == SETTLE_MARK and words[1] in ("settled", "unsettled") \
                and all(w.isascii() and w.isdigit() for w in words[2:]):
            return Settle(words[1] == "settled", *(int(w) for w in words[2:]))
    return None
