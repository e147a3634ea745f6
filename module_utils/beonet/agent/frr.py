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
* the management NIC is not in the plan and so never in OSPF;
* with IPv6 in the plan (``loopback6``), OSPFv3 (ospf6d) beside OSPFv2 the same way on
  every cluster NIC, with its own loopback on ``lo``, its own route map of sources and
  BFD on its adjacencies; a link is an OSPFv3 broadcast network (see IPV6). On an
  IPv6-only plan (no ``loopback``) OSPFv2 has no NIC and both take a router id from
  the node's index (router_id).

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
from .nodeplan import Interface, NodePlan, Route, Routing

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
WATCHED = ("zebra", "ospfd", "bfdd")  # the daemons every plan with FRR needs (IPv6: also ospf6d, watched)
PROC = "/proc"                        # where the settle wait finds the node's processes
RELOAD = "frr-reload.py"              # what a reload runs (frr-pythontools on Debian)


def ospf_nics(n: NodePlan) -> list[Interface]:
    """The NICs that run OSPF: those holding a cluster address (bond members do not)."""
    return [i for i in n["interfaces"] if i["addresses"] and "bond" not in i]


class Family(NamedTuple):
    """What OSPF's configuration says differently for one address family."""

    six: bool             # IPv6 (OSPFv3, ospf6d), else IPv4 (OSPFv2, ospfd)
    key: str              # the routing object's key of its loopback ("ADDR/32", "ADDR/128")
    ip: str               # "ip" or "ipv6": zebra's addresses, prefix lists, matches
    ospf: str             # the interface commands' prefix
    protocol: str         # the routing protocol's name for zebra
    source_map: str       # the route map that gives its routes their source
    host: int             # a host prefix's length
    lan: str              # a LAN's network type
    link: str             # a point-to-point segment's


IPV4 = Family(False, "loopback", "ip", "ip ospf", "ospf", SOURCE_MAP, 32,
              "point-to-multipoint", "point-to-point")
# OSPFv3: FRR's ospf6d advertises a point-to-point interface's own address as a /128
# beside the segment's prefix (whatever `p2p-p2mp connected-prefixes` says), which
# OSPFv2's point-to-point type does not: every node would learn two host routes per link
# beyond the plan's. Broadcast advertises the prefix alone, as OSPFv2's point-to-point
# does (docs/frr.md, "IPv6"). A point-to-multipoint LAN advertises each member's /128 and
# not the LAN's prefix, as OSPFv2's does.
IPV6 = Family(True, "loopback6", "ipv6", "ipv6 ospf6", "ospf6", SOURCE_MAP + "6", 128,
              "point-to-multipoint", "broadcast")


def families(frr: Routing) -> list[Family]:
    """The address families the node's plan routes: IPv4 with a loopback, IPv6 with loopback6."""
    return [f for f in (IPV4, IPV6) if f.key in frr]


def loopback(frr: Routing, family: Family) -> str:
    """The node's loopback of one family ("ADDR/32" or "ADDR/128")."""
    return frr["loopback6"] if family.six else frr["loopback"]


def of_family(addresses: list[str], family: Family) -> list[str]:
    """The CIDRs of one family (an IPv6 one holds ':')."""
    return [a for a in addresses if (":" in a) == family.six]


def _ospf(family: Family, network: str) -> list[str]:
    """One family's OSPF commands on a cluster NIC: hops decide (the same cost
    everywhere), BFD on every adjacency."""
    cmd = family.ospf
    return [" %s area 0" % cmd,
            " %s cost %d" % (cmd, OSPF_COST),
            " %s hello-interval %d" % (cmd, HELLO_S),
            " %s dead-interval %d" % (cmd, DEAD_S),
            " %s retransmit-interval %d" % (cmd, RETRANSMIT_S),
            " %s network %s" % (cmd, network),
            " %s bfd" % cmd,
            " %s bfd profile %s" % (cmd, BFD_PROFILE)]


def _interface(iface: Interface, on: list[Family]) -> list[str]:
    p2p = "peer" in iface
    lines = ["interface %s" % iface["name"]]
    for family in on:
        lines += _ospf(family, family.link if p2p else family.lan)
    return lines + ["exit", "!"]


def _loopback(frr: Routing, on: list[Family]) -> list[str]:
    """lo: each family's loopback address, put there by zebra, in OSPF's area, passive."""
    lines = ["interface %s" % LOOPBACK_NIC]
    for family in on:
        lines += [" %s address %s" % (family.ip, loopback(frr, family)),
                  " %s area 0" % family.ospf,
                  " %s passive" % family.ospf]
    return lines + ["exit", "!"]


