#!/usr/bin/env bash
# Builds Kubernetes' pause (build/pause/linux/pause.c of the k8s.io/kubernetes module that
# hack/tools/kubernetes pins), static with gcc as its Makefile does, cached by version in the
# user's cache directory, and prints its path. The end-to-end suite's node runs it as the pod
# sandbox; the test cluster's pause image (hack/kubespray-downloads.sh) holds it.
#   hack/pause.sh   (PAUSE_VERSION, default 3.10.1: the version stamped into it)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/hack/versions.sh" # KUBE_VERSION
PAUSE_VERSION="${PAUSE_VERSION:-3.10.1}"
cache_base="${BPA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/bpa-workflow-controller}"
pause_cache="$cache_base/pause-$PAUSE_VERSION-kube-$KUBE_VERSION"
if [ ! -x "$pause_cache/pause" ]; then
  src="$(env -C "$root/hack/tools/kubernetes" GOWORK=off go mod download -json k8s.io/kubernetes | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')"
  mkdir -p "$pause_cache"
  echo "pause: building $PAUSE_VERSION from $src/build/pause/linux/pause.c" >&2
  gcc -Os -Wall -Werror -static -s -DVERSION="v$PAUSE_VERSION" -o "$pause_cache/pause.tmp" "$src/build/pause/linux/pause.c"
  mv "$pause_cache/pause.tmp" "$pause_cache/pause"
fi
echo "$pause_cache/pause"
