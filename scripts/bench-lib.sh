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
