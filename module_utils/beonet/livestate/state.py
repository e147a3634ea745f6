"""One node's collected state (agent/collect.py), checked and parsed.

Whatever a node sends is checked before it is used: every key, type, address and
size. ``parse`` raises StateError with one clear message (``NODE: state.PATH:
problem``) for the first thing wrong; a node whose state does not parse counts as
a node without state. Addresses become integers, as in the compiler. The IPv6 readings (``addrs6``,
``routes6``, ``neigh6``, ``rules6``, ``sysctl6``) are parsed the same way into a second state of
the same shape (``NodeState.six``) that shares the node's links and filter; the
routes the kernel adds on every NIC (link-local fe80::/64, multicast ff00::/8)
are left out, and an address with a zone id (fe80::1%eth0) is no address.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..agent.collect import NEEDED, NEEDED6, STATE_FORMAT, gap
from ..agent.names import escaped, shown, type_word
from .family import V4, V6, Family, quad

MAX_LINKS = 4096            # NICs of one node
MAX_ADDRS = 4096            # addresses of one NIC
MAX_ROUTES = 200_000        # routes of one main table
MAX_HOPS = 256              # next hops of one route (the kernel's limit is lower)
MAX_NEIGH = 65_536          # unresolved neighbours
MAX_RULES = 4096            # policy routing rules, forward chains, sets
MAX_TEXT = 256              # any name or word
UNICAST = "unicast"
DROPPING = ("blackhole", "unreachable", "prohibit")


SIX_KEYS = ("addrs6", "routes6", "neigh6", "rules6", "sysctl6", "unread6")     # the IPv6 part of a state
__all__ = ["quad", "parse", "NodeState", "StateError", "LiveHop", "LiveRoute"]


@lru_cache(maxsize=1 << 16)
def _slashed(fam: Family, text: str) -> tuple[int, int] | None:
    """ADDR/LEN of the family as (address, length) (None: not that)."""
    addr, slash, plen = text.partition("/")
    a = fam.parse(addr) if slash else None
    if a is None or not plen.isdigit() or int(plen) > fam.bits or len(plen) > 3:
        return None
    return a, int(plen)


class StateError(Exception):
    """A collected state that cannot be used (the message says where and why)."""


@dataclass(slots=True)
class LiveHop:
    """One next hop of a live route: gateway (None: on-link), device and its flags."""

    via: int | None
    dev: str | None
    onlink: bool = False
    linkdown: bool = False


@dataclass(slots=True)
class LiveRoute:
    net: int
    plen: int
    kind: str                       # route type: unicast, blackhole, ...
    src: int | None
    metric: int
    hops: list[LiveHop]
    tos: bool = False               # a TOS-selected route (not judged)


@dataclass(slots=True)
class NodeState:
    """What decides forwarding on one node, parsed."""

    links: dict[str, str]           # NIC -> up, no-carrier or down
    masters: dict[str, str]         # NIC -> the bond it is a member of
    addrs: dict[str, list[tuple[int, int]]]   # NIC -> [(address, prefix length)]
    routes: list[LiveRoute]
    unresolved: dict[tuple[int, str], str]    # (neighbour address, NIC) -> FAILED or INCOMPLETE
    forwarding: dict[str, int | None]         # NIC or "all" -> conf forwarding
    linkdown: dict[str, int | None]           # NIC or "all" -> ignore_routes_with_linkdown
    use_neigh: bool
    rules: list[int]                          # policy routing rules beside the kernel's three
    filter: dict[str, Any]                    # the forward filter as collected (nft.judge reads it)
    errors: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)   # NEEDED readings that failed: no judging from it
    six: NodeState | None = None              # the IPv6 state (None: the node sent none)


class _Checker:
    """Type and size checks with the path of the value in the message."""

    def __init__(self, node: str, fam: Family = V4) -> None:
        self.node = node
        self.fam = fam

    def fail(self, where: str, problem: str) -> StateError:
        return StateError("%s: state%s: %s" % (escaped(self.node), escaped(where), problem))

    def mapping(self, value: Any, where: str, limit: int = MAX_RULES) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, "must be a mapping, not %s" % type_word(value))
        if len(value) > limit:
            raise self.fail(where, "holds %d entries, more than %d" % (len(value), limit))
        for key in value:
            self.text(key, where)
        return value

    def items(self, value: Any, where: str, limit: int) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, "must be a list, not %s" % type_word(value))
        if len(value) > limit:
            raise self.fail(where, "holds %d entries, more than %d" % (len(value), limit))
        return value

    def text(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise self.fail(where, "must be a string, not %s" % type_word(value))
        if len(value) > MAX_TEXT:
            raise self.fail(where, "is %d characters long, more than %d" % (len(value), MAX_TEXT))
        return value

    def key(self, value: dict[str, Any], key: str, where: str) -> Any:
        if key not in value:
            raise self.fail(where, "lacks %r" % key)
        return value[key]

    def ip(self, value: Any, where: str) -> int:
        found = self.fam.parse(value) if isinstance(value, str) else None
        if found is None:
            raise self.fail(where, "%s is not an %s address"
                            % (shown(self.text(value, where)), self.fam.name))
        return found

    def prefix(self, value: Any, where: str, network: bool) -> tuple[int, int]:
        """ADDR/LEN: a network (host bits zero) or an interface address."""
        found = _slashed(self.fam, value) if isinstance(value, str) and len(value) <= 49 else None
        if found is None:
            what = "network" if network else "address with a prefix length"
            raise self.fail(where, "%s is not an %s %s"
                            % (shown(self.text(value, where)), self.fam.name, what))
        a, n = found
        if network and a & ~self.fam.mask(n):
            raise self.fail(where, "%s has host bits set" % shown(value))
        return found

    def flag(self, value: Any, where: str) -> int | None:
        if value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2):
            return value
        raise self.fail(where, "must be 0, 1, 2 or null, not %s" % shown(value))


def parse(node: str, raw: Any, read6: bool = True) -> NodeState:
    """The state one node sent (collect.collect's result); StateError when unusable.
    read6 false (a plan without IPv6): its IPv6 part is not read at all."""
    c = _Checker(node)
    state = c.mapping(raw, "", 64)
    fmt = c.key(state, "format", "")
    if fmt != STATE_FORMAT:
        raise c.fail(".format", "%s is not the state format this controller reads (%d); run the "
                     "same collection on the nodes and the controller" % (shown(fmt), STATE_FORMAT))
    errors = [c.text(e, ".errors[%d]" % k) for k, e in
              enumerate(c.items(state.get("errors", []), ".errors", 64))]
    unread = _unread(c, state.get("unread", []), errors)
    links, masters = _links(c, c.key(state, "links", ""))
    addrs = _addrs(c, c.key(state, "addrs", ""), ".addrs")
    routes = _routes(c, c.items(c.key(state, "routes", ""), ".routes", MAX_ROUTES), ".routes")
    six = _six(node, state) if read6 and any(k in state for k in SIX_KEYS) else None
    devs = [h.dev for r in routes + (six.routes if six is not None else []) for h in r.hops]
    held = list(addrs) + list(six.addrs if six is not None else ())
    cut = gap(links, held, devs) if "links" not in unread else None
    if cut is not None:               # sent by a node that did not check its own listing
        unread.insert(0, "links")
        errors.append("links: %s" % cut)
    sysctl = c.mapping(c.key(state, "sysctl", ""), ".sysctl", 8)
    st = NodeState(
        links=links, masters=masters, addrs=addrs, routes=routes,
        unresolved=_neigh(c, state.get("neigh", []), ".neigh"),
        forwarding=_flags(c, sysctl.get("forwarding", {}), ".sysctl.forwarding"),
        linkdown=_flags(c, sysctl.get("linkdown", {}), ".sysctl.linkdown"),
        use_neigh=c.flag(sysctl.get("use_neigh"), ".sysctl.use_neigh") == 1,
        rules=_rules(c, state.get("rules", []), ".rules"),
        filter=_filter(c, c.key(state, "filter", "")),
        errors=errors, unread=unread, six=six)
    if six is not None:
        six.links, six.masters, six.filter, six.errors = links, masters, st.filter, errors
        six.unread = ["links"] * ("links" in unread) + six.unread
    return st


def _rules(c: _Checker, rules: Any, where: str) -> list[int]:
    """The priorities of the policy routing rules beside the kernel's (of one family)."""
    return [r for r in c.items(rules, where, MAX_RULES) if _whole(c, r, where)]


def _six(node: str, state: dict[str, Any]) -> NodeState:
    """The IPv6 state (its links, filter and errors are the node's, set by parse): the
    routes the kernel adds on every NIC left out; its unread: which of NEEDED6 failed or
    were not sent (netconf6: also when it says nothing of IPv6 forwarding, whose switch
    is that of "all")."""
    c = _Checker(node, V6)
    unread = c.items(state.get("unread6", []), ".unread6", 8)
    for k, key in enumerate(unread):
        if key not in NEEDED6:
            raise c.fail(".unread6[%d]" % k, "must be one of %s, not %s" % (", ".join(NEEDED6), shown(key)))
    routes = [r for r in _routes(c, c.items(state.get("routes6", []), ".routes6", MAX_ROUTES), ".routes6")
              if not V6.within(r.net, V6.kernel)]
    sysctl = c.mapping(state.get("sysctl6", {}), ".sysctl6", 8)
    forwarding = _forwarding6(_flags(c, sysctl.get("forwarding", {}), ".sysctl6.forwarding"))
    sent = {"addrs6": "addrs6" in state, "routes6": "routes6" in state,
            "netconf6": forwarding["all"] is not None}
    return NodeState(
        links={}, masters={}, addrs=_addrs(c, state.get("addrs6", {}), ".addrs6"), routes=routes,
        unresolved=_neigh(c, state.get("neigh6", []), ".neigh6"), forwarding=forwarding,
        linkdown=_flags(c, sysctl.get("linkdown", {}), ".sysctl6.linkdown"),
        use_neigh=False, rules=_rules(c, state.get("rules6", []), ".rules6"), filter={},
        unread=[key for key in NEEDED6 if key in unread or not sent[key]])


def _forwarding6(flags: dict[str, int | None]) -> dict[str, int | None]:
    """IPv6 forwards by the switch of "all" alone (ip6_forward reads no NIC's): the NICs'
    switches say whether the node takes router advertisements, not whether it forwards."""
    return {"all": flags.get("all")}


def _unread(c: _Checker, value: Any, errors: list[str]) -> list[str]:
    """The readings of NEEDED that failed: as the node says, and as its errors say
    ("links: no usable output")."""
    out = []
    for k, key in enumerate(c.items(value, ".unread", 8)):
        if key not in NEEDED:
            raise c.fail(".unread[%d]" % k, "must be one of %s, not %s" % (", ".join(NEEDED), shown(key)))
        out.append(key)
    out += [key for key in NEEDED if "%s: no usable output" % key in errors]
    return [key for key in NEEDED if key in out]


def _whole(c: _Checker, value: Any, where: str) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return True
    raise c.fail(where, "must hold whole numbers, not %s" % shown(value))


def _links(c: _Checker, value: Any) -> tuple[dict[str, str], dict[str, str]]:
    links, masters = {}, {}
    for name, link in c.mapping(value, ".links", MAX_LINKS).items():
        where = ".links.%s" % name
        link = c.mapping(link, where, 8)
        state = c.text(c.key(link, "state", where), where + ".state")
        if state not in ("up", "no-carrier", "down"):
            raise c.fail(where + ".state", "must be up, no-carrier or down, not %s" % shown(state))
        links[name] = state
        if "master" in link:
            masters[name] = c.text(link["master"], where + ".master")
    return links, masters


def _addrs(c: _Checker, value: Any, key: str) -> dict[str, list[tuple[int, int]]]:
    out = {}
    for name, addrs in c.mapping(value, key, MAX_LINKS).items():
        where = "%s.%s" % (key, name)
        out[name] = [c.prefix(a, "%s[%d]" % (where, k), network=False)
                     for k, a in enumerate(c.items(addrs, where, MAX_ADDRS))]
    return out


class _Unread(Exception):
    """A value the fast reader does not take (the checking reader says why)."""


def _routes(c: _Checker, routes: list[Any], key: str) -> list[LiveRoute]:
    """The routes, read fast; the first one that will not read is checked for the message."""
    out = []
    for k, r in enumerate(routes):
        try:
            out.append(_route_fast(c.fam, r))
        except (_Unread, KeyError, TypeError, ValueError, AttributeError):
            out.append(_route(c, r, "%s[%d]" % (key, k)))
    return out


def _route_fast(fam: Family, r: Any) -> LiveRoute:
    """A route that is well formed, read without building any message (_Unread else)."""
    if r.__class__ is not dict or len(r) > 16 or r.get("flags"):
        raise _Unread
    dst = r["dst"]
    found = _slashed(fam, dst) if dst.__class__ is str and len(dst) <= 49 else None
    if found is None or found[0] & ~fam.masks[found[1]]:
        raise _Unread
    kind, src, metric, hops = r.get("type", UNICAST), r.get("src"), r.get("metric", 0), r.get("hops", ())
    if kind.__class__ is not str or metric.__class__ is not int or metric < 0 or hops.__class__ is not list:
        raise _Unread
    if src is not None:
        src = fam.parse(src) if src.__class__ is str else None
        if src is None:
            raise _Unread
    read = []
    for h in hops:
        via, dev = h.get("via"), h.get("dev")
        if len(h) > 2 or (dev is not None and (dev.__class__ is not str or len(dev) > MAX_TEXT)):
            raise _Unread
        if via is not None:
            via = fam.parse(via) if via.__class__ is str else None
            if via is None:
                raise _Unread
        read.append(LiveHop(via, dev))
    if not read and kind == UNICAST or len(read) > MAX_HOPS or len(kind) > MAX_TEXT:
        raise _Unread
    return LiveRoute(found[0], found[1], kind, src, metric, read, tos=r.get("tos") not in (None, 0, "0"))


def _route(c: _Checker, r: Any, where: str) -> LiveRoute:
    if not isinstance(r, dict) or len(r) > 16:
        c.mapping(r, where, 16)             # raises with the reason
    net, plen = c.prefix(c.key(r, "dst", where), where + ".dst", network=True)
    kind = r.get("type", UNICAST)
    if not isinstance(kind, str) or len(kind) > MAX_TEXT:
        c.text(kind, where + ".type")
    src = c.ip(r["src"], where + ".src") if r.get("src") is not None else None
    metric = r.get("metric", 0)
    if not isinstance(metric, int) or isinstance(metric, bool) or metric < 0:
        raise c.fail(where + ".metric", "must be a whole number, not %s" % shown(metric))
    hops = [_hop(c, h, "%s.hops[%d]" % (where, k))
            for k, h in enumerate(c.items(r.get("hops", []), where + ".hops", MAX_HOPS))]
    if kind == UNICAST and not hops:
        raise c.fail(where + ".hops", "a unicast route needs a next hop or a device")
    if r.get("flags"):
        route_flags = [c.text(f, where + ".flags") for f in c.items(r["flags"], where + ".flags", 16)]
        if "linkdown" in route_flags:
            for h in hops:
                h.linkdown = True
    return LiveRoute(net, plen, kind, src, metric, hops, tos=r.get("tos") not in (None, 0, "0"))


def _hop(c: _Checker, h: Any, where: str) -> LiveHop:
    if not isinstance(h, dict) or len(h) > 8:
        c.mapping(h, where, 8)
    flags = [c.text(f, where + ".flags") for f in c.items(h["flags"], where + ".flags", 16)] \
        if h.get("flags") else []
    dev = h.get("dev")
    if dev is not None and (not isinstance(dev, str) or len(dev) > MAX_TEXT):
        c.text(dev, where + ".dev")
    return LiveHop(c.ip(h["via"], where + ".via") if h.get("via") is not None else None, dev,
                   "onlink" in flags, "linkdown" in flags or "dead" in flags)


def _neigh(c: _Checker, value: Any, key: str) -> dict[tuple[int, str], str]:
    out = {}
    for k, n in enumerate(c.items(value, key, MAX_NEIGH)):
        where = "%s[%d]" % (key, k)
        n = c.mapping(n, where, 8)
        state = c.text(c.key(n, "state", where), where + ".state")
        out[(c.ip(c.key(n, "dst", where), where + ".dst"), c.text(c.key(n, "dev", where), where + ".dev"))] \
            = state
    return out


def _flags(c: _Checker, value: Any, where: str) -> dict[str, int | None]:
    return {name: c.flag(v, "%s.%s" % (where, name))
            for name, v in c.mapping(value, where, MAX_LINKS + 1).items()}


def _filter(c: _Checker, value: Any) -> dict[str, Any]:
    f = c.mapping(value, ".filter", 8)
    if "error" in f:
        c.text(f["error"], ".filter.error")
    for k, t in enumerate(c.items(f.get("legacy", []), ".filter.legacy", 64)):
        c.text(t, ".filter.legacy[%d]" % k)
    for k, chain in enumerate(c.items(f.get("chains", []), ".filter.chains", MAX_RULES)):
        where = ".filter.chains[%d]" % k
        chain = c.mapping(chain, where, 8)
        for key in ("table", "chain", "policy"):
            c.text(c.key(chain, key, where), "%s.%s" % (where, key))
        c.items(chain.get("rules", []), where + ".rules", MAX_RULES)
        if not isinstance(chain.get("count", 0), int):
            raise c.fail(where + ".count", "must be a whole number")
    for name, elements in c.mapping(f.get("sets", {}), ".filter.sets", 64).items():
        elements = c.items(elements, ".filter.sets.%s" % name, 1 << 16)
        if not all(e.__class__ is str and len(e) <= MAX_TEXT for e in elements):
            for k, e in enumerate(elements):      # the first that is not says why
                c.text(e, ".filter.sets.%s[%d]" % (name, k))
    return f
