"""One shell command per node for verify: the live state and the node's traceroutes,
read with ``raw`` (no module started on the node) and parsed on the controller.

Standard library only. ``read_command`` builds the command on the controller from
the node's plan and its traceroute targets: it runs collect.COMMANDS (the links,
addresses and routes tried twice, as ``collect.needed`` does), asks the neighbours (IPv4 and IPv6)
the kernel marks FAILED or INCOMPLETE once more and reads them again (then once
more after ``settle`` seconds while one is resolving, as ``collect.collect``
does), prints the files the check reads (the forwarding sysctls, the bonds), the
TSO of the bonds whose plan turns it off, and runs each traceroute (ping first;
one whose target answered and whose hops are on no allowed hop list is traced
twice more, waiting longer, as the module did). Every section starts with a line
``@@beonet@@ KIND KEY RC`` (a command's status is on its ``err`` line, after its
output; of a command tried twice the second try stands). ``parse_output`` splits
the text into sections; ``state_of_output`` makes the state ``collect.collect``
makes (through the same function, fed the printed output); ``node_result`` the
result beonet_verify returns for the node (traces, forwarding, bonds, routes).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from . import collect, frr, verify
from .apply import tso_off_bonds
from .fast import shell
from .nodeplan import NodePlan

MARK = "@@beonet@@"
FILES = ("/proc/sys/net/ipv4/conf/*/forwarding /proc/sys/net/ipv4/conf/*/ignore_routes_with_linkdown "
         "/proc/sys/net/ipv4/fib_multipath_use_neigh %s %s %s"
         % (collect.IPTABLES_NAMES, verify.FORWARD, verify.BONDING % "*"))
PARALLEL = 8                    # traceroutes at once
TSO = "tcp-segmentation-offload:"
NEIGHBOURS = ("neigh", "neigh6")  # the tables read after the unanswered neighbours are asked again
ROUTING_WAIT = 60               # seconds a node running FRR waits for its routing to settle

# r KEY TRIES ARGV...: run ARGV (again while it fails, up to TRIES times), each try a
# section: its stdout as it comes, then its status and stderr (the last try's stand).
# t N ADDR MAX ALLOWED...: ping, then trace (see above). A process costs a millisecond
# or more on a loaded node, so the shell does what it can itself (no grep, cat, awk or
# temporary file but for traces run side by side).
_FUNCTIONS = r"""M=%(mark)s
r() { k=$1 n=$2; shift 2; while :; do echo "$M out $k -"; { e=$("$@" 2>&1 >&3); } 3>&1; c=$?
echo; printf '%%s\n%%s\n' "$M err $k $c" "$e"; n=$((n - 1)); [ $n -le 0 ] && break
case $c$e in 0*"%(interrupted)s"*) ;; 0*) break ;; esac; done; }
t() { k=$1 a=$2 m=$3; shift 3; s=0 n=1
if command -v ping >/dev/null && ! ping -n -q -c 1 -W 1 "$a" >/dev/null 2>&1; then s=1 n=$m; fi
for w in 1 3 3; do o=$(%(trace)s 2>&1); c=$?; [ $s = 1 ] && break; h= p=
while read -r i x _; do case $i in ""|*[!0-9]*) continue ;; esac; h=$h$p$x p=" "; done <<EOF
$o
EOF
for x in "$@"; do [ "$h" = "$x" ] && break 2; done; done
printf '%%s\n%%s\n' "$M trace $k $c $s" "$o"; }"""


def _functions() -> str:
    trace = " ".join(verify.traceroute_command('"$a"', '"$m"', '"$w"', '"$n"'))
    return _FUNCTIONS % {"mark": MARK, "interrupted": collect.INTERRUPTED, "trace": trace}


def _unresolved(states: str) -> str:
    """The neighbours of both families in those states (``ip neigh`` lines); a node
    without IPv6 lists its IPv4 ones."""
    return "ip -4 neigh show %s; ip -6 neigh show %s 2>/dev/null" % (states, states)


def _neighbours(settle: float) -> list[str]:
    """Ask the unanswered neighbours of both families once more (at most ASK_MAX), then
    read both tables again (collect.collect): an IPv6 pair is not judged on a FAILED
    entry older than the node's start either."""
    ask = ("printf '%%s\\n' \"$f\" | head -n %d | { while read -r a _ n _; do "
           "ping -n -q -c 1 -W %d -I \"$n\" \"$a\" >/dev/null 2>&1 & done; wait; }"
           % (collect.ASK_MAX, collect.ASK_WAIT))
    if settle > 0:
        ask += "; if [ -n \"$(%s)\" ]; then sleep %g; fi" % (_unresolved("nud incomplete"), settle)
    return ["f=$(%s)" % _unresolved("nud failed nud incomplete"), "if [ -n \"$f\" ]; then %s; fi" % ask] + [
        "r %s 1 %s" % (key, " ".join(dict(collect.COMMANDS)[key])) for key in NEIGHBOURS]


def _traces(targets: list[tuple[str, int, list[list[str]]]]) -> list[str]:
    """One trace runs in the foreground; more PARALLEL at a time, each into its own file
    ("a & b & wait": a ";" may not follow "&"), printed once all are done."""
    jobs = ["t %d %s %d %s" % (k, shlex.quote(addr), hops_max,
                               " ".join(shlex.quote(" ".join(b)) for b in allowed))
            for k, (addr, hops_max, allowed) in enumerate(targets)]
    if len(jobs) <= 1:
        return jobs
    files = ["%s >\"$d/t%d\" &" % (job, k) for k, job in enumerate(jobs)]
    runs = [" ".join(files[k:k + PARALLEL]) + " wait" for k in range(0, len(files), PARALLEL)]
    return ["if d=$(mktemp -d); then %s; cat \"$d\"/t* 2>/dev/null; rm -rf \"$d\"; fi" % "; ".join(runs)]


