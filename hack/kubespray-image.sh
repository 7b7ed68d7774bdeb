#!/usr/bin/env bash
# Builds kubespray's images for the tests, without Docker: for each release, hack/kubespray-rootfs.sh's
# root filesystem as an OCI image kubespray:VERSION (working directory /kubespray, as kubespray's
# own), written as an archive for `ctr images import` and cached beside the root filesystem.
#
#   hack/kubespray-image.sh [KUBESPRAY_VERSION...]   (default v2.30.0)
#
# Prints the archives' paths, one per line; prints nothing, saying why on stderr, when
# ../shared/third_party is absent (the tests then skip, saying so).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
[ "$#" -gt 0 ] || set -- v2.30.0
for version in "$@"; do
  rc=0
  rootfs="$("$root/hack/kubespray-rootfs.sh" "$version")" || rc=$?
  [ "$rc" -eq 3 ] && exit 0 # the sources are absent: the script said so
  [ "$rc" -eq 0 ] || exit "$rc"
  archive="${rootfs%.tar}.image.tar"
  if [ ! -f "$archive" ] || [ "$archive" -ot "$rootfs" ]; then
    echo "kubespray-image: kubespray:$version from $rootfs" >&2
    (cd "$root" && go run ./hack/image kubespray -o "$archive" --rootfs "$rootfs" --ref "kubespray:$version" >&2)
  fi
  echo "$archive"
done
