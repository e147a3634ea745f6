"""The host kernel settings a Docker lab needs, raised by `lab up` and put back
by `lab down`.

The containers of a Docker lab share the host kernel's neighbour (ARP) table:
its limits net.ipv4.neigh.default.gc_thresh1/2/3 (128/512/1024 by default) are
host-wide. Past gc_thresh3 a new entry fails ("neighbor table overflow", probes
get "No buffer space available"); past gc_thresh2 entries idle for 5 s are
collected. `lab up` computes from the plan a bound on the entries the lab's
nodes can hold and raises (never lowers) the three limits to hold it; `lab down`
puts back the values it found once no beonet lab is up any more.

What else a container costs the host, measured on a 36-node lab (Docker 20.10,
cgroup v1): 3 processes and ~13.5 threads (11 of them the containerd shim's),
one key in root's keyring (root's quota, kernel.keys.root_maxkeys = 1,000,000,
applies: kernel.keys.maxkeys is other users'), no inotify instance. So
kernel.pid_max (32768) holds some 2,300 containers, the keys and
fs.inotify.max_user_instances are not touched: only the neighbour table is.

Labs run from several checkouts (each with its own .lab/): the host-wide record
of what was raised lives in /run/beonet/host-sysctl.json, emptied at boot as
the kernel's settings are. It lists the labs holding the settings (by state
folder) and the true originals: the values found before any lab changed them.
A holder whose state record is gone and whose process has ended is dropped (an
interrupted `lab up`), so the settings never stay raised for a lab that is not
there. All reads and writes of /proc/sys go through read_sysctl and
write_sysctl, which the tests replace.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from ..agent.files import atomic_write
from ..agent.procs import alive
from .base import DOCKER_STATE, LabError, Plan, Record

PROC_SYS = "/proc/sys"
HOST_RECORD = "/run/beonet/host-sysctl.json"
GC_THRESH = tuple("net.ipv4.neigh.default.gc_thresh%d" % k for k in (1, 2, 3))
MIN_MARGIN = 128        # room above the lab's bound for the host's own entries


def read_sysctl(name: str) -> int:
    """A kernel setting's value, read from /proc/sys."""
    with open(os.path.join(PROC_SYS, *name.split(".")), encoding="ascii") as fh:
        return int(fh.read().split()[0])


def write_sysctl(name: str, value: int) -> None:
    """Set a kernel setting through /proc/sys (OSError when it cannot be written)."""
    with open(os.path.join(PROC_SYS, *name.split(".")), "w", encoding="ascii") as fh:
        fh.write("%d\n" % value)


def neighbour_need(plan: Plan) -> int:
    """A bound on the neighbour entries a lab's nodes can hold: each node, on
    each segment it has an address on, resolves at most every other node there."""
    total = 0
    for seg in plan["segments"].values():
        members = len({m["node"] for m in seg["members"] if m.get("address")})
        total += members * (members - 1)
    return total


