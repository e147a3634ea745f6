"""What a lab node's FRR says about its neighbours, read by ``beonet lab outage``.

Pure functions over what ``vtysh -c 'show bfd peers json'``, ``vtysh -c 'show ip
ospf neighbor json'`` and, where the plan has IPv6, ``vtysh -c 'show ipv6 ospf6 neighbor
json'`` print (FRR 10): whether a node has settled (every BFD session up, every OSPF
adjacency of each family formed) before a failure is made, and which BFD sessions went
down during the measurement although the failure did not touch them (a neighbour that
missed its packets on a busy host: the adjacency is dropped and formed again, and the
pairs behind it wait for that, not for the failure). Whatever a node prints that is
not what FRR prints counts as nothing settled and no session.
"""

from __future__ import annotations

from typing import Any

from .. import gate
from ..agent.verify import is_link_local

SPLIT = "=== ospf"      # OSPFv2's neighbours follow
SPLIT6 = "=== ospfv3"   # OSPFv3's follow (after OSPFv2's)
BFD = ("vtysh", "-c", "show bfd peers json")
MAX_TEXT = 64 << 20  # what one node prints: 1,024 neighbours take about 1 MB
MAX_DEPTH = 8        # {"neighbors": {address: [{...}]}} is 4 deep
SETTLED = "Full"     # every neighbour is adjacent: point-to-point, and point-to-multipoint on LANs

# peer address -> (the session's local discriminator, seconds it has been up); a link-local
# peer (OSPFv3's, IPv6) as ADDRESS%NIC: such an address names a node only on its link
Sessions = dict[str, tuple[int, float]]


def loads(text: str) -> Any:
    """What a node printed as strict JSON (the gate's), or None: not JSON, over
    MAX_TEXT characters or nested deeper than MAX_DEPTH."""
    if len(text) > MAX_TEXT:
        return None
    try:
        return gate.loads_json(text, None, MAX_DEPTH)
    except gate.GateError:
        return None


def _peers(text: str) -> list[dict[str, Any]]:
    peers = loads(text)
    return [p for p in peers if isinstance(p, dict)] if isinstance(peers, list) else []


def bfd_up(text: str) -> int:
    """How many BFD sessions are up."""
    return sum(1 for p in _peers(text) if p.get("status") == "up")


def _link_local(address: Any, nic: Any) -> str | None:
    """ADDRESS%NIC of an IPv6 link-local address (fe80::/10) seen on a NIC; None: not one."""
    if not (isinstance(address, str) and isinstance(nic, str)) or "/" in address or "%" in address:
        return None
    return "%s%%%s" % (address, nic) if is_link_local(address) else None


def sessions_up(text: str) -> Sessions:
    """The BFD sessions up: {peer (ADDRESS%NIC where link-local): (local discriminator,
    seconds up)}."""
    out: Sessions = {}
    for p in _peers(text):
        ident, up, peer = p.get("id"), p.get("uptime"), p.get("peer")
        if (p.get("status") == "up" and isinstance(peer, str) and isinstance(ident, int)
                and isinstance(up, (int, float)) and not isinstance(up, bool) and up >= 0):
            out[_link_local(peer, p.get("interface")) or peer] = (ident, float(up))
    return out


def link_local_holders(said: dict[str, str], segment_of: dict[str, str]) -> dict[tuple[str, str], str]:
    """(link-local address, segment) -> the node holding it there, from each node's BFD
    sessions (said: node -> what it printed; a session's ``local`` address on its
    ``interface``); segment_of: "NODE:NIC" -> the segment that NIC is on."""
    out: dict[tuple[str, str], str] = {}
    for node, text in said.items():
        for p in _peers(text):
            mine = _link_local(p.get("local"), p.get("interface"))
            segment = segment_of.get("%s:%s" % (node, p.get("interface")))
            if mine is not None and segment is not None:
                out[(mine.partition("%")[0], segment)] = node
    return out


def went_down(before: Sessions, after: Sessions, between: float) -> list[str]:
    """The peers of sessions up before that went down since, `between` seconds apart at
    least: not up now, another session (a new discriminator), or up for less time than
    has passed (FRR counts whole seconds)."""
    return sorted(peer for peer, (ident, _up) in before.items()
                  if peer not in after or after[peer][0] != ident or after[peer][1] < between - 1)


def state_command(six: bool = False) -> tuple[str, ...]:
    """What a node is asked for whether it has settled: its BFD sessions, its OSPFv2
    neighbours and, six (the plan has IPv6), its OSPFv3 neighbours."""
    ask = "vtysh -c 'show bfd peers json'; echo; echo '%s'; vtysh -c 'show ip ospf neighbor json'" % SPLIT
    if six:
        ask += "; echo; echo '%s'; vtysh -c 'show ipv6 ospf6 neighbor json'" % SPLIT6
    return ("sh", "-c", ask)


STATE = state_command()


def sections(text: str) -> tuple[str, str, str]:
    """What state_command printed: (BFD's sessions, OSPFv2's neighbours, OSPFv3's)."""
    bfd, _sep, rest = text.partition(SPLIT)
    ospf, _sep, ospf6 = rest.partition(SPLIT6)
    return bfd, ospf, ospf6


def _tally(neighbours: list[tuple[Any, Any]]) -> tuple[int, list[str]]:
    """(neighbours Full, the NICs of those that are not) of (NIC, state) pairs."""
    settled, forming = 0, set()
    for nic, state in neighbours:
        if state == SETTLED:
            settled += 1
        else:
            forming.add(str(nic))
    return settled, sorted(forming)


def _entries(value: Any) -> list[dict[str, Any]]:
    return [e if isinstance(e, dict) else {} for e in value] if isinstance(value, list) else []


def ospf_settled(text: str) -> tuple[int, list[str]]:
    """(neighbours in a settled state, the NICs still forming an adjacency): a NIC is
    settled when every one of its neighbours is Full (beonet's OSPF has no designated
    router: each LAN member is adjacent with every other). ``show ip ospf neighbor json``:
    {"neighbors": {ROUTER_ID: [{"converged": STATE, "ifaceName": "NIC:ADDRESS"}, ...]}}."""
    found = loads(text)
    nbrs = found.get("neighbors", {}) if isinstance(found, dict) else {}
    entries = [e for listed in (nbrs.values() if isinstance(nbrs, dict) else []) for e in _entries(listed)]
    return _tally([(str(e.get("ifaceName", "")).split(":")[0], e.get("converged")) for e in entries])


def ospf6_settled(text: str) -> tuple[int, list[str]]:
    """The same of OSPFv3: ``show ipv6 ospf6 neighbor json`` prints a list (FRR's
    ospf6_neighbor.c): {"neighbors": [{"neighborId": ROUTER_ID, "state": STATE,
    "interfaceName": NIC, ...}, ...]}, STATE one of Down, Attempt, Init, Twoway, ExStart,
    ExChange, Loading, Full. Its point-to-point links are OSPF broadcast networks
    (agent/frr.py), whose two ends both reach Full."""
    found = loads(text)
    nbrs = found.get("neighbors", []) if isinstance(found, dict) else []
    return _tally([(e.get("interfaceName", ""), e.get("state")) for e in _entries(nbrs)])
