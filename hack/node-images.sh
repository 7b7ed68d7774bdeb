#!/usr/bin/env bash
# Builds every image the end-to-end suite's real node runs, without Docker, into one archive for
# `ctr images import` (default bin/node-images.tar):
#   bpa-workflow-controller, bpa-kubectl,  the project's images (hack/image.sh)
#   bpa-registry
#   bpa-pause                              Kubernetes' pause.c from the k8s.io/kubernetes module,
#                                          built static with gcc as its Makefile does (hack/pause.sh)
#   argoexec                               Argo's executor, from its module (hack/control-plane.sh node)
#   kubespray-standin                      a Debian bookworm root filesystem (mmdebstrap) with
#                                          ansible-core and openssh-client, and the stand-in
#                                          playbooks of test/e2e/kubespray in /kubespray
# pause and the root filesystem are cached by version in the user's cache directory; the root
# filesystem comes from the machine's own apt sources (about 1 minute the first time).
#   hack/node-images.sh [ARCHIVE]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/bin/node-images.tar}"
source "$root/hack/versions.sh" # KUBE_VERSION, ARGO_VERSION
PAUSE_VERSION="${PAUSE_VERSION:-3.10.1}"
SUITE="${KUBESPRAY_STANDIN_SUITE:-bookworm}"
PACKAGES="ansible-core,openssh-client"
cache_base="${BPA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/bpa-workflow-controller}"
say() { echo "node-images: $*" >&2; }
cd "$root"
start=$SECONDS

bin="$(hack/control-plane.sh node)"

pause="$(PAUSE_VERSION="$PAUSE_VERSION" hack/pause.sh)"

# The root filesystem's cache key is everything that decides its content.
key="$(printf '%s %s minbase nodocs' "$SUITE" "$PACKAGES" | sha256sum | cut -c1-12)"
rootfs="$cache_base/kubespray-standin-rootfs-$SUITE-$key.tar"
if [ ! -f "$rootfs" ]; then
  say "building the kubespray stand-in's root filesystem: Debian $SUITE with $PACKAGES (about 1 minute)"
  hack/debian-rootfs.sh "$SUITE" "$PACKAGES" "$rootfs"
fi

hack/image.sh >/dev/null
mkdir -p "$(dirname "$out")"
go run ./hack/image node -o "$out" --layout bin/images --pause "$pause" \
  --argoexec "$bin/argoexec" --argoexec-ref "argoexec:$ARGO_VERSION" \
  --kubespray-rootfs "$rootfs" --kubespray-playbooks test/e2e/kubespray >&2
say "built in $((SECONDS - start)) s"