def wanted(need: int) -> dict[str, int]:
    """The limits that hold need entries: gc_thresh2 (the soft limit) the need
    and a margin, gc_thresh1 and gc_thresh3 in the kernel's default ratio
    (1 : 4 : 8) to it."""
    soft = need + max(MIN_MARGIN, need // 8)
    return dict(zip(GC_THRESH, (soft // 4, soft, 2 * soft)))


def targets(current: Mapping[str, int], need: int) -> dict[str, int]:
    """current raised where it holds less than wanted(need); never lowered, and
    gc_thresh1 <= gc_thresh2 <= gc_thresh3 kept."""
    goal = wanted(need)
    out: dict[str, int] = {}
    floor = 0
    for name in GC_THRESH:
        out[name] = floor = max(current[name], goal[name], floor)
    return out


class NoRecord(LabError):
    """The host-wide record cannot be kept (not root)."""


def _stale(folder: str, holder: Mapping[str, Any]) -> bool:
    """A holder whose lab is gone: no state record, and the `lab up` that
    registered it has ended."""
    return not os.path.exists(os.path.join(folder, DOCKER_STATE)) and not alive(int(holder["pid"]))


@contextlib.contextmanager
def _host_record() -> Iterator[Record]:
    """The host-wide record, locked against other beonet processes while held;
    saved on leaving (removed once it lists no holder and no original).
    LabError when it cannot be read or written."""
    try:
        os.makedirs(os.path.dirname(HOST_RECORD), exist_ok=True)
        lock = open(HOST_RECORD + ".lock", "a", encoding="utf-8")
    except OSError as exc:
        raise NoRecord("cannot keep the host's record of the settings labs raise (%s): "
                       "a Docker lab needs root" % exc) from exc
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = _load_record()
        yield record
        for folder in [f for f, h in record["holders"].items() if _stale(f, h)]:
            del record["holders"][folder]
        if record["holders"] or record["original"]:
            atomic_write(HOST_RECORD, json.dumps(record, indent=2, sort_keys=True) + "\n")
        elif os.path.exists(HOST_RECORD):
            os.unlink(HOST_RECORD)


def _load_record() -> Record:
    record: Record = {"original": {}, "set": {}, "holders": {}}
    if os.path.exists(HOST_RECORD):
        try:
            with open(HOST_RECORD, encoding="utf-8") as fh:
                record.update(json.load(fh))
        except (OSError, ValueError) as exc:
            raise LabError("%s: unreadable (%s): check the host's neighbour-table settings "
                           "(sysctl net.ipv4.neigh.default) and remove it" % (HOST_RECORD, exc)) from exc
    return record


def _refusal(current: Mapping[str, int], goal: Mapping[str, int], need: int, exc: Exception) -> LabError:
    short = {k: v for k, v in goal.items() if v != current[k]}
    which = ", ".join("%s is %d, the lab needs %d" % (k, current[k], v) for k, v in short.items())
    return LabError("the host's neighbour (ARP) table is too small for this lab (its nodes can hold "
                    "%d entries): %s; they cannot be raised from here (%s). As root run "
                    "`sysctl -w %s`, then `lab up` again"
                    % (need, which, exc, " ".join("%s=%d" % kv for kv in short.items())))


def _write(values: Mapping[str, int], current: Mapping[str, int], need: int) -> None:
    """Write values, highest limit first (the order holds at every step); on a
    failure put back what was written and refuse."""
    done: list[str] = []
    try:
        for name in reversed(GC_THRESH):
            if name in values:
                write_sysctl(name, values[name])
                done.append(name)
    except OSError as exc:
        for name in reversed(done):
            with contextlib.suppress(OSError):
                write_sysctl(name, current[name])
        raise _refusal(current, dict(current, **values), need, exc) from exc


def acquire(folder: str, lab: str, need: int) -> Record:
    """Hold the host's limits for the lab saved in folder, which needs room
    for need neighbour entries: raise them to what every lab holding them
    needs together. Returns what the lab's state record keeps: its need, the
    values found and those written. LabError, before anything is changed
    (what was written is put back), when they cannot be raised."""
    try:
        return _acquire(folder, lab, need)
    except NoRecord as exc:         # not root: say which settings the lab needs, if any
        current = {name: read_sysctl(name) for name in GC_THRESH}
        goal = targets(current, need)
        if goal != current:
            raise _refusal(current, goal, need, exc) from exc
        raise


def _acquire(folder: str, lab: str, need: int) -> Record:
    with _host_record() as record:
        holders = dict(record["holders"], **{folder: {"lab": lab, "need": need, "pid": os.getpid()}})
        total = sum(int(h["need"]) for f, h in holders.items() if f == folder or not _stale(f, h))
        current = {name: read_sysctl(name) for name in GC_THRESH}
        raise_to = {k: v for k, v in targets(current, total).items() if v != current[k]}
        _write(raise_to, current, need)
        for name, value in raise_to.items():
            record["original"].setdefault(name, current[name])
            record["set"][name] = value
        record["holders"] = holders
    return {"need": need, "total": total, "found": current, "set": raise_to}


def release(folder: str) -> list[str]:
    """The lab saved in folder no longer holds the limits; when no lab does,
    put back the originals (a limit changed since by someone else is left as
    it is). Returns what was done, for the user."""
    if not os.path.exists(HOST_RECORD):
        return []
    with _host_record() as record:
        record["holders"].pop(folder, None)
        live = [f for f, h in record["holders"].items() if not _stale(f, h)]
        if live:
            return ["host limits kept: %d other lab(s) still up" % len(live)] if record["original"] else []
        out = []
        for name in GC_THRESH:                 # lowest first: the order holds at every step
            if name not in record["original"]:
                continue
            now, original = read_sysctl(name), int(record["original"][name])
            if now != record["set"][name]:
                out.append("%s left at %d (changed since the lab set %d)" % (name, now, record["set"][name]))
            elif now != original:
                try:
                    write_sysctl(name, original)
                except OSError as exc:      # kept in the record: a later `lab down` tries again
                    out.append("%s left at %d: cannot write it (%s)" % (name, now, exc))
                    continue
                out.append("%s put back to %d" % (name, original))
            del record["original"][name], record["set"][name]
    return out
