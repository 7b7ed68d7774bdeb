#!/usr/bin/env bash
# Writes hack/tools/kubernetes/go.mod and go.sum for Kubernetes VERSION (default: the product's,
# from its k8s.io/api): k8s.io/kubernetes points its staging modules at ./staging, which a
# module cannot, so each is replaced by its published tag of the same release, read from
# kubernetes' own go.mod. Run it when the product moves to another Kubernetes release.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../versions.sh"
version="${1:-$KUBE_VERSION}"
dir="$here/kubernetes"
gomod="$(env -C "$dir" GOFLAGS=-mod=mod GOWORK=off go mod download -json "k8s.io/kubernetes@$version" |
  sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
[ -f "$gomod" ] || { echo "update-kubernetes: could not download k8s.io/kubernetes $version" >&2; exit 1; }
staging="v0.${version#v1.}"
{
  sed -n '1,/^module /{/^module /!p}' "$dir/go.mod"
  echo "module github.com/akraino-edge-stack/bpa-workflow-controller/hack/tools/kubernetes"
  echo
  echo "go 1.25.7"
  echo
  echo "tool ("
  for c in kube-apiserver kubectl kubelet kube-scheduler kube-controller-manager; do printf '\tk8s.io/kubernetes/cmd/%s\n' "$c"; done
  echo ")"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  echo "replace ("
  sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/[a-z0-9-]*$#\t\1 => \1 '"$staging"'#p' "$gomod"
  echo ")"
} >"$dir/go.mod.new"
mv "$dir/go.mod.new" "$dir/go.mod"
env -C "$dir" GOFLAGS=-mod=mod GOWORK=off go mod tidy
echo "update-kubernetes: hack/tools/kubernetes pins k8s.io/kubernetes $version"
