#!/usr/bin/env bash
# No unit test reads the controller: the whole pytest suite, run twice in containers
# of a Debian controller, one with NetworkManager, netplan and ifupdown installed (and
# enabled, as their packages leave them) and one with Python only. Both must pass.
# The images are built locally (scripts/build-image.sh controller, controller-managers:
# debootstrap from the machine's apt mirror, no registry) and kept; each container
# runs with no network and no privilege, the worktree, the venv and its Python mounted
# read-only, and is removed after its run. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
venv=$(readlink -f .venv)
python=$(.venv/bin/python -c 'import sys; print(sys.base_prefix)')
# The controllers run this host's Python: a Debian release with the host's C library.
export BEONET_SUITE=${BEONET_SUITE:-bookworm}
bash scripts/docker-up.sh
for variant in controller-managers controller; do
  start=$SECONDS
  bash scripts/build-image.sh "$variant"
  echo "beonet: image $variant ready in $((SECONDS - start)) s"
done
name=beonet-hermetic-$$
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
status=0
for image in "beonet-controller-managers:$BEONET_SUITE-2" "beonet-controller:$BEONET_SUITE-1"; do
  echo "beonet: pytest on $image"
  start=$SECONDS
  docker run --rm --name "$name" --network none \
    -v "$python:$python:ro" -v "$venv:$venv:ro" -v "$root:$root:ro" -w "$root" \
    -e PYTHONDONTWRITEBYTECODE=1 -e HOME=/root -e HYPOTHESIS_STORAGE_DIRECTORY=/tmp/hypothesis \
    "$image" \
    "$root/.venv/bin/pytest" -p no:cacheprovider -rs "$@" || status=1
  echo "beonet: pytest on $image took $((SECONDS - start)) s"
done
exit "$status"
