"""JSON Schema of a beonet topology file (draft 2020-12).

The shipped ``topologies/beonet.schema.json`` is generated from this dict by
``beonet schema`` (a test checks that the two agree), so editors and the
compiler read the same rules. Each family's section comes from its module
(``compiler/families``); ``SCHEMA`` is the whole document, made on first use.

Sizes have maxima so that no document makes the compiler build a graph it
cannot finish: MAX_NODES nodes in all, MAX_LAN hosts on one LAN (the default
Linux neighbour table, net.ipv4.neigh.default.gc_thresh3, holds 1024 entries).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..agent import names
from ..agent.names import END, IFNAME_PATTERN, IFNAME_RULE, NODE_NAME_PATTERN
from . import family

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_NODES = 10_000
MAX_LAN = 1024
MAX_RATE_MBIT = 10_000_000  # 10 Tbit/s
MAX_NICS = 16
MAX_HOST_NUMBER = 2 ** 24 - 2  # the last host of a /8
MAX_TREE_LEVELS = 6

BOND_MODES = list(names.BOND_MODES)
MEDIA = ["switched", "shared"]
LATENCY_MODELS = ["sc98"]
LATENCY_HELP = ("per-hop delay: the latency model in the metrics (pairs by path class), and "
                "what the labs emulate where the kernel has netem")
MAX_DELAY_US = 1_000_000

rate = {"type": "integer", "minimum": 1, "maximum": MAX_RATE_MBIT,
        "description": "link rate in Mbit/s"}
mtu = {"type": "integer", "minimum": 576, "maximum": 65535,
       "description": "MTU in bytes"}
medium = {"enum": MEDIA,
          "description": "what joins the segment's NICs: switched (default), a switch that "
                         "carries each pair at the full rate at once, or shared, a hub or a "
                         "coaxial cable, one medium that every frame of the segment crosses, "
                         "so the segment carries its rate in all whatever the number of "
                         "pairs (each channel of a bonded segment is its own medium)"}
delay = {"type": "number", "minimum": 0, "maximum": MAX_DELAY_US,
         "description": "one-way delay in microseconds a frame gets there (a fraction is "
                        "allowed: 9.5)"}
node_name = {"type": "string", "pattern": NODE_NAME_PATTERN,
             "description": "a name: a letter, then letters, digits, '_', '.', '-'"}
_ifname = {"type": "string", "pattern": IFNAME_PATTERN,
           "description": "a Linux interface name: %s" % IFNAME_RULE}
_FIELD = r"\{(?:index|group|member|coords)(?::(?:0[0-9]{1,2})?[bdoxX]?)?\}"
_pattern = {"type": "string", "pattern": "^[A-Za-z](?:[A-Za-z0-9_.-]|%s){0,62}%s" % (_FIELD, END),
            "description": "a node name pattern: a letter, then letters, digits, '_', '.', '-' "
                           "and the fields {index}, {group}, {member}, {coords}, each with an "
                           "optional zero-padded width and integer format such as {index:03d}"}
fanout = {"type": "integer", "minimum": 1, "maximum": MAX_LAN,
          "description": "children per switch"}
ports = {"type": "integer", "minimum": 1, "maximum": 65535,
         "description": "ports of each switch: a LAN needing more is an error. Default: "
                        "not checked"}
cidr = {"type": "string", "format": "ipv4-network",
        "description": "an IPv4 network in CIDR form, e.g. 10.0.0.0/16"}
cidr6 = {"type": "string", "format": "ipv6-network",
         "description": "an IPv6 network in CIDR form, e.g. fd12:3456:789a::/48"}
bond_settings = {
    "mode": {"enum": BOND_MODES, "description": "Linux bonding mode"},
    "miimon": {"type": "integer", "minimum": 0, "maximum": 60000,
               "description": "MII link monitoring interval in ms"},
    "tso": {"type": "boolean",
            "description": "TCP segmentation offload on the bond. Default: off for "
                           "balance-rr (the bond then stripes single frames, not TSO "
                           "super-packets, across its members: less reordering, more "
                           "throughput), left to the kernel for other modes"},
}


ENGINES = ["static", "frr"]
BFD_DEFAULTS = {"interval_ms": 100, "multiplier": 3}
_bfd = {
    "interval_ms": {"type": "integer", "minimum": 10, "maximum": 60_000,
                    "description": "ms between BFD packets, sent and expected. Default 100"},
    "multiplier": {"type": "integer", "minimum": 2, "maximum": 255,
                   "description": "packets missed before a neighbour is down: the detection "
                                  "time is interval_ms x multiplier. Default 3"},
}
NEIGHBOUR_DEFAULTS = {"base_reachable_time_ms": 5000, "delay_first_probe_time": 1,
                      "ucast_solicit": 3, "retrans_time_ms": 500}
_neighbour = {
    "base_reachable_time_ms": {"type": "integer", "minimum": 100, "maximum": 3_600_000,
                               "description": "ms a neighbour entry stays REACHABLE after a "
                                              "confirmation (randomised by the kernel to "
                                              "0.5-1.5 times this). Default 5000"},
    "delay_first_probe_time": {"type": "integer", "minimum": 0, "maximum": 3600,
                               "description": "seconds a STALE entry in use waits before its "
                                              "first unicast probe. Default 1"},
    "ucast_solicit": {"type": "integer", "minimum": 1, "maximum": 255,
                      "description": "unicast probes before a neighbour is FAILED. Default 3"},
    "retrans_time_ms": {"type": "integer", "minimum": 10, "maximum": 3_600_000,
                        "description": "ms between probes. Default 500"},
}


def per_level(item: dict[str, Any], what: str) -> dict[str, Any]:
    """One value for every level of a tree, or a list of values from the root down."""
    return {"oneOf": [item, {"type": "array", "minItems": 1, "maxItems": MAX_TREE_LEVELS - 1,
                             "items": item}],
            "description": "%s: one value for every level, or a list with one value per "
                           "level below the root, from the root down" % what}


def obj(props: dict[str, Any], required: Iterable[str] = (),
        description: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": props}
    if required:
        out["required"] = list(required)
    if description:
        out["description"] = description
    return out


# The sections every topology may have, whatever its family.
COMMON: dict[str, Any] = {
    "name": node_name,
    "description": {"type": "string"},
    "family": None,             # the registered families' names (document)
    "nodes": obj({
        "pattern": _pattern,
        "first_index": {"type": "integer", "minimum": 0, "maximum": 1_000_000},
    }, description="node naming (generated families)"),
    "addressing": obj({
        "lan": cidr,
        "lan_prefix": {"type": "integer", "minimum": 8, "maximum": 30,
                       "description": "prefix length of each LAN segment "
                                      "(default: /24, larger when a segment needs it)"},
        "p2p": cidr,
        "p2p_prefix": {"enum": [30, 31],
                       "description": "prefix length of point-to-point links"},
        "loopback": {**cidr, "description": "routing.engine frr: the pool of the nodes' "
                                            "loopback addresses, one /32 each in node order "
                                            "(default 10.254.0.0/16)"},
        "ipv4": {"type": "boolean",
                 "description": "false: an IPv6-only cluster (needs ipv6); default true"},
        "ipv6": {"oneOf": [{"type": "boolean"}, obj({
            "lan": {**cidr6, "description": "the pool of the LANs' /64s (at most /64)"},
            "p2p": {**cidr6,
                    "description": "the pool of the point-to-point links' /127s (RFC 6164), at most /127"},
            "loopback": {**cidr6,
                         "description": "routing.engine frr: the pool of the nodes' IPv6 loopback "
                                        "addresses, one /128 each"},
        })], "description": "true: dual stack, the IPv6 pools carved from a unique local /48 "
                            "derived from the topology's name (fd00::/8 and the first 40 bits "
                            "of the SHA-256 of the name); or the pools (lan, p2p, loopback), "
                            "each missing one from that /48. Default false: IPv4 only"},
    }, description="address pools"),
    "link": obj({"rate_mbit": rate, "mtu": mtu},
                description="defaults for every link"),
    "switch": obj({"ports": ports},
                  description="defaults for every switch (see the cabling sheet)"),
    "ipv6": {"type": "boolean",
             "description": "false: cluster NICs get no IPv6, not even link-local "
                            "(default true: the OS's IPv6 link-local behaviour is kept)"},
    "routing": obj({
        "engine": {"enum": ENGINES,
                   "description": "static (default): the compiler's static routes, the "
                                  "papers' design; frr: FRR's OSPF on every cluster NIC with "
                                  "BFD, and a loopback address per node advertised over all "
                                  "of them, so a dead node or a cut cable costs the BFD "
                                  "detection time, not a visit"},
        "bfd": obj(_bfd, description="engine frr: BFD timers on every OSPF adjacency"),
        "failover": {"type": "boolean",
                     "description": "true (default): where several next hops are equally "
                                    "short, one multipath route over all of them, so a dead "
                                    "gateway cuts no pair that has another shortest path; "
                                    "false: one next hop per destination, chosen by source"},
        "neighbour": obj(_neighbour, description="neighbour timers on the cluster NICs: "
                                                 "they bound how long a dead next hop "
                                                 "keeps being used (failover only)"),
    }, description="the routing engine; static routes: failover over equal next hops"),
    "latency": obj({
        "model": {"enum": LATENCY_MODELS,
                  "description": "defaults from a measured table: sc98 (Salmon, Stein, "
                                 "Sterling, SC98, Table 1): 9.5 us one way per switch, 30 us "
                                 "per Linux router, 0 per cable"},
        "switch_us": {**delay, "description": "one-way delay of each crossing of a LAN "
                                              "segment, per switch on the way (a tree's "
                                              "path counts each of its switches). "
                                              "Default 0, or the model's"},
        "wire_us": {**delay, "description": "one-way delay of each crossing of a "
                                            "point-to-point link. Default 0, or the model's"},
        "forward_us": {**delay, "description": "one-way delay a forwarding node adds to "
                                               "each packet it forwards. Default 0, or "
                                               "the model's"},
        "forwarders": {"type": "object", "propertyNames": node_name, "additionalProperties": delay,
                       "description": "forward_us of single nodes, by name"},
    }, description=LATENCY_HELP),
    "management": obj({"interface": _ifname},
                      description="the interface Ansible connects through; "
                                  "never touched by a plan"),
}


def document() -> dict[str, Any]:
    """The topology's JSON Schema: the common sections, then one per registered family."""
    families = family.families()
    names = [f.name for f in families]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://beonet.invalid/beonet.schema.json",
        "title": "beonet topology",
        "description": "One cluster network: a family and its parameters.",
        **obj({**COMMON, "family": {"enum": names, "description": "the topology family"},
               **{f.name: f.schema for f in families}}, required=["name", "family"]),
        "allOf": [
            {"if": {"properties": {"family": {"const": f}}, "required": ["family"]},
             "then": {"required": [f]}}
            for f in names
        ],
    }


SCHEMA: dict[str, Any]          # made by __getattr__ on first use
_document: list[dict[str, Any]] = []


def __getattr__(attr: str) -> Any:
    """``SCHEMA``: the document, made once, when first asked for (the family modules
    build their sections from the parts above)."""
    if attr != "SCHEMA":
        raise AttributeError("module %r has no attribute %r" % (__name__, attr))
    if not _document:
        _document.append(document())
    return _document[0]
