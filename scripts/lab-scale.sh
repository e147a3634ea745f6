#!/usr/bin/env bash
# Push, discover and verify at scale on the Docker lab: a meta-graph lab of about NODES
# nodes (default 128: topologies/benchmarks/lab-metagraph-128.yml; other sizes are
# generated, L groups of P nodes with one point-to-point NIC each, L the power of two
# nearest below the square root of NODES), then site.yml twice (the second must change
# nothing), discover.yml, verify.yml (every ordered pair proven from the live kernel
# state, and a traceroute sample), and the lab taken down. Each figure is printed with
# its target and the load average before it; the last line sums the run up. Exits
# non-zero when a run fails or a figure misses its target. Per-task times
# (profile_tasks) are kept in the logs. Each step's line ends with where the host's CPU
# went meanwhile (beonet.labs.cpusplit): the controller (ansible-playbook and all it
# ran), the nodes (the containers) and the rest (the container engine): on the lab all
# three share this machine's cores, on a cluster the nodes' share is spent on the nodes.
#   NODES=1024 bash scripts/lab-scale.sh        # or: make lab-scale NODES=1024
#   SCALE_TOPOLOGY=FILE SCALE_FORKS=20 SCALE_SERIAL=N SCALE_LOG=DIR bash scripts/lab-scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg" ANSIBLE_NOCOLOR=1
export PYTHONPATH="$PWD/module_utils${PYTHONPATH:+:$PYTHONPATH}"   # this checkout's beonet
export ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks
nodes_wanted=${NODES:-128}
forks=${SCALE_FORKS:-20}
again_target=0.25            # s per node, second site.yml run
discover_target=120          # s
verify_target=300            # s, every ordered pair from the live state
# Every node the first site.yml changes keeps its rollback waiter (a Python process of
# about 17 MB) until its batch is confirmed: with all 1,024 nodes in one batch the
# waiters took 16.8 GB and the host (23 GB, no swap) stalled. The first run goes in
# batches (beonet_serial) that fit half the memory left once the lab is up.
waiter_mb=20
if ! [[ $nodes_wanted =~ ^[0-9]{1,5}$ ]] || [ "$nodes_wanted" -lt 8 ]; then
  echo "lab-scale: NODES must be a whole number of at least 8, not '$nodes_wanted'" >&2; exit 2
fi
if [ -n "${SCALE_SERIAL:-}" ] && ! [[ $SCALE_SERIAL =~ ^[1-9][0-9]{0,5}$ ]]; then
  echo "lab-scale: SCALE_SERIAL must be a whole number of nodes (1 or more), not '$SCALE_SERIAL'" >&2; exit 2
fi
# SCALE_CHECK_ONLY=1: stop once the settings are checked (nothing made)
[ "${SCALE_CHECK_ONLY:-}" != 1 ] || exit 0
log=${SCALE_LOG:-$(mktemp -d /tmp/beonet-lab-scale.XXXXXX)}
mkdir -p "$log"

# The topology: the shipped 128-node file, or a generated meta-graph of about NODES.
metagraph() {
  local n=$1 l=2 p file
  while [ $((l * l * 4)) -le "$n" ]; do l=$((l * 2)); done
  p=$(((n + l / 2) / l))
  file=$log/lab-metagraph-$((l * p)).yml
  cat >"$file" <<EOF
name: lab-metagraph-$((l * p))
description: meta-graph L=$l P=$p C=1 ($((l * p)) nodes), for timings at scale on the Docker lab
family: metagraph
link:
  rate_mbit: 100
addressing:
  lan: 10.128.0.0/16
  p2p: 10.129.0.0/16
metagraph:
  groups: $l
  nodes_per_group: $p
  p2p_per_node: 1
EOF
  echo "$file"
}
if [ -n "${SCALE_TOPOLOGY:-}" ]; then topo=$SCALE_TOPOLOGY
elif [ "$nodes_wanted" = 128 ]; then topo=topologies/benchmarks/lab-metagraph-128.yml
else topo=$(metagraph "$nodes_wanted")
fi
name=beonet-$(basename "$topo" .yml)
inv=.lab/$name/inventory.yml
bash scripts/docker-up.sh
bash scripts/build-image.sh
stamp() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
per() { awk -v s="$1" -v n="$2" 'BEGIN { printf "%.2f", s / n }'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t) ? "met" : "MISSED" }'; }
thousands() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
changed_hosts() { grep -E '^\S+ +: ok=' "$1" | grep -vc 'changed=0' || true; }
lab() { python -m beonet.cli lab "$@"; }
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() { lab down "$topo" >"$log/down" 2>&1 || true; }
trap cleanup EXIT
# play NAME PLAYBOOK [ARGS...]: run one playbook, log in $log/NAME; sets took, before
# (the load average) and rc
play() {
  local out=$log/$1 book=$2 a b
  shift 2
  before=$(load); a=$(stamp); rc=0
  ANSIBLE_FORKS=$forks python -m beonet.labs.cpusplit --out "$out.cpu" -- \
    ansible-playbook -i "$inv" "playbooks/$book" "$@" >"$out" 2>&1 || rc=$?
  b=$(stamp); took=$(secs "$a" "$b")
}
# cpu NAME: the CPU split of the last play (controller CPU per node too)
cpu() {
  local line
  line=$(cat "$log/$1.cpu" 2>/dev/null || echo "cpu: not measured")
  echo "  $line ($(awk -v l="$line" -v n="$nodes" 'BEGIN { split(l, w, "controller ");
    printf "%.3f", (w[2] + 0) / n }') s controller CPU per node)"
}
# must NAME: stop with the log's tail when the last play failed
must() { [ "$rc" = 0 ] || { tail -40 "$log/$1"; echo "lab-scale: $1 failed (log $log/$1)"; exit 1; }; }

