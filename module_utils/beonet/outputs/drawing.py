"""Drawings of the topology (Graphviz dot, Mermaid). They read the plan dict
and, when given, the cabling sheet, whose cable labels they print.

Both drawings come from one list of parts (`parts`): the nodes, the hubs (IP
segments and switches) and the edges between them, each edge with the NIC
names at its ends and the labels of its cables. A bonded LAN is one hub; its
channels are not drawn on their own but as the bundle on each node's edge
(`bond0 (eth1+eth2)`), labelled with one cable per channel.
"""

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

from ..cabling.sheet import NicEnd, PortEnd, Sheet
from .ipfamily import node_addresses, segment_prefixes

Plan = dict[str, Any]

GATEWAY_COLOR = "#c0392b"
BOND_COLOR = "#1f4e9c"
P2P_COLOR = "#2e7d32"
SWITCH_FILL = "#eeeeee"


@dataclass
class Node:
    name: str
    addresses: list[str]            # IPv4, then IPv6 (each where the plan has it)
    gateway: bool


HUB_LAN, HUB_BONDED = "lan", "bonded"      # the kinds of a hub that is an IP segment


@dataclass
class Hub:
    """An IP segment (HUB_LAN, HUB_BONDED) or a switch (`switch`) drawn as one shape."""
    ident: str
    kind: str
    lines: list[str]


@dataclass
class Edge:
    """`member`: node to segment; `bond`: node to bonded segment (`lines`
    channels); `p2p`: node to node; `port`: switch to node; `uplink`: switch to switch."""
    kind: str
    a: str
    b: str
    a_nic: str = ""
    b_nic: str = ""
    label: str = ""
    lines: int = 1
    cables: list[str] = field(default_factory=list)   # labels of the cables it stands for


@dataclass
class Parts:
    title: str
    nodes: list[Node] = field(default_factory=list)
    hubs: list[Hub] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    cables: dict[tuple[str, str], str] = field(default_factory=dict)  # see _cable_labels

    def has(self, kind: str) -> bool:
        """Whether the drawing holds an edge or hub of this kind."""
        return any(e.kind == kind for e in self.edges) or any(h.kind == kind for h in self.hubs)


