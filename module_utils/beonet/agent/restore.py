"""What puts a node back as it was before beonet changed it: the commands that turn
the live state now into a saved one, and the saved files written back.

Standard library only (runs on the nodes, in the rollback waiter of
checkpoint.py). The saved state is what the ``beonet_node`` module read before
applying (apply.LiveState, from ``ip -j``), so the restore compares like with
like:

* links, in the names the change touched (its plan's NICs, bonds and members, and
  the NICs of the addresses an earlier plan installed): a bond that did not exist is
  deleted, a member's master, MTU and up/down state are put back;
* IPv4 and IPv6 addresses of those links (scope global; of IPv6 the permanent ones,
  not those made from router advertisements): those added are removed, those
  removed are added back (with their broadcast and noprefixroute);
* the main table's IPv4 and IPv6 routes other than the kernel's own (protocol kernel,
  which come with the addresses), link-local ones and those learned from router
  advertisements, whatever their protocol: those missing are added back as they were
  (type, next hops and weights, protocol, scope, metric, source, onlink), those added
  are deleted;
* IPv4 and IPv6 forwarding, the failover sysctls and the NICs' accept_ra, the
  nftables table ``inet beonet`` and bond TSO.

A bond's own options (mode, miimon) are not restored: a bond the change created is
removed, one that existed keeps the options beonet gave it.
"""

from __future__ import annotations

import base64
import contextlib
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .apply import FORWARD6, address_command, key_words
from .files import atomic_write
from .verify import is_link_local

if TYPE_CHECKING:
    from .apply import Action, IpJson

KERNEL = ("kernel", "2")               # the protocol of the routes addresses bring
RA = ("ra", "9")                       # the protocol of routes learned from router advertisements
NFT_LOAD = "table inet beonet\ndelete table inet beonet\n"


# -- files -----------------------------------------------------------------------------

def copy_of(path: str) -> dict[str, Any] | None:
    """A file's bytes (base64), mode, owner and group; None when there is no such file."""
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    return {"data": base64.b64encode(data).decode("ascii"), "mode": st.st_mode & 0o7777,
            "uid": st.st_uid, "gid": st.st_gid}


def copies(paths: Iterable[str]) -> dict[str, dict[str, Any] | None]:
    return {path: copy_of(path) for path in sorted(set(paths))}


def put_back(path: str, copy: dict[str, Any] | None) -> bool:
    """Make path as copy says (None: no such file); whether anything changed."""
    if copy_of(path) == copy:
        return False
    if copy is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return True
    atomic_write(path, base64.b64decode(copy["data"]), mode=copy["mode"])
    with contextlib.suppress(OSError):
        os.chown(path, copy["uid"], copy["gid"])
    return True


# -- links -----------------------------------------------------------------------------

def _by_name(links: IpJson, scope: Iterable[str]) -> dict[str, dict[str, Any]]:
    wanted = set(scope)
    return {str(link.get("ifname")): link for link in links if link.get("ifname") in wanted}


def _is_up(link: dict[str, Any]) -> bool:
    return "UP" in (link.get("flags") or [])


def link_actions(saved: IpJson, now: IpJson, scope: Iterable[str]) -> list[Action]:
    """Delete the links that did not exist (bonds the change made), then put back each
    member's master, each link's MTU and its up/down state."""
    was, now_by = _by_name(saved, scope), _by_name(now, scope)
    gone = set(now_by) - set(was)
    out: list[Action] = [["ip", "link", "del", name] for name in sorted(gone)]
    for name in sorted(set(was) & set(now_by)):
        old, cur = was[name], now_by[name]
        master, current = old.get("master"), cur.get("master")
        freed = current is None or current in gone      # deleting its bond frees a member
        if master != current and (master or not freed):
            out.append(["ip", "link", "set", name, "down"])
            out.append(["ip", "link", "set", name] + (["master", str(master)] if master else ["nomaster"]))
        if old.get("mtu") and old.get("mtu") != cur.get("mtu"):
            out.append(["ip", "link", "set", name, "mtu", str(old["mtu"])])
    for name in sorted(set(was) & set(now_by)):
        if _is_up(was[name]) != _is_up(now_by[name]) or ["ip", "link", "set", name, "down"] in out:
            out.append(["ip", "link", "set", name, "up" if _is_up(was[name]) else "down"])
    return out


