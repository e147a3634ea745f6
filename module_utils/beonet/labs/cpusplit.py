"""Where a lab run's CPU time goes: the controller, the nodes, the container engine.

On a Docker lab the controller, the container engine and every node share the
host's cores, so a playbook's wall time on the lab is not what the same controller
would take against real nodes, each with cores of its own. This runs one command
(a playbook) and splits the CPU time the host spent while it ran into:

* ``controller``: the command and everything it ran and waited for (ansible-playbook,
  its forked workers, the ``docker exec`` clients of the connection plugin), from the
  kernel's accounting of reaped children (``getrusage(RUSAGE_CHILDREN)``);
* ``nodes``: the containers' cgroups (cgroup v1 ``cpuacct/docker``, or v2
  ``docker-*.scope`` / ``docker/`` under the unified hierarchy): what the nodes ran,
  including the modules' Python;
* ``rest``: the host's total (``/proc/stat``) less both: the container engine
  (dockerd, containerd, the shims and runc) and anything else the host did.

``controller`` over the cores is a lower bound on the wall time this controller
needs against real nodes (the nodes' share is spent on the nodes).

  python -m beonet.labs.cpusplit [--out FILE] -- COMMAND [ARG...]

writes one line (``cpu: wall W s; host H s; controller C s; nodes N s; rest R s``)
to FILE (default: standard error) and exits with the command's exit status.
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass

PROC_STAT = "/proc/stat"
CGROUP = "/sys/fs/cgroup"
# the containers' CPU counters, nanoseconds (v1) or "usage_usec" lines (v2)
V1_DOCKER = "cpuacct/docker/cpuacct.usage"
V2_SCOPES = ("system.slice/docker-*.scope/cpu.stat", "docker/cpu.stat")


@dataclass(frozen=True)
class Counters:
    """CPU seconds so far: the host (every core), the containers, reaped children."""

    host: float
    nodes: float
    children: float


def host_seconds(stat_text: str, ticks: int) -> float:
    """Busy CPU seconds of every core from /proc/stat's first line (idle and iowait
    left out; guest time is already inside user)."""
    for line in stat_text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(v) for v in fields[1:9]] + [0] * 8
            user, nice, system, _idle, _iowait, irq, softirq, steal = values[:8]
            return (user + nice + system + irq + softirq + steal) / ticks
    raise ValueError("no 'cpu' line in %s" % PROC_STAT)


def _v2_usage(text: str) -> float:
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "usage_usec":
            return int(value) / 1e6
    return 0.0


def nodes_seconds(cgroup: str) -> float:
    """CPU seconds the containers have used (0 when no docker cgroup is found)."""
    v1 = os.path.join(cgroup, V1_DOCKER)
    if os.path.exists(v1):
        with open(v1, encoding="ascii") as fh:
            return int(fh.read().strip() or 0) / 1e9
    total = 0.0
    for pattern in V2_SCOPES:
        for path in glob.glob(os.path.join(cgroup, pattern)):
            with open(path, encoding="ascii") as fh:
                total += _v2_usage(fh.read())
    return total


def read_counters(proc_stat: str = PROC_STAT, cgroup: str = CGROUP) -> Counters:
    with open(proc_stat, encoding="ascii") as fh:
        host = host_seconds(fh.read(), os.sysconf("SC_CLK_TCK"))
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Counters(host, nodes_seconds(cgroup), usage.ru_utime + usage.ru_stime)


def split_line(before: Counters, after: Counters, wall: float) -> str:
    """The one-line report of the CPU spent between two readings."""
    host = after.host - before.host
    controller = after.children - before.children
    nodes = after.nodes - before.nodes
    rest = max(0.0, host - controller - nodes)
    return ("cpu: wall %.1f s; host %.1f s; controller %.1f s; nodes %.1f s; rest %.1f s"
            % (wall, host, controller, nodes, rest))


def run(argv: list[str], proc_stat: str = PROC_STAT, cgroup: str = CGROUP) -> tuple[int, str]:
    """Run argv and split the CPU the host spent meanwhile: (exit status, the line)."""
    before, start = read_counters(proc_stat, cgroup), time.monotonic()
    try:
        rc = subprocess.call(argv)
    except OSError as exc:
        return 127, "cpusplit: cannot run %s: %s" % (argv[0], exc.strerror)
    wall = time.monotonic() - start
    return rc, split_line(before, read_counters(proc_stat, cgroup), wall)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m beonet.labs.cpusplit",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", help="write the line to this file (default: standard error)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    rc, line = run(command)
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError as exc:
            print("cpusplit: cannot write %r: %s (%s)" % (args.out, exc.strerror, line), file=sys.stderr)
            return rc or 2
    else:
        print(line, file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
