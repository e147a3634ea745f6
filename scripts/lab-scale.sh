#!/usr/bin/env bash
# Push at scale on the Docker lab: bring up a large lab (default the 128-node
# meta-graph, topologies/benchmarks/lab-metagraph-128.yml), time site.yml
# (first run, then a second run that must change nothing) and verify.yml
# (every pair), at each number of forks in SCALE_FORKS, and record memory per
# container and the cost per node. The lab is taken down at the end.
#   SCALE_TOPOLOGY=FILE SCALE_FORKS="20 64" bash scripts/lab-scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg" ANSIBLE_NOCOLOR=1
topo=${SCALE_TOPOLOGY:-topologies/benchmarks/lab-metagraph-128.yml}
forks_list=${SCALE_FORKS:-"20 64"}
name=beonet-$(basename "$topo" .yml)
inv=.lab/$name/inventory.yml
log=${SCALE_LOG:-$(mktemp -d /tmp/beonet-lab-scale.XXXXXX)}
mkdir -p "$log"
bash scripts/docker-up.sh
bash scripts/build-image.sh
stamp() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
per() { awk -v s="$1" -v n="$2" 'BEGIN { printf "%.2f", s / n }'; }
changed_hosts() { grep -E '^\S+ +: ok=' "$1" | grep -vc 'changed=0' || true; }
cleanup() { beonet lab down "$topo" >/dev/null 2>&1 || true; }
trap cleanup EXIT

t0=$(stamp); beonet lab up "$topo" >"$log/up" 2>&1 || { tail -20 "$log/up"; exit 1; }
t1=$(stamp)
nodes=$(docker ps -q --filter "label=beonet.lab=$name" | wc -l)
echo "lab $name: $nodes containers up in $(secs "$t0" "$t1") s ($(nproc) cores, $(uname -r))"
first=1
for forks in $forks_list; do
  if [ "$first" = 1 ]; then
    a=$(stamp); ANSIBLE_FORKS=$forks ansible-playbook -i "$inv" playbooks/site.yml >"$log/site1" 2>&1 \
      || { tail -30 "$log/site1"; exit 1; }
    b=$(stamp)
    echo "forks $forks: site.yml first run $(secs "$a" "$b") s ($(per "$(secs "$a" "$b")" "$nodes") s per node)"
    first=0
  fi
  a=$(stamp); ANSIBLE_FORKS=$forks ansible-playbook -i "$inv" playbooks/site.yml >"$log/site2-$forks" 2>&1 \
    || { tail -30 "$log/site2-$forks"; exit 1; }
  b=$(stamp)
  ch=$(changed_hosts "$log/site2-$forks")
  echo "forks $forks: site.yml again $(secs "$a" "$b") s ($(per "$(secs "$a" "$b")" "$nodes") s per node), $ch hosts changed"
  [ "$ch" = 0 ] || { echo "FAIL: the second site.yml run changed $ch hosts"; exit 1; }
  a=$(stamp); ANSIBLE_FORKS=$forks ansible-playbook -i "$inv" playbooks/verify.yml \
    -e beonet_verify_max_targets=1000 >"$log/verify-$forks" 2>&1 || { tail -30 "$log/verify-$forks"; exit 1; }
  b=$(stamp)
  echo "forks $forks: verify.yml $(secs "$a" "$b") s ($(per "$(secs "$a" "$b")" "$nodes") s per node):" \
    "$(grep -o '[0-9]* pairs traced; [0-9]* mismatches' "$log/verify-$forks" | head -1)"
done
# Memory per container, as the engine's cgroup accounting reports it.
mapfile -t ids < <(docker ps -q --filter "label=beonet.lab=$name")
docker stats --no-stream --format '{{.MemUsage}}' "${ids[@]}" \
  | awk '{ v = $1; u = v; sub(/[0-9.]+/, "", u); sub(/[A-Za-z]+$/, "", v);
           m = (u == "GiB") ? v * 1024 : (u == "KiB") ? v / 1024 : v; s += m; if (m > x) x = m; n++ }
         END { printf "memory per container: mean %.1f MiB, max %.1f MiB (%d containers, %.0f MiB in all)\n", s / n, x, n, s }'
echo "logs in $log"
