"""The verdict of a node's forward filter, as far as beonet can judge it.

beonet writes one filter (agent/apply.forward_ruleset): table ``inet beonet``,
set ``cluster`` (the topology's prefixes), chain ``forward`` on the forward hook,
policy drop, one rule ``ip saddr @cluster ip daddr @cluster accept``, and with
IPv6 a set of its IPv6 prefixes and the rule ``ip6 saddr @SET ip6 daddr @SET
accept``. That shape is evaluated exactly, each family by its own rule: a
forwarded packet passes when both its addresses lie in the set the rule of its
family names; without such a rule the chain's policy drops every packet of the
family. Another forward-hook chain of family ip or inet passes everything
when its policy is accept and its rules only match, count, log, set marks or
accept (an accept ends one base chain, the next still runs): the labs' chain
marking forwarded packets for their delays is one. Anything else (a chain that
can drop, reject, queue, jump or goto, another rule in beonet's chain, set
elements of another kind, legacy iptables tables in use, a ruleset nft could
not list) is not judged: the verdict says why, and the pairs through the node
are reported as not judged.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..agent.names import escaped, shown
from .family import V4, V6, Family

TABLE, CHAIN, SET = "inet beonet", "forward", "inet beonet cluster"
SET6 = "inet beonet cluster6"          # the IPv6 set of the synthetic plan state
# Statements (nft -j's keys) that never stop a packet: what a chain that passes everything may hold.
PASSING = frozenset(("match", "counter", "mangle", "accept", "log", "limit", "quota", "notrack", "continue",
                     "set", "xt"))


def _match(field_name: str, proto: str = "ip", name: str = "cluster") -> dict[str, Any]:
    return {"match": {"op": "==", "left": {"payload": {"protocol": proto, "field": field_name}},
                      "right": "@" + name}}


RULE = [_match("saddr"), _match("daddr"), {"accept": None}]     # as `nft -j` lists beonet's rule
RULE6 = [_match("saddr", "ip6", "cluster6"), _match("daddr", "ip6", "cluster6"), {"accept": None}]


def rule_set(rule: Any, proto: str) -> str | None:
    """The set a rule of beonet's shape for proto (ip, ip6) names, ``P saddr @SET P daddr
    @SET accept`` (None: the rule is not of that shape)."""
    if not isinstance(rule, list) or len(rule) != 3 or rule[2] != {"accept": None}:
        return None
    names = []
    for stmt, name in zip(rule[:2], ("saddr", "daddr")):
        m = stmt.get("match") if isinstance(stmt, dict) and len(stmt) == 1 else None
        if not isinstance(m, dict) or m.get("op") != "==" \
                or m.get("left") != {"payload": {"protocol": proto, "field": name}}:
            return None
        right = m.get("right")
        if not isinstance(right, str) or not right.startswith("@"):
            return None
        names.append(right[1:])
    return names[0] if names[0] == names[1] else None


@dataclass(slots=True)
class Verdict:
    """Which forwarded packets a node's filter passes: with ``ranges`` (beonet's
    filter) those whose source and destination both lie in them; with None every
    packet. ``unjudged``: why the filter cannot be judged (then it is not)."""

    ranges: list[tuple[int, int]] | None = None
    unjudged: str | None = None
    starts: list[int] = field(default_factory=list)
    refused: str | None = None          # a state problem of the node: its filter holds what cannot be

    @property
    def beonet(self) -> bool:
        return self.ranges is not None

    def holds(self, addr: int) -> bool:
        if self.ranges is None:
            return True
        k = bisect_right(self.starts, addr) - 1
        return k >= 0 and addr <= self.ranges[k][1]

    def accepts(self, saddr: int, daddr: int) -> bool:
        return self.holds(saddr) and self.holds(daddr)

    def first_refused(self, addresses: list[int]) -> int | None:
        """The first of addresses the filter does not pass (as source or destination)."""
        return next((a for a in addresses if not self.holds(a)), None)


def _bounds(fam: Family, e: str) -> tuple[int, int] | None:
    """The first and last address of one set element of the family (ADDR, ADDR/LEN with
    LEN 0 to the address's bits: the prefix's, FIRST-LAST with FIRST <= LAST), or None
    when it is none of them."""
    addr, slash, plen = e.partition("/")
    first, dash, last = addr.partition("-")
    lo, hi = fam.parse(first), fam.parse(last) if dash else fam.parse(first)
    if lo is None or hi is None or hi < lo or slash and (dash or not plen.isdigit() or int(plen) > fam.bits):
        return None
    if not slash:
        return lo, hi
    size = 1 << (fam.bits - int(plen))
    return lo & ~(size - 1), (lo & ~(size - 1)) + size - 1


def _ranges(fam: Family, elements: list[str]) -> tuple[list[tuple[int, int]], str | None]:
    """Set elements (ADDR, ADDR/LEN, FIRST-LAST) as merged ranges, and the first element
    of another kind (None: every one is of these). Nodes hold the same set: each one is
    read once (_read_ranges)."""
    if all(e.__class__ is str for e in elements):
        return _read_ranges(fam, tuple(elements))
    return _merged(fam, elements)


@lru_cache(maxsize=64)
def _read_ranges(fam: Family, elements: tuple[str, ...]) -> tuple[list[tuple[int, int]], str | None]:
    return _merged(fam, list(elements))


def _merged(fam: Family, elements: list[str]) -> tuple[list[tuple[int, int]], str | None]:
    out = []
    for e in elements:
        found = _bounds(fam, e) if isinstance(e, str) and len(e) <= 100 else None
        if found is None:
            return [], e if isinstance(e, str) else repr(e)
        out.append(found)
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(out):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged, None


def _chain_name(chain: dict[str, Any]) -> str:
    return escaped("%s %s" % (chain["table"], chain["chain"]))


def _passes_all(chain: dict[str, Any], count: int) -> bool:
    """Whether a chain passes every packet: policy accept, and each of its rules (all of
    them collected) made of statements that never stop one."""
    rules = chain.get("rules", [])
    if chain["policy"] != "accept" or count != len(rules):
        return False
    return all(isinstance(rule, list) and all(isinstance(s, dict) and len(s) == 1 and next(iter(s)) in PASSING
                                              for s in rule) for rule in rules)


def _beonet_chain(chain: dict[str, Any], count: int, sets: dict[str, Any], fam: Family) -> Verdict:
    """The verdict of beonet's own chain for packets of the family."""
    rules = chain.get("rules") or []
    proto = "ip" if fam is V4 else "ip6"
    if (chain["policy"] != "drop" or count != len(rules) or not rules
            or any(rule_set(r, "ip") is None and rule_set(r, "ip6") is None for r in rules)):
        return Verdict(unjudged="beonet's forward chain holds rules beonet does not write")
    names = [n for n in (rule_set(r, proto) for r in rules) if n is not None]
    if not names:                       # the policy drops every packet of the family
        return Verdict([], starts=[])
    if len(names) > 1:
        return Verdict(unjudged="beonet's forward chain holds rules beonet does not write")
    ranges, bad = _ranges(fam, sets.get("%s %s" % (TABLE, names[0]), []))
    if bad is not None:
        return Verdict(unjudged="beonet's set %s holds elements beonet does not write" % escaped(names[0]),
                       refused="beonet's forward filter's set %s holds %s, not an %s address, prefix or "
                       "range: its filter is refused" % (escaped(names[0]), shown(bad), fam.name))
    return Verdict(ranges, starts=[lo for lo, _hi in ranges])


