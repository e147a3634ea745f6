#!/usr/bin/env bash
# SC98's latency by path class from the VM lab (make figure-latency): the
# smallest meta-node graph with SC98's path classes (6 VMs), its per-hop
# delays (latency: model sc98) emulated with netem in the VMs. The benchmark's
# 4-byte token ping-pong runs once with the delays on and once with them off;
# `beonet latency-figure` sets both beside SC98's Table 1 and its per-hop
# model. The lab is taken down at the end, also on failure or interrupt.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
TOPO=${FIGURE_TOPOLOGY:-topologies/benchmarks/sc98-latency.yml}
NAME=${FIGURE_NAME:-figure-latency}
INV=.lab/$NAME/inventory.yml
TOPONAME=$(python3 -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["name"])' "$TOPO")
# Latency only, as far as benchmark.yml allows: 4-byte tokens, one pair per
# class, no file copies; its iperf3 and ring steps are short.
PARAMS=${FIGURE_PARAMS:-'{"count": 2000, "warmup": 50, "sizes": [4], "mss_points": false,
  "pairs": [1], "copies": 2, "remote_copies": [], "ring_rounds": 5, "iperf_seconds": 1}'}
OUT=${FIGURE_OUT:-results/figures/latency-$(date -u +%Y%m%dT%H%M%SZ)}
down() { beonet lab down --provider vm "$TOPO" --name "$NAME" >/dev/null 2>&1 || true; }
trap down EXIT
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
bash scripts/build-vm-image.sh networkd
start=$(date +%s)
beonet lab up --provider vm "$TOPO" --name "$NAME"
ansible-playbook -i "$INV" playbooks/site.yml >/dev/null
ansible-playbook -i "$INV" playbooks/verify.yml >/dev/null
echo "== per-hop delays on" >&2
ON=$(bench delays-on)
beonet lab fault --provider vm "$TOPO" --name "$NAME" --delays off
echo "== per-hop delays off" >&2
OFF=$(bench delays-off)
beonet latency-figure "$TOPO" --delays-on "$ON" --delays-off "$OFF" -o "$OUT"
cat "$OUT/summary.md"
echo "beonet figure-latency: $(( $(date +%s) - start )) s"
