#!/usr/bin/env bash
# Builds the project's OCI images into an OCI image layout (default bin/images), without a
# Docker daemon: the controller binary for linux, reproducibly (no build id, no paths, no VCS
# stamp: the revision is a label instead), kubectl from the control plane's cache (the same
# Kubernetes module version the tests run) and CNCF Distribution's registry from the same cache,
# then hack/image assembles the three images.
#   hack/image.sh [LAYOUT]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/bin/images}"
version="${VERSION:-v0.1.0}"
source "$root/hack/versions.sh" # KUBE_VERSION, ARGO_VERSION
kube_version="$KUBE_VERSION"
distribution_version="${DISTRIBUTION_VERSION:-v3.0.0}"
cd "$root"
hack/control-plane.sh >/dev/null
bindir="$(mktemp -d)"
trap 'rm -rf "$bindir"' EXIT
start=$SECONDS
CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false -ldflags "-s -w -buildid=" \
  -o "$bindir/bpa-workflow-controller" ./cmd/bpa-workflow-controller
revision="$(git rev-parse HEAD 2>/dev/null || true)"
go run ./hack/image build -o "$out" \
  --controller "$bindir/bpa-workflow-controller" --kubectl bin/k8s/kubectl --registry bin/k8s/registry \
  --controller-ref "bpa-workflow-controller:$version" --kubectl-ref "bpa-kubectl:$kube_version" \
  --registry-ref "bpa-registry:$distribution_version" \
  --revision "$revision"
echo "image: built in $((SECONDS - start)) s" >&2
