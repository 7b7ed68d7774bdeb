#!/usr/bin/env bash
# Builds kubespray's image for the tests, without Docker: hack/kubespray-rootfs.sh's root
# filesystem as an OCI image kubespray:VERSION (working directory /kubespray, as kubespray's
# own), written as an archive for `ctr images import` and cached beside the root filesystem.
#
#   hack/kubespray-image.sh [KUBESPRAY_VERSION]   (default v2.30.0)
#
# Prints the archive's path. Exits 3, saying so, when ../shared/third_party is absent.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="${1:-v2.30.0}"
rc=0
rootfs="$("$root/hack/kubespray-rootfs.sh" "$version")" || rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
archive="${rootfs%.tar}.image.tar"
if [ ! -f "$archive" ] || [ "$archive" -ot "$rootfs" ]; then
  echo "kubespray-image: kubespray:$version from $rootfs" >&2
  (cd "$root" && go run ./hack/image kubespray -o "$archive" --rootfs "$rootfs" --ref "kubespray:$version" >&2)
fi
echo "$archive"
