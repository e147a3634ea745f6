"""A change that undoes itself unless it is confirmed (as Junos' ``commit confirmed``).

Standard library only (runs on the nodes inside the ``beonet_node`` module).
Before a node changes anything, the module saves what it is about to change (the
files, byte for byte with their modes and owners, and the live state it read:
links, addresses, routes, forwarding, sysctls, the nftables table, TSO) and arms
a **waiter**: a process of its own session, detached from the module and from the
connection, that rolls the node back (restore.py) when the deadline passes or
when it is told to, unless the change is confirmed first. It survives the
controller disappearing; it does not survive a reboot (the saved state stays on
disk and the next run says so, then confirms or restores it).

Each checkpoint has a folder of its own under FOLDER (``current`` names the
latest): ``saved.json`` (the checkpoint), ``waiter.json`` (its pid, the boot it
runs in, the deadline), ``rollback`` (a request: why), ``result.json`` (what a
rollback did, kept until a run reads it). Who decides, confirm or rollback, is
the one that renames ``saved.json`` to ``taken.json`` first: the rename is
atomic, so a change is never both confirmed and rolled back; a waiter only ever
looks at its own folder, so an old one never acts on a newer change.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from . import procs, restore
from .apply import run_action
from .backends import manager_commands
from .files import atomic_write, read_text

if TYPE_CHECKING:
    from .apply import Action

    Capture = Callable[[list[str]], "tuple[int, str, str]"]    # argv -> (rc, stdout, stderr)
    RollBack = Callable[[dict[str, Any], str], dict[str, Any]]

FORMAT = 1
FOLDER = "/var/lib/beonet/checkpoint"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
POLL = 0.5                      # seconds between two looks of the waiter
RESULT_WAIT = 90.0              # seconds a caller waits for a rollback's result
MAX_TIMEOUT = 86400
ID_RULE = re.compile(r"[0-9a-f]{16}\Z")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class CheckpointError(Exception):
    """The checkpoint could not be saved, armed or read; the message says why."""


def paths(sub: str) -> dict[str, str]:
    """The files of one checkpoint (its own folder)."""
    names = ("saved.json", "taken.json", "waiter.json", "rollback", "result.json")
    return {n.split(".", maxsplit=1)[0]: os.path.join(sub, n) for n in names}


def current(folder: str | None = None) -> str | None:
    """The folder of the node's latest checkpoint (None: there is none)."""
    base = folder or FOLDER
    name = (read_text(os.path.join(base, "current")) or "").strip()
    return os.path.join(base, name) if ID_RULE.match(name) else None


def boot_id() -> str:
    return (read_text(BOOT_ID) or "").strip()


