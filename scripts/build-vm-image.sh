#!/usr/bin/env bash
# Build the VM lab's base disk images locally, with no registry: debootstrap
# Debian (BEONET_SUITE, default trixie) from the apt mirror this machine is configured with, add a
# Debian kernel + initramfs, systemd, openssh and the node tools, then make an
# ext4 disk image with `mkfs.ext4 -d`. One variant per network backend, named after it
# (the names of module_utils/beonet/agent/netbackends, the agent's registry: a test
# holds this list and the packages below to it), each from a copy of one common root:
#   networkd  systemd-networkd enabled
#   networkmanager  NetworkManager installed and enabled, systemd-networkd disabled
#   netplan   netplan.io with a file naming the networkd renderer (as Ubuntu server)
#   ifupdown  ifupdown + ifenslave, networking.service enabled, systemd-networkd
#             disabled (as a stock Debian server)
# Kernel and initrd are copied beside each image: VMs boot with -kernel/-initrd.
# Cached under $BEONET_VM_CACHE (default /var/cache/beonet/vm): a variant whose
# image exists and was built from the same recipe (stamp: suite, size, package
# list, the variant's own packages, IMAGE_REV) is skipped; a changed recipe
# rebuilds it. Each VM later gets a qcow2 overlay on top.
#   scripts/build-vm-image.sh [networkd|networkmanager|netplan|ifupdown|all]...   (default: all)
set -euo pipefail
CACHE=${BEONET_VM_CACHE:-/var/cache/beonet/vm}
SUITE=${BEONET_SUITE:-trixie}
SIZE=${BEONET_VM_DISK:-2G}
VARIANTS=(networkd networkmanager netplan ifupdown)
PACKAGES=linux-image-cloud-amd64,initramfs-tools,systemd,systemd-sysv,udev,kmod,dbus,\
openssh-server,python3,iproute2,iputils-ping,traceroute,nftables,iperf3,gcc,libc6-dev,procps,less,ethtool
# Bump when the image recipe below changes in a way the package list does not show.
IMAGE_REV=4
STAMP="$SUITE $SIZE $IMAGE_REV $PACKAGES"
# The packages each variant adds to the common root.
extra_packages() {
  case "$1" in
    networkmanager) echo network-manager ;;
    netplan) echo netplan.io ;;
    ifupdown) echo ifupdown ifenslave ;;
    *) echo ;;
  esac
}
stamp() { echo "$STAMP $1 $(extra_packages "$1")"; }
say() { echo "beonet vm-image: $*"; }

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v qemu-img >/dev/null || need+=(qemu-utils)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null; }
fi

variants=()
[ $# -gt 0 ] || set -- all
for want in "$@"; do
  case " all ${VARIANTS[*]} " in
    *" $want "*) ;;
    *) echo "usage: $0 [networkd|networkmanager|netplan|ifupdown|all]..." >&2; exit 2 ;;
  esac
  if [ "$want" = all ]; then variants+=("${VARIANTS[@]}"); else variants+=("$want"); fi
done
# One build at a time: a second caller (CI builds the images ahead, in the background)
# waits for the first, then finds them cached.
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
todo=()
for v in "${variants[@]}"; do
  case " ${todo[*]} " in *" $v "*) continue ;; esac
  if [ -f "$CACHE/$v/disk.img" ] && [ -f "$CACHE/$v/vmlinuz" ] && [ -f "$CACHE/$v/initrd.img" ] \
     && [ "$(cat "$CACHE/$v/stamp" 2>/dev/null)" = "$(stamp "$v")" ]; then
    say "$v image is cached in $CACHE/$v"
  else
    todo+=("$v")
  fi
