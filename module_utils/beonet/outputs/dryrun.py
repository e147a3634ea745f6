"""The dry run: what the node agent would do to each node, as shell commands."""


def ip_route_text(node_plan_, name):
    """One node's dry run: addresses, bonds, forwarding and `ip route` lines."""
    lines = ["# %s  address %s  forwarding %s" % (
        name, node_plan_["address"], "on" if node_plan_["forwarding"] else "off")]
    for i in node_plan_["interfaces"]:
        if i["kind"] == "bond":
            lines.append("ip link add %s address %s type bond mode %s miimon %d" % (
                i["name"], i["mac"], i["mode"], i["miimon"]))
            for m in i["members"]:
                lines.append("ip link set %s master %s" % (m, i["name"]))
            if i.get("tso") is False:
                lines.append("ethtool -K %s tso off" % i["name"])
        for a in i["addresses"]:
            lines.append("ip addr add %s dev %s" % (a, i["name"]))
    lines.append("sysctl -w net.ipv4.ip_forward=%d" % (1 if node_plan_["forwarding"] else 0))
    for r in node_plan_["routes"]:
        lines.append("ip route add %s via %s dev %s src %s" % (r["to"], r["via"], r["dev"], r["src"]))
    return "\n".join(lines) + "\n"
