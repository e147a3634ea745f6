#!/usr/bin/env bash
# Install (if absent) and start (if stopped) the Docker engine, plus the lab's
# host tools. Idempotent; used by `make demo`, `make lab-test` and .ci/run.
set -euo pipefail
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v bridge >/dev/null || need+=(iproute2)
command -v iptables >/dev/null || need+=(iptables)
if [ ${#need[@]} -gt 0 ]; then
  echo "beonet: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  echo "beonet: starting dockerd (log: /var/log/beonet-dockerd.log)"
  # its own session: the engine outlives the shell (and the job control) that started it
  setsid nohup dockerd >/var/log/beonet-dockerd.log 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "beonet: dockerd did not start"; tail -20 /var/log/beonet-dockerd.log; exit 1; }
fi
echo "beonet: docker $(docker version --format '{{.Server.Version}}') is running"
