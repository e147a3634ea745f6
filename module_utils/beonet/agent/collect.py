"""Read, and change nothing, what decides IPv4 and IPv6 forwarding on this node: the
live state the controller proves every ordered pair from (beonet.livestate).

Standard library only (it runs on the nodes inside the beonet_verify module,
``collect: true``). ``collect`` runs ``ip -j`` (links, IPv4 addresses, the main
table's routes with every next hop, neighbours) and ``nft -j list ruleset``,
and reads the forwarding sysctls; ``state_of`` reduces their output to the
compact state below (a pure function, tested on recorded kernel output):

* ``links``: {NIC: {"state": "up" | "no-carrier" | "down", "master": BOND}};
* ``addrs``: {NIC: ["ADDR/LEN", ...]} (IPv4);
* ``routes``: [{"dst": "NET/LEN", "type", "src", "metric", "proto", "flags",
  "hops": [{"via", "dev", "flags"}]}] of the main table, every route (beonet's
  or not); a connected route's hop has no ``via``, a blackhole none at all;
* ``neigh``: [{"dst", "dev", "state"}], only FAILED and INCOMPLETE entries.
  A FAILED entry is the kernel's memory of a neighbour that did not answer
  once (a node that was down, since started again): the kernel asks again as
  soon as traffic goes its way. So each such neighbour is asked once now (one
  echo request, all at once, ``ask``) and the table read again; then, while
  any entry is INCOMPLETE (resolving), once more after ``settle`` seconds;
* ``sysctl``: {"forwarding": {NIC | "all": 0 | 1}, "linkdown": {...}
  (``ignore_routes_with_linkdown``), "use_neigh": 0 | 1};
* ``rules``: the ``ip rule`` priorities other than local, main and default;
* ``filter``: the base chains on the forward hook of families ip and inet
  (table, chain, priority, policy, rules as nft's JSON expressions) with the
  sets those rules name, and the legacy iptables tables loaded; or
  {"error": ...} when nft cannot list the ruleset;
* ``addrs6``, ``routes6``, ``neigh6``, ``rules6``: the same of IPv6 (``ip -j -6``; addresses that
  failed duplicate address detection left out; a multipath route listed as one
  route per next hop, as kernels before 4.11 dump them, made one route);
* ``sysctl6``: {"forwarding": {NIC | "all": 0 | 1}, "linkdown": {...}} of IPv6, from
  ``ip -j -6 netconf`` (netlink: one command, no file per NIC);
* ``errors``: what could not be read;
* ``unread6``: which of NEEDED6 (addrs6, routes6, netconf6) failed, also on a second
  try: the node's IPv6 forwarding cannot be judged (of no weight where the plan has no
  IPv6);
* ``unread``: which of the readings without which the node's forwarding cannot be
  judged (NEEDED: links, addrs, routes) failed, also on a second try: a command that
  failed or printed no JSON, or a link listing that is empty (``lo`` is always there)
  or lacks a NIC the addresses or routes name (a listing cut short). The controller
  names such a node once as unreadable instead of judging its links from it.
"""

from __future__ import annotations

import ipaddress
import json
import time
from typing import TYPE_CHECKING, Any

from .names import ifname_problem
from .probe import ping_all

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    Runner = Callable[[list[str]], "tuple[int, str, str]"]    # argv -> (rc, stdout, stderr)
    Reader = Callable[[str], "str | None"]                    # path -> text, None when unreadable
    Asker = Callable[[list[tuple[str, str]]], None]           # [(neighbour, NIC)] -> asked

STATE_FORMAT = 1
COMMANDS = (("links", ["ip", "-j", "link", "show"]),
            ("addrs", ["ip", "-j", "-4", "addr", "show"]),
            ("routes", ["ip", "-j", "-4", "-d", "route", "show", "table", "main"]),
            ("neigh", ["ip", "-j", "-4", "neigh", "show"]),
            ("rules", ["ip", "-j", "-4", "rule", "show"]),
            ("nft", ["nft", "-j", "list", "ruleset"]),
            ("addrs6", ["ip", "-j", "-6", "addr", "show"]),
            ("routes6", ["ip", "-j", "-6", "-d", "route", "show", "table", "main"]),
            ("neigh6", ["ip", "-j", "-6", "neigh", "show"]),
            ("rules6", ["ip", "-j", "-6", "rule", "show"]),
            ("netconf6", ["ip", "-j", "-6", "netconf", "show"]))
