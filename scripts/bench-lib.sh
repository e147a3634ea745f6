# shellcheck shell=bash
# Sourced by the scripts that run playbooks/benchmark.yml on a lab and read
# its results: they set INV (inventory), NAME (lab name), TOPONAME (the
# topology's name) and PARAMS (beonet_benchmark_params as JSON).

latest_result() {  # newest results folder of the topology, or nothing
  find results/"$TOPONAME" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sort | tail -1 || true
}

bench() {  # label -> runs benchmark.yml, prints its results folder
  local before after
  before=$(latest_result)
  ansible-playbook -i "$INV" playbooks/benchmark.yml -e "{\"beonet_benchmark_params\": $PARAMS}" \
    | tee ".lab/$NAME/bench-$1.log" | grep --line-buffered -E '^TASK \[beonet_benchmark : (Benchmark|Prepare)|^fatal|FAILED' >&2 || true
  after=$(latest_result)
  if [ -z "$after" ] || [ "$after" = "$before" ]; then
    echo "beonet: benchmark.yml left no results for $1" >&2
    grep -A8 -E '^fatal|FAILED' ".lab/$NAME/bench-$1.log" >&2 || true; exit 1
  fi
  echo "${after%/}"
}

bonded_nodes() {  # topology of the bonded family -> its node names (node01 ...)
  python3 -c 'import sys,yaml; print(" ".join("node%02d" % (i + 1) for i in range(yaml.safe_load(open(sys.argv[1]))["bonded"]["nodes"])))' "$1"
}

set_member() {  # plan NIC, up|down -> that bond member on every VM of NODES (QEMU
  # monitor), then the bond's miimon (100 ms) time to see it; needs TOPO, NAME
  for n in $NODES; do
    beonet lab link --provider vm "$TOPO" --name "$NAME" --node "$n" --nic "$1" --state "$2" >/dev/null
  done
  echo "beonet: $1 $2 on $(echo "$NODES" | wc -w) nodes" >&2
  sleep 2
}
