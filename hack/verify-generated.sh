#!/usr/bin/env bash
# Fails when the committed generated files (CRDs, deepcopy) differ from what the markers
# generate now. Regenerates into a scratch directory; the working tree is not touched.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

go tool controller-gen crd paths=./api/... output:crd:artifacts:config="$scratch/crd"
go run ./hack/crdpatch "$scratch"/crd/*.yaml
if ! diff -r "$scratch/crd" config/crd/bases; then
  echo "verify: config/crd/bases is stale: run 'make manifests' and commit the result" >&2
  exit 1
fi

cp -r api "$scratch/api"
go tool controller-gen object paths=./api/... 
if ! diff -r "$scratch/api" api >/dev/null; then
  diff -r "$scratch/api" api || true
  rm -rf api && cp -r "$scratch/api" api
  echo "verify: api/v1alpha1/zz_generated.deepcopy.go is stale: run 'make generate' and commit the result" >&2
  exit 1
fi
echo "verify: generated files are up to date"