def judge(collected: dict[str, Any], bits: int = 32) -> Verdict:
    """The verdict of one node's collected filter for packets of the family of that many
    address bits (see the module docstring)."""
    if "error" in collected:
        return Verdict(unjudged="the ruleset could not be read (%s)" % escaped(str(collected["error"])))
    legacy = collected.get("legacy") or []
    if legacy:
        return Verdict(unjudged="legacy iptables tables in use: %s" % escaped(", ".join(legacy)))
    own: Verdict | None = None
    for chain in collected.get("chains", []):
        count = chain.get("count", len(chain.get("rules", [])))
        if (chain["table"], chain["chain"]) == (TABLE, CHAIN):
            own = _beonet_chain(chain, count, collected.get("sets", {}), V4 if bits == 32 else V6)
            if own.unjudged is not None:
                return own
        elif not _passes_all(chain, count):
            return Verdict(unjudged="forward chain %s (policy %s, %d rules) is not beonet's and may drop"
                           % (_chain_name(chain), escaped(chain["policy"]), count))
    return own if own is not None else Verdict()


def refused_text(verdict: Verdict, addresses: list[int], fam: Family = V4) -> str | None:
    """Why beonet's filter would drop some of the cluster's traffic (None: it passes all)."""
    a = verdict.first_refused(addresses)
    if a is None:
        return None
    if verdict.ranges == []:
        return "it has no rule for %s: its policy drops every forwarded %s packet" % (fam.name, fam.name)
    return "its set %s lacks %s" % ("cluster" if fam is V4 else "of IPv6 prefixes", fam.text(a))