NEEDED = ("links", "addrs", "routes")          # without these there is no state
NEEDED6 = ("addrs6", "routes6", "netconf6")    # without these there is no IPv6 state
SIX = NEEDED6 + ("neigh6", "rules6")          # the IPv6 readings
INTERRUPTED = "Dump was interrupted"           # ip's warning that a listing may be incomplete
UNRESOLVED = ("FAILED", "INCOMPLETE")
DEFAULT_RULES = (0, 32766, 32767)              # local, main, default
IPTABLES_NAMES = "/proc/net/ip_tables_names"   # the legacy iptables tables in use
MAX_RULES = 200                                # rules kept per forward chain
MAX_ELEMENTS = 65536                           # set elements kept per set
ASK_MAX = 256                                  # neighbours asked again per collection
ASK_WAIT = 1                                   # seconds an echo request waits for its answer


def collect(run: Runner, read: Reader, settle: float = 3.0,
            sleep: Callable[[float], None] = time.sleep,
            ask: Asker | None = None) -> dict[str, Any]:
    """Run the commands and read the sysctls; the compact state (see the docstring).
    ``ask``: asks neighbours once more (default: one ping each); None in tests."""
    raw: dict[str, Any] = {}
    errors: list[str] = []
    for key, argv in COMMANDS:
        raw[key] = _json_of(run, argv, errors) if key not in NEEDED + NEEDED6 else needed(run, argv, errors)
    if links_gap(raw):                             # a listing cut short: once more
        raw["links"] = needed(run, dict(COMMANDS)["links"], errors)
    again = {key: unanswered(raw.get(key), version) for key, version in (("neigh", 4), ("neigh6", 6))}
    if any(again.values()) and ask is not None:
        ask((again["neigh"] + again["neigh6"])[:ASK_MAX])
        _read_again(run, raw, errors, [key for key, asked in again.items() if asked])
    resolving = [key for key in ("neigh", "neigh6") if _resolving(raw.get(key))]
    if resolving and settle > 0:
        sleep(settle)
        _read_again(run, raw, errors, resolving)
    return state_of(raw, read, errors)


def _read_again(run: Runner, raw: dict[str, Any], errors: list[str], keys: list[str]) -> None:
    """Those neighbour tables (neigh, neigh6) read again."""
    for key in keys:
        raw[key] = _json_of(run, dict(COMMANDS)[key], errors)


def unanswered(neigh: Any, version: int = 4) -> list[tuple[str, str]]:
    """(address, NIC) of the FAILED and INCOMPLETE entries: addresses of the IP version
    on NICs whose names are interface names, at most ASK_MAX."""
    out = []
    for n in reduce_neigh(_listed(neigh)):
        try:
            if ipaddress.ip_address(n["dst"]).version != version or "%" in n["dst"]:
                continue
        except ValueError:
            continue
        if ifname_problem(n["dev"]) is None:
            out.append((n["dst"], n["dev"]))
    return out[:ASK_MAX]


def ask_neighbours(targets: list[tuple[str, str]]) -> None:
    """One echo request to each neighbour out of its NIC, all at once (probe.ping_all);
    waits at most ASK_WAIT seconds. Without ping nothing is asked (the entries stay as
    they are)."""
    ping_all(targets, ASK_WAIT)


def needed(run: Runner, argv: list[str], errors: list[str]) -> Any:
    """A reading the state cannot do without: tried twice (a node under heavy load may
    fail one); the errors of the last try."""
    first: list[str] = []
    got = _json_of(run, argv, first)
    if got is None:
        got = _json_of(run, argv, errors)
    return got


def _json_of(run: Runner, argv: list[str], errors: list[str]) -> Any:
    rc, out, err = run(argv)
    if rc != 0 or INTERRUPTED in (err or ""):
        errors.append("%s: %s" % (" ".join(argv), (err or "exit status %d" % rc).strip()[:300]))
        return None
    try:
        return json.loads(out or "[]")
    except ValueError as exc:
        errors.append("%s: output is not JSON (%s)" % (" ".join(argv), exc))
        return None


def _resolving(neigh: Any) -> bool:
    return isinstance(neigh, list) and any(
        isinstance(n, dict) and "INCOMPLETE" in _words(n.get("state")) for n in neigh)


