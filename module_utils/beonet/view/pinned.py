"""`beonet graph --format svg|png`: the Graphviz drawing with every node and hub
pinned where the view's layout puts it, rendered by `neato -n2` (positions as
given, edges routed by Graphviz), so the picture has the papers' shape."""

from __future__ import annotations

import subprocess

from ..cabling.sheet import Sheet
from ..outputs import drawing
from .layout import Layout, Plan, layout

SCALE = 1.0          # layout points -> Graphviz points


def _pos(point: tuple[float, float]) -> str:
    """A pinned Graphviz position (y grows upwards there)."""
    return '"%.1f,%.1f!"' % (point[0] * SCALE, -point[1] * SCALE)


def _pin(line: str, ident: str, lay: Layout) -> str:
    """A node statement of drawing's dot text with its position added."""
    return line.rstrip(";").rstrip("]") + ", pos=%s];" % _pos(lay.at[ident])


def dot(plan: Plan, sheet: Sheet | None = None) -> str:
    """The dot text with positions; bus hubs drawn as a bar (a thick line between
    two invisible points) labelled at its end, each member's edge ending on it."""
    lay = layout(plan, sheet)
    p = lay.parts
    out = ["graph %s {" % drawing._ident(plan["topology"]["name"]),
           "  graph [label=%s, labelloc=t, fontsize=16, splines=false, outputorder=edgesfirst];"
           % drawing._q(p.title),
           "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontsize=11];",
           "  edge [fontsize=9];"]
    out += [_pin(drawing._dot_node(n), n.name, lay) for n in p.nodes]
    for h in p.hubs:
        if h.ident not in lay.bars:
            out.append(_pin(drawing._dot_hub(h), h.ident, lay))
            continue
        x1, y1, x2, y2 = lay.bars[h.ident]
        out.append("  %s [shape=plaintext, style=\"\", label=%s, pos=%s];" % (
            drawing._q(h.ident), drawing._q("\\n".join(h.lines)),
            _pos((x2 + 30, y2 + 12) if y1 == y2 else (x1, y1 - 22))))
        a, b = drawing._q(h.ident + ":bar0"), drawing._q(h.ident + ":bar1")
        out.append("  %s [shape=point, width=0.01, pos=%s];" % (a, _pos((x1, y1))))
        out.append("  %s [shape=point, width=0.01, pos=%s];" % (b, _pos((x2, y2))))
        out.append("  %s -- %s [penwidth=%d, color=\"#555555\"];"
                   % (a, b, 3 * lay.buses.get(h.ident, 1)))
    for k, e in enumerate(p.edges):
        end = e.b
        if e.b in lay.bars:       # to the foot of the node's line on the bar
            end = "foot%d" % k
            out.append("  %s [shape=point, width=0.01, pos=%s];" % (drawing._q(end), _pos(lay.end(e.b, e.a))))
        out.append(_edge(e, end))
    out += _legend(lay)
    out.append("}")
    return "\n".join(out) + "\n"


LEGEND = (("node, address", "black"), ("gateway node (forwards)", drawing.GATEWAY_COLOR),
          ("point-to-point link", drawing.P2P_COLOR), ("bonded LAN (per channel)", drawing.BOND_COLOR),
          ("LAN segment: bar or ellipse", "#555555"), ("switch: diamond, port: dashed", "black"))


def _legend(lay: Layout) -> list[str]:
    """A legend under the drawing: what each colour and shape stands for."""
    x, y, _w, h = lay.box()
    rows = "".join('<tr><td align="left"><font color="%s">%s</font></td></tr>' % (color, text)
                   for text, color in LEGEND)
    label = ('<<table border="0" cellspacing="0"><tr><td align="left"><b>Legend</b></td></tr>%s</table>>'
             % rows)
    return ["  legend [shape=box, style=dashed, label=%s, pos=%s];" % (label, _pos((x + 120, y + h + 40)))]


def _edge(e: drawing.Edge, end: str) -> str:
    """An edge drawn without labels (they would clutter a pinned picture): its NICs,
    prefix and cable labels are its tooltip (SVG)."""
    line = drawing._dot_edge(drawing.Edge(e.kind, e.a, end, label="", lines=e.lines))
    words = " ".join(x for x in (e.a_nic, e.b_nic, e.label.replace("\\n", " "), *e.cables) if x)
    if not words:
        return line
    return line[:-2] + ("" if line.endswith("[];") else ", ") + "tooltip=%s];" % drawing._q(words)


def image(plan: Plan, fmt: str, dot_binary: str, sheet: Sheet | None = None) -> bytes:
    """The pinned drawing rendered to fmt (svg or png) by Graphviz (`dot -Kneato -n2`:
    neato's renderer, positions as given)."""
    try:
        run = subprocess.run([dot_binary, "-T" + fmt, "-Kneato", "-n2"],
                             input=dot(plan, sheet).encode("utf-8"),
                             capture_output=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise drawing.DrawingError("%s failed: %s" % (dot_binary, exc)) from exc
    if run.returncode:
        raise drawing.DrawingError("%s -T%s failed (exit %d): %s" % (
            dot_binary, fmt, run.returncode, run.stderr.decode("utf-8", "replace").strip()))
    return run.stdout
