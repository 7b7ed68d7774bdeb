#!/usr/bin/env bash
# Writes a Debian root filesystem as an uncompressed tar, from the machine's own apt sources:
# mmdebstrap's minbase variant with PACKAGES, without documentation, manual pages or locales.
#   hack/debian-rootfs.sh SUITE PACKAGES OUT.tar
# OUT.tar appears only once whole. The images of the end-to-end suite's node and of the test
# cluster start from one (hack/node-images.sh, hack/kubespray-downloads.sh); their callers
# key their caches.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: hack/debian-rootfs.sh SUITE PACKAGES OUT.tar" >&2; exit 2; }
suite="$1" packages="$2" out="$3"
command -v mmdebstrap >/dev/null || { echo "debian-rootfs: mmdebstrap is missing: run hack/install-test-deps.sh" >&2; exit 1; }
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list
mmdebstrap --quiet --format=tar --variant=minbase --include="$packages" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --aptopt='Acquire::Check-Valid-Until "false"' \
  "$suite" "$out.tmp" "$sources"
mv "$out.tmp" "$out"