done
[ ${#todo[@]} -gt 0 ] || exit 0

# shellcheck source=scripts/apt-mirror.sh
. "$(dirname "$0")/apt-mirror.sh"
mirror=$(apt_mirror)
[ -n "$mirror" ] || { echo "beonet vm-image: no apt mirror found in /etc/apt/sources*" >&2; exit 1; }

mkdir -p "$CACHE"
work=$(mktemp -d /var/tmp/beonet-vmroot.XXXXXX)
unmount() { local m; for m in proc sys dev; do if mountpoint -q "$1/$m"; then umount -l "$1/$m" || true; fi; done; }
mount_in() { mount -t proc proc "$1/proc"; mount -t sysfs sys "$1/sys"; mount --bind /dev "$1/dev"; }
cleanup() {
  local d
  for d in "$work"/*/; do unmount "${d%/}"; done
  rm -rf "$work"
}
trap cleanup EXIT
root=$work/root
log=$CACHE/debootstrap.log
start=$(date +%s)
say "debootstrap $SUITE (minbase + kernel, systemd, openssh, tools) from the machine's apt mirror"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$mirror" >"$log" 2>&1 \
  || { tail -20 "$log" >&2; echo "beonet vm-image: debootstrap failed (log $log)" >&2; exit 1; }
say "debootstrap done in $(( $(date +%s) - start )) s"

# Common configuration.
echo "$SUITE" > "$root/etc/hostname"
# No machine-id in the image: each VM gets its own (systemd.machine_id= on its
# kernel command line), or bonds and other virtual NICs share one MAC address.
: > "$root/etc/machine-id"
printf '/dev/vda / ext4 defaults,noatime 0 1\n' > "$root/etc/fstab"
printf 'deb %s %s main\n' "$mirror" "$SUITE" > "$root/etc/apt/sources.list"
sed -i 's/^#\?PasswordAuthentication.*/PasswordAuthentication no/' "$root/etc/ssh/sshd_config"
printf 'UseDNS no\n' > "$root/etc/ssh/sshd_config.d/beonet.conf"
# The nftables service loads beonet's persistent forwarding ruleset at boot.
cat > "$root/etc/nftables.conf" <<'NFT'
#!/usr/sbin/nft -f
# beonet VM image: load every ruleset in /etc/nftables.d (beonet writes beonet.nft there).
flush ruleset
include "/etc/nftables.d/*.nft"
NFT
mkdir -p "$root/etc/nftables.d"
# Boot-time lab settings from the kernel command line (set by `beonet lab up
# --provider vm`): beonet.key=<ed25519 public key base64> for root,
# beonet.mgmt=<MAC>,<ADDR/LEN> for the management NIC (configured directly,
# left unmanaged by networkd and NetworkManager). The hostname comes from
# systemd.hostname=.
cat > "$root/usr/local/sbin/beonet-vm-boot" <<'SH'
#!/bin/sh
set -e
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    beonet.key=*) key=${arg#beonet.key=} ;;
    beonet.mgmt=*) mgmt=${arg#beonet.mgmt=} ;;
  esac
done
if [ -n "$key" ]; then
  mkdir -p -m 700 /root/.ssh
  echo "ssh-ed25519 $key beonet-lab" > /root/.ssh/authorized_keys
  chmod 600 /root/.ssh/authorized_keys
fi
[ -n "$mgmt" ] || exit 0
mac=${mgmt%%,*}; addr=${mgmt#*,}
udevadm settle -t 20 || true
for d in /sys/class/net/*; do
  if [ "$(cat "$d/address")" = "$mac" ]; then
    dev=${d##*/}
    ip link set dev "$dev" up
    ip addr replace "$addr" dev "$dev"
    exit 0
  fi
done
echo "beonet-vm-boot: no NIC with MAC $mac" >&2
exit 1
SH
chmod 755 "$root/usr/local/sbin/beonet-vm-boot"
cat > "$root/etc/systemd/system/beonet-vm-boot.service" <<'UNIT'
[Unit]
Description=beonet VM lab: root key and management NIC from the kernel command line
DefaultDependencies=no
After=systemd-udevd.service systemd-udev-trigger.service local-fs.target
Before=ssh.service network-pre.target
Wants=network-pre.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/beonet-vm-boot
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
UNIT
mount_in "$root"
in_chroot() { local r=$1; shift; DEBIAN_FRONTEND=noninteractive chroot "$r" "$@"; }
in_chroot "$root" systemctl enable beonet-vm-boot.service nftables.service >/dev/null 2>&1
in_chroot "$root" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
  systemd-networkd-wait-online.service >/dev/null 2>&1 || true
in_chroot "$root" passwd -l root >/dev/null
# A small initramfs: the kernel has ext4 and virtio-pci built in; the root disk's driver
# and the NICs' (so that every NIC is there when beonet-vm-boot looks for the management
# one, as with Debian's MODULES=most, which makes an 18 MB initramfs every TCG boot unpacks).
printf 'MODULES=list\n' >"$root/etc/initramfs-tools/conf.d/beonet-vm"
printf '%s\n' virtio_blk virtio_net >>"$root/etc/initramfs-tools/modules"
in_chroot "$root" update-initramfs -u -k all >>"$log" 2>&1
in_chroot "$root" apt-get update -q >>"$log" 2>&1
unmount "$root"

# The variant's own network manager, set up as its distribution leaves it.
configure_variant() {
  local v=$1 r=$2 pkgs
  read -r -a pkgs <<<"$(extra_packages "$v")"
  if [ ${#pkgs[@]} -gt 0 ]; then
    say "$v variant: installing ${pkgs[*]}"
    in_chroot "$r" apt-get install -y -q --no-install-recommends "${pkgs[@]}" >>"$log" 2>&1 \
      || { tail -20 "$log" >&2; echo "beonet vm-image: installing ${pkgs[*]} failed" >&2; exit 1; }
  fi
  case "$v" in
    networkmanager)
      in_chroot "$r" systemctl disable systemd-networkd.service >/dev/null 2>&1 || true
      in_chroot "$r" systemctl enable NetworkManager.service >/dev/null 2>&1
      in_chroot "$r" systemctl mask NetworkManager-wait-online.service >/dev/null 2>&1 || true
      # No automatic DHCP profiles: only beonet's keyfiles configure NICs.
      printf '[main]\nno-auto-default=*\n' > "$r/etc/NetworkManager/conf.d/90-beonet-lab.conf" ;;
    netplan)
      in_chroot "$r" systemctl enable systemd-networkd.service >/dev/null 2>&1
      # As an Ubuntu server leaves it: a netplan file naming the renderer.
      printf 'network:\n  version: 2\n  renderer: networkd\n' > "$r/etc/netplan/01-lab.yaml"
      chmod 600 "$r/etc/netplan/01-lab.yaml" ;;
    ifupdown)
      in_chroot "$r" systemctl disable systemd-networkd.service >/dev/null 2>&1 || true
      in_chroot "$r" systemctl enable networking.service >/dev/null 2>&1
      # As the Debian installer leaves it (the management NIC is set up at boot
      # by beonet-vm-boot, outside any manager).
      printf '%s\n' '# The loopback network interface' 'source /etc/network/interfaces.d/*' '' \
        'auto lo' 'iface lo inet loopback' > "$r/etc/network/interfaces" ;;
    *)
      in_chroot "$r" systemctl enable systemd-networkd.service >/dev/null 2>&1 ;;
  esac
}

for v in "${todo[@]}"; do
  vroot=$work/$v
  cp -a "$root" "$vroot"
  mount_in "$vroot"
  configure_variant "$v" "$vroot"
  unmount "$vroot"
  rm -rf "$vroot"/var/cache/apt/archives/*.deb "$vroot"/var/lib/apt/lists/*
  rm -rf "${CACHE:?}/$v.new"; mkdir -p "$CACHE/$v.new"
  kernels=("$vroot"/boot/vmlinuz-*) initrds=("$vroot"/boot/initrd.img-*)
  cp "${kernels[-1]}" "$CACHE/$v.new/vmlinuz"
  cp "${initrds[-1]}" "$CACHE/$v.new/initrd.img"
  say "$v: mkfs.ext4 -d ($SIZE sparse)"
  truncate -s "$SIZE" "$CACHE/$v.new/disk.img"
  mkfs.ext4 -q -F -L beonet-root -d "$vroot" "$CACHE/$v.new/disk.img"
  stamp "$v" > "$CACHE/$v.new/stamp"
  rm -rf "${CACHE:?}/$v" "$vroot"; mv "$CACHE/$v.new" "$CACHE/$v"
  say "$v: built $CACHE/$v (disk.img, vmlinuz, initrd.img) at $(( $(date +%s) - start )) s"
done