def _sources(n: NodePlan, family: Family, source: str) -> list[str]:
    """The route map that gives one family's OSPF routes their source address: a route
    to a member of one of the node's LANs leaves from the node's own address on that
    LAN (as the LAN's connected route would: BFD's sessions and the LAN's own traffic
    keep the LAN's addresses at both ends), every other route from the loopback
    (clause LOOPBACK_CLAUSE, after them: the same number whatever the LANs, so a
    reload that adds or drops a LAN's clause leaves that one as it is); zebra applies
    it to the routes of the family's OSPF."""
    lines = []
    lans = [i for i in ospf_nics(n) if "peer" not in i]
    name = family.source_map
    for k, iface in enumerate(lans, 1):
        address = of_family(iface["addresses"], family)[0]
        network = ipaddress.ip_interface(address).network
        lines += ["%s prefix-list %s-lan%d seq 5 permit %s le %d"
                  % (family.ip, name, k, network, family.host),
                  "!",
                  "route-map %s permit %d" % (name, k),
                  " match %s address prefix-list %s-lan%d" % (family.ip, name, k),
                  " set src %s" % address.split("/")[0],
                  "exit",
                  "!"]
    return lines + ["route-map %s permit %d" % (name, max(LOOPBACK_CLAUSE, len(lans) + 1)),
                    " set src %s" % source,
                    "exit",
                    "!",
                    "%s protocol %s route-map %s" % (family.ip, family.protocol, name),
                    "!"]


def router_id(n: NodePlan, frr: Routing) -> str:
    """OSPF's 32-bit router id, the same for both OSPFs: the IPv4 loopback; on an
    IPv6-only plan the node's index + 1 as a dotted quad (0.0.0.1 for the first node):
    unique among the plan's nodes, never 0.0.0.0 (which OSPF refuses), the host number
    the node's IPv6 loopback carries too, and enough for 2**32 - 1 nodes."""
    if "loopback" in frr:
        return frr["loopback"].split("/")[0]
    return str(ipaddress.IPv4Address(n["index"] + 1))


def _routers(rid: str, on: list[Family]) -> list[str]:
    """ospfd's router (always: every FRR node runs the same daemons) and ospf6d's where
    the plan has IPv6: every equal next hop, SPF at once after a change."""
    lines = ["router ospf",
             " ospf router-id %s" % rid,
             " maximum-paths %d" % MAX_PATHS,
             " timers throttle spf 0 50 1000",
             # OSPF's defaults hold a changed LSA back up to 5 s (and drop a copy that
             # arrives within 1 s of the last): a second change in a failure would wait
             " timers throttle lsa all %d" % LSA_INTERVAL_MS,
             " timers lsa min-arrival %d" % LSA_ARRIVAL_MS,
             "exit",
             "!"]
    if IPV6 in on:      # ospf6d originates a changed LSA at once: only the arrival to shorten
        lines += ["router ospf6",
                  " ospf6 router-id %s" % rid,
                  " timers lsa min-arrival %d" % LSA_ARRIVAL_MS,
                  " maximum-paths %d" % MAX_PATHS,
                  " timers throttle spf 0 50 1000",
                  "exit",
                  "!"]
    return lines