echo "$(date -u '+%F %H:%M UTC'); $(nproc) cores, $(free -g | awk '/^Mem:/ { print $2 }') GB," \
  "kernel $(uname -r), Docker $(docker version -f '{{.Server.Version}}'); forks $forks; load $(load)"
echo "topology $topo; logs in $log"
t0=$(stamp); lab up "$topo" >"$log/up" 2>&1 || { tail -20 "$log/up"; exit 1; }
up=$(secs "$t0" "$(stamp)")
nodes=$(docker ps -q --filter "label=beonet.lab=$name" | wc -l)
echo "up: $nodes containers in $up s ($(per "$up" "$nodes") s per node); $(grep -i 'host' "$log/up" | tail -1)"
miss=0
avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
serial=${SCALE_SERIAL:-$((avail / 2 / waiter_mb > 0 ? avail / 2 / waiter_mb : 1))}
[ "$serial" -lt "$nodes" ] || serial=100%
play site1 site.yml -e beonet_serial="$serial"; must site1; first=$took
echo "site.yml first run: $first s ($(per "$first" "$nodes") s per node; load before $before;" \
  "batches of $serial, $avail MiB available before)"
cpu site1
play site2 site.yml; must site2; second=$took
ch=$(changed_hosts "$log/site2") cost=$(per "$second" "$nodes")
ok=$(verdict "$cost" "$again_target"); [ "$ok" = met ] || miss=1
echo "site.yml second run: $second s ($cost s per node, target <= $again_target: $ok; load before $before)," \
  "$ch hosts changed (target 0)"
cpu site2
[ "$ch" = 0 ] || { echo "lab-scale: the second site.yml run changed $ch hosts"; exit 1; }
play discover discover.yml; disc=$took drc=$rc
ok=$(verdict "$disc" "$discover_target")
if [ "$ok" != met ] || [ "$drc" != 0 ]; then miss=1; fi
if [ "$drc" = 0 ]; then found="the cabling matches"
else found="FAILED (rc $drc): $(grep -c 'kind: ' "$log/discover" || true) faults, e.g. $(grep -m1 -oE 'text: .*' "$log/discover" || true)"
fi
echo "discover.yml: $disc s (target <= $discover_target: $ok; load before $before); $found"
cpu discover
play verify verify.yml; ver=$took vrc=$rc
proven=$(grep -oE '[0-9]+ pairs proven from the live state' "$log/verify" | head -1 | cut -d' ' -f1)
mism=$(grep -oE 'live state in [0-9.]+ s \(the walk [0-9.]+ s\); [0-9]+ mismatches' "$log/verify" \
  | head -1 | grep -oE '[0-9]+ mismatches' | cut -d' ' -f1)
proven=${proven:-0} mism=${mism:-?}
ok=$(verdict "$ver" "$verify_target")
if [ "$ok" != met ] || [ "$vrc" != 0 ] || [ "$mism" != 0 ]; then miss=1; fi
echo "verify.yml: $ver s (target <= $verify_target: $ok; load before $before; rc $vrc):" \
  "$(grep -oE '[0-9]+ pairs proven from the live state[^"]*' "$log/verify" | head -1)" \
  "| $(grep -oE '[0-9]+ pairs traced in [^"]*' "$log/verify" | head -1)"
cpu verify
[ "$vrc" = 0 ] || tail -40 "$log/verify"
# Memory per container, as the engine's cgroup accounting reports it.
mapfile -t ids < <(docker ps -q --filter "label=beonet.lab=$name")
docker stats --no-stream --format '{{.MemUsage}}' "${ids[@]}" \
  | awk '{ v = $1; u = v; sub(/[0-9.]+/, "", u); sub(/[A-Za-z]+$/, "", v);
           m = (u == "GiB") ? v * 1024 : (u == "KiB") ? v / 1024 : v; s += m; if (m > x) x = m; n++ }
         END { printf "memory per container: mean %.1f MiB, max %.1f MiB (%d containers, %.0f MiB in all)\n", s / n, x, n, s }'
echo "host: $(free -m | awk '/^Mem:/ { print $3 }') MiB used, $(ps -eLf --no-headers | wc -l) threads"
echo "lab-scale: $(thousands "$nodes") nodes; up $up s; site first $first s; site second $second s" \
  "($cost s/node); discover $disc s; verify $ver s, $(thousands "$proven") pairs proven, $mism mismatches"
exit "$miss"
