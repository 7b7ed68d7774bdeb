#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kubectl) from the Go module proxy,
# idempotently, and links it into bin/k8s/ for envtest (KUBEBUILDER_ASSETS) and `make dev-up`.
#
# Prebuilt binaries cannot be downloaded here, so each one is built from its Go module in a
# throwaway wrapper module. The results are cached by version in the user's cache directory, so
# a fresh clone on the same machine (CI) links them instead of rebuilding (about 5 minutes on
# 2 cores from a cold module cache).
#
#   etcd           go.etcd.io/etcd/server/v3 (its own go.mod has relative replaces, which is
#                  why `go install pkg@version` refuses it; a wrapper needs none)
#   kube-apiserver k8s.io/kubernetes, with one replace per staging module pointing at the
#   kubectl        published v0.x tag of the same release (read from kubernetes' own go.mod)
#   helm           helm.sh/helm/v3 (no replace directives)
#   registry       CNCF Distribution, github.com/distribution/distribution/v3
#   argo           Argo's workflow-controller and CLI (only with the argument `argo`)
#   node           kubelet, kube-scheduler, kube-controller-manager and Argo's executor
#                  argoexec (only with `node`)
set -euo pipefail

ETCD_VERSION="${ETCD_VERSION:-v3.5.21}"
# KUBE_VERSION and ARGO_VERSION: the product's own, from its go.mod.
source "$(dirname "$0")/versions.sh"
HELM_VERSION="${HELM_VERSION:-v3.18.6}"
DISTRIBUTION_VERSION="${DISTRIBUTION_VERSION:-v3.0.0}"

root="$(cd "$(dirname "$0")/.." && pwd)"
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

build_etcd() {
  local dir="$cache/build-etcd"
  rm -rf "$dir" && mkdir -p "$dir"
  cat >"$dir/go.mod" <<EOF
module bpa.local/build-etcd

go 1.23

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
EOF
  say "building etcd $ETCD_VERSION (about 1 minute)"
  run_build "etcd $ETCD_VERSION" "$dir/build.log" \
    env -C "$dir" CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off \
    go build -trimpath -o "$cache/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$cache/etcd.tmp" "$cache/etcd"
}

# build_kube CMD... builds Kubernetes commands (k8s.io/kubernetes/cmd/CMD) into the cache.
build_kube() {
  local dir="$cache/build-kube"
  rm -rf "$dir" && mkdir -p "$dir"
  say "reading k8s.io/kubernetes $KUBE_VERSION's go.mod"
  local gomod
  gomod="$(env -C "$dir" GOFLAGS=-mod=mod GOWORK=off go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
    sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
  [ -f "$gomod" ] || { say "could not download k8s.io/kubernetes $KUBE_VERSION"; return 1; }
  local staging="v0.${KUBE_VERSION#v1.}"
  {
    echo "module bpa.local/build-kube"
    echo
    echo "go 1.24.0"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/[a-z0-9-]*$#\t\1 => \1 '"$staging"'#p' "$gomod"
    echo ")"
  } >"$dir/go.mod"
  local n
  n="$(grep -c " => " "$dir/go.mod")"
  say "wrapper module has $n staging replaces pointing at $staging"
  local minor="${KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  say "building $* $KUBE_VERSION (about 4 minutes on 2 cores from a cold cache)"
  rm -rf "$cache/kube.tmp" && mkdir -p "$cache/kube.tmp"
  run_build "$* $KUBE_VERSION" "$dir/build.log" \
    env -C "$dir" CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off \
    go build -trimpath -ldflags "$ldflags" -o "$cache/kube.tmp/" \
    $(printf 'k8s.io/kubernetes/cmd/%s ' "$@")
  for b in "$@"; do
    mv "$cache/kube.tmp/$b" "$cache/$b"
  done
  rmdir "$cache/kube.tmp"
}

