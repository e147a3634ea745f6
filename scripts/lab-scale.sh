#!/usr/bin/env bash
# Push at scale on the Docker lab: bring up a large lab (default the 128-node
# meta-graph, topologies/benchmarks/lab-metagraph-128.yml), time site.yml (first
# run, then a second run that must change nothing) at each number of forks in
# SCALE_FORKS, and verify.yml (traceroute of every pair) at SCALE_VERIFY_FORKS (default the
# last); record the load average with every figure, memory per container and the
# cost per node, each figure with its target. The lab is taken down at the end.
# Exits non-zero when a figure misses its target.
#   SCALE_TOPOLOGY=FILE SCALE_FORKS="20 64" SCALE_VERIFY_FORKS=20 bash scripts/lab-scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg" ANSIBLE_NOCOLOR=1
export PYTHONPATH="$PWD/module_utils${PYTHONPATH:+:$PYTHONPATH}"   # this checkout's beonet
export ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks
topo=${SCALE_TOPOLOGY:-topologies/benchmarks/lab-metagraph-128.yml}
forks_list=${SCALE_FORKS:-"20 64"}
again_target=0.50            # s per node, second site.yml run
name=beonet-$(basename "$topo" .yml)
inv=.lab/$name/inventory.yml
log=${SCALE_LOG:-$(mktemp -d /tmp/beonet-lab-scale.XXXXXX)}
mkdir -p "$log"
bash scripts/docker-up.sh
bash scripts/build-image.sh
stamp() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
per() { awk -v s="$1" -v n="$2" 'BEGIN { printf "%.2f", s / n }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
changed_hosts() { grep -E '^\S+ +: ok=' "$1" | grep -vc 'changed=0' || true; }
check_cost() { grep -E '^beonet_node : Check the node' "$1" | grep -oE '[0-9.]+s$' || echo '?'; }
lab() { python -m beonet.cli lab "$@"; }
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() { python -m beonet.cli lab down "$topo" >/dev/null 2>&1 || true; }
trap cleanup EXIT
# play NAME FORKS PLAYBOOK [ARGS...]: run one playbook, log in $log/NAME; sets took,
# before (the load average) and rc
play() {
  local out=$log/$1 forks=$2 book=$3 a b
  shift 3
  before=$(load); a=$(stamp); rc=0
  ANSIBLE_FORKS=$forks ansible-playbook -i "$inv" "playbooks/$book" "$@" >"$out" 2>&1 || rc=$?
  b=$(stamp); took=$(secs "$a" "$b")
}

echo "$(date -u '+%F %H:%M UTC'); $(nproc) cores, $(free -g | awk '/^Mem:/ { print $2 }') GB," \
  "kernel $(uname -r), Docker $(docker version -f '{{.Server.Version}}'); load $(load)"
# The kernel's ARP table is shared by every container: verify.yml over every pair of
# 128 containers overflows the default gc_thresh3 (1024) and traceroute probes fail
# with "No buffer space available" (docs/benchmarks.md).
echo "host ARP table: gc_thresh3 $(sysctl -n net.ipv4.neigh.default.gc_thresh3)"
t0=$(stamp); lab up "$topo" >"$log/up" 2>&1 || { tail -20 "$log/up"; exit 1; }
t1=$(stamp)
nodes=$(docker ps -q --filter "label=beonet.lab=$name" | wc -l)
echo "lab $name: $nodes containers up in $(secs "$t0" "$t1") s"
first=1 miss=0
for forks in $forks_list; do
  if [ "$first" = 1 ]; then
    play site1 "$forks" site.yml
    [ "$rc" = 0 ] || { tail -30 "$log/site1"; exit 1; }
    echo "forks $forks: site.yml first run $took s ($(per "$took" "$nodes") s per node; load before $before)"
    first=0
  fi
  play "site2-$forks" "$forks" site.yml
  [ "$rc" = 0 ] || { tail -30 "$log/site2-$forks"; exit 1; }
  ch=$(changed_hosts "$log/site2-$forks")
  cost=$(per "$took" "$nodes")
  ok=$(awk -v c="$cost" -v t="$again_target" 'BEGIN { print (c <= t) ? "met" : "MISSED" }')
  [ "$ok" = met ] || miss=1
  echo "forks $forks: site.yml again $took s ($cost s per node, target <= $again_target: $ok;" \
    "check call $(check_cost "$log/site2-$forks"); load before $before), $ch hosts changed (target 0)"
  [ "$ch" = 0 ] || { echo "FAIL: the second site.yml run changed $ch hosts"; exit 1; }
done
vforks=${SCALE_VERIFY_FORKS:-$forks}
play "verify-$vforks" "$vforks" verify.yml -e beonet_verify_mode=traceroute -e beonet_verify_max_targets=1000
[ "$rc" = 0 ] || miss=1
echo "forks $vforks: verify.yml $took s ($(per "$took" "$nodes") s per node; load before $before):" \
  "$(grep -oE '[0-9]* pairs traced in [0-9.]* s; [0-9]* mismatches' "$log/verify-$vforks" | head -1)" \
  "(target 0 mismatches; rc $rc)"
# Memory per container, as the engine's cgroup accounting reports it.
mapfile -t ids < <(docker ps -q --filter "label=beonet.lab=$name")
docker stats --no-stream --format '{{.MemUsage}}' "${ids[@]}" \
  | awk '{ v = $1; u = v; sub(/[0-9.]+/, "", u); sub(/[A-Za-z]+$/, "", v);
           m = (u == "GiB") ? v * 1024 : (u == "KiB") ? v / 1024 : v; s += m; if (m > x) x = m; n++ }
         END { printf "memory per container: mean %.1f MiB, max %.1f MiB (%d containers, %.0f MiB in all)\n", s / n, x, n, s }'
echo "logs in $log"
exit "$miss"
