"""The plan: the compiled graph as a dict, the contract every later part consumes.

Dumped as JSON or YAML; the dry run lives in ``dryrun.py``, exports for other
tools in ``export.py`` and drawings in ``drawing.py``.
"""

import json

from ..compiler.address import bond_mac
from ..compiler.model import ip_text, net_text

PLAN_FORMAT = 1


def _iface(node, iface, physical, everyone):
    seg = iface.segment
    out = {"name": physical.get(iface.name, iface.name), "kind": iface.kind,
           "segment": seg.name,
           "addresses": ["%s/%d" % (ip_text(a), seg.plen) for a in iface.addresses]}
    if physical.get(iface.name, iface.name) != iface.name:
        out["logical"] = iface.name
    out["rate_mbit"] = iface.rate_mbit
    out["mtu"] = iface.mtu
    if iface.kind == "bond":
        out["members"] = [physical.get(m, m) for m in iface.members]
        out["mac"] = bond_mac(node, iface)
        out["mode"] = iface.mode
        out["miimon"] = iface.miimon
        out["tso"] = iface.tso
    if iface.bond:
        out["bond"] = iface.bond
    if iface.peer:
        node, name = iface.peer
        out["peer"] = {"node": node, "interface": everyone.get(node, {}).get(name, name)}
    return out


def node_plan(node, everyone=None):
    """One node's plan; everyone: {node: {logical: physical NIC name}}."""
    everyone = everyone or {}
    physical = everyone.get(node.name, {})
    out = {"index": node.index, "address": ip_text(node.address),
           "forwarding": node.forwarding,
           "interfaces": [_iface(node, i, physical, everyone) for i in node.interfaces],
           "routes": [{"to": net_text(r.net, r.plen), "via": ip_text(r.via),
                       "dev": physical.get(r.dev, r.dev), "src": ip_text(r.src)}
                      for r in node.routes]}
    if node.group is not None:
        out["group"] = node.group
    if node.coords is not None:
        out["coords"] = list(node.coords)
    if node.switch is not None:
        out["switch"] = node.switch
    return out


def segment_plan(seg, everyone):
    out = {"kind": seg.kind, "prefix": seg.prefix_text(), "rate_mbit": seg.rate_mbit,
           "mtu": seg.mtu,
           "members": [{"node": n.name, "interface": everyone.get(n.name, {}).get(i.name, i.name),
                        **({"address": ip_text(i.addresses[0])} if i.addresses and seg.routed else {})}
                       for n, i, _ in seg.members]}
    if seg.kind == "channel":
        out["carries"] = seg.channel_of.name
        del out["prefix"]
    if seg.groups is not None:
        out["groups"] = list(seg.groups)
    return out


def plan(compiled, physical=None):
    """The whole plan as a dict. physical: {node: {logical: physical NIC}}."""
    graph = compiled.graph
    physical = physical or {}
    out = {
        "beonet": {"plan_format": PLAN_FORMAT},
        "topology": {"name": graph.name, "family": graph.family,
                     "source": compiled.source_file},
        "management": {"interface": graph.management},
        "nodes": {n.name: node_plan(n, physical) for n in graph.nodes},
        "segments": {s.name: segment_plan(s, physical) for s in graph.segments},
        "metrics": compiled.metrics,
    }
    if graph.switches:
        out["switches"] = {s.name: {"level": s.level,
                                    "parent": s.parent.name if s.parent else None,
                                    "uplink_mbit": s.uplink_mbit,
                                    "children": [c.name for c in s.children],
                                    "nodes": s.nodes} for s in graph.switches}
    return out


def prefixes(plan_):
    """Every network prefix of the topology: what forwarding nodes forward between."""
    return sorted({s["prefix"] for s in plan_["segments"].values() if s.get("prefix")})


def dumps(data, fmt="json"):
    if fmt == "yaml":
        import yaml
        return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100)
    if isinstance(data.get("nodes"), dict) and len(data["nodes"]) > 500:
        return json.dumps(data, separators=(",", ":"), check_circular=False) + "\n"
    return json.dumps(data, indent=2) + "\n"