def state_of(raw: dict[str, Any], read: Reader, errors: list[str] | None = None) -> dict[str, Any]:
    """The compact state from parsed command output (raw[key] for each of COMMANDS;
    None where the command failed) and a reader of /proc files."""
    errors = list(errors or [])
    unread = [key for key in NEEDED if not isinstance(raw.get(key), list)]
    errors += ["%s: no usable output" % key for key in unread]
    gap = links_gap(raw)
    if gap:
        unread.insert(0, "links")
        errors.append("links: %s" % gap)
    links = reduce_links(_listed(raw.get("links")))
    addrs = reduce_addrs(_listed(raw.get("addrs")))
    nft = raw.get("nft")
    return {"format": STATE_FORMAT, "unread": unread,
            "unread6": [key for key in NEEDED6 if not isinstance(raw.get(key), list)],
            "links": links,
            "addrs": addrs,
            "routes": reduce_routes(_listed(raw.get("routes"))),
            "neigh": reduce_neigh(_listed(raw.get("neigh"))),
            "sysctl": read_sysctls(sorted(addrs), read),
            "rules": reduce_rules(_listed(raw.get("rules"))),
            "filter": reduce_nft(nft, read) if isinstance(nft, dict) else
            {"error": _nft_error(errors), "legacy": legacy_tables(read)},
            "addrs6": reduce_addrs(_listed(raw.get("addrs6")), "inet6"),
            "routes6": reduce_routes(_listed(raw.get("routes6")), 6),
            "neigh6": reduce_neigh(_listed(raw.get("neigh6"))),
            "rules6": reduce_rules(_listed(raw.get("rules6"))),
            "sysctl6": reduce_netconf(_listed(raw.get("netconf6"))),
            "errors": errors}


def six_error(error: str) -> bool:
    """Whether an error of the state is one of its IPv6 readings' (of no weight where
    the plan has no IPv6)."""
    commands = dict(COMMANDS)
    return any(error.startswith((key + ":", " ".join(commands[key]) + ":")) for key in SIX)


def links_gap(raw: dict[str, Any]) -> str | None:
    """Why a link listing that was read is not whole (None: it is, or none was read)."""
    if not isinstance(raw.get("links"), list):
        return None
    routes = reduce_routes(_listed(raw.get("routes"))) + reduce_routes(_listed(raw.get("routes6")), 6)
    addrs = list(reduce_addrs(_listed(raw.get("addrs"))))
    addrs += list(reduce_addrs(_listed(raw.get("addrs6")), "inet6"))
    return gap(reduce_links(raw["links"]), addrs, [h.get("dev") for r in routes for h in r["hops"]])


def gap(links: Iterable[str], addrs: Iterable[str], devs: Iterable[Any]) -> str | None:
    """Why a node's NICs as listed are not all of them (None: they may be): none at all
    (``lo`` is always there), or without some that hold addresses or routes (a listing
    cut short). The controller checks the states it is sent the same way."""
    listed = set(links)
    if not listed:
        return "ip listed no NIC, not even lo"
    missing = sorted((set(addrs) | {d for d in devs if isinstance(d, str)}) - listed)
    if not missing:
        return None
    more = len(missing) > 1
    return "NIC%s %s hold%s addresses or routes but %s not listed" % (
        "s" if more else "", ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else ""),
        "" if more else "s", "are" if more else "is")


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _words(value: Any) -> list[str]:
    """A list of strings from a JSON value (ip's flags and states are lists of words)."""
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _nft_error(errors: list[str]) -> str:
    found = [e for e in errors if e.startswith("nft ")]
    return found[0] if found else "nft printed no ruleset"


def reduce_links(links: list[Any]) -> dict[str, dict[str, str]]:
    """{NIC: {"state", "master"}} of ``ip -j link``: down (not UP), no-carrier (UP
    without LOWER_UP) or up."""
    out: dict[str, dict[str, str]] = {}
    for link in links:
        if not isinstance(link, dict) or not isinstance(link.get("ifname"), str):
            continue
        flags = _words(link.get("flags"))
        state = "down" if "UP" not in flags else (
            "up" if "LOWER_UP" in flags and "NO-CARRIER" not in flags else "no-carrier")
        entry = {"state": state}
        if isinstance(link.get("master"), str):
            entry["master"] = link["master"]
        out[link["ifname"]] = entry
    return out


def reduce_addrs(addrs: list[Any], family: str = "inet") -> dict[str, list[str]]:
    """{NIC: ["ADDR/LEN", ...]} of ``ip -j -4 addr`` (family inet) or ``ip -j -6 addr``
    (inet6: those that failed duplicate address detection left out); NICs without one
    left out."""
    out: dict[str, list[str]] = {}
    for link in addrs:
        if not isinstance(link, dict) or not isinstance(link.get("ifname"), str):
            continue
        found = ["%s/%s" % (a.get("local"), a.get("prefixlen")) for a in _listed(link.get("addr_info"))
                 if isinstance(a, dict) and a.get("family") == family and a.get("local")
                 and not a.get("dadfailed")]
        if found:
            out[link["ifname"]] = found
    return out


