#!/usr/bin/env bash
# topology.yaml against a real slurmctld of Slurm 25.05 or later: Debian's next release
# in a container (scripts/build-image.sh slurm-check) on an internal network, removed afterwards.
# For each topology, beonet's slurm.conf (node lines; slurmctld on loopback) and
# topology.yaml (no topology.conf) go into /etc/slurm; slurmctld must start, and
# `scontrol show topology` must show every switch beonet's topology.conf names, with
# the same nodes and child switches.
#   scripts/slurm-topology-check.sh [TOPOLOGY...]   (default: four families)
set -euo pipefail
cd "$(dirname "$0")/.."
topologies=("$@")
[ ${#topologies[@]} -gt 0 ] || topologies=(topologies/switch-tree.yml topologies/metanode-testbed.yml
                                           topologies/routed-mesh.yml topologies/custom-example.yml)
bash scripts/docker-up.sh >/dev/null
bash scripts/build-image.sh slurm-check
image=${BEONET_IMAGE:-beonet-slurm-check:${BEONET_CHECK_SUITE:-forky}-2}
name=beonet-slurm-check-$$
work=$(mktemp -d)
# An internal network (no route off the machine): slurmctld resolves its listening
# address with AI_ADDRCONFIG, which finds nothing where loopback is the only NIC.
docker network create --internal "$name" >/dev/null
trap 'docker rm -f "$name" >/dev/null 2>&1 || true; docker network rm "$name" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
status=0
for topology in "${topologies[@]}"; do
  dir="$work/$(basename "$topology" .yml)"
  .venv/bin/beonet build "$topology" -o "$dir" >/dev/null
  controller=$(.venv/bin/python - "$dir" <<'PY'
import json, sys
from beonet.outputs import slurm
plan = json.load(open(sys.argv[1] + "/plan.json", encoding="utf-8"))
for name, text in (("slurm.conf", slurm.slurm_conf(plan)), ("cgroup.conf", slurm.cgroup_conf(plan))):
    with open("%s/%s" % (sys.argv[1], name), "w", encoding="utf-8") as fh:
        fh.write(text)
print(slurm.controller_of(plan))
PY
)
  docker rm -f "$name" >/dev/null 2>&1 || true
  docker run -d --name "$name" --hostname "$controller" --add-host "$controller:127.0.0.1" \
    --network "$name" -v "$dir:/check:ro" "$image" \
    sleep infinity >/dev/null
  if ! docker exec "$name" sh -c '
      set -e
      cp /check/topology.yaml /check/cgroup.conf /etc/slurm/
      # slurmctld listens on loopback, not at the cluster address (the container has neither).
      sed "s/^SlurmctldHost=\([^(]*\)(.*)/SlurmctldHost=\1(127.0.0.1)/" /check/slurm.conf > /etc/slurm/slurm.conf
      mkdir -p /run/munge /var/lib/slurm/slurmctld /var/log/slurm
      chown munge:munge /run/munge; chown -R slurm:slurm /var/lib/slurm /var/log/slurm
      [ -s /etc/munge/munge.key ] || mungekey --create --keyfile /etc/munge/munge.key
      chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key
      runuser -u munge -- /usr/sbin/munged
      slurmctld
      for _ in $(seq 30); do scontrol ping >/dev/null 2>&1 && break; sleep 1; done
      slurmctld -V; scontrol show topology' > "$dir/scontrol.txt" 2>&1; then
    echo "beonet: $topology: slurmctld did not load it:"; cat "$dir/scontrol.txt"; status=1; continue
  fi
  # Every line of beonet's topology.conf against Slurm's view of that switch, as sets of
  # names (Slurm sorts a hostlist its own way).
  if docker exec -i "$name" sh -c '
      status=0
      while read -r switch entry; do
        key=${entry%%=*}; want=${entry#*=}
        line=$(scontrol show topology | grep "^$switch ") || { echo "Slurm lacks $switch"; status=1; continue; }
        got=$(printf "%s\n" $line | sed -n "s/^$key=//p")
        [ "$(scontrol show hostnames "$want" | sort)" = "$(scontrol show hostnames "$got" | sort)" ] \
          || { echo "$switch: $key=$got in Slurm, $want in the plan"; status=1; }
      done
      exit $status' < <(grep -v '^#' "$dir/topology.conf") > "$dir/compare.txt" 2>&1; then
    echo "beonet: $topology: $(grep -m1 '^slurm' "$dir/scontrol.txt") loaded topology.yaml: $(grep -c '^SwitchName=' "$dir/scontrol.txt") switches, each with the plan's nodes and child switches"
  else
    echo "beonet: $topology:"; cat "$dir/compare.txt" "$dir/scontrol.txt"; status=1
  fi
done
exit $status