# -- addresses -------------------------------------------------------------------------

def _addresses(addrs: IpJson, scope: Iterable[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """{(ADDR/LEN, dev): the address entry} of the global IPv4 addresses and the global,
    permanent IPv6 ones on scope's links (those the kernel makes from router
    advertisements come and go with them: never restored)."""
    wanted, out = set(scope), {}
    for link in addrs:
        dev = link.get("ifname")
        if dev not in wanted:
            continue
        for a in link.get("addr_info") or []:
            if a.get("family") == "inet6" and a.get("dynamic"):
                continue
            if a.get("family") in ("inet", "inet6") and a.get("scope", "global") == "global":
                out[("%s/%s" % (a.get("local"), a.get("prefixlen")), str(dev))] = a
    return out


def address_actions(saved: IpJson, now: IpJson, scope: Iterable[str]) -> list[Action]:
    """Remove the addresses added, add back those removed (an IPv6 one as apply adds it:
    without duplicate address detection, it was the node's before)."""
    was, cur = _addresses(saved, scope), _addresses(now, scope)
    out: list[Action] = [address_command("del", a, dev) for a, dev in sorted(set(cur) - set(was))]
    for a, dev in sorted(set(was) - set(cur)):
        entry = was[(a, dev)]
        brd = ["broadcast", entry["broadcast"]] if entry.get("broadcast") else []
        add = address_command("add", a, dev)
        at = add.index("dev")
        out.append(add[:at] + brd + add[at:] + (["noprefixroute"] if entry.get("noprefixroute") else []))
    return out


# -- routes ----------------------------------------------------------------------------

def _hop_words(h: dict[str, Any]) -> list[str]:
    return ((["via", str(h["gateway"])] if h.get("gateway") else [])
            + (["dev", str(h["dev"])] if h.get("dev") else [])
            + (["weight", str(h["weight"])] if h.get("weight") not in (None, 1) else [])
            + (["onlink"] if "onlink" in (h.get("flags") or []) else []))


def route_words(r: dict[str, Any]) -> list[str]:
    """An ``ip -j route`` entry as the words after ``ip route replace``: the same route."""
    words = [str(r["type"])] if r.get("type") not in (None, "unicast") else []
    words.append(str(r["dst"]))
    if not r.get("nexthops"):
        words += _hop_words(r)
    words += ["proto", str(r["protocol"])] if r.get("protocol") not in (None, "boot") else []
    words += ["scope", str(r["scope"])] if r.get("scope") not in (None, "global", "universe") else []
    words += ["metric", str(r["metric"])] if r.get("metric") else []
    words += ["src", str(r["prefsrc"])] if r.get("prefsrc") else []
    for h in r.get("nexthops") or []:
        words += ["nexthop"] + _hop_words(h)
    return words


def _routes(routes: IpJson) -> dict[tuple[str, ...], dict[str, Any]]:
    """The routes a restore puts back, by their words: not the kernel's own, not
    link-local ones, not those the kernel learns from router advertisements (the
    management interface's, which come and go by themselves)."""
    return {tuple(route_words(r)): r for r in routes
            if r.get("dst") and not is_link_local(str(r["dst"])) and str(r.get("protocol")) not in KERNEL
            and str(r.get("protocol")) not in RA and "expires" not in r}


def _is_ipv6(r: dict[str, Any]) -> bool:
    hops = [r] + list(r.get("nexthops") or [])
    return ":" in str(r["dst"]) or any(":" in str(h.get("gateway", "")) for h in hops)


def route_actions(saved: IpJson, now: IpJson) -> list[Action]:
    """Add back the routes that are missing (replace: a route in the way is taken over),
    then delete those the change added whose place no restored route took (IPv6 ones
    with ``ip -6 route``)."""
    was, cur = _routes(saved), _routes(now)
    missing = sorted(set(was) - set(cur))
    out: list[Action] = [_ip_route(was[w]) + ["replace"] + list(w) for w in missing]
    taken = {_slot(was[w]) for w in missing}
    out += [_ip_route(cur[w]) + ["del"] + list(w) for w in sorted(set(cur) - set(was))
            if _slot(cur[w]) not in taken]
    return out


def _ip_route(r: dict[str, Any]) -> list[str]:
    return ["ip", "-6", "route"] if _is_ipv6(r) else ["ip", "route"]


def _slot(r: dict[str, Any]) -> tuple[str, str, str, str]:
    """What ``ip route replace`` replaces by: family, type, destination and metric."""
    family = "6" if _is_ipv6(r) else "4"
    return (family, str(r.get("type") or "unicast"), str(r["dst"]), str(r.get("metric") or 0))


# -- forwarding, filter, sysctls, offloads ---------------------------------------------

def nft_actions(saved: str | None, now: str | None, load_path: str) -> list[Action]:
    """Load the saved table from load_path (nft_text writes it), or delete the table."""
    if saved == now:
        return []
    if saved is None:
        return [["nft", "delete", "table", "inet", "beonet"]]
    return [["nft", "-f", load_path]]


def nft_text(saved: str) -> str:
    """What nft -f loads to put the saved table in place of any other of that name."""
    return NFT_LOAD + saved


def sysctl_actions(saved: dict[str, str | None], links: IpJson | None = None) -> list[Action]:
    """The saved sysctls written back but IPv6 forwarding (forwarding_actions) and, where
    the links now are known, those of a NIC that is not there (a bond the change made and
    the rollback removed, a NIC gone since: nothing to put back)."""
    present = None if links is None else {str(link.get("ifname")) for link in links}
    return [["sysctl", "-w", "%s=%s" % (k, v)] for k, v in sorted(saved.items())
            if v is not None and k != FORWARD6 and (present is None or _nic_of(k) in present | {None})]


def _nic_of(key: str) -> str | None:
    """The NIC of a per-NIC sysctl key (net.FAMILY.conf|neigh.NIC.NAME), None for others."""
    words = key_words(key)
    if len(words) == 5 and words[2] in ("conf", "neigh") and words[3] not in ("all", "default"):
        return words[3]
    return None


def _forwarding(saved: dict[str, Any]) -> list[tuple[str, str]]:
    """(key, value) of the saved forwarding switches: IPv4's and, where it was read, IPv6's."""
    found = [("net.ipv4.ip_forward", str(saved.get("forwarding", "")).strip()),
             (FORWARD6, str((saved.get("sysctls") or {}).get(FORWARD6, "")).strip())]
    return [(k, v) for k, v in found if v in ("0", "1")]


def tso_actions(saved: dict[str, bool | None]) -> list[Action]:
    return [["ethtool", "-K", b, "tso", "on" if on else "off"]
            for b, on in sorted(saved.items()) if on is not None]


def _deletes(todo: list[Action]) -> list[Action]:
    """The ``ip [-6] OBJECT del ...`` commands of a list."""
    return [a for a in todo if a[3 if a[1] == "-6" else 2] == "del"]


def removals(saved: dict[str, Any], now: dict[str, Any], scope: Iterable[str]) -> list[Action]:
    """What the change added, deleted first (routes, then addresses, then bonds), in
    both families: what leaves with an address or a bond is then read as gone, not
    deleted twice, and no IPv6 address is left to delete after a link the rest sets
    down (the kernel drops a link's IPv6 addresses when it goes down)."""
    return (_deletes(route_actions(saved["routes"], now["routes"]))
            + _deletes(address_actions(saved["addrs"], now["addrs"], scope))
            + _deletes(link_actions(saved["links"], now["links"], scope)))


def actions(saved: dict[str, Any], now: dict[str, Any], scope: Iterable[str], load_path: str) -> list[Action]:
    """Every command that turns the live state now back into the saved one, in order:
    forwarding off first when it was off, the filter, forwarding on when it was on,
    links, addresses, routes, the failover sysctls, bond offloads."""
    scope = sorted(set(scope))
    fwd = _forwarding(saved)
    return ([["sysctl", "-w", "%s=0" % k] for k, v in fwd if v == "0"]
            + nft_actions(saved.get("nft_table"), now.get("nft_table"), load_path)
            + [["sysctl", "-w", "%s=1" % k] for k, v in fwd if v == "1"]
            + link_actions(saved["links"], now["links"], scope)
            + address_actions(saved["addrs"], now["addrs"], scope)
            + route_actions(saved["routes"], now["routes"])
            + sysctl_actions(saved.get("sysctls") or {}, now.get("links"))
            + tso_actions(saved.get("tso") or {}))
