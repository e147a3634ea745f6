#!/usr/bin/env bash
# The 1996 paper's token exchange on 10 Mbit/s nets (its Figure 7) from the
# Docker lab (make figure-mesh): the single net (14 nodes on one shared
# segment) and the 4x4 software-routed mesh of shared 4-node segments, 1, 2, 4
# and 7 pairs exchanging 8 KB tokens (one size: the pairs of a step start
# together, so their common window is the whole step). `beonet mesh-figure`
# sets them beside the paper. Each lab is taken down at the end, also on failure or
# interrupt. The bonded dual net needs the kernel's bonding: not in this lab.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
SINGLE=topologies/benchmarks/single-net-1995.yml
MESH=topologies/benchmarks/mesh-1996.yml
OUT=${FIGURE_OUT:-results/figures/mesh-$(date -u +%Y%m%dT%H%M%SZ)}
COMMON='"count": 300, "warmup": 10, "sizes": [8192],
  "mss_points": false, "pairs": [1, 2, 4, 7], "copies": 2, "remote_copies": [], "ring_rounds": 5,
  "iperf_seconds": 1'
down() {
  beonet lab down "$SINGLE" --name figure-single >/dev/null 2>&1 || true
  beonet lab down "$MESH" --name figure-mesh >/dev/null 2>&1 || true
}
trap down EXIT
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
bash scripts/docker-up.sh
bash scripts/build-image.sh
start=$(date +%s)

measure() {  # topology, lab name, classes (JSON list) -> prints the results folder
  TOPONAME=$(python3 -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["name"])' "$1")
  NAME=$2 INV=.lab/$2/inventory.yml PARAMS="{$COMMON, \"classes\": $3}"
  beonet lab up "$1" --name "$NAME" >&2
  ansible-playbook -i "$INV" playbooks/site.yml >/dev/null
  bench "$NAME"
  beonet lab down "$1" --name "$NAME" >&2
}
echo "== single net" >&2
ONE=$(measure "$SINGLE" figure-single '["same-segment"]')
echo "== routed mesh" >&2
MANY=$(measure "$MESH" figure-mesh '["same-segment", "gateway-1"]')
beonet mesh-figure --single "$ONE" --mesh "$MANY" -o "$OUT"
cat "$OUT/summary.md"
echo "beonet figure-mesh: $(( $(date +%s) - start )) s"
