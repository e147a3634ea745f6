"""The verdict of a node's forward filter, as far as beonet can judge it.

beonet writes one filter (agent/apply.forward_ruleset): table ``inet beonet``,
set ``cluster`` (the topology's prefixes), chain ``forward`` on the forward hook,
policy drop, one rule ``ip saddr @cluster ip daddr @cluster accept``. That shape
is evaluated exactly: a forwarded packet passes when both its addresses lie in
the set. Another forward-hook chain of family ip or inet passes everything
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
from typing import Any

from ..agent.names import escaped, shown
from ..compiler.model import ip_text
from .state import quad

TABLE, CHAIN, SET = "inet beonet", "forward", "inet beonet cluster"
# Statements (nft -j's keys) that never stop a packet: what a chain that passes everything may hold.
PASSING = frozenset(("match", "counter", "mangle", "accept", "log", "limit", "quota", "notrack", "continue",
                     "set", "xt"))


def _match(field_name: str) -> dict[str, Any]:
    return {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": field_name}},
                      "right": "@cluster"}}


RULE = [_match("saddr"), _match("daddr"), {"accept": None}]     # as `nft -j` lists beonet's rule


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


def _bounds(e: str) -> tuple[int, int] | None:
    """The first and last address of one set element (ADDR, ADDR/LEN with LEN 0 to 32:
    the prefix's, FIRST-LAST with FIRST <= LAST), or None when it is none of them."""
    addr, slash, plen = e.partition("/")
    first, dash, last = addr.partition("-")
    lo, hi = quad(first), quad(last) if dash else quad(first)
    if lo is None or hi is None or hi < lo or slash and (dash or not plen.isdigit() or int(plen) > 32):
        return None
    if not slash:
        return lo, hi
    size = 1 << (32 - int(plen))
    return lo & ~(size - 1), (lo & ~(size - 1)) + size - 1


def _ranges(elements: list[str]) -> tuple[list[tuple[int, int]], str | None]:
    """Set elements (ADDR, ADDR/LEN, FIRST-LAST) as merged ranges, and the first element
    of another kind (None: every one is of these)."""
    out = []
    for e in elements:
        found = _bounds(e) if isinstance(e, str) else None
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


def judge(collected: dict[str, Any]) -> Verdict:
    """The verdict of one node's collected filter (see the module docstring)."""
    if "error" in collected:
        return Verdict(unjudged="the ruleset could not be read (%s)" % escaped(str(collected["error"])))
    legacy = collected.get("legacy") or []
    if legacy:
        return Verdict(unjudged="legacy iptables tables in use: %s" % escaped(", ".join(legacy)))
    ranges: list[tuple[int, int]] | None = None
    for chain in collected.get("chains", []):
        count = chain.get("count", len(chain.get("rules", [])))
        if (chain["table"], chain["chain"]) == (TABLE, CHAIN):
            if chain["policy"] != "drop" or count != 1 or chain.get("rules") != [RULE]:
                return Verdict(unjudged="beonet's forward chain holds rules beonet does not write")
            ranges, bad = _ranges(collected.get("sets", {}).get(SET, []))
            if bad is not None:
                return Verdict(unjudged="beonet's set cluster holds elements beonet does not write",
                               refused="beonet's forward filter's set cluster holds %s, not an IPv4 "
                               "address, prefix or range: its filter is refused" % shown(bad))
        elif not _passes_all(chain, count):
            return Verdict(unjudged="forward chain %s (policy %s, %d rules) is not beonet's and may drop"
                           % (_chain_name(chain), escaped(chain["policy"]), count))
    if ranges is None:
        return Verdict()
    return Verdict(ranges, starts=[lo for lo, _hi in ranges])


def refused_text(verdict: Verdict, addresses: list[int]) -> str | None:
    """Why beonet's filter would drop some of the cluster's traffic (None: it passes all)."""
    a = verdict.first_refused(addresses)
    return None if a is None else "its set cluster lacks %s" % ip_text(a)
