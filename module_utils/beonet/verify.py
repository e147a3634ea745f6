"""Path verification on a node: traceroute output against the plan's expected
hops, forwarding state, bond state. Standard library only (runs on nodes)."""

import re

_HOP = re.compile(r"^\s*(\d+)\s+(\S+)")


def parse_traceroute(text):
    """Hop addresses of `traceroute -n -q 1` output ('*' where no reply)."""
    hops = []
    for line in text.splitlines():
        m = _HOP.match(line)
        if m and not line.startswith("traceroute"):
            hops.append(m.group(2))
    return hops


def compare(expected, seen):
    return list(expected) == list(seen)


def bond_state(text):
    """Parse /proc/net/bonding/<bond>: mode and {member: MII status}."""
    mode = None
    members = {}
    current = None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "Bonding Mode":
            mode = value
        elif key == "Slave Interface":
            current = value
        elif key == "MII Status" and current:
            members[current] = value
    return mode, members


def table(rows):
    """Text table of mismatches: pair, expected, seen."""
    if not rows:
        return "all paths match the plan"
    width = max(len(r["pair"]) for r in rows)
    out = ["%-*s  %s  |  %s" % (width, "pair", "expected", "seen")]
    for r in rows:
        out.append("%-*s  %s  |  %s" % (width, r["pair"], " ".join(r["expected"]),
                                        " ".join(r["seen"])))
    return "\n".join(out)
