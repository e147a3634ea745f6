#!/usr/bin/env bash
# An interrupted benchmark leaves no process on any node: start benchmark.yml on
# a small lab, interrupt ansible-playbook (SIGINT, as Ctrl-C) while a step runs,
# list what is left on the nodes, run the cleanup-only play, and check that no
# tokex or iperf3 process is left (zombies of the containers' init excepted).
# The interrupt is proven to have come mid-step: a step's tokex client was running
# on a node when the signal was sent, the play's last task begun is that step, and
# the play did not end normally.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
TOPO=topologies/benchmarks/demo-tree.yml
LAB=bench-interrupt
INV=".lab/$LAB/inventory.yml"
trap 'beonet lab down "$TOPO" --name "$LAB" >/dev/null 2>&1 || true' EXIT
beonet lab up "$TOPO" --name "$LAB" >/dev/null
ansible-playbook -i "$INV" playbooks/site.yml >/dev/null
left() {
  for c in $(docker ps --format '{{.Names}}' --filter "label=beonet.lab=$LAB"); do
    docker exec "$c" ps -eo stat=,comm=,pid=,ppid=,args= | awk -v c="$c" '$1 !~ /^Z/ && ($2 == "tokex" || $2 == "iperf3") {print c": "$0}'
  done
}
ansible-playbook -i "$INV" playbooks/benchmark.yml \
  -e '{"beonet_benchmark_params": {"count": 100000, "sizes": [8192], "mss_points": false, "pairs": [4]}}' \
  > /tmp/beonet-bench-interrupt.log 2>&1 &
pid=$!
# A step's clients (tokex client, iperf3 -c) running on the nodes: a step under way.
clients() {
  for c in $(docker ps --format '{{.Names}}' --filter "label=beonet.lab=$LAB"); do
    docker exec "$c" ps -eo stat=,args= | awk -v c="$c" '$1 !~ /^Z/ && ($0 ~ /tokex client / || $0 ~ /iperf3 .*-c /) {print c": "$0}'
  done
}
running=""
for _ in $(seq 1 240); do
  if grep -q "Benchmark step 1/" /tmp/beonet-bench-interrupt.log; then
    running=$(clients)
    [ -n "$running" ] && break
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 1
done
if [ -z "$running" ]; then
  echo "FAIL: no step's client ever ran on a node: nothing to interrupt mid-step"
  tail -20 /tmp/beonet-bench-interrupt.log; exit 1
fi
kill -INT "$pid"
status=0
wait "$pid" || status=$?
task=$(grep -o 'TASK \[[^]]*\]' /tmp/beonet-bench-interrupt.log | tail -1)
echo "interrupted (exit $status) during: $task, with its clients running:"
echo "$running"
if [ "$status" -eq 0 ] || [[ "$task" != *"Benchmark step "* ]]; then
  echo "FAIL: the signal did not come while a step ran (exit $status, last task: ${task:-none})"
  exit 1
fi
echo "after the interrupt, on the nodes:"
before=$(left)
echo "${before:-  (nothing)}"
ansible-playbook -i "$INV" playbooks/benchmark.yml -e beonet_benchmark_cleanup_only=true >/dev/null
after=$(left)
if [ -n "$after" ]; then
  echo "FAIL: still running after the cleanup play:"; echo "$after"; exit 1
fi
echo "ok: no tokex or iperf3 process left on any node after the cleanup play"
