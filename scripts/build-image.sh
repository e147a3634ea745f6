#!/usr/bin/env bash
# Build the lab's node image locally, with no registry: debootstrap a Debian
# minbase from the apt mirror this machine is configured with, then
# `docker import`. Cached: skipped when the image already exists.
set -euo pipefail
# Variant "mpi" (scripts/build-image.sh mpi): the same plus Open MPI, MPICH, Slurm,
# munge and OpenSSH, for playbooks/mpi.yml and playbooks/slurm.yml (make mpi-demo).
# Variant "frr": the same plus Debian's FRR (routing.engine frr: OSPF and BFD; labs/docker.py
# picks it for such a topology, scripts/frr-check.sh loads beonet's frr.conf files in it).
# Variant "slurm-check": Debian's next release with slurmctld only, to load a
# topology.yaml (Slurm 25.05 or later).
# No argument or "node": the plain node image (`beonet lab image TOPOLOGY` names the one a
# topology's lab needs).
# BEONET_SUITE: the Debian release (default trixie, Debian 13; bookworm works too).
# Images are tagged NAME:SUITE-REVISION (labs/docker.py names them the same way).
SUITE=${BEONET_SUITE:-trixie}
# ethtool: the benchmarks record each NIC's offloads. Change the tag when the list changes.
PACKAGES=python3,iproute2,iputils-ping,traceroute,procps,nftables,iperf3,gcc,libc6-dev,ethtool
# Extra packages go in with apt inside the new root (debootstrap's own resolver
# cannot configure Open MPI's development packages).
# Variants "controller" and "controller-managers" (scripts/hermetic-test.sh): a test
# controller, Python only, and the same with NetworkManager, netplan and ifupdown (their
# units enabled as the packages leave them, netplan handing NICs to NetworkManager as
# on an Ubuntu desktop).
EXTRA=()
APT_OPTS=()
case "${1:-}" in
  mpi)
    IMAGE=${BEONET_IMAGE:-beonet-node-mpi:$SUITE-3}
    EXTRA=(openmpi-bin libopenmpi-dev mpich libmpich-dev openssh-server openssh-client python3-apt
           munge slurmctld slurmd slurm-client frr frr-pythontools) ;;
  frr)
    IMAGE=${BEONET_IMAGE:-beonet-node-frr:$SUITE-2}
    EXTRA=(frr frr-pythontools) ;;
  slurm-check)
    SUITE=${BEONET_CHECK_SUITE:-forky}
    IMAGE=${BEONET_IMAGE:-beonet-slurm-check:$SUITE-2}
    PACKAGES=python3
    EXTRA=(slurmctld munge)
    # A testing release's Release file expires within days; a mirror's copy may be older.
    APT_OPTS=(-o Acquire::Check-Valid-Until=false) ;;
  controller)
    IMAGE=${BEONET_IMAGE:-beonet-controller:$SUITE-1}
    PACKAGES=python3 ;;
  controller-managers)
    IMAGE=${BEONET_IMAGE:-beonet-controller-managers:$SUITE-2}
    PACKAGES=python3
    EXTRA=(network-manager netplan.io ifupdown) ;;
  ""|node)
    IMAGE=${BEONET_IMAGE:-beonet-node:$SUITE-2} ;;
  *)
    echo "beonet: unknown image variant '$1' (node, mpi, frr, slurm-check, controller, controller-managers)" >&2
    exit 2 ;;
esac
# One build of an image at a time: a second caller (CI builds images ahead, in the
# background) waits for the first, then finds the image cached.
exec 9>"/var/lock/beonet-image-${IMAGE//[^A-Za-z0-9._-]/_}.lock"
flock 9
if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "beonet: image $IMAGE is cached"
  exit 0
fi
# shellcheck source=scripts/apt-mirror.sh
. "$(dirname "$0")/apt-mirror.sh"
mirror=$(apt_mirror)
[ -n "$mirror" ] || { echo "beonet: no apt mirror found in /etc/apt/sources*"; exit 1; }
root=$(mktemp -d /var/tmp/beonet-rootfs.XXXXXX)
log=/tmp/beonet-debootstrap-${IMAGE//[^A-Za-z0-9._-]/_}.log
chmod 755 "$root"        # the image's / (services that drop root, e.g. munge, walk it)
trap 'rm -rf "$root"' EXIT
echo "beonet: debootstrap $SUITE (minbase) from the machine's apt mirror into $root"
# A release newer than this host's debootstrap knows is bootstrapped as the newest it knows.
script=()
[ -e "/usr/share/debootstrap/scripts/$SUITE" ] || script=(/usr/share/debootstrap/scripts/trixie)
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$mirror" "${script[@]}" >"$log" 2>&1 \
  || { tail -20 "$log"; exit 1; }
if [ ${#EXTRA[@]} -gt 0 ]; then
  echo "beonet: apt-get install ${EXTRA[*]} in the new root"
  printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"     # start no service
  chmod 755 "$root/usr/sbin/policy-rc.d"
  { chroot "$root" apt-get "${APT_OPTS[@]}" update -q && DEBIAN_FRONTEND=noninteractive chroot "$root" \
      apt-get install -y -q --no-install-recommends "${EXTRA[@]}"; } >>"$log" 2>&1 \
    || { tail -20 "$log"; exit 1; }
  rm -f "$root/usr/sbin/policy-rc.d"
fi
if [ "${1:-}" = controller-managers ]; then
  printf 'network:\n  version: 2\n  renderer: NetworkManager\n' > "$root/etc/netplan/01-network-manager-all.yaml"
fi
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import --change 'CMD ["sleep", "infinity"]' - "$IMAGE" >/dev/null
echo "beonet: built $IMAGE"
