#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kubectl) from the Go module proxy,
# idempotently, and links it into bin/k8s/ for envtest (KUBEBUILDER_ASSETS) and `make dev-up`.
#
# Prebuilt binaries cannot be downloaded here, so each one is built from its Go module, pinned by
# a module of its own, hack/tools/<tool>/go.mod and go.sum (the version stated there once, read
# back with `go list -m`). The results are cached by version in the user's cache directory, so
# a fresh clone on the same machine (CI) links them instead of rebuilding (about 5 minutes on
# 2 cores from a cold module cache).
#
#   etcd, etcdctl  hack/tools/etcd: go.etcd.io/etcd/server/v3, go.etcd.io/etcd/etcdctl/v3
#   kube-apiserver hack/tools/kubernetes: k8s.io/kubernetes, its staging modules replaced by
#   kubectl        their published tags (hack/tools/update-kubernetes.sh writes it)
#   kubeadm
#   helm           hack/tools/helm: helm.sh/helm/v3
#   registry       hack/tools/distribution: CNCF Distribution
#   argo           hack/tools/argo: Argo's workflow-controller and CLI (only with the argument
#                  `argo`), from the module made buildable by hack/tools/argo/prepare.sh
#   node           kubelet, kube-scheduler and kube-controller-manager (hack/tools/kubernetes)
#                  and Argo's executor argoexec (only with `node`)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/hack/tools"
# tool_version TOOL MODULE is the version hack/tools/TOOL/go.mod pins MODULE at.
tool_version() { env -C "$tools/$1" GOWORK=off go list -m -f '{{.Version}}' "$2"; }
ETCD_VERSION="$(tool_version etcd go.etcd.io/etcd/server/v3)"
KUBE_VERSION="$(tool_version kubernetes k8s.io/kubernetes)"
HELM_VERSION="$(tool_version helm helm.sh/helm/v3)"
DISTRIBUTION_VERSION="$(tool_version distribution github.com/distribution/distribution/v3)"
ARGO_VERSION="$(tool_version argo github.com/argoproj/argo-workflows/v3)"
cache_base="${BPA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/bpa-workflow-controller}"
cache="$cache_base/control-plane/etcd-$ETCD_VERSION-kube-$KUBE_VERSION"
link_dir="$root/bin/k8s"

say() { echo "control-plane: $*" >&2; }

# progress prints a line every 20 s while a long build runs, so nobody thinks it hung.
progress() {
  local what="$1" pid="$2" start=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    sleep 20
    kill -0 "$pid" 2>/dev/null && say "still building $what ($((SECONDS - start)) s)"
  done
}

# run_build NAME LOG CMD... runs CMD in the background with progress lines and shows the log
# only when it fails.
run_build() {
  local what="$1" log="$2"
  shift 2
  local start=$SECONDS
  "$@" >"$log" 2>&1 &
  local pid=$!
  progress "$what" "$pid" &
  local ticker=$!
  local rc=0
  wait "$pid" || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  if [ "$rc" -ne 0 ]; then
    say "building $what failed; its log:"
    cat "$log" >&2
    return "$rc"
  fi
  say "built $what in $((SECONDS - start)) s"
}

# binary_name PACKAGE is the file `go build -o DIR/` names PACKAGE's binary: its last element,
# or the one before a major version suffix (go.etcd.io/etcd/server/v3 builds "server").
binary_name() {
  local p="$1"
  [[ "$p" =~ /v[0-9]+$ ]] && p="${p%/*}"
  echo "${p##*/}"
}

# build TOOL OUT LDFLAGS PACKAGE... builds packages of hack/tools/TOOL's module into directory
# OUT, as that module's go.mod and go.sum pin them.
build() {
  local tool="$1" out="$2" ldflags="$3"
  shift 3
  local names="" p
  for p in "$@"; do names+="$(binary_name "$p") "; done
  rm -rf "$out/.build" && mkdir -p "$out/.build"
  say "building ${names% } from hack/tools/$tool (minutes on 2 cores from a cold module cache)"
  run_build "${names% }" "$out/.build.log" \
    env -C "$tools/$tool" CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=readonly \
    go build -trimpath -ldflags "-s -w $ldflags" -o "$out/.build/" "$@"
  for p in "$@"; do
    mv "$out/.build/$(binary_name "$p")" "$out/$(binary_name "$p")"
  done
  rm -rf "$out/.build" "$out/.build.log"
}

# build_kube CMD... builds Kubernetes commands (k8s.io/kubernetes/cmd/CMD) into the cache, with
# the version stamps Kubernetes' own build sets.
build_kube() {
  local minor="${KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  build kubernetes "$cache" "-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean" \
    $(printf 'k8s.io/kubernetes/cmd/%s ' "$@")
}

# build_argo CMD DIR [UI] builds one of Argo's commands into DIR from the module prepare.sh
# lays out, with the UI's build UI where the command embeds it.
build_argo() {
  bash "$tools/argo/prepare.sh" "${3:-}"
  build argo "$2" "-X github.com/argoproj/argo-workflows/v3.version=$ARGO_VERSION" \
    "github.com/argoproj/argo-workflows/v3/cmd/$1"
}

