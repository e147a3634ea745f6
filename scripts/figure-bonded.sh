#!/usr/bin/env bash
# The 1995/1996 papers' token exchange on the channel-bonded dual net from the
# VM lab (make figure-bonded): 14 VMs, two shared 10 Mbit/s channels bonded
# round robin (the kernel's bonding), 1, 2, 4 and 7 pairs exchanging 8 KB
# tokens; then the same with the second channel's NIC down on every node (the
# single net: same VMs, kernel, bond driver, addresses and shaping, one live
# channel). `beonet bonded-figure` sets both beside the papers. The lab is
# taken down at the end, also on failure or interrupt.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
TOPO=${FIGURE_TOPOLOGY:-topologies/benchmarks/bonded-1996.yml}
NAME=${FIGURE_NAME:-figure-bonded}
INV=.lab/$NAME/inventory.yml
TOPONAME=$(python3 -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["name"])' "$TOPO")
PARAMS=${FIGURE_PARAMS:-'{"count": 300, "warmup": 10, "sizes": [8192], "mss_points": false,
  "classes": ["bonded"], "pairs": [1, 2, 4, 7], "copies": 2, "remote_copies": [], "ring_rounds": 5,
  "iperf_seconds": 1}'}
OUT=${FIGURE_OUT:-results/figures/bonded-$(date -u +%Y%m%dT%H%M%SZ)}
down() { beonet lab down --provider vm "$TOPO" --name "$NAME" >/dev/null 2>&1 || true; }
trap down EXIT
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
NODES=$(bonded_nodes "$TOPO")
qemu_memory() {  # what the lab's QEMU processes hold, for the environment of the run
  echo "beonet: QEMU resident memory $1: $(ps -C qemu-system-x86_64 -o rss= | awk '{s += $1} END {printf "%.1f GB", s / 1048576}')" >&2
}
bash scripts/build-vm-image.sh networkd
start=$(date +%s)
beonet lab up --provider vm "$TOPO" --name "$NAME"
ansible-playbook -i "$INV" playbooks/site.yml >/dev/null
echo "== bonded dual net: 2 channels" >&2
BONDED=$(bench bonded)
qemu_memory "after the bonded run"
set_member eth2 down
echo "== single net: eth2 down on every node" >&2
SINGLE=$(bench single)
beonet bonded-figure --single "$SINGLE" --bonded "$BONDED" -o "$OUT"
cat "$OUT/summary.md"
echo "beonet figure-bonded: $(( $(date +%s) - start )) s"
