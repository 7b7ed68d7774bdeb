#!/usr/bin/env bash
# Fails when the committed generated files (CRDs, RBAC, third-party CRDs, deepcopy) differ from
# what the code generates now. Regenerates into a scratch directory; the tree is not touched.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

hack/manifests.sh "$scratch"
stale=0
chart=charts/bpa-workflow-controller
for d in config/crd/bases config/rbac config/thirdparty/metal3 config/thirdparty/argo \
  $chart/crds $chart/files $chart/files/workflows $chart/templates; do
  # Only the generated files count: kustomization.yaml and hand-written RBAC live beside them.
  for f in "$scratch/$d"/*.yaml; do
    [ -f "$f" ] || continue
    if ! diff -u "$d/$(basename "$f")" "$f"; then
      echo "verify: $d/$(basename "$f") is stale: run 'make manifests' and commit the result" >&2
      stale=1
    fi
  done
done
# A copy whose source was deleted is stale too.
for d in $chart/crds $chart/files/workflows; do
  for f in "$d"/*.yaml; do
    if [ ! -f "$scratch/$d/$(basename "$f")" ]; then
      echo "verify: $f has no source any more: run 'make manifests' and commit the result" >&2
      stale=1
    fi
  done
done

mkdir -p "$scratch/api"
cp api/v1alpha1/*.go "$scratch/api/"
go tool controller-gen object paths=./api/...
if ! diff -u "$scratch/api/zz_generated.deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go; then
  cp "$scratch/api/zz_generated.deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go
  echo "verify: api/v1alpha1/zz_generated.deepcopy.go is stale: run 'make generate' and commit the result" >&2
  stale=1
fi
[ "$stale" -eq 0 ] || exit 1
echo "verify: generated files are up to date"
