#!/usr/bin/env bash
# A short benchmark on the Docker lab (make benchmark-demo): the 4x4 routed mesh
# (local-wire pairs vs pairs through a gateway) and a small tree whose 200 Mbit/s
# uplink caps the pairs that cross it. Each lab is brought up under its own
# name and taken down at the end, also on failure or interrupt.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
MESH=topologies/routed-mesh.yml
TREE=topologies/benchmarks/demo-tree.yml
down() {
  beonet lab down "$MESH" --name bench-demo-mesh >/dev/null 2>&1 || true
  beonet lab down "$TREE" --name bench-demo-tree >/dev/null 2>&1 || true
}
trap down EXIT
bash scripts/docker-up.sh
bash scripts/build-image.sh
start=$(date +%s)

run() {  # topology, lab name, params (JSON)
  beonet lab up "$1" --name "$2"
  ansible-playbook -i ".lab/$2/inventory.yml" playbooks/site.yml >/dev/null
  ansible-playbook -i ".lab/$2/inventory.yml" playbooks/benchmark.yml \
    -e "{\"beonet_benchmark_params\": $3}" | grep --line-buffered -E '^TASK \[beonet_benchmark : (Benchmark|Prepare)|^fatal|FAILED' || true
  beonet lab down "$1" --name "$2"
}

run "$MESH" bench-demo-mesh '{"count": 200, "sizes": [4, 1024, 8192], "pairs": [1, 8],
  "file_mb": [2], "remote_copies": [0, 7], "ring_rounds": 20, "iperf_seconds": 2}'
run "$TREE" bench-demo-tree '{"count": 3000, "sizes": [8192], "mss_points": false,
  "exchange_window": 8, "classes": ["cross-switch"], "pairs": [1, 2, 3, 4], "remote_copies": [],
  "ring_rounds": 20, "iperf_seconds": 2}'

python3 - <<'PY'
import glob, json, os
def latest(topo):
    runs = sorted(glob.glob("results/%s/[0-9]*/results.json" % topo))   # not mpi-*
    if not runs:
        raise SystemExit("beonet benchmark-demo: no results for %s" % topo)
    with open(runs[-1]) as fh:
        return os.path.dirname(runs[-1]), json.load(fh)
for topo in ("routed-mesh", "demo-tree"):
    folder, r = latest(topo)
    print("\n== %s: %s" % (topo, folder))
    print("%-14s %-4s %5s %6s %12s %14s  %s" % ("class", "prot", "pairs", "size", "one-way MB/s",
                                                "% of capacity", "counted over"))
    for a in sorted(r["aggregate"], key=lambda a: (a["class"], a["proto"], a["size"], a["pairs"])):
        if a["size"] in (1024, 8192) and a["proto"] == "tcp":
            pct = a.get("one_way_pct_of_capacity")
            print("%-14s %-4s %5d %6d %12.2f %14s  %s" % (a["class"], a["proto"], a["pairs"], a["size"],
                                                         a["one_way_MBps"], "-" if pct is None else pct,
                                                         a.get("counted_over", "-")))
    for l in r["latency"]:
        print("latency %-14s %s: one-way median %.1f us (model %.1f us), %d router(s)"
              % (l["class"], l["proto"], l["one_way_median_us"], l["model_one_way_us"], l["routers"]))
    for i in r["iperf3"]:
        print("iperf3 %-14s %.2f MB/s; tokex stream 8K %.2f (ratio %s), 64K ratio %s, window 8K ratio %s"
              % (i["class"], i["iperf3_MBps"] or 0, i.get("tokex_stream_8192_MBps") or 0,
                 i.get("ratio_stream_8192"), i.get("ratio_stream_65536"), i.get("ratio_window_8192")))
PY
echo "beonet benchmark-demo: $(( $(date +%s) - start )) s"