def read_command(n: NodePlan, targets: list[tuple[str, int, list[list[str]]]], settle: float = 3.0) -> str:
    """The command for ``raw``: targets are (address, hops at most, allowed hop lists). A
    node running FRR first waits until its routing has settled (frr.settle_script), at most
    $T seconds (ROUTING_WAIT unless the caller sets T before the command)."""
    parts = [_functions()]
    if "routing" in n:
        parts += ["echo \"$M settle - 0\"", "T=${T:-%d}" % ROUTING_WAIT, frr.settle_script()]
    for key, argv in collect.COMMANDS:
        if key not in NEIGHBOURS:
            parts.append("r %s %d %s" % (key, 2 if key in collect.NEEDED else 1, " ".join(argv)))
    parts += _neighbours(settle)
    parts.append("echo \"$M files - 0\"; grep -H '' %s 2>/dev/null || :" % FILES)
    for bond in tso_off_bonds(n):
        parts.append("r tso:%s 1 ethtool -k %s" % (bond, bond))
    return shell(parts + _traces(targets))


@dataclass
class Output:
    """The sections of one node's output: {key: (rc, stdout, stderr)}, files, traces."""

    commands: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    traces: dict[int, tuple[int, bool, str]] = field(default_factory=dict)   # k -> rc, silent, output
    settle: str | None = None           # what the routing's settle printed (FRR), None: nothing


def parse_output(text: str) -> Output:
    """The sections of the printed output (a terminal's CR line ends taken off)."""
    out = Output()
    head: list[str] | None = None
    body: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n") + ["%s end - 0" % MARK]:
        words = line.split(" ")
        if words[0] == MARK and len(words) >= 4:
            if head is not None:
                _section(out, head, body)
            head, body = words, []
        elif head is not None:
            body.append(line)
    return out


def _section(out: Output, head: list[str], body: list[str]) -> None:
    kind, key, rc = head[1], head[2], head[3]
    code = int(rc) if rc.lstrip("-").isdigit() else -1
    text = "\n".join(body)
    if kind == "out":
        out.commands[key] = (code, text, "")
    elif kind == "err" and key in out.commands:
        out.commands[key] = (code, out.commands[key][1], text)
    elif kind == "files":
        for line in body:
            path, sep, value = line.partition(":")
            if sep:
                out.files[path] = out.files.get(path, "") + value + "\n"
    elif kind == "settle":
        out.settle = text
    elif kind == "trace" and key.isdigit():
        out.traces[int(key)] = (code, len(head) > 4 and head[4] == "1", text)


def state_of_output(out: Output) -> dict[str, Any]:
    """The state collect.collect makes on a node, from the printed output (a command
    that printed nothing at all failed: the shell did not run it)."""
    argv_key = {tuple(argv): key for key, argv in collect.COMMANDS}

    def run(argv: list[str]) -> tuple[int, str, str]:
        key = argv_key.get(tuple(argv), "")
        missing = (127, "", "%s: not run (the node's output has no section)" % key)
        rc, text, err = out.commands.get(key, missing)
        if rc == 127 and err.rstrip().endswith("not found"):
            err = "%s is not installed" % argv[0]      # the shell's words for what the agent says
        return rc, text, err
    return collect.collect(run, out.files.get, settle=0)


def _tso(out: Output, bond: str) -> bool | None:
    rc, text, _err = out.commands.get("tso:%s" % bond, (1, "", ""))
    found = [line.split(":", 1)[1].split() for line in text.splitlines() if line.strip().startswith(TSO)]
    return found[0][0] == "on" if rc == 0 and found and found[0] else None


def node_result(name: str, n: NodePlan, out: Output, targets: list[tuple[str, str]],
                expected: dict[str, Any]) -> dict[str, Any]:
    """What beonet_verify returns for the node: targets are (destination, address) in
    the order read_command was given them."""
    seen: dict[str, list[str]] = {}
    silent = []
    for k, (dst, _addr) in enumerate(targets):
        rc, quiet, text = out.traces.get(k, (1, False, "the node printed no trace"))
        seen[dst] = verify.parse_traceroute(text) if rc == 0 else ["error: %s" % text.strip()]
        silent += [dst] if quiet else []
    tso = {bond: _tso(out, bond) for bond in tso_off_bonds(n)}
    rc, text, err = out.commands.get("routes", (127, "", "no routes printed"))
    errors: list[str] = []
    routes = collect.needed(lambda _argv: (rc, text, err), dict(collect.COMMANDS)["routes"], errors)
    result = verify.node_result(name, n, expected, seen, silent, out.files.get, tso, routes, errors)
    if "routing" in n:
        result["problems"] += settle_problems(name, out.settle)
    return result


def settle_problems(name: str, text: str | None) -> list[str]:
    """What kept a node's routing from settling before its state was read, as one problem."""
    got = frr.parse_settle(text or "")
    if got is None:
        return ["%s: did not say whether its routing had settled (no settle line in its output)" % name]
    if got.settled:
        return []
    if got.stopped:
        return ["%s: FRR is not running (none of its daemons has a process); its routing was read as it was"
                % name]
    what = [_count(got.forming, "OSPF neighbour", "not Full")] if got.forming else []
    what += [_count(got.bfd_down, "BFD session", "not up")] if got.bfd_down else []
    what += ["OSPF's routes still changing"] if not what else []
    return ["%s: routing not settled after %d s (%s); read as it was" % (name, got.seconds, ", ".join(what))]


def _count(k: int, noun: str, state: str) -> str:
    return "%d %s%s %s" % (k, noun, "" if k == 1 else "s", state)
