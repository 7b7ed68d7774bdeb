#!/usr/bin/env bash
# Builds the site's server image: what a BareMetalHost that metal3 has just provisioned runs,
# for the virtual machines the tests boot under QEMU. From Debian packages only (mmdebstrap), no
# mounting, cached by recipe outside the clone; prints the cache directory, which holds:
#
#   root.qcow2   the root filesystem (ext4, made from a directory with mkfs.ext4 -d), the base
#                of one copy-on-write overlay per machine
#   vmlinuz      Debian's kernel (linux-image-amd64) and its initrd, booted directly by QEMU
#   initrd.img
#
# The image holds Debian 12 with systemd, systemd-networkd asking DHCP on every Ethernet NIC
# (by name: a pod's veth is of type ether too, and a networkd that manages it takes it off the
# CNI bridge, which left every pod unreachable from its own node; found by make e2e-cluster),
# openssh-server, python3 and python3-apt (what Ansible needs), sudo, ping (iputils-ping, in
# every Debian standard install; kubespray pings each node's access address), and the admin user
# "bpa" (passwordless sudo) that metal3's user data would create. It holds no host keys and an
# empty /etc/machine-id: each machine makes its own on first boot. Like metal3's config drive,
# a small disk labelled BPA-SEED carries what differs per machine (its hostname, the site's SSH
# public key for the admin user): bpa-seed.service copies it in before sshd starts.
# /etc/resolv.conf is empty (mmdebstrap leaves the building machine's): the site runs no DNS
# server, and a nameserver out of reach costs every lookup its timeouts (sudo looks up the
# host's own name each time). update-initramfs is off: QEMU boots the kernel and initrd from beside the image, so the copy in
# /boot is never read, and regenerating it under emulation (every package with an initramfs
# hook triggers it, as kubespray's do) took minutes of each run. The root filesystem is 6 GiB
# (sparse): a node's binaries, its images unpacked by containerd and etcd's data fit, with room
# above kubelet's eviction thresholds.
#
# The cache key is this file, hack/vm/ and the suite: change the recipe and the image is built
# again.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
SUITE="${VM_IMAGE_SUITE:-bookworm}"
SIZE="${VM_IMAGE_SIZE:-6G}"
PACKAGES="systemd-sysv,udev,dbus,iproute2,iputils-ping,openssh-server,python3,python3-apt,sudo,apt,ca-certificates,linux-image-amd64,initramfs-tools,zstd"
cache_base="${BPA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/bpa-workflow-controller}"
key="$(cat "$0" "$root"/hack/vm/* | sha256sum | cut -c1-12)"
out="$cache_base/vm-image-$SUITE-$key"
say() { echo "vm-image: $*" >&2; }

if [ -f "$out/root.qcow2" ] && [ -f "$out/vmlinuz" ] && [ -f "$out/initrd.img" ]; then
  echo "$out"
  exit 0
fi
for tool in mmdebstrap mkfs.ext4 qemu-img; do
  command -v "$tool" >/dev/null || { say "$tool is missing: run hack/install-test-deps.sh"; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { say "building the image needs root (mmdebstrap keeps the files' owners)"; exit 1; }

mkdir -p "$cache_base"
exec 9>"$cache_base/.vm-image.lock"
flock 9
[ -f "$out/root.qcow2" ] && { echo "$out"; exit 0; }

start=$SECONDS
work="$(mktemp -d "$cache_base/.vm-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list

say "building Debian $SUITE for the site's servers (a few minutes: the kernel and its initrd)"
mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --aptopt='Acquire::Check-Valid-Until "false"' \
  --customize-hook='chroot "$1" useradd --create-home --shell /bin/bash --groups sudo bpa' \
  --customize-hook='echo "bpa ALL=(ALL) NOPASSWD:ALL" >"$1/etc/sudoers.d/bpa" && chmod 0440 "$1/etc/sudoers.d/bpa"' \
  --customize-hook='printf "[Match]\nName=en* eth*\nType=ether\n\n[Network]\nDHCP=ipv4\n" >"$1/etc/systemd/network/10-site.network"' \
  --customize-hook='chroot "$1" systemctl enable systemd-networkd.service' \
  --customize-hook='printf "/dev/vda / ext4 defaults 0 1\n" >"$1/etc/fstab"' \
  --customize-hook='rm -f "$1"/etc/ssh/ssh_host_* && : >"$1/etc/machine-id" && rm -f "$1/var/lib/dbus/machine-id"' \
  --customize-hook='printf "localhost\n" >"$1/etc/hostname"' \
  --customize-hook=': >"$1/etc/resolv.conf"' \
  --customize-hook="upload $root/hack/vm/bpa-seed.service /etc/systemd/system/bpa-seed.service" \
  --customize-hook="upload $root/hack/vm/bpa-seed /usr/local/sbin/bpa-seed" \
  --customize-hook="upload $root/hack/vm/bpa-host-keys.service /etc/systemd/system/bpa-host-keys.service" \
  --customize-hook='chmod 0755 "$1/usr/local/sbin/bpa-seed" && chroot "$1" systemctl enable bpa-seed.service bpa-host-keys.service' \
  --customize-hook='cp -L "$1"/vmlinuz "$1"/initrd.img "$1/root/"' \
  --customize-hook='sed -i "s/^update_initramfs=.*/update_initramfs=no/" "$1/etc/initramfs-tools/update-initramfs.conf" && grep -qx update_initramfs=no "$1/etc/initramfs-tools/update-initramfs.conf"' \
  "$SUITE" "$work/rootfs" "$sources"

mv "$work/rootfs/root/vmlinuz" "$work/rootfs/root/initrd.img" "$work/"
say "making the ext4 root filesystem ($SIZE) from the directory, without mounting it"
truncate -s "$SIZE" "$work/root.raw"
mkfs.ext4 -q -L root -d "$work/rootfs" "$work/root.raw"
qemu-img convert -q -O qcow2 "$work/root.raw" "$work/root.qcow2"
mkdir -p "$out.tmp"
mv "$work/root.qcow2" "$work/vmlinuz" "$work/initrd.img" "$out.tmp/"
rm -rf "$out" && mv "$out.tmp" "$out"
say "built in $((SECONDS - start)) s: $(du -sh "$out" | cut -f1)"
echo "$out"