mkdir -p "$cache"
# One build at a time per cache: a second make (another clone, say) waits for the first.
exec 9>"$cache/.lock"
flock 9

if [ ! -x "$cache/etcd" ]; then
  build etcd "$cache" "" go.etcd.io/etcd/server/v3
  mv "$cache/server" "$cache/etcd"
fi
# etcdctl, for check-etcd-members' tests: the membership a real etcd reports, as its own
# client prints it.
[ -x "$cache/etcdctl" ] || build etcd "$cache" "" go.etcd.io/etcd/etcdctl/v3
{ [ -x "$cache/kube-apiserver" ] && [ -x "$cache/kubectl" ]; } || build_kube kube-apiserver kubectl
# kubeadm, for read-certificates' tests: certificates a real kubeadm made, listed by its own
# check-expiration.
[ -x "$cache/kubeadm" ] || build_kube kubeadm

mkdir -p "$link_dir"
for b in etcd etcdctl kube-apiserver kubectl kubeadm; do
  ln -sfn "$cache/$b" "$link_dir/$b"
done

# helm for the chart's tests (lint, template, install into the local API server) and CNCF
# Distribution's registry, which image pushes are tested against.
# Its default Kubernetes version (for `helm template` and `helm lint`) is set as Helm's own
# Makefile sets it: the minor of the Kubernetes the tests run.
kube_minor="${KUBE_VERSION#v1.}"
kube_minor="${kube_minor%%.*}"
helm_cache="$cache_base/helm-$HELM_VERSION-kube1.$kube_minor"
mkdir -p "$helm_cache"
[ -x "$helm_cache/helm" ] || build helm "$helm_cache" \
  "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION $(for p in pkg/chartutil pkg/lint/rules; do
    printf -- '-X helm.sh/helm/v3/%s.k8sVersionMajor=1 -X helm.sh/helm/v3/%s.k8sVersionMinor=%s ' "$p" "$p" "$kube_minor"
  done)" helm.sh/helm/v3/cmd/helm
ln -sfn "$helm_cache/helm" "$link_dir/helm"
registry_cache="$cache_base/distribution-$DISTRIBUTION_VERSION"
mkdir -p "$registry_cache"
[ -x "$registry_cache/registry" ] || build distribution "$registry_cache" \
  "-X github.com/distribution/distribution/v3/version.version=$DISTRIBUTION_VERSION" github.com/distribution/distribution/v3/cmd/registry
ln -sfn "$registry_cache/registry" "$link_dir/registry"

# Argo's commands only when asked (`hack/control-plane.sh argo`): the end-to-end suite and the
# demo run them; the other tests do not need them. `node` adds what the end-to-end suite's real
# node runs: kubelet, kube-scheduler and kube-controller-manager, and Argo's executor (argoexec)
# for its image.
want_argo="" want_node=""
for arg in "$@"; do
  case "$arg" in
  argo) want_argo=1 ;;
  node) want_argo=1 want_node=1 ;;
  *) say "unknown argument $arg (want: argo, node)"; exit 2 ;;
  esac
done
if [ -n "$want_node" ]; then
  { [ -x "$cache/kubelet" ] && [ -x "$cache/kube-scheduler" ] && [ -x "$cache/kube-controller-manager" ]; } ||
    build_kube kubelet kube-scheduler kube-controller-manager
  for b in kubelet kube-scheduler kube-controller-manager; do
    ln -sfn "$cache/$b" "$link_dir/$b"
  done
fi
if [ -n "$want_argo" ]; then
  argo_cache="$cache_base/argo-$ARGO_VERSION"
  mkdir -p "$argo_cache"
  argo_bins=(workflow-controller)
  [ -z "$want_node" ] || argo_bins+=(argoexec)
  for b in "${argo_bins[@]}"; do
    [ -x "$argo_cache/$b" ] || build_argo "$b" "$argo_cache"
    ln -sfn "$argo_cache/$b" "$link_dir/$b"
  done
  # The CLI is also `argo server`, which serves the UI of its release (hack/argo-ui.sh) when
  # the third-party argo-ui is there; without it, a placeholder page, and the UI's tests skip.
  ui_rc=0
  ui_app="$(bash "$root/hack/argo-ui.sh")" || ui_rc=$?
  case "$ui_rc" in
  0) argo_cli="$argo_cache/with-ui" ;;
  3) argo_cli="$argo_cache/without-ui" ui_app="" ;;
  *) say "Argo's UI failed to build (hack/argo-ui.sh)"; exit 1 ;;
  esac
  mkdir -p "$argo_cli"
  [ -x "$argo_cli/argo" ] || build_argo argo "$argo_cli" "$ui_app"
  ln -sfn "$argo_cli/argo" "$link_dir/argo"
fi
echo "$link_dir"
