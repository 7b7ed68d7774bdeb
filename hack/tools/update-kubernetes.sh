#!/usr/bin/env bash
# Writes the go.mod and go.sum of a module that builds Kubernetes' commands at VERSION:
#   hack/tools/update-kubernetes.sh [VERSION [DIR]]
# DIR defaults to hack/tools/kubernetes (the control plane and node of the tests, at the
# product's Kubernetes, from its k8s.io/api: VERSION's default); hack/tools/kubespray-downloads/
# kubernetes builds what kubespray installs, at kubespray's default release.
# k8s.io/kubernetes points its staging modules at ./staging, which a module cannot, so each is
# replaced by its published tag of the same release, read from kubernetes' own go.mod. The
# comment above `module` and the `tool` block of DIR's go.mod are kept; the go and godebug
# lines are kubernetes' own. Run it when the product, or the kubespray release the tests build
# for, moves to another Kubernetes release.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../versions.sh"
version="${1:-$KUBE_VERSION}"
dir="$(cd "${2:-$here/kubernetes}" && pwd)"
[ -f "$dir/go.mod" ] || { echo "update-kubernetes: $dir/go.mod is missing (write its comment, module line and tool block first)" >&2; exit 1; }
module="$(sed -n 's/^module //p' "$dir/go.mod")"
tools="$(sed -n '/^tool (/,/^)/p' "$dir/go.mod")"
[ -n "$tools" ] || { echo "update-kubernetes: $dir/go.mod has no tool ( ... ) block" >&2; exit 1; }
gomod="$(env -C "$dir" GOFLAGS=-mod=mod GOWORK=off go mod download -json "k8s.io/kubernetes@$version" |
  sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
[ -f "$gomod" ] || { echo "update-kubernetes: could not download k8s.io/kubernetes $version" >&2; exit 1; }
staging="v0.${version#v1.}"
{
  sed -n '1,/^module /{/^module /!p}' "$dir/go.mod"
  echo "module $module"
  echo
  # kubernetes' own go and godebug lines: this module stands in for kubernetes' as the main
  # module, which decides the binaries' GODEBUG defaults, and a go line above the Go of the
  # release's .go-version would forbid the build hack/kubespray-downloads runs with it.
  grep -E '^(go|godebug) ' "$gomod"
  echo
  echo "$tools"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  echo "replace ("
  sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/[a-z0-9-]*$#\t\1 => \1 '"$staging"'#p' "$gomod"
  echo ")"
} >"$dir/go.mod.new"
mv "$dir/go.mod.new" "$dir/go.mod"
env -C "$dir" GOFLAGS=-mod=mod GOWORK=off go mod tidy
echo "update-kubernetes: ${dir#"$(cd "$here/../.." && pwd)/"} pins k8s.io/kubernetes $version"