# build_argo builds Argo's commands (the workflow-controller, the executor and the argo CLI) in
# a wrapper module that copies the one replace line of Argo's own go.mod (tablewriter). The CLI's
# `ui` package embeds `ui/dist/app`, the UI's build output, which the module does not carry: as
# Argo's own Makefile does when static files are off, a writable copy of the module gets a
# placeholder index.html and the wrapper replaces the module with that copy.
build_argo() {
  local dir="$argo_cache/build"
  rm -rf "$dir" && mkdir -p "$dir"
  local src
  src="$(env -C "$dir" GOFLAGS=-mod=mod GOWORK=off go mod download -json "github.com/argoproj/argo-workflows/v3@$ARGO_VERSION" |
    sed -n 's/.*"Dir": "\(.*\)",*/\1/p')"
  [ -d "$src" ] || { say "could not download argo-workflows $ARGO_VERSION"; return 1; }
  cp -r "$src" "$dir/argo-workflows"
  chmod -R u+w "$dir/argo-workflows"
  # Argo's repository has signal_linux.go as a symlink to signal_darwin.go; module zips drop
  # symlinks, so argoexec does not build for linux from the module alone. Restore it.
  local osspecific="$dir/argo-workflows/workflow/executor/osspecific"
  [ -e "$osspecific/signal_linux.go" ] || ln -s signal_darwin.go "$osspecific/signal_linux.go"
  mkdir -p "$dir/argo-workflows/ui/dist/app"
  echo "Built without static files" >"$dir/argo-workflows/ui/dist/app/index.html"
  {
    echo "module bpa.local/build-argo"
    echo
    echo "go 1.25.7"
    echo
    echo "require github.com/argoproj/argo-workflows/v3 $ARGO_VERSION"
    echo
    echo "replace github.com/argoproj/argo-workflows/v3 => ./argo-workflows"
    echo
    echo "replace github.com/olekukonko/tablewriter => github.com/olekukonko/tablewriter v0.0.5"
  } >"$dir/go.mod"
  local bin="$1"
  say "building Argo's $bin $ARGO_VERSION (a few minutes on 2 cores)"
  run_build "$bin $ARGO_VERSION" "$dir/build.log" \
    env -C "$dir" CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off \
    go build -trimpath -ldflags "-s -w -X github.com/argoproj/argo-workflows/v3.version=$ARGO_VERSION" \
    -o "$argo_cache/$bin.tmp" "github.com/argoproj/argo-workflows/v3/cmd/$bin"
  mv "$argo_cache/$bin.tmp" "$argo_cache/$bin"
  rm -rf "$dir"
}

# build_tool DIR NAME MODULE VERSION PACKAGE [LDFLAGS] builds one command of a module without
# replace directives in a wrapper module requiring it, into DIR/NAME.
build_tool() {
  local out="$1" name="$2" module="$3" version="$4" pkg="$5" ldflags="${6:-}"
  local dir="$out/build"
  rm -rf "$dir" && mkdir -p "$dir"
  printf 'module bpa.local/build-%s\n\ngo 1.24.0\n\nrequire %s %s\n' "$name" "$module" "$version" >"$dir/go.mod"
  say "building $name $version (about a minute on 2 cores)"
  run_build "$name $version" "$dir/build.log" \
    env -C "$dir" CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off \
    go build -trimpath -ldflags "-s -w $ldflags" -o "$out/$name.tmp" "$pkg"
  mv "$out/$name.tmp" "$out/$name"
  rm -rf "$dir"
}

mkdir -p "$cache"
# One build at a time per cache: a second make (another clone, say) waits for the first.
exec 9>"$cache/.lock"
flock 9

[ -x "$cache/etcd" ] || build_etcd
{ [ -x "$cache/kube-apiserver" ] && [ -x "$cache/kubectl" ]; } || build_kube kube-apiserver kubectl
rm -rf "$cache/build-etcd" "$cache/build-kube"

mkdir -p "$link_dir"
for b in etcd kube-apiserver kubectl; do
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
[ -x "$helm_cache/helm" ] || build_tool "$helm_cache" helm helm.sh/helm/v3 "$HELM_VERSION" helm.sh/helm/v3/cmd/helm \
  "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION $(for p in pkg/chartutil pkg/lint/rules; do
    printf -- '-X helm.sh/helm/v3/%s.k8sVersionMajor=1 -X helm.sh/helm/v3/%s.k8sVersionMinor=%s ' "$p" "$p" "$kube_minor"
  done)"
ln -sfn "$helm_cache/helm" "$link_dir/helm"
registry_cache="$cache_base/distribution-$DISTRIBUTION_VERSION"
mkdir -p "$registry_cache"
[ -x "$registry_cache/registry" ] || build_tool "$registry_cache" registry github.com/distribution/distribution/v3 \
  "$DISTRIBUTION_VERSION" github.com/distribution/distribution/v3/cmd/registry \
  "-X github.com/distribution/distribution/v3/version.version=$DISTRIBUTION_VERSION"
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
  rm -rf "$cache/build-kube"
  for b in kubelet kube-scheduler kube-controller-manager; do
    ln -sfn "$cache/$b" "$link_dir/$b"
  done
fi
if [ -n "$want_argo" ]; then
  argo_cache="$cache_base/argo-$ARGO_VERSION"
  mkdir -p "$argo_cache"
  argo_bins=(workflow-controller argo)
  [ -z "$want_node" ] || argo_bins+=(argoexec)
  for b in "${argo_bins[@]}"; do
    [ -x "$argo_cache/$b" ] || build_argo "$b"
    ln -sfn "$argo_cache/$b" "$link_dir/$b"
  done
fi
echo "$link_dir"
