"""What a lab node's FRR says about its neighbours, read by ``beonet lab outage``.

Pure functions over what ``vtysh -c 'show bfd peers json'`` and ``vtysh -c 'show ip
ospf neighbor json'`` print (FRR 10): whether a node has settled (every BFD session
up, every OSPF adjacency formed) before a failure is made, and which BFD sessions went
down during the measurement although the failure did not touch them (a neighbour that
missed its packets on a busy host: the adjacency is dropped and formed again, and the
pairs behind it wait for that, not for the failure). Whatever a node prints that is
not what FRR prints counts as nothing settled and no session.
"""

from __future__ import annotations

from typing import Any

from .. import gate

SPLIT = "=== ospf"
STATE = ("sh", "-c", "vtysh -c 'show bfd peers json'; echo; echo '%s'; "
         "vtysh -c 'show ip ospf neighbor json'" % SPLIT)
BFD = ("vtysh", "-c", "show bfd peers json")
MAX_TEXT = 64 << 20  # what one node prints: 1,024 neighbours take about 1 MB
MAX_DEPTH = 8        # {"neighbors": {address: [{...}]}} is 4 deep
SETTLED = "Full"     # every neighbour is adjacent: point-to-point, and point-to-multipoint on LANs

# peer address -> (the session's local discriminator, seconds it has been up)
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


def sessions_up(text: str) -> Sessions:
    """The BFD sessions up: {peer address: (local discriminator, seconds up)}."""
    out: Sessions = {}
    for p in _peers(text):
        ident, up, peer = p.get("id"), p.get("uptime"), p.get("peer")
        if (p.get("status") == "up" and isinstance(peer, str) and isinstance(ident, int)
                and isinstance(up, (int, float)) and not isinstance(up, bool) and up >= 0):
            out[peer] = (ident, float(up))
    return out


def went_down(before: Sessions, after: Sessions, between: float) -> list[str]:
    """The peers of sessions up before that went down since, `between` seconds apart at
    least: not up now, another session (a new discriminator), or up for less time than
    has passed (FRR counts whole seconds)."""
    return sorted(peer for peer, (ident, _up) in before.items()
                  if peer not in after or after[peer][0] != ident or after[peer][1] < between - 1)


def ospf_settled(text: str) -> tuple[int, list[str]]:
    """(neighbours in a settled state, the NICs still forming an adjacency): a NIC is
    settled when every one of its neighbours is Full (beonet's OSPF has no designated
    router: each LAN member is adjacent with every other)."""
    found = loads(text)
    nbrs = found.get("neighbors", {}) if isinstance(found, dict) else {}
    settled, forming = 0, set()
    for entries in nbrs.values() if isinstance(nbrs, dict) else []:
        for e in entries if isinstance(entries, list) else []:
            e = e if isinstance(e, dict) else {}
            nic, state = str(e.get("ifaceName", "")).split(":")[0], e.get("converged")
            if state == SETTLED:
                settled += 1
            else:
                forming.add(nic)
    return settled, sorted(forming)
