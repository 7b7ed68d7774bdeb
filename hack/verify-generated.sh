#!/usr/bin/env bash
# Fails when the committed generated files (CRDs, RBAC, third-party CRDs, deepcopy, the CLI
# reference and the DAG pictures of the docs) differ from what the code generates now.
# Regenerates into a scratch directory; the tree is never touched, even when interrupted.
set -euo pipefail
# controller-gen as hack/tools/controller-gen/go.mod pins it.
controller_gen=(go tool -modfile="$(cd "$(dirname "$0")/.." && pwd)/hack/tools/controller-gen/go.mod" controller-gen)
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

# The deepcopy is generated in a copy of the module holding only api/ (a leaf: it imports
# nothing else of ours), so the tree is never written, even when this script is interrupted.
module="$scratch/module"
mkdir -p "$module/api"
cp go.mod go.sum "$module/"
cp -r api/v1alpha1 "$module/api/"
(cd "$module" && "${controller_gen[@]}" object paths=./api/...)
if ! diff -u api/v1alpha1/zz_generated.deepcopy.go "$module/api/v1alpha1/zz_generated.deepcopy.go"; then
  echo "verify: api/v1alpha1/zz_generated.deepcopy.go is stale: run 'make generate' and commit the result" >&2
  stale=1
fi
# The documentation that comes from code: the CLI reference and the DAG pictures.
go run ./hack/docgen -src . -dest "$scratch/docs-out"
for f in docs/cli.md README.md docs/architecture.md; do
  if ! diff -u "$f" "$scratch/docs-out/$f"; then
    echo "verify: $f is stale: run 'make docs' and commit the result" >&2
    stale=1
  fi
done
[ "$stale" -eq 0 ] || exit 1
echo "verify: generated files are up to date"