def _dst(value: Any, version: int = 4) -> str:
    text = str(value)
    if text == "default":
        return "0.0.0.0/0" if version == 4 else "::/0"
    return text if "/" in text else text + ("/32" if version == 4 else "/128")


def _hop(h: dict[str, Any], flags: list[str]) -> dict[str, Any]:
    hop: dict[str, Any] = {}
    if h.get("gateway"):
        hop["via"] = h["gateway"]
    if h.get("dev"):
        hop["dev"] = h["dev"]
    if flags:
        hop["flags"] = flags
    return hop


def reduce_routes(routes: list[Any], version: int = 4) -> list[dict[str, Any]]:
    """The routes of ``ip -j -4 -d route show table main`` (or -6), each with its next
    hops; of IPv6, a multipath route listed as several (one a next hop) made one."""
    out = []
    for r in routes:
        if not isinstance(r, dict) or "dst" not in r:
            continue
        route: dict[str, Any] = {"dst": _dst(r["dst"], version), "type": str(r.get("type", "unicast"))}
        for key, name in (("prefsrc", "src"), ("metric", "metric"), ("protocol", "proto"),
                          ("tos", "tos")):
            if r.get(key) not in (None, "", 0, "0", "default"):
                route[name] = r[key]
        flags = _words(r.get("flags"))
        if isinstance(r.get("nexthops"), list):
            route["hops"] = [_hop(h, _words(h.get("flags"))) for h in r["nexthops"] if isinstance(h, dict)]
            if flags:
                route["flags"] = flags
        else:
            route["hops"] = [_hop(r, flags)] if (r.get("gateway") or r.get("dev")) else []
        out.append(route)
    return out if version == 4 else _siblings(out)


