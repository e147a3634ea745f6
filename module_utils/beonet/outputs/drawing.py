"""Drawings of the topology (Graphviz dot, Mermaid). They read the plan dict only."""

import re


def _ident(text):
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _drawn_segments(plan):
    """Segments to draw; a tree's LAN is drawn as its switches instead."""
    if plan.get("switches"):
        return [kv for kv in plan["segments"].items() if kv[1]["kind"] != "lan"]
    return list(plan["segments"].items())


def dot(plan):
    out = ["graph %s {" % _ident(plan["topology"]["name"]),
           "  graph [overlap=false, splines=true];",
           "  node [shape=box, style=rounded];"]
    for name, node in plan["nodes"].items():
        style = ", color=red" if node["forwarding"] else ""
        out.append('  "%s" [label="%s\\n%s"%s];' % (name, name, node["address"], style))
    for seg, s in _drawn_segments(plan):
        if s["kind"] == "p2p":
            a, b = s["members"]
            out.append('  "%s" -- "%s" [label="%s"];' % (a["node"], b["node"], s["prefix"]))
            continue
        label = s.get("prefix") or "channel of %s" % s.get("carries")
        out.append('  "seg:%s" [shape=ellipse, label="%s\\n%s"];' % (seg, seg, label))
        for m in s["members"]:
            out.append('  "%s" -- "seg:%s";' % (m["node"], seg))
    for name, sw in plan.get("switches", {}).items():
        out.append('  "sw:%s" [shape=diamond, label="%s"];' % (name, name))
        if sw["parent"]:
            out.append('  "sw:%s" -- "sw:%s" [label="%s Mbit/s"];'
                       % (sw["parent"], name, sw["uplink_mbit"]))
        for n in sw["nodes"]:
            out.append('  "sw:%s" -- "%s" [style=dotted];' % (name, n))
    out.append("}")
    return "\n".join(out) + "\n"


def mermaid(plan):
    out = ["graph LR"]
    ids = {name: "n%d" % i for i, name in enumerate(plan["nodes"])}
    for name, node in plan["nodes"].items():
        out.append('  %s["%s<br/>%s"]' % (ids[name], name, node["address"]))
    for k, (seg, s) in enumerate(_drawn_segments(plan)):
        if s["kind"] == "p2p":
            a, b = s["members"]
            out.append("  %s --- %s" % (ids[a["node"]], ids[b["node"]]))
            continue
        sid = "s%d" % k
        out.append('  %s(("%s"))' % (sid, seg))
        for m in s["members"]:
            out.append("  %s --- %s" % (ids[m["node"]], sid))
    for name, sw in plan.get("switches", {}).items():
        out.append('  w_%s{"%s"}' % (_ident(name), name))
        if sw["parent"]:
            out.append("  w_%s === w_%s" % (_ident(sw["parent"]), _ident(name)))
        for n in sw["nodes"]:
            out.append("  w_%s -.- %s" % (_ident(name), ids[n]))
    return "\n".join(out) + "\n"


GRAPHS = {"dot": dot, "mermaid": mermaid}