def frr_conf(n: NodePlan, frr: Routing) -> str:
    """/etc/frr/frr.conf of a node (FRR's integrated configuration; FRR takes the
    host name from the system): OSPFv2 for IPv4, OSPFv3 for IPv6, each where the plan
    has the family."""
    on = families(frr)
    rid = router_id(n, frr)
    bfd = frr["bfd"]
    lines = ["frr defaults traditional",
             "log syslog informational",
             "service integrated-vtysh-config",
             "!"] + _loopback(frr, on)
    for iface in ospf_nics(n):
        lines += _interface(iface, on)
    for family in on:
        lines += _sources(n, family, loopback(frr, family).split("/")[0])
    lines += _routers(rid, on)
    lines += ["bfd",
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


def daemons(ipv6: bool = False) -> str:
    """/etc/frr/daemons: zebra (always started), ospfd and bfdd, and ospf6d where the
    plan has IPv6; the rest off. ospfd runs on an IPv6-only node too (idle: no NIC in
    its area), so that every FRR node runs the daemons beonet's checks look for."""
    on = DAEMONS_ON + (("ospf6d",) if ipv6 else ())
    lines = ["%s=%s" % (d, "yes" if d in on else "no") for d in DAEMONS_ON + DAEMONS_OFF]
    lines += ["vtysh_enable=yes",
              'zebra_options="  -A 127.0.0.1 -s 90000000"',
              'mgmtd_options="  -A 127.0.0.1"',
              'ospfd_options="  -A 127.0.0.1"']
    lines += ['ospf6d_options=" -A 127.0.0.1"'] if ipv6 else []
    lines += ['staticd_options="-A 127.0.0.1"',
              'bfdd_options="   -A 127.0.0.1"']
    return DAEMONS_HEADER + file_text(lines, "/etc/frr/daemons")


def frr_files(n: NodePlan) -> dict[str, str]:
    """{path: text} of FRR's files for this node (none with static routes)."""
    frr = n.get("routing")
    if frr is None:
        return {}
    return {FRR_CONF: frr_conf(n, frr), FRR_DAEMONS: daemons(IPV6 in families(frr))}


def watched(n: NodePlan) -> tuple[str, ...]:
    """The daemons the node's plan needs: WATCHED, and ospf6d where it routes IPv6."""
    return WATCHED + (("ospf6d",) if "routing" in n and IPV6 in families(n["routing"]) else ())


def running(proc: str = PROC, daemons: tuple[str, ...] = WATCHED) -> bool:
    """Whether every one of the daemons has a process (their names in /proc/PID/comm)."""
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
    return all(d in names for d in daemons)


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


def loopbacks_of(conf_text: str) -> list[str]:
    """The loopback addresses beonet's frr.conf has zebra put on lo ("ADDR/32", "ADDR/128")."""
    lines = conf_text.splitlines()
    if "interface %s" % LOOPBACK_NIC not in lines:
        return []
    out = []
    for line in lines[lines.index("interface %s" % LOOPBACK_NIC) + 1:]:
        if not line.startswith(" "):
            break               # the block's end
        words = line.split()
        if len(words) == 3 and words[0] in (IPV4.ip, IPV6.ip) and words[1] == "address":
            out.append(words[2])
    return out


def leave_actions(n: NodePlan, conf_text: str | None, is_running: bool, systemd: bool,
                  on_lo: list[str]) -> list[list[str]]:
    """FRR stopped on a node whose plan no longer runs it, while beonet's files are still
    there to stop it by (run before the files go), and the loopbacks zebra put on lo
    (on_lo: the addresses lo has) removed."""
    if "routing" in n or not ours(conf_text):
        return []
    out = [service("disable" if systemd else "stop", systemd)] if is_running else []
    return out + [["ip", "address", "del", loop, "dev", LOOPBACK_NIC]
                  for loop in loopbacks_of(conf_text or "") if loop in on_lo]


def installed(root: str = "/", daemons: tuple[str, ...] = WATCHED) -> bool:
    """Whether FRR's daemons (the plan's: ``watched``) and its reload tool are on the node
    (Debian's and Red Hat's packages put them here; Debian's frr-pythontools brings the
    tool)."""
    return all(os.access(os.path.join(root, "usr/lib/frr", d), os.X_OK) for d in daemons + (RELOAD,))


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
# longer than a second, so the bound counts time, not polls): every OSPF neighbour Full (of
# OSPFv2 and, where ospf6d runs, OSPFv3), every BFD session up, OSPF's routes of both
# families in the kernel the same two polls running (and, given, as many routes and next
# hops of each family as the plan's learned). One shell command, no module: it runs in
# verify's read and in site.yml's wait. Its last line: "beonet-settle settled|unsettled|stopped
# SECONDS ROUTES NEXTHOPS UNSOURCED FORMING BFD_DOWN RESET" (stopped: none of FRR's daemons
# had a process the same two polls running; FRR is not running), each count over both
# families (UNSOURCED: routes without a source address; FORMING: neighbours not Full;
# RESET: 1 when the adjacencies were formed again, see REPAIR). OSPFv3's neighbours are
# read from `show ipv6 ospf6 neighbor json` ({"neighbors": [{"neighborId": ..., "state":
# "Full", ...}, ...]}, FRR's ospf6_neighbor.c); an IPv6 route's next hops are link-local,
# so only their number is compared.
SETTLE_MARK = "beonet-settle"
SETTLED_POLLS = 2
_SETTLE = r"""k=0 s=0 x=0 z=0 l=- t=$(date +%%s)
while :; do r=$(ip -4 -o route show proto ospf); q=$(ip -6 -o route show proto ospf 2>/dev/null)
n=$(printf '%%s\n' "$r" | grep -c '^[0-9]'); v=$(printf '%%s\n' "$r" | grep -o ' via ' | wc -l)
o=$(printf '%%s\n' "$r" | grep '^[0-9]' | grep -vc ' src ')
m=$(printf '%%s\n' "$q" | grep -c '^[0-9a-f]'); u=$(printf '%%s\n' "$q" | grep -o ' via ' | wc -l)
p=$(printf '%%s\n' "$q" | grep '^[0-9a-f]' | grep -vc ' src ')
f=$(vtysh -c 'show ip ospf neighbor' 2>/dev/null | grep '^[0-9]' | grep -vc ' Full/')
j=; if grep -qs '^ospf6d=yes' %(daemons)s; then
j=$(vtysh -c 'show ipv6 ospf6 neighbor json' 2>/dev/null | tr -d ' \t'); fi
a=$(printf '%%s\n' "$j" | grep -o '"neighborId":' | wc -l)
g=$((a - $(printf '%%s\n' "$j" | grep -o '"state":"Full"' | wc -l)))
b=$(vtysh -c 'show bfd peers brief' 2>/dev/null | grep '^[0-9]' | grep -vc ' up *$')
if [ "$r|$q" = "$l" ] && [ "$f$g$b" = 000 ]%(want)s; then s=$((s + 1)); else s=0; fi
if grep -qsxE '%(frr)s' %(proc)s/[0-9]*/comm; then z=0; else z=$((z + 1)) s=0; fi
%(repair)sk=$(($(date +%%s) - t)); if [ $s -ge %(polls)d ] || [ $z -ge %(polls)d ] || [ $k -ge "$T" ]
then break; fi
l="$r|$q"; sleep 1; done
if [ $s -ge %(polls)d ]; then w=settled; elif [ $z -ge %(polls)d ]; then w=stopped; else w=unsettled; fi
echo "%(mark)s $w $k $((n + m)) $((v + u)) $((o + p)) $((f + g)) $b $x"
"""
# FRR's zebra gives a route its source address (the route map ``ip protocol ospf`` names)
# only when OSPF hands it the route after zebra has that configuration; FRR applies the
# daemons' parts of frr.conf side by side at its start, so the routes OSPF learns first can
# stay without one (FRRouting/frr#19611: ``ip protocol`` applies to new routes only). Once
# settled with such routes, the node forms the adjacencies of that family's OSPF again,
# once, so that OSPF hands zebra every route anew.
REPAIR = ("if [ $s -ge %d ] && [ \"$o$p\" != 00 ] && [ $x = 0 ]; then "
          "[ \"$o\" = 0 ] || vtysh -c 'clear ip ospf interface' >/dev/null 2>&1; "
          "[ \"$p\" = 0 ] || vtysh -c 'clear ipv6 ospf6 interface' >/dev/null 2>&1; x=1 s=0; fi\n")


class Learned(NamedTuple):
    """The routes and next hops OSPF is to install on a node, of each family."""

    routes: int
    hops: int
    routes6: int = 0
    hops6: int = 0


def settle_script(want: Learned | None = None, repair: bool = False) -> str:
    """The wait (see _SETTLE); want: the routes and next hops OSPF is to install;
    repair: form the adjacencies again once when routes lack their source address."""
    return (_SETTLE % {"want": ' && [ "$n $v $m $u" = "%d %d %d %d" ]' % want if want else "",
                       "repair": REPAIR % SETTLED_POLLS if repair else "", "daemons": FRR_DAEMONS,
                       "polls": SETTLED_POLLS, "mark": SETTLE_MARK, "proc": PROC,
                       "frr": "|".join(WATCHED + ("ospf6d",))}).strip()


def learned_counts(n: NodePlan) -> Learned:
    """The routes and next hops of each family OSPF is to install on the node: its plan's
    learned routes (an IPv6 one's destination holds ':')."""
    learned = n.get("learned", [])
    four, six = [r for r in learned if ":" not in r["to"]], [r for r in learned if ":" in r["to"]]
    return Learned(len(four), _hops(four), len(six), _hops(six))


def _hops(routes: list[Route]) -> int:
    return sum(len(r.get("nexthops") or [0]) for r in routes)


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
    stopped: bool = False       # FRR was not running (none of its daemons had a process)


def parse_settle(text: str) -> Settle | None:
    """The settle script's last line; None when the text holds none (the node did not run it)."""
    for line in reversed(text.splitlines()):
        words = line.split()
        if len(words) == 9 and words[0] == SETTLE_MARK and words[1] in ("settled", "unsettled", "stopped") \
                and all(w.isascii() and w.isdigit() for w in words[2:]):
            seconds, routes, hops, unsourced, forming, bfd_down, reset = (int(w) for w in words[2:])
            return Settle(words[1] == "settled", seconds, routes, hops, unsourced, forming, bfd_down, reset,
                          words[1] == "stopped")
    return None