def _load(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def status(folder: str | None = None) -> dict[str, Any]:
    """{"state": none | pending | orphaned, "left": seconds to the deadline (pending)}.

    pending: a change waits for its confirmation, its waiter running; orphaned: a
    saved checkpoint whose waiter is gone (the node rebooted, or it was killed)."""
    sub = current(folder)
    if sub is None or not any(os.path.exists(paths(sub)[k]) for k in ("saved", "taken")):
        return {"state": "none"}
    waiter = _load(paths(sub)["waiter"]) or {}
    pid = waiter.get("pid")
    if waiter.get("boot") == boot_id() and isinstance(pid, int) and procs.alive(pid):
        return {"state": "pending", "left": max(0, round(float(waiter.get("deadline", 0)) - time.time()))}
    return {"state": "orphaned"}


def save(saved: dict[str, Any], folder: str | None = None) -> str:
    """Write a new checkpoint (readable by root only: it holds the node's files), make it
    the current one and remove the others (decided, or taken over); its folder."""
    base = folder or FOLDER
    os.makedirs(base, mode=0o700, exist_ok=True)
    sub = os.path.join(base, secrets.token_hex(8))
    os.mkdir(sub, 0o700)
    atomic_write(paths(sub)["saved"], json.dumps(saved, sort_keys=True), mode=0o600)
    atomic_write(os.path.join(base, "current"), os.path.basename(sub) + "\n", mode=0o600)
    for name in os.listdir(base):
        if ID_RULE.match(name) and name != os.path.basename(sub):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    return sub


def claim(sub: str) -> dict[str, Any] | None:
    """Take the decision (rename saved.json): the saved checkpoint, None when another
    took it first."""
    p = paths(sub)
    try:
        os.rename(p["saved"], p["taken"])
    except FileNotFoundError:
        return None
    return _load(p["taken"]) or {}


def finish(sub: str, result: dict[str, Any] | None = None) -> None:
    """End a decided checkpoint: keep a rollback's result until a run reads it, remove
    the rest (a confirmed checkpoint leaves nothing behind)."""
    if result is None:
        _remove(sub)
        return
    atomic_write(paths(sub)["result"], json.dumps(result, sort_keys=True), mode=0o600)
    for name in ("taken", "waiter", "rollback"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(paths(sub)[name])


def peek_result(folder: str | None = None) -> dict[str, Any] | None:
    """The result of a rollback not reported yet (left in place)."""
    sub = current(folder)
    result = _load(paths(sub)["result"]) if sub else None
    return result if isinstance(result, dict) else None


def take_result(folder: str | None = None) -> dict[str, Any] | None:
    """The result of a rollback not reported yet; its checkpoint is removed once read."""
    result = peek_result(folder)
    sub = current(folder)
    if result is not None and sub is not None:
        _remove(sub)
    return result


def _remove(sub: str) -> None:
    """Remove a decided checkpoint's folder, and the name of it as the current one."""
    shutil.rmtree(sub, ignore_errors=True)
    name = os.path.join(os.path.dirname(sub), "current")
    if (read_text(name) or "").strip() == os.path.basename(sub):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


# -- the waiter ------------------------------------------------------------------------

def waiter_loop(sub: str, deadline: float, late: str, roll_back: RollBack,
                clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep) -> str:
    """Wait for the confirmation (saved.json gone), a rollback request or the deadline
    (late: why, then); roll back in the latter two. Returns confirmed or rolled back."""
    p = paths(sub)
    while True:
        if not os.path.exists(p["saved"]):
            return "confirmed"
        why = read_text(p["rollback"])
        if why is None and clock() >= deadline:
            why = late
        if why is not None:
            saved = claim(sub)
            if saved is None:
                return "confirmed"
            finish(sub, roll_back(saved, why.strip() or "rollback requested"))
            return "rolled back"
        sleep(POLL)


def arm(sub: str, timeout: float, roll_back: RollBack) -> int:
    """Start the waiter of the checkpoint in sub (a grandchild in its own session, its
    standard streams on /dev/null); returns its pid at once."""
    if not 0 < timeout <= MAX_TIMEOUT:
        raise CheckpointError("the confirm timeout must be more than 0 and at most %d s, not %s"
                              % (MAX_TIMEOUT, timeout))
    armed = time.time()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        procs.detach()
        if os.fork():
            os._exit(0)
        os.write(write, b"%d" % os.getpid())
        os.close(write)
        try:
            waiter_loop(sub, armed + timeout, "not confirmed within %g s" % timeout, roll_back)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        pid = int(fh.read() or b"0")
    os.waitpid(child, 0)
    atomic_write(paths(sub)["waiter"], json.dumps({"pid": pid, "boot": boot_id(), "armed": armed,
                                                   "deadline": armed + timeout}), mode=0o600)
    return pid


def _wait_result(sub: str, wait: float, sleep: Callable[[float], None]) -> dict[str, Any] | None:
    p = paths(sub)
    waited = 0.0
    while waited < wait:
        result = _load(p["result"])
        if isinstance(result, dict):
            _remove(sub)
            return result
        sleep(0.1)
        waited += 0.1
    return None


def _late(why: str, wait: float) -> dict[str, Any]:
    return {"why": why, "errors": ["the rollback did not report within %d s" % wait]}


def confirm(folder: str | None = None, wait: float = RESULT_WAIT,
            sleep: Callable[[float], None] = time.sleep) -> dict[str, Any] | None:
    """Confirm the current change: None when confirmed (or nothing waited); the
    rollback's result when the waiter decided first (its deadline came)."""
    sub = current(folder)
    if sub is None or claim(sub) is not None:
        if sub is not None:
            finish(sub)
        return None
    return _wait_result(sub, wait, sleep) or _late("the deadline came before the confirmation", wait)


def roll_back_now(why: str, roll_back: RollBack, folder: str | None = None, wait: float = RESULT_WAIT,
                  sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Roll the current change back at once: its waiter does it when it runs (asked
    through the rollback file), else (orphaned) the caller does. The rollback's result."""
    sub = current(folder)
    if sub is None:
        return _late(why, 0)
    if status(folder)["state"] == "pending":
        atomic_write(paths(sub)["rollback"], why, mode=0o600)
        return _wait_result(sub, wait, sleep) or _late(why, wait)
    saved = claim(sub)
    if saved is None:
        return _wait_result(sub, wait, sleep) or _late(why, wait)
    result = roll_back(saved, why)
    _remove(sub)
    return result


# -- the rollback itself ---------------------------------------------------------------

COMMAND_TIMEOUT = 120      # seconds one command of a restore may take (a rollback always ends)


def capture(argv: list[str]) -> tuple[int, str, str]:
    """Run a program (found on the sbin paths too); (rc, stdout, stderr)."""
    exe = shutil.which(argv[0], path=os.pathsep.join(filter(None, [os.environ.get("PATH"), PATH])))
    if exe is None:
        return 127, "", "%s is not installed" % argv[0]
    return procs.run([exe] + argv[1:], COMMAND_TIMEOUT)


ROUTES6 = ["ip", "-j", "-6", "route", "show", "table", "main"]


def read_state(run: Capture) -> dict[str, Any]:
    """The live state a restore compares with the saved one (ip -j, the nft table): the
    main table's IPv4 and IPv6 routes (none of the latter where the kernel has no IPv6)."""
    out: dict[str, Any] = {}
    for key, argv in (("links", ["ip", "-j", "link"]), ("addrs", ["ip", "-j", "addr"]),
                      ("routes", ["ip", "-j", "route", "show", "table", "main"]), ("routes6", ROUTES6)):
        rc, text, err = run(argv)
        try:
            out[key] = json.loads(text or "[]") if rc == 0 else None
        except ValueError:
            out[key] = None
        if out[key] is None and key == "routes6" and rc != 0 and "not supported" in err:
            out[key] = []
        if not isinstance(out[key], list):
            raise CheckpointError("%s failed: %s" % (" ".join(argv), (err or "no JSON").strip()[:200]))
    out["routes"] += out.pop("routes6")
    rc, text, _err = run(["nft", "list", "table", "inet", "beonet"])
    out["nft_table"] = text if rc == 0 else None
    return out


def _carry_out(todo: Iterable[Action], run: Capture, errors: list[str], done: list[str]) -> None:
    for cmd in todo:
        err = run_action(cmd, lambda argv: run(argv)[::2])
        done.append(" ".join(cmd))
        if err is not None:
            errors.append("%s: %s" % (" ".join(cmd), err))


def differences(saved: dict[str, Any], now: dict[str, Any], scope: Iterable[str],
                load_path: str) -> list[str]:
    """What still differs from the saved state (sysctls and offloads are only written)."""
    return [" ".join(a) for a in restore.actions(saved, now, scope, load_path)
            if a[0] not in ("sysctl", "ethtool")]


def _put_files_back(saved: dict[str, Any], errors: list[str]) -> list[str]:
    files = []
    for path, copy in sorted((saved.get("files") or {}).items()):
        try:
            if restore.put_back(path, copy):
                files.append(path)
        except OSError as exc:
            errors.append("%s: %s" % (path, exc))
    return files


def _put_live_back(live: dict[str, Any], scope: list[str], run: Capture, errors: list[str],
                   done: list[str]) -> list[str]:
    """Removals first, read again, then the rest; what still differs afterwards."""
    fd, load = tempfile.mkstemp(prefix="beonet-nft-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(restore.nft_text(live["nft_table"]) if live.get("nft_table") else "")
        _carry_out(restore.removals(live, read_state(run), scope), run, errors, done)
        _carry_out(restore.actions(live, read_state(run), scope, load), run, errors, done)
        return differences(live, read_state(run), scope, load)
    except (CheckpointError, KeyError, TypeError) as exc:
        errors.append(str(exc))
        return []
    finally:
        os.unlink(load)


def roll_back(saved: dict[str, Any], why: str, run: Capture = capture) -> dict[str, Any]:
    """Put the saved files back, then the live state, and tell the network managers of
    the files; the result says what was done, what failed and what still differs."""
    errors: list[str] = []
    done: list[str] = []
    files = _put_files_back(saved, errors)
    left = _put_live_back(saved.get("live") or {}, saved.get("scope") or [], run, errors, done)
    _carry_out([c for c in manager_commands(files) if shutil.which(c[0], path=PATH)], run, errors, done)
    return {"rolled_back": True, "why": why, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "files": files, "commands": done, "errors": errors, "left": left}


# -- what a change keeps, and the check that confirms it -------------------------------

LIVE_KEYS = ("links", "addrs", "routes", "forwarding", "nft_table", "tso", "sysctls")
PING_ROUNDS = 3


def checkpoint_of(node: str, live: dict[str, Any], touched: Iterable[str],
                  scope: Iterable[str]) -> dict[str, Any]:
    """What a change keeps before it starts: the live state it read, a copy of every
    file it may write or remove, and the links it may touch."""
    return {"format": FORMAT, "node": node, "live": {k: live.get(k) for k in LIVE_KEYS},
            "files": restore.copies(touched), "scope": sorted(set(scope))}


def merged(older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    """An unconfirmed checkpoint kept across a reboot and a new change: the older state
    stays what a rollback restores; files and links only the newer change touches are
    taken as they are now (the older change left them alone)."""
    files = dict(newer.get("files") or {})
    files.update(older.get("files") or {})
    scope = set(older.get("scope") or []) | set(newer.get("scope") or [])
    return dict(older, files=files, scope=sorted(scope))


def check_problems(node: str, left: list[Action], targets: list[tuple[str, str]],
                   ping: Callable[[list[tuple[str, str]]], set[tuple[str, str]] | None]) -> list[str]:
    """Why the node does not pass its local check after the change: what of its plan is
    not in place (left: the commands still needed), and the planned neighbours that do
    not answer on their NIC (asked up to PING_ROUNDS times)."""
    problems = []
    if left:
        problems.append("%s: the plan is not in place, %d command(s) still needed (%s)"
                        % (node, len(left), "; ".join(" ".join(a) for a in left[:3])))
    silent = list(targets)
    for _round in range(PING_ROUNDS):
        if not silent:
            break
        answered = ping(silent)
        if answered is None:
            return problems + ["%s: no ping on the node: its neighbours cannot be asked" % node]
        silent = [t for t in silent if t not in answered]
    if silent:
        more = " and %d more" % (len(silent) - 8) if len(silent) > 8 else ""
        asked = ", ".join("%s on %s" % t for t in silent[:8])
        problems.append("%s: no answer from %s%s" % (node, asked, more))
    return problems
