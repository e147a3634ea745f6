"""The IP families of a plan as the outputs show them: IPv4 first, then IPv6; on an
IPv6-only plan IPv6 alone (its IPv4 addresses are internal labels, never shown).

A node plan holds ``address`` (IPv4, absent on an IPv6-only plan) and ``address6``
(IPv6, present when IPv6 is on); a path's hops hold the same two keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..compiler.ipv6 import counterparts
from ..compiler.model import Graph, ip6_text, ip_int

if TYPE_CHECKING:
    from ..compiler.pipeline import Compiled
    from ..compiler.prove import PathHop

Hop = dict[str, str]          # {"node", "address" (IPv4), "address6" (IPv6)}: one traceroute line
KEYS = ("address", "address6")


def node_addresses(node: Mapping[str, Any]) -> list[str]:
    """The node's addresses: its IPv4 one, then its IPv6 one (each where the plan has it)."""
    return [node[k] for k in KEYS if k in node]


def segment_prefixes(segment: Mapping[str, Any]) -> list[str]:
    """The segment's prefixes: its IPv4 one, then its IPv6 one (none: a bond's channel)."""
    return [segment[k] for k in ("prefix", "prefix6") if segment.get(k)]


def cluster_address(node: Mapping[str, Any]) -> str:
    """The one address a tool that takes one reaches the node at: its IPv4 address,
    on an IPv6-only plan its IPv6 one."""
    return str(node["address"] if "address" in node else node["address6"])


class Paths:
    """Compiled.path() in the plan's families: each hop's IPv4 address (``address``,
    absent on an IPv6-only plan) and the IPv6 address of the same interface, or the
    node's own IPv6 address at the end (``address6``, when IPv6 is on)."""

    def __init__(self, compiled: Compiled) -> None:
        graph: Graph = compiled.graph
        self.compiled = compiled
        self.v4, self.v6 = graph.v4, graph.v6
        self.keys = [k for k, on in zip(KEYS, (graph.v4, graph.v6)) if on]
        self.six = counterparts(graph) if graph.v6 else {}

    def _hop(self, hop: PathHop) -> Hop:
        out = {"node": hop["node"]}
        if self.v4:
            out["address"] = hop["address"]
        if self.v6:
            out["address6"] = "*" if hop["address"] == "*" else ip6_text(self.six[ip_int(hop["address"])])
        return out

    def path(self, src: str, dst: str) -> list[list[Hop]] | None:
        """The allowed hop lists from src to dst, the preferred first (None: no path)."""
        found = self.compiled.path(src, dst)
        if found is None:
            return None
        return [[self._hop(h) for h in hops] for hops in found]

    def addresses(self, src: str, dst: str) -> dict[str, list[list[str]]]:
        """{"address": IPv4 hop lists, "address6": IPv6 hop lists}, the plan's families."""
        branches = self.path(src, dst) or []
        return {k: [[h[k] for h in hops] for hops in branches] for k in self.keys}

    def lines(self, src: str, dst: str) -> list[str]:
        """`traceroute -n` lines of the pair: the IPv4 branches, then the IPv6 ones
        (marked -6, as `traceroute -n -6` shows them)."""
        out = []
        for key, lists in self.addresses(src, dst).items():
            flag = " -6" if key == "address6" else ""
            out += ["%s -> %s%s (%d hop%s): %s" % (
                src, dst, flag, len(hops), "" if len(hops) == 1 else "s", " ".join(hops)) for hops in lists]
        return out
