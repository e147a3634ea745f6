"""The dry run: what the node agent would do to each node, as shell commands.

The lines are the commands the node agent runs on a blank node (every planned
Ethernet NIC present and down with MTU 1500, no address, no route, no bond, forwarding off:
``agent.apply.blank_live_state``), produced by the same function that decides
what it runs on a live node. On a node already configured it runs fewer.
"""

from collections.abc import Mapping
from typing import Any

from ..agent import apply as agent
from ..agent.nodeplan import NodePlan, unsafe_text
from .ipfamily import KEYS


def ip_route_text(node_plan_: NodePlan, name: str, checked: bool = False) -> str:
    """One node's dry run: a header (its IPv4 address, its IPv6 address6, each where
    the plan has it), then links, bonds, MTUs, addresses,
    forwarding, ruleset, routes and offloads, one command a line. A plan holding
    a control character (never one checked where it entered) is refused, unless
    checked (as persistent_files)."""
    unsafe = None if checked else unsafe_text([name, node_plan_])
    if unsafe is not None:
        raise ValueError("the plan of %r holds a control character at %s" % (name, unsafe))
    plain: Mapping[str, Any] = node_plan_
    shown = "".join("  %s %s" % (key, plain[key]) for key in KEYS if key in plain)
    lines = ["# %s%s  forwarding %s" % (name, shown, "on" if node_plan_["forwarding"] else "off")]
    lines += [" ".join(cmd) for cmd in agent.actions_on_blank_node(node_plan_, name)]
    return "\n".join(lines) + "\n"