def _ident(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _bonds(plan: Plan) -> dict[tuple[str, str], list[str]]:
    """(node, bond interface) -> its member NICs."""
    return {(name, i["name"]): list(i.get("members", []))
            for name, node in plan["nodes"].items()
            for i in node["interfaces"] if i["kind"] == "bond"}


def _cable_labels(plan: Plan, sheet: Sheet | None) -> dict[tuple[str, str], str]:
    """Cable labels by (node, NIC as the plan names it) and, for uplinks, by
    (sw:switch, sw:its parent)."""
    if sheet is None:
        return {}
    by_end: dict[tuple[str, str], str] = {}
    out: dict[tuple[str, str], str] = {}
    for c in sheet.cables:
        if isinstance(c.a, PortEnd) and isinstance(c.b, PortEnd):
            out["sw:" + c.a.switch, "sw:" + c.b.switch] = c.label
        for end in (c.a, c.b):
            if isinstance(end, NicEnd):
                by_end[end.node, end.nic] = c.label
    for name, node in plan["nodes"].items():
        for i in node["interfaces"]:
            text = by_end.get((name, i.get("logical", i["name"])))
            if text:
                out[name, i["name"]] = text
    return out


def _labels(parts: Parts, node: str, nics: list[str]) -> list[str]:
    """The labels of the cables in these NICs of a node."""
    return [parts.cables[node, n] for n in nics if (node, n) in parts.cables]


def _lan_parts(parts: Parts, seg: str, s: dict[str, Any],
               bonds: dict[tuple[str, str], list[str]]) -> None:
    """One LAN hub and its members' edges; members on bonds make it a bonded LAN."""
    members = s["members"]
    nics = [bonds.get((m["node"], m["interface"]), []) for m in members]
    lines = [seg, *(segment_prefixes(s) or ["channel of %s" % s.get("carries")])]
    if any(nics):
        lines.append("bonded, %d channels" % max(len(n) for n in nics))
    parts.hubs.append(Hub("seg:" + seg, HUB_BONDED if any(nics) else HUB_LAN, lines))
    for m, under in zip(members, nics):
        if under:
            parts.edges.append(Edge("bond", m["node"], "seg:" + seg, lines=len(under),
                                    label="%s (%s)" % (m["interface"], "+".join(under)),
                                    cables=_labels(parts, m["node"], under)))
        else:
            parts.edges.append(Edge("member", m["node"], "seg:" + seg, m["interface"],
                                    cables=_labels(parts, m["node"], [m["interface"]])))


def _segment_parts(parts: Parts, plan: Plan) -> None:
    """Hubs and edges of the IP segments. A tree's LAN is drawn as its switches,
    a bond's channels as the bundle on each node's edge to the LAN they carry."""
    bonds = _bonds(plan)
    switched = bool(plan.get("switches"))
    for seg, s in plan["segments"].items():
        if s["kind"] == "p2p":
            if len(s["members"]) < 2:       # the other end is down (compiled with --down)
                continue
            a, b = s["members"]
            parts.edges.append(Edge("p2p", a["node"], b["node"], a["interface"], b["interface"],
                                    " ".join(segment_prefixes(s)),
                                    cables=_labels(parts, a["node"], [a["interface"]])))
        elif not ((s["kind"] == "lan" and switched)
                  or (s["kind"] == "channel" and s.get("carries") in plan["segments"])):
            _lan_parts(parts, seg, s, bonds)


def _switch_parts(parts: Parts, plan: Plan) -> None:
    """A tree's switches, their uplinks and ports; the LAN they carry goes in the title."""
    switches = plan.get("switches") or {}
    if not switches:
        return
    lans = [(seg, s) for seg, s in plan["segments"].items() if s["kind"] == "lan"]
    nic = {m["node"]: m["interface"] for _name, s in lans for m in s["members"]}
    parts.title += "".join(": LAN %s %s" % (seg, " ".join(segment_prefixes(s))) for seg, s in lans)
    for name, sw in switches.items():
        parts.hubs.append(Hub("sw:" + name, "switch", [name]))
        if sw["parent"]:
            cable = parts.cables.get(("sw:" + name, "sw:" + sw["parent"]))
            parts.edges.append(Edge("uplink", "sw:" + sw["parent"], "sw:" + name,
                                    label="%s Mbit/s" % sw["uplink_mbit"],
                                    cables=[cable] if cable else []))
        for n in sw["nodes"]:
            parts.edges.append(Edge("port", "sw:" + name, n, b_nic=nic.get(n, ""),
                                    cables=_labels(parts, n, [nic.get(n, "")])))


def parts(plan: Plan, sheet: Sheet | None = None) -> Parts:
    """What both drawings show, read from the plan and the cabling sheet."""
    topo = plan["topology"]
    out = Parts("%s (%s)" % (topo["name"], topo["family"]), cables=_cable_labels(plan, sheet))
    out.nodes = [Node(name, node_addresses(n), bool(n["forwarding"]))
                 for name, n in plan["nodes"].items()]
    _segment_parts(out, plan)
    _switch_parts(out, plan)
    return out


# --- Graphviz dot ------------------------------------------------------------

def _q(text: str) -> str:
    """A dot string; `\\n` in it stays a line break."""
    return '"%s"' % text.replace('"', '\\"')


def _attrs(**attrs: str | int) -> str:
    return "[%s]" % ", ".join("%s=%s" % (k, v if isinstance(v, int) else _q(v))
                              for k, v in attrs.items())


def _dot_node(n: Node, ident: str = "") -> str:
    label = "\\n".join([n.name, *n.addresses])
    if n.gateway:
        attrs = _attrs(label=label, color=GATEWAY_COLOR, penwidth=2)
    else:
        attrs = _attrs(label=label)
    return "  %s %s;" % (_q(ident or n.name), attrs)


def _dot_hub(h: Hub) -> str:
    label = "\\n".join(h.lines)
    if h.kind == "switch":
        attrs = _attrs(shape="diamond", label=label, style="filled", fillcolor=SWITCH_FILL)
    elif h.kind == HUB_BONDED:
        attrs = _attrs(shape="ellipse", label=label, peripheries=2, color=BOND_COLOR)
    else:
        attrs = _attrs(shape="ellipse", label=label)
    return "  %s %s;" % (_q(h.ident), attrs)


def _dot_edge(e: Edge, flip: bool = False, minlen: int = 1) -> str:
    """One edge; `flip` writes it hub first, which puts the hub above the node;
    minlen 2 puts its lower end one row further down."""
    label = "\\n".join(([e.label] if e.label else []) + e.cables)
    attrs: dict[str, str | int] = {"label": label} if label else {}
    if minlen > 1:
        attrs["minlen"] = minlen
    if e.kind == "bond":
        attrs.update(color=":invis:".join([BOND_COLOR] * e.lines), penwidth=2)
    elif e.kind == "p2p":
        attrs.update(color=P2P_COLOR, penwidth=2)
    elif e.kind == "uplink":
        attrs.update(penwidth=3)
    elif e.kind == "port":
        attrs.update(style="dashed")
    ends = [(e.a, e.a_nic), (e.b, e.b_nic)]
    (tail, tail_nic), (head, head_nic) = ends[::-1] if flip else ends
    if tail_nic:
        attrs["taillabel"] = tail_nic
    if head_nic:
        attrs["headlabel"] = head_nic
    return "  %s -- %s %s;" % (_q(tail), _q(head), _attrs(**attrs))


def _lan_edges(p: Parts) -> dict[str, list[Edge]]:
    """Each node's edges to IP segments, in plan order."""
    out: dict[str, list[Edge]] = {n.name: [] for n in p.nodes}
    for e in p.edges:
        if e.kind in ("member", "bond"):
            out[e.a].append(e)
    return out


def _flips(p: Parts) -> set[int]:
    """Edges (by id) drawn with the hub above the node: a node's first segment
    is above it, its others below. A large segment whose nodes have no other
    edge gets every second node below it, so it is drawn half as wide."""
    lan = _lan_edges(p)
    busy = {e.a for e in p.edges if e.kind == "p2p"} | {e.b for e in p.edges if e.kind == "p2p"}
    flips: set[int] = set()
    for h in p.hubs:
        members = [e for e in p.edges if e.b == h.ident and e.kind in ("member", "bond")]
        alone = len(members) > 8 and all(len(lan[e.a]) == 1 and e.a not in busy for e in members)
        for k, e in enumerate(members):
            if lan[e.a][0] is e and not (alone and k % 2 == 0):
                flips.add(id(e))
    return flips


def _staggered(p: Parts) -> set[int]:
    """Switch ports (by id) of every second node under a switch with many nodes:
    those nodes are drawn one row lower, so a leaf is half as wide."""
    out: set[int] = set()
    for h in p.hubs:
        ports = [e for e in p.edges if e.kind == "port" and e.a == h.ident]
        if len(ports) > 4:
            out.update(id(e) for e in ports[1::2])
    return out


def _dot_clusters(p: Parts) -> list[str]:
    """When every node is on one segment at most, each segment is a box around its nodes."""
    lan = _lan_edges(p)
    if any(len(v) > 1 for v in lan.values()) or not p.has("p2p"):
        return []
    out = []
    for h in p.hubs:
        members = [e.a for e in p.edges if e.b == h.ident and e.kind in ("member", "bond")]
        out.append("  subgraph %s { graph [style=dotted, label=\"\"]; %s; }"
                   % (_q("cluster_" + h.ident), "; ".join(_q(m) for m in [h.ident] + members)))
    return out


LEGEND_EDGES = [
    Edge("bond", "legend:b0", "legend:b1", label="bonded LAN:\\nbond0 (eth1+eth2)", lines=2,
         cables=["cable per channel"]),
    Edge("p2p", "legend:p0", "legend:p1", "eth2", "eth2", label="point-to-point link",
         cables=["cable: node--node"]),
    Edge("uplink", "legend:u0", "legend:u1", label="switch uplink", cables=["cable: switch:01"]),
    Edge("port", "legend:s0", "legend:s1", b_nic="eth1", label="switch port",
         cables=["cable: switch:port"]),
    Edge("member", "legend:m0", "legend:m1", "eth1", label="NIC on a LAN",
         cables=["cable: sw-LAN:port"]),
]


def _dot_legend(p: Parts) -> list[str]:
    """A cluster explaining the shapes and lines this drawing uses."""
    out = ["  subgraph cluster_legend {",
           "    graph [label=\"Legend\", style=dashed, fontsize=12];",
           "    node [fontsize=10];",
           "  " + _dot_node(Node("node", ["address"], False), "legend:node")]
    if any(n.gateway for n in p.nodes):
        out.append("  " + _dot_node(Node("gateway", ["(forwards)"], True), "legend:gateway"))
    for kind, lines in (("lan", ["LAN segment", "prefix"]), ("bonded", ["bonded LAN"]),
                        ("switch", ["switch"])):
        if p.has(kind):
            out.append("  " + _dot_hub(Hub("legend:" + kind, kind, lines)))
    for edge in LEGEND_EDGES:
        if p.has(edge.kind):
            out.append("    %s, %s [shape=point, width=0.08];" % (_q(edge.a), _q(edge.b)))
            out.append("  " + _dot_edge(edge))
    out.append("  }")
    return out


def dot(plan: Plan, sheet: Sheet | None = None) -> str:
    p = parts(plan, sheet)
    out = ["graph %s {" % _ident(plan["topology"]["name"]),
           "  graph [label=%s, labelloc=t, fontsize=16, overlap=false, splines=true, "
           "nodesep=0.3, ranksep=0.9];" % _q(p.title),
           "  node [shape=box, style=rounded, fontsize=11];",
           "  edge [fontsize=9, labelfontsize=9, labelfontcolor=\"#555555\"];"]
    out += _dot_legend(p)
    out += [_dot_node(n) for n in p.nodes]
    out += [_dot_hub(h) for h in p.hubs]
    out += _dot_clusters(p)
    flips, low = _flips(p), _staggered(p)
    out += [_dot_edge(e, id(e) in flips, 2 if id(e) in low else 1) for e in p.edges]
    out.append("}")
    return "\n".join(out) + "\n"


# --- Mermaid -----------------------------------------------------------------

def mermaid(plan: Plan, sheet: Sheet | None = None) -> str:
    p = parts(plan, sheet)
    ids = {n.name: "n%d" % i for i, n in enumerate(p.nodes)}
    ids.update({h.ident: ("w%d" if h.kind == "switch" else "s%d") % i
                for i, h in enumerate(p.hubs)})
    out = ["graph LR"]
    for n in p.nodes:
        out.append('  %s["%s"]%s' % (ids[n.name], "<br/>".join([n.name, *n.addresses]),
                                     ":::gateway" if n.gateway else ""))
    for h in p.hubs:
        text = "<br/>".join(h.lines)
        shape = '{"%s"}' if h.kind == "switch" else '(("%s"))'
        out.append("  %s%s%s" % (ids[h.ident], shape % text,
                                 ":::bonded" if h.kind == HUB_BONDED else ""))
    for e in p.edges:
        out.append("  %s %s %s" % (ids[e.a], _mermaid_line(e), ids[e.b]))
    out += _mermaid_legend(p)
    for kind, color in (("p2p", P2P_COLOR), ("bond", BOND_COLOR)):
        links = [str(k) for k, e in enumerate(p.edges) if e.kind == kind]
        if links:
            out.append("  linkStyle %s stroke:%s,stroke-width:2px" % (",".join(links), color))
    out += ["  classDef gateway stroke:%s,stroke-width:3px" % GATEWAY_COLOR,
            "  classDef bonded stroke:%s,stroke-width:3px" % BOND_COLOR]
    return "\n".join(out) + "\n"


def _mermaid_line(e: Edge) -> str:
    """The link between two ids: thick for bonds and uplinks, dotted for switch ports."""
    if e.kind == "p2p":
        text = "%s – %s<br/>%s" % (e.a_nic, e.b_nic, e.label)
    elif e.kind in ("bond", "uplink"):
        text = e.label
    else:
        text = e.a_nic or e.b_nic or e.label
    text = "<br/>".join(([text] if text else []) + e.cables)
    line = {"bond": "===", "uplink": "===", "port": "-.-"}.get(e.kind, "---")
    return '%s|"%s"|' % (line, text) if text else line


def _mermaid_legend(p: Parts) -> list[str]:
    out = ["  subgraph legend [Legend]",
           '    L0["node<br/>address"]']
    if any(n.gateway for n in p.nodes):
        out.append('    L1["gateway (forwards)"]:::gateway')
    if p.has("lan"):
        out.append('    L2(("LAN segment"))')
    if p.has("bond"):
        out.append('    L3(("bonded LAN")):::bonded')
    if p.has("switch"):
        out.append('    L4{"switch"}')
    samples = (("p2p", '---|"point-to-point link: NIC – NIC<br/>cable: node--node"|'),
               ("bond", '===|"bond (its NICs)<br/>cable per channel"|'),
               ("uplink", '===|"switch uplink<br/>cable: switch:01"|'),
               ("port", '-.-|"switch port: NIC<br/>cable: switch:port"|'))
    for k, (kind, line) in enumerate(samples):
        if p.has(kind):
            out.append('    L%d[" "] %s L%d[" "]' % (10 + 2 * k, line, 11 + 2 * k))
    out.append("  end")
    return out


GRAPHS = {"dot": dot, "mermaid": mermaid}
IMAGES = ("png", "svg")      # rendered from the dot text by Graphviz's dot


class DrawingError(Exception):
    """Graphviz's dot failed on the drawing."""


def graphviz() -> str | None:
    """The path of Graphviz's dot, or None where it is not installed."""
    return shutil.which("dot")


def image(plan: Plan, fmt: str, dot_binary: str, sheet: Sheet | None = None) -> bytes:
    """The dot drawing rendered to fmt (one of IMAGES) by Graphviz."""
    try:
        run = subprocess.run([dot_binary, "-T" + fmt], input=dot(plan, sheet).encode("utf-8"),
                             capture_output=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DrawingError("%s failed: %s" % (dot_binary, exc)) from exc
    if run.returncode:
        raise DrawingError("%s -T%s failed (exit %d): %s" % (
            dot_binary, fmt, run.returncode, run.stderr.decode("utf-8", "replace").strip()))
    return run.stdout