def _siblings(routes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """IPv6 routes as kernels before 4.11 list a multipath route (one route per next
    hop: the same destination, type and metric, each through a gateway) made one route
    with every next hop, in the order listed."""
    out: list[dict[str, Any]] = []
    first: dict[tuple[str, str, Any], dict[str, Any]] = {}
    for r in routes:
        key = (r["dst"], r["type"], r.get("metric"))
        gateway = len(r["hops"]) == 1 and "via" in r["hops"][0]
        sibling = first.get(key) if gateway else None
        if sibling is None:
            out.append(r)
            if gateway:
                first[key] = r
        elif all(r.get(k) == sibling.get(k) for k in ("src", "proto", "tos")):
            sibling["hops"] = sibling["hops"] + r["hops"]
        else:
            out.append(r)
    return out


def reduce_neigh(neigh: list[Any]) -> list[dict[str, str]]:
    """The neighbours that do not answer: FAILED and INCOMPLETE entries."""
    out = []
    for n in neigh:
        if not isinstance(n, dict):
            continue
        bad = [s for s in _words(n.get("state")) if s in UNRESOLVED]
        if bad and isinstance(n.get("dst"), str) and isinstance(n.get("dev"), str):
            out.append({"dst": n["dst"], "dev": n["dev"], "state": bad[0]})
    return out


def reduce_rules(rules: list[Any]) -> list[int]:
    """The priorities of the policy routing rules other than the kernel's three."""
    found: set[int] = {r["priority"] for r in rules
                       if isinstance(r, dict) and isinstance(r.get("priority"), int)}
    return sorted(p for p in found if p not in DEFAULT_RULES)


def _safe_nic(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..")


def _flag(read: Reader, path: str) -> int | None:
    text = read(path)
    if text is None or text.strip() not in ("0", "1", "2"):
        return None
    return int(text.strip())


def read_sysctls(nics: list[str], read: Reader) -> dict[str, Any]:
    """Forwarding and ignore_routes_with_linkdown of "all" and of each NIC with an
    IPv4 address, and fib_multipath_use_neigh (None where unreadable)."""
    conf = "/proc/sys/net/ipv4/conf/%s/%s"
    names = ["all"] + [n for n in nics if _safe_nic(n)]
    return {"forwarding": {n: _flag(read, conf % (n, "forwarding")) for n in names},
            "linkdown": {n: _flag(read, conf % (n, "ignore_routes_with_linkdown")) for n in names},
            "use_neigh": _flag(read, "/proc/sys/net/ipv4/fib_multipath_use_neigh")}


def _on(value: Any) -> int | None:
    """A netconf switch (``ip -j netconf``: true or false; "on" or "off" before
    iproute2 5.x) as 0 or 1 (None: neither)."""
    if value in (True, "on"):
        return 1
    return 0 if value in (False, "off") else None


def reduce_netconf(entries: list[Any]) -> dict[str, dict[str, int | None]]:
    """{"forwarding": {NIC | "all": 0 | 1}, "linkdown": {...}} of ``ip -j -6 netconf``
    (the entry "default", of NICs yet to come, left out)."""
    out: dict[str, dict[str, int | None]] = {"forwarding": {}, "linkdown": {}}
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("interface"), str) or e["interface"] == "default":
            continue
        if e.get("family", "inet6") != "inet6":
            continue
        out["forwarding"][e["interface"]] = _on(e.get("forwarding"))
        out["linkdown"][e["interface"]] = _on(e.get("ignore_routes_with_linkdown"))
    return out


def legacy_tables(read: Reader) -> list[str]:
    """The legacy (x_tables) iptables tables in use in this network namespace."""
    return sorted({t.strip() for t in (read(IPTABLES_NAMES) or "").splitlines() if t.strip()})


def reduce_nft(ruleset: dict[str, Any], read: Reader) -> dict[str, Any]:
    """The forward-hook base chains of families ip and inet, their rules, and the
    named sets those rules refer to (``nft -j list ruleset``)."""
    items = [i for i in _listed(ruleset.get("nftables")) if isinstance(i, dict)]
    chains: dict[tuple[str, str, str], dict[str, Any]] = {}
    for item in items:
        c = item.get("chain")
        if isinstance(c, dict) and c.get("hook") == "forward" and c.get("family") in ("ip", "inet"):
            chains[_key(c, "name")] = {
                "table": "%s %s" % (c.get("family"), c.get("table")), "chain": str(c.get("name")),
                "prio": c.get("prio"), "policy": str(c.get("policy", "accept")), "rules": [], "count": 0}
    wanted: set[tuple[str, str, str]] = set()
    for item in items:
        r = item.get("rule")
        if not isinstance(r, dict):
            continue
        chain: dict[str, Any] | None = chains.get(_key(r, "chain"))
        if chain is None:
            continue
        chain["count"] += 1
        if len(chain["rules"]) < MAX_RULES:
            chain["rules"].append(r.get("expr"))
        wanted |= {(str(r.get("family")), str(r.get("table")), name) for name in _set_names(r.get("expr"))}
    return {"chains": list(chains.values()), "sets": _sets(items, wanted), "legacy": legacy_tables(read)}


def _key(item: dict[str, Any], name: str) -> tuple[str, str, str]:
    """(family, table, name) of an nft JSON object, as text."""
    return str(item.get("family")), str(item.get("table")), str(item.get(name))


def _sets(items: list[dict[str, Any]], wanted: set[tuple[str, str, str]]) -> dict[str, list[str]]:
    """{"FAMILY TABLE NAME": [elements]} of the wanted sets."""
    out = {}
    for item in items:
        s = item.get("set")
        if isinstance(s, dict) and _key(s, "name") in wanted:
            out["%s %s %s" % _key(s, "name")] = \
                [_element(e) for e in _listed(s.get("elem"))[:MAX_ELEMENTS]]
    return out


def _set_names(expr: Any) -> list[str]:
    """The names of the sets a rule's expressions refer to ("@cluster")."""
    text = json.dumps(expr)
    out = []
    start = text.find('"@')
    while start >= 0:
        end = text.find('"', start + 2)
        out.append(text[start + 2:end])
        start = text.find('"@', end + 1)
    return out


def _element(e: Any) -> str:
    """One set element as text: ADDR, ADDR/LEN or FIRST-LAST ('?' when another kind)."""
    if isinstance(e, dict) and "elem" in e and isinstance(e["elem"], dict):
        e = e["elem"].get("val")
    if isinstance(e, str):
        return e
    if isinstance(e, dict) and isinstance(e.get("prefix"), dict):
        return "%s/%s" % (e["prefix"].get("addr"), e["prefix"].get("len"))
    if isinstance(e, dict) and isinstance(e.get("range"), list) and len(e["range"]) == 2:
        return "%s-%s" % tuple(e["range"])
    return "?"
