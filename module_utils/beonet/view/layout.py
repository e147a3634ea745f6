"""Where each node, segment and switch of a plan is drawn, in its family's style
(``drawing``), as the papers draw them: the mesh as a grid with its row and column segments as bars,
the meta-graph's groups around a circle with their point-to-point links as
chords, the tree by switch level, bonded nets as K parallel buses, custom graphs
by a stress layout (fixed start, no randomness).

The parts drawn (nodes, hubs, edges) are the Graphviz drawing's (`drawing.parts`);
this module only adds coordinates, in points (y grows downwards), so the page and
`beonet graph --format svg|png` show one picture.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..cabling.sheet import Sheet
from ..compiler import family
from ..outputs import drawing

Plan = dict[str, Any]
Point = tuple[float, float]
STEP = 110.0            # distance between neighbouring nodes
STRESS_LIMIT = 400      # vertices above which a custom graph is put on a circle


@dataclass
class Layout:
    """Parts with places: `at` by node name or hub ident; `bars` a hub's bus line
    (x1, y1, x2, y2) where it is drawn as one; `buses` parallel lines per bar."""
    parts: drawing.Parts
    at: dict[str, Point] = field(default_factory=dict)
    bars: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    buses: dict[str, int] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)     # node -> its group (meta-graph)

    def box(self, margin: float = 140.0) -> tuple[float, float, float, float]:
        """(x, y, width, height) around every place and bar."""
        xs = [p[0] for p in self.at.values()] + [v for b in self.bars.values() for v in b[0::2]]
        ys = [p[1] for p in self.at.values()] + [v for b in self.bars.values() for v in b[1::2]]
        if not xs:
            return 0.0, 0.0, 2 * margin, 2 * margin
        return (min(xs) - margin, min(ys) - margin, max(xs) - min(xs) + 2 * margin,
                max(ys) - min(ys) + 2 * margin)

    def end(self, ident: str, other: str) -> Point:
        """Where an edge from `other` meets `ident`: on its bar if it has one."""
        if ident not in self.bars:
            return self.at[ident]
        x1, y1, x2, y2 = self.bars[ident]
        ox, oy = self.at[other]
        dx, dy = x2 - x1, y2 - y1
        length = dx * dx + dy * dy
        t = 0.0 if not length else max(0.0, min(1.0, ((ox - x1) * dx + (oy - y1) * dy) / length))
        return x1 + t * dx, y1 + t * dy


def _members(parts: drawing.Parts) -> dict[str, list[str]]:
    """Hub ident -> the nodes on it, in plan order."""
    out: dict[str, list[str]] = {h.ident: [] for h in parts.hubs}
    for e in parts.edges:
        if e.kind in ("member", "bond") and e.b in out:
            out[e.b].append(e.a)
        elif e.kind == "port" and e.a in out:
            out[e.a].append(e.b)
    return out


def _bus(lay: Layout, hub: str, nodes: list[str], side: Point) -> None:
    """A hub drawn as a bar beside its collinear nodes, shifted by `side`."""
    pts = [lay.at[n] for n in nodes]
    horizontal = max(p[0] for p in pts) - min(p[0] for p in pts) >= \
        max(p[1] for p in pts) - min(p[1] for p in pts)
    pad = STEP * 0.3
    if horizontal:
        y = pts[0][1] + side[1]
        bar = (min(p[0] for p in pts) - pad, y, max(p[0] for p in pts) + pad, y)
    else:
        x = pts[0][0] + side[0]
        bar = (x, min(p[1] for p in pts) - pad, x, max(p[1] for p in pts) + pad)
    lay.bars[hub] = bar
    lay.at[hub] = ((bar[0] + bar[2]) / 2, (bar[1] + bar[3]) / 2)


def _mesh(lay: Layout, plan: Plan) -> None:
    """Nodes on their grid coordinates (a third dimension's layers side by side);
    each segment a bar beside its row or column."""
    dims = [max(n["coords"][d] for n in plan["nodes"].values()) + 1
            for d in range(len(next(iter(plan["nodes"].values()))["coords"]))]
    for name, n in plan["nodes"].items():
        c = list(n["coords"]) + [0, 0]
        lay.at[name] = ((c[0] + c[2] * (dims[0] + 0.6)) * STEP, (c[1] + c[3] * (dims[1] + 0.6)) * STEP)
    for hub, nodes in _members(lay.parts).items():
        coords = [plan["nodes"][n]["coords"] for n in nodes]
        axis = next((d for d in range(len(dims)) if len({c[d] for c in coords}) > 1), 0)
        shift = STEP * (0.28 + 0.08 * (axis // 2))
        _bus(lay, hub, nodes, (shift, shift))


def _metagraph(lay: Layout, plan: Plan) -> None:
    """Groups around a circle, each group's nodes on an arc, its LAN outside the arc;
    the point-to-point links cross the circle as chords."""
    groups: dict[int, list[str]] = {}
    for name, n in plan["nodes"].items():
        groups.setdefault(int(n.get("group", 0)), []).append(name)
        lay.groups[name] = int(n.get("group", 0))
    count = len(plan["nodes"])
    radius = max(STEP * 1.5, count * STEP * 0.75 / (2 * math.pi))
    share = 2 * math.pi / max(1, len(groups))
    for g, (_key, names) in enumerate(sorted(groups.items())):
        for k, name in enumerate(names):
            angle = share * (g + 0.1 + 0.8 * (k + 0.5) / len(names)) - math.pi / 2
            lay.at[name] = (radius * math.cos(angle), radius * math.sin(angle))
    for hub, nodes in _members(lay.parts).items():
        if not nodes:
            continue
        g = lay.groups[nodes[0]]
        angle = share * (sorted(groups).index(g) + 0.5) - math.pi / 2
        out = radius + STEP * (1.2 + 0.02 * len(nodes))
        lay.at[hub] = (out * math.cos(angle), out * math.sin(angle))


def _tree(lay: Layout, plan: Plan) -> None:
    """Switches by level (the root on top), each node under its leaf; a parent
    centred over its children."""
    switches = plan["switches"]
    depth = max(s["level"] for s in switches.values()) + 1
    column = [0]

    def place(name: str) -> float:
        sw = switches[name]
        xs = [place(c) for c in sw["children"]]
        for k, n in enumerate(sw["nodes"]):
            x = column[0] * STEP * 0.8
            column[0] += 1
            lay.at[n] = (x, (depth + 0.4 * (k % 2)) * STEP)
            xs.append(x)
        x = sum(xs) / len(xs) if xs else column[0] * STEP
        lay.at["sw:" + name] = (x, sw["level"] * STEP)
        return x

    for name, sw in switches.items():
        if sw["parent"] is None:
            place(name)
            column[0] += 1


def _rows(lay: Layout, plan: Plan) -> None:
    """Bonded nets: the nodes in rows, each LAN a horizontal bus under them (a
    bonded LAN as K parallel lines, one per channel)."""
    names = list(plan["nodes"])
    width = max(1, min(len(names), 24))
    for k, name in enumerate(names):
        lay.at[name] = ((k % width) * STEP * 0.8, (k // width) * STEP * 1.2)
    below = (len(names) - 1) // width * STEP * 1.2
    members = _members(lay.parts)
    for k, h in enumerate(lay.parts.hubs):
        y = below + STEP * (0.8 + 0.6 * k)
        xs = [lay.at[n][0] for n in members[h.ident]] or [0.0]
        lay.bars[h.ident] = (min(xs) - STEP * 0.3, y, max(xs) + STEP * 0.3, y)
        lay.at[h.ident] = ((min(xs) + max(xs)) / 2, y)
        lay.buses[h.ident] = max([e.lines for e in lay.parts.edges if e.b == h.ident] or [1])


def _adjacency(parts: drawing.Parts) -> dict[str, list[str]]:
    adj: dict[str, list[str]] = {n.name: [] for n in parts.nodes}
    adj.update({h.ident: [] for h in parts.hubs})
    for e in parts.edges:
        adj[e.a].append(e.b)
        adj[e.b].append(e.a)
    return adj


def _distances(adj: dict[str, list[str]], names: list[str]) -> list[list[float]]:
    """Hop distances between every two vertices (unreachable: the most plus one)."""
    index = {v: i for i, v in enumerate(names)}
    out = []
    for src in names:
        dist = [-1.0] * len(names)
        dist[index[src]] = 0.0
        queue = deque([src])
        while queue:
            v = queue.popleft()
            for w in adj[v]:
                if dist[index[w]] < 0:
                    dist[index[w]] = dist[index[v]] + 1
                    queue.append(w)
        far = max(dist) + 1
        out.append([d if d >= 0 else far for d in dist])
    return out


def stress(adj: dict[str, list[str]]) -> dict[str, Point]:
    """Stress majorization (SMACOF, weights 1/d^2) from a circle: deterministic;
    fewer rounds for more vertices (each round is n^2)."""
    names = list(adj)
    n = len(names)
    iterations = max(20, min(200, 2_000_000 // max(1, n * n)))
    pos = [(math.cos(2 * math.pi * i / max(1, n)) * n, math.sin(2 * math.pi * i / max(1, n)) * n)
           for i in range(n)]
    if n > STRESS_LIMIT or n < 3:
        return {v: (p[0] * STEP / 4, p[1] * STEP / 4) for v, p in zip(names, pos)}
    dist = _distances(adj, names)
    for _round in range(iterations):
        new = []
        for i in range(n):
            sx = sy = wsum = 0.0
            xi, yi = pos[i]
            for j in range(n):
                if i == j:
                    continue
                d = dist[i][j]
                w = 1.0 / (d * d)
                xj, yj = pos[j]
                gap = math.hypot(xi - xj, yi - yj) or 1e-9
                sx += w * (xj + d * (xi - xj) / gap)
                sy += w * (yj + d * (yi - yj) / gap)
                wsum += w
            new.append((sx / wsum, sy / wsum))
        pos = new
    return {v: (p[0] * STEP * 1.3, p[1] * STEP * 1.3) for v, p in zip(names, pos)}


# A family's drawing style (compiler.family.Family.drawing) -> how its nodes are placed.
STYLES = {"grid": _mesh, "groups": _metagraph, "levels": _tree, "buses": _rows}


def family_style(name: str) -> str | None:
    """The drawing style of the family of that name (None: unknown, or none)."""
    fam = family.get(name)
    return fam.drawing if fam is not None else None


def layout(plan: Plan, sheet: Sheet | None = None) -> Layout:
    """The plan's parts and where each is drawn."""
    lay = Layout(drawing.parts(plan, sheet))
    style = family_style(plan["topology"]["family"])
    if style == "levels" and not plan.get("switches"):
        style = "buses"
    place = STYLES.get(style) if style is not None else None
    if place is not None:
        place(lay, plan)
    else:
        lay.at = stress(_adjacency(lay.parts))
    return lay
