#!/usr/bin/env bash
# Bonded gain on the VM lab (make vm-benchmark): token exchange over the real
# balance-rr bond (2 channels) against a single channel at the same per-channel
# rate, on the same 4 VMs. The single channel is the same bond with its second
# member (plan NIC eth2) set down on every node through the QEMU monitor, so both
# runs share the kernel, the bond driver, the addresses and the shaping; only the
# number of live channels differs. The lab is taken down at the end, also on
# failure or interrupt.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
TOPO=${VM_BENCH_TOPOLOGY:-topologies/benchmarks/vm-bonded-10.yml}
NAME=${VM_BENCH_NAME:-vm-bench}
INV=.lab/$NAME/inventory.yml
TOPONAME=$(python3 -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["name"])' "$TOPO")
# Large tokens only: 8 KB exchanges with 16 tokens in flight (line rate), 8 KB
# ping-pong is latency-bound under TCG; iperf3 + tokex stream/window on one pair.
PARAMS=${VM_BENCH_PARAMS:-'{"count": 800, "sizes": [8192], "mss_points": false, "exchange_window": 16,
  "classes": ["bonded"], "pairs": [1], "copies": 2, "remote_copies": [], "ring_rounds": 5, "iperf_seconds": 1}'}
# VM_BENCH_TCP_REORDERING=N: set net.ipv4.tcp_reordering on every node before both
# runs (the bonding driver's documentation suggests raising it for balance-rr);
# unset: the kernel's default (3), which is what `make vm-benchmark` reports.
REORDER=${VM_BENCH_TCP_REORDERING:-}
down() { beonet lab down --provider vm "$TOPO" --name "$NAME" >/dev/null 2>&1 || true; }
trap down EXIT
bash scripts/build-vm-image.sh networkd
start=$(date +%s)
beonet lab up --provider vm "$TOPO" --name "$NAME"
ansible-playbook -i "$INV" playbooks/site.yml >/dev/null
if [ -n "$REORDER" ]; then
  ansible -i "$INV" beonet_nodes -m shell -a "sysctl -w net.ipv4.tcp_reordering=$REORDER" -o >/dev/null
fi

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
NODES=$(bonded_nodes "$TOPO")
members() {  # per node: 'MII Status: up' lines in /proc/net/bonding/bond0 (the bond + each live
  # member), tcp_reordering, the bond's TSO (site.yml turns it off on balance-rr bonds)
  ansible -i "$INV" beonet_nodes -m shell -a "grep -c 'MII Status: up' /proc/net/bonding/bond0; sysctl -n net.ipv4.tcp_reordering; ethtool -k bond0 | grep '^tcp-segmentation-offload'" \
    | grep -v '^$' >&2
}
echo "== bonded: 2 channels" >&2
members
BONDED=$(bench bonded)
set_member eth2 down
echo "== single channel: eth2 down on every node" >&2
members
SINGLE=$(bench single)
set_member eth2 up

python3 - "$SINGLE" "$BONDED" <<'PY'
import json, sys
def load(folder):
    with open(folder + "/results.json") as fh:
        return json.load(fh)
s, b = load(sys.argv[1]), load(sys.argv[2])
def figures(r):
    f = {}
    for a in r["aggregate"]:
        if a["class"] == "bonded" and a["proto"] == "tcp" and a["size"] == 8192:
            f["tokex 8K x%d pair(s) one-way" % a["pairs"]] = a["one_way_MBps"]
    for i in r["iperf3"]:
        if i["class"] == "bonded":
            f["iperf3"] = i.get("iperf3_MBps")
            for k in ("tokex_stream_8192_MBps", "tokex_stream_65536_MBps", "tokex_window_8192_MBps"):
                f[k.replace("_MBps", "").replace("_", " ")] = i.get(k)
    return f
fs, fb = figures(s), figures(b)
print("\n== bonded gain (%s vs %s)" % (sys.argv[2], sys.argv[1]))
print("%-32s %14s %14s %8s" % ("measure (MB/s)", "single chan.", "bonded (2)", "gain"))
for k in fb:
    x, y = fs.get(k), fb.get(k)
    g = "%.2fx" % (y / x) if x and y else "-"
    print("%-32s %14s %14s %8s" % (k, "%.3f" % x if x else "-", "%.3f" % y if y else "-", g))
def retr(r):
    return [i.get("iperf3_retransmits") for i in r["iperf3"] if i["class"] == "bonded"]
print("iperf3 TCP retransmits: single %s, bonded %s" % (retr(s), retr(b)))
PY
echo "beonet vm-benchmark: $(( $(date +%s) - start )) s"
