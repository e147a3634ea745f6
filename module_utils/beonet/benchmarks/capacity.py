"""What a set of concurrent pairs can move at most, from the plan: the
capacity an aggregate is compared with. Pure logic (stdlib).

Every pair sends its token both ways, so each hop of its path uses, in each
direction, the sender's NIC out, the receiver's NIC in and, on a LAN of a
switch tree, each switch uplink between the two (up on the sender's side,
down on the receiver's); on a shared segment (a hub), the segment's one
medium, both ways. Pairs on disjoint links add up; pairs that cross
one resource share it. The capacity is the max-min fair fill: every pair's
rate grows together until a resource it uses is full (then that pair
stops), so n pairs over separate links give n x link, pairs crossing one
uplink give the uplink, and a mix gives the sum of both parts. Rates are one
way, MB/s (10^6 bytes), like the aggregates' one-way figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Plan = Mapping[str, Any]
Key = tuple[str, ...]       # ("out", node, nic), ("in", ...), ("up", switch), ("down", switch),
#                             ("medium", segment)
Resources = dict[Key, float]                # resource -> capacity MB/s


def _nic_on(plan: Plan, node: str, segment: str) -> dict[str, Any] | None:
    return next((i for i in plan["nodes"][node]["interfaces"]
                 if i.get("addresses") and i.get("segment") == segment), None)


def _shared_segment(plan: Plan, a: str, b: str) -> str | None:
    segs = {i["segment"] for i in plan["nodes"][a]["interfaces"] if i.get("addresses")}
    return next((i["segment"] for i in plan["nodes"][b]["interfaces"]
                 if i.get("addresses") and i["segment"] in segs), None)


def _climb(plan: Plan, node: str) -> list[str]:
    """The node's switch and its ancestors, leaf first ([] outside a switch tree)."""
    switches = plan.get("switches") or {}
    s = plan["nodes"][node].get("switch")
    out = []
    while s and s in switches:
        out.append(s)
        s = switches[s].get("parent")
    return out


def _uplinks(plan: Plan, a: str, b: str) -> list[tuple[str, str]]:
    """(direction, switch) of each uplink a frame from a to b crosses."""
    up_a, up_b = _climb(plan, a), _climb(plan, b)
    common = next((s for s in up_a if s in up_b), None)
    if common is None:
        return []
    return ([("up", s) for s in up_a[:up_a.index(common)]]
            + [("down", s) for s in up_b[:up_b.index(common)]])


def _medium(plan: Plan, seg: str) -> Resources:
    """A shared segment (hub, coax) as one resource for both directions: a pair
    exchanging tokens puts each byte on it once each way, so one way it
    carries half its rate (each channel of a bonded one its own medium)."""
    s = plan["segments"][seg]
    media = sum(1 for c in plan["segments"].values() if c.get("carries") == seg) or 1
    return {("medium", seg): media * s["rate_mbit"] / 16.0} if s.get("rate_mbit") else {}


def hop_resources(plan: Plan, a: str, b: str) -> Resources:
    """What a frame from neighbour a to neighbour b uses, with each capacity
    (MB/s); a resource of unknown rate is left out."""
    seg = _shared_segment(plan, a, b)
    if seg is None:
        return {}
    if plan["segments"].get(seg, {}).get("medium") == "shared":
        return _medium(plan, seg)
    out: Resources = {}
    for key, nic in ((("out", a), _nic_on(plan, a, seg)), (("in", b), _nic_on(plan, b, seg))):
        if nic and nic.get("rate_mbit"):
            out[key + (nic["name"],)] = nic["rate_mbit"] / 8.0
    if plan["segments"].get(seg, {}).get("kind") != "p2p":
        switches = plan.get("switches") or {}
        for direction, s in _uplinks(plan, a, b):
            if switches[s].get("uplink_mbit"):
                out[(direction, s)] = switches[s]["uplink_mbit"] / 8.0
    return out


def pair_resources(plan: Plan, client: str, server: str, via: list[str]) -> Resources:
    """Everything the pair's token uses, both ways along its path."""
    chain = [client] + list(via) + [server]
    out: Resources = {}
    for near, far in zip(chain, chain[1:]):
        out.update(hop_resources(plan, near, far))
        out.update(hop_resources(plan, far, near))
    return out


def fill(uses: list[Resources]) -> tuple[list[float], list[Key | None]]:
    """Max-min fair rates of flows over shared resources: (rate of each flow,
    the resource that stopped it, the most shared one on a tie). A flow with
    no known resource gets 0 and None."""
    cap: Resources = {}
    total: dict[Key, int] = {}
    for u in uses:
        cap.update(u)
        for k in u:
            total[k] = total.get(k, 0) + 1
    left = dict(cap)
    rate = [0.0] * len(uses)
    stop: list[Key | None] = [None] * len(uses)
    active = {i for i, u in enumerate(uses) if u}
    while active:
        users: dict[Key, int] = {}
        for i in active:
            for k in uses[i]:
                users[k] = users.get(k, 0) + 1
        share = {k: left[k] / n for k, n in users.items()}
        step = min(share.values())
        for i in active:
            rate[i] += step
            for k in uses[i]:
                left[k] -= step
        full = {k for k, s in share.items() if s <= step * (1 + 1e-9)}
        for i in sorted(active):
            hit = sorted((k for k in uses[i] if k in full), key=lambda k: (-total[k], k))
            if hit:
                stop[i] = hit[0]
                active.discard(i)
    return rate, stop


def _name(key: Key, mbit: float) -> str:
    if key[0] == "medium":
        return "shared segment %s (%g Mbit/s, both ways)" % (key[1], mbit * 2)
    if key[0] in ("up", "down"):
        return "uplink of switch %s (%g Mbit/s each way)" % (key[1], mbit)
    return "NIC %s %s (%g Mbit/s %s)" % (key[1], key[2], mbit, key[0])


def _describe(uses: list[Resources], rate: list[float], stop: list[Key | None]) -> str:
    """The bottleneck in words: shared resources by name, pairs alone on their path by count."""
    users: dict[Key, int] = {}
    for u in uses:
        for k in u:
            users[k] = users.get(k, 0) + 1
    shared: dict[Key, int] = {}
    own: list[float] = []
    for i, at in enumerate(stop):
        if at is None:
            continue
        if users[at] > 1:
            shared[at] = users[at]
        else:
            own.append(rate[i])
    cap = {k: v for u in uses for k, v in u.items()}
    parts = ["%s shared by %d pairs" % (_name(r, cap[r] * 8), n) for r, n in sorted(shared.items())]
    if own:
        each = " / ".join("%g" % r for r in sorted({round(r * 8, 3) for r in own}))
        if len(own) == 1:
            parts.append("%s path, %s Mbit/s" % ("1 pair on a" if shared else "one", each))
        else:
            kind = "pairs on disjoint paths" if shared else "disjoint paths"
            parts.append("%d %s, %s Mbit/s each" % (len(own), kind, each))
    return "; ".join(parts)


def capacity(plan: Plan, pairs: list[Mapping[str, Any]]) -> dict[str, Any] | None:
    """{MBps, pairs_MBps, bottleneck} of concurrent pairs ({client, server, via}),
    or None when the plan gives no rate on some pair's path."""
    uses = [pair_resources(plan, p["client"], p["server"], p.get("via") or []) for p in pairs]
    if not uses or not all(uses):
        return None
    rate, stop = fill(uses)
    return {"MBps": round(sum(rate), 3), "pairs_MBps": [round(r, 3) for r in rate],
            "bottleneck": _describe(uses, rate, stop)}
