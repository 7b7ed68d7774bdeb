#!/usr/bin/env bash
# Generates every manifest that comes from code into DEST (default: the repository), never by
# hand: our CRDs (controller-gen + hack/crdpatch), the manager's RBAC from the reconcilers'
# markers, metal3's BareMetalHost CRD (controller-gen on metal3's apis module, as metal3 builds
# it) and Argo's minimal CRDs (copied from the argo-workflows module at the pinned version; the
# API server refuses the `full` ones as an invalid schema).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root}"
cd "$root"

mkdir -p "$dest/config/crd/bases" "$dest/config/thirdparty/metal3" "$dest/config/thirdparty/argo"

go tool controller-gen crd paths=./api/... output:crd:artifacts:config="$dest/config/crd/bases"
go run ./hack/crdpatch "$dest"/config/crd/bases/*.yaml

# The manager's role: its reconcilers' markers, and internal/identity's, whose Roles for the
# step pods it can only grant what it holds itself (RBAC's escalation check).
go tool controller-gen rbac:roleName=bpa-workflow-controller "paths=./internal/controller/...;./internal/identity/..." output:rbac:artifacts:config="$dest/config/rbac"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# metal3 serialises a float in its types; it generates with allowDangerousTypes too.
go tool controller-gen crd:allowDangerousTypes=true \
  paths=github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1 output:crd:dir="$scratch"
cp "$scratch/metal3.io_baremetalhosts.yaml" "$dest/config/thirdparty/metal3/"

argo="$(go list -m -f '{{.Dir}}' github.com/argoproj/argo-workflows/v3)"
for f in "$argo"/manifests/base/crds/minimal/argoproj.io_*.yaml; do
  install -m 0644 "$f" "$dest/config/thirdparty/argo/"
done
