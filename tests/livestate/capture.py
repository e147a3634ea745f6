"""Record the kernel output the live-state tests parse (run by hand, as root, on a
machine with ip, nft and network namespaces; the tests only read what it wrote).

    sudo .venv/bin/python tests/livestate/capture.py

Five namespaces bnlive-{a,b,c,d,m}: node a is set up like a beonet node (forwarding
on, beonet's nftables forward filter, a multipath route, a host route, routes
through a NIC without carrier and a multipath route with one such branch) with
what beonet does not write (a management NIC with the default route, an onlink
route, a blackhole, a NIC taken down, a neighbour that never answers, a NIC with
forwarding off). Then a foreign forward chain is added and the ruleset read again;
then that chain is replaced by the labs' own (labs/base.py: marks what a node
forwards, for its delay). Writes raw-node.json (each command's parsed output and
each /proc file read), raw-foreign.json and raw-lab.json beside this file, then
removes the namespaces.
"""

import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
P = "bnlive"
SETUP = """
ip link add eth1 netns {P}-a type veth peer name eth1 netns {P}-b
ip link add eth2 netns {P}-a type veth peer name eth1 netns {P}-c
ip link add eth3 netns {P}-a type veth peer name eth1 netns {P}-d
ip link add eth0 netns {P}-a type veth peer name eth0 netns {P}-m
ip link add eth4 netns {P}-a type veth peer name eth4 netns {P}-m
a ip addr add 192.168.121.10/24 dev eth0
m ip addr add 192.168.121.1/24 dev eth0
a ip addr add 10.0.1.1/24 dev eth1
b ip addr add 10.0.1.2/24 dev eth1
a ip addr add 10.0.2.1/24 dev eth2
c ip addr add 10.0.2.3/24 dev eth1
a ip addr add 10.0.4.1/24 dev eth3
d ip addr add 10.0.4.4/24 dev eth1
a ip addr add 10.0.11.1/24 dev eth4
"""
ROUTES = """
a ip route add default via 192.168.121.1 dev eth0
a ip route add 10.0.3.0/24 src 10.0.1.1 proto 250 nexthop via 10.0.1.2 dev eth1 nexthop via 10.0.2.3 dev eth2
a ip route add 10.0.5.0/24 via 10.0.4.4 dev eth3 src 10.0.4.1 proto 250
a ip route add 10.0.10.0/24 src 10.0.1.1 proto 250 nexthop via 10.0.1.2 dev eth1 nexthop via 10.0.4.4 dev eth3
a ip route add 10.0.7.7 via 10.0.2.3 dev eth2 src 10.0.2.1 proto 250
a ip route add 10.0.6.0/24 via 10.0.9.9 dev eth1 onlink
a ip route add blackhole 10.0.8.0/24
a ip route add 10.0.12.0/24 via 10.0.11.11 dev eth4 proto 250
a sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'
a sh -c 'echo 0 > /proc/sys/net/ipv4/conf/eth3/forwarding'
a sh -c 'echo 1 > /proc/sys/net/ipv4/conf/eth1/ignore_routes_with_linkdown'
d ip link set eth1 down
a ip link set eth4 down
"""
FOREIGN = """table ip filter {
\tchain FORWARD {
\t\ttype filter hook forward priority 0; policy accept;
\t\tiifname "eth9" drop
\t}
\tchain INPUT {
\t\ttype filter hook input priority 0; policy drop;
\t}
}
table inet idle {
\tchain fw {
\t\ttype filter hook forward priority 10; policy accept;
\t}
}
"""
# Inside node a: each command's output and each /proc file the collector reads.
CHILD = """
import json, subprocess, sys
sys.path.insert(0, %(path)r)
from beonet.agent import collect
files = {}
def read(path):
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError:
        text = None
    files[path] = text
    return text
out = {}
for key, argv in collect.COMMANDS:
    res = subprocess.run(argv, capture_output=True, text=True)
    out[key] = json.loads(res.stdout) if res.returncode == 0 else None
collect.state_of(out, read)
print(json.dumps({"commands": out, "files": files}))
"""


def sh(node: str, cmd: str) -> None:
    subprocess.run(["ip", "netns", "exec", "%s-%s" % (P, node), "sh", "-c", cmd], check=True)


def run_lines(text: str) -> None:
    for line in text.strip().splitlines():
        node, _sp, cmd = line.partition(" ")
        if node == "ip":
            subprocess.run(line.format(P=P).split(), check=True)
        else:
            sh(node, cmd)


def unanswered() -> None:
    """Send to an address nobody holds (FAILED after the ARP tries) and to the peers."""
    send = ("import socket, time\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "for a in %r: s.sendto(b'x', (a, 9))\n")
    sh("a", "python3 -c \"%s\"" % (send % (("10.0.1.99", "10.0.1.2", "10.0.2.3"),)).replace('"', '\\"'))
    subprocess.run(["sleep", "4"], check=True)


def capture(name: str) -> None:
    res = subprocess.run(["ip", "netns", "exec", "%s-a" % P, sys.executable, "-c",
                          CHILD % {"path": str(ROOT / "module_utils")}],
                         capture_output=True, text=True, check=True)
    (HERE / name).write_text(json.dumps(json.loads(res.stdout), indent=1, sort_keys=True) + "\n")


def main() -> None:
    sys.path.insert(0, str(ROOT / "module_utils"))
    from beonet.agent.apply import forward_ruleset
    from beonet.labs.base import mark_commands
    nodes = "abcdm"
    try:
        for n in nodes:
            subprocess.run(["ip", "netns", "add", "%s-%s" % (P, n)], check=True)
        run_lines(SETUP)
        for n in nodes:
            sh(n, "for i in $(ls /sys/class/net); do ip link set $i up; done")
        run_lines(ROUTES)
        sh("a", "cat > /tmp/bnlive.nft <<'EOF'\n%sEOF\nnft -f /tmp/bnlive.nft; rm /tmp/bnlive.nft"
           % forward_ruleset(["10.0.0.0/16", "172.16.5.0/24"])[1])
        unanswered()
        capture("raw-node.json")
        sh("a", "cat > /tmp/bnlive.nft <<'EOF'\n%sEOF\nnft -f /tmp/bnlive.nft; rm /tmp/bnlive.nft" % FOREIGN)
        capture("raw-foreign.json")
        sh("a", "nft delete table ip filter && " + " && ".join(mark_commands()))
        capture("raw-lab.json")
    finally:
        for n in nodes:
            subprocess.run(["ip", "netns", "del", "%s-%s" % (P, n)], check=False)


if __name__ == "__main__":
    main()
