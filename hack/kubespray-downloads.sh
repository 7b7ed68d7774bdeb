#!/usr/bin/env bash
# Builds everything kubespray downloads for the test cluster (hack/kubespray-downloads: its
# files and images, from the modules of hack/tools/kubespray-downloads, ../shared/third_party
# and Debian's packages) and prints the folder it wrote, cached by everything that decides it:
#
#   hack/kubespray-downloads.sh [KUBE_VERSION]
#
# The kubespray release is internal/test/testcluster's; KUBE_VERSION ("1.33.4") builds for another
# Kubernetes version than that release's default (an upgrade test's first), in a folder of its
# own: the two folders together serve the upgrade (testcluster.Vars).
#
# The images' root filesystem is Debian bookworm's minbase with what the cluster's images run
# besides their own binary: iptables, ipset, conntrack and kmod for kube-proxy and flannel, a
# shell and cp for flannel's init containers. pause comes from hack/pause.sh. Kubernetes'
# binaries are built with the Go of the release's .go-version (GOTOOLCHAIN, fetched from the Go
# module proxy once), the rest with this machine's (docs/development.md says why). The binaries
# are cached by tool, version and build; a cold build takes about 9 minutes on 2 cores (562 s
# measured from an empty Go build cache, modules already downloaded; 644 s with the modules
# downloaded too), and gives the same bytes as a warm one. When the third-party sources are
# absent it says so and prints nothing (the tests then skip, saying so).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
third_party="${BPA_THIRD_PARTY:-$root/../shared/third_party}"
cache_base="${BPA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/bpa-workflow-controller}"
SUITE=bookworm
PACKAGES="iptables,ipset,conntrack,kmod,ca-certificates"
kube_version="${1:-}"
say() { echo "kubespray-downloads: $*" >&2; }
if [ -n "$kube_version" ] && ! [[ "$kube_version" =~ ^1\.[0-9]+\.[0-9]+$ ]]; then
  say "KUBE_VERSION $kube_version: want MAJOR.MINOR.PATCH (1.33.4)"
  exit 2
fi

version="$(sed -n 's/^const KubesprayVersion = "\(.*\)"$/\1/p' internal/test/testcluster/testcluster.go)"
kubespray_src="$third_party/kubespray-$version.tar.gz"
if [ ! -f "$kubespray_src" ]; then
  say "$kubespray_src is absent: kubespray's downloads cannot be listed or built here (the third-party sources live in ../shared/third_party)"
  exit 0
fi

# kubespray's tree, to ask its download role what it fetches.
tree="$cache_base/kubespray-src-$version"
if [ ! -d "$tree/roles/kubespray_defaults" ]; then
  rm -rf "$tree.tmp" && mkdir -p "$tree.tmp"
  tar -xzf "$kubespray_src" -C "$tree.tmp" --strip-components=1
  mv "$tree.tmp" "$tree"
fi

# pause's version is kubespray's for the Kubernetes minor release: its
# pod_infra_supported_versions, "MINOR PAUSE" a line, newest first (the default's).
tables="$tree/roles/kubespray_defaults/vars/main/main.yml"
pauses="$(awk '/^pod_infra_supported_versions:/ {t=1; next} t && /^[^ ]/ {exit} t && NF {gsub(/[\047:]/, ""); print $1, $2}' "$tables")"
minor="${kube_version%.*}"
[ -n "$minor" ] || minor="$(head -1 <<<"$pauses" | cut -d' ' -f1)"
PAUSE_VERSION="$(awk -v m="$minor" '$1 == m {print $2}' <<<"$pauses")"
if [ -z "$PAUSE_VERSION" ]; then
  say "kubespray $version names no pause for Kubernetes ${minor:-?} ($tables)"
  exit 1
fi

base="$cache_base/kubespray-downloads-base-$SUITE-$(printf '%s %s minbase nodocs' "$SUITE" "$PACKAGES" | sha256sum | cut -c1-12).tar"
if [ ! -f "$base" ]; then
  say "building the images' root filesystem: Debian $SUITE with $PACKAGES (about 1 minute)"
  hack/debian-rootfs.sh "$SUITE" "$PACKAGES" "$base"
fi
pause="$(PAUSE_VERSION=$PAUSE_VERSION hack/pause.sh)"

# The output's key is content only: the builder, the test cluster's options, the tools' pins,
# the sources and the base, named by its own key (so every clone shares it, and a cache moved
# elsewhere keeps it: the base's path is not part of it).
key="$( (cat hack/kubespray-downloads/*.go internal/test/testcluster/*.go pkg/kubespraydownloads/*.go "$0"
  find hack/tools/kubespray-downloads -type f | sort | xargs cat
  for f in "$kubespray_src" "$third_party"/cri-tools-*.tar.gz "$third_party"/flannel-cni-plugin-*.tar.gz "$pause"; do sha256sum <"$f"; done
  echo "$(basename "$base") $kube_version") | sha256sum | cut -c1-12)"
name="kubespray-downloads-$version${kube_version:+-$kube_version}"
out="$cache_base/$name-$key"
if [ ! -f "$out/built.txt" ]; then
  mkdir -p "$cache_base/kubespray-downloads-bin"
  exec 9>"$cache_base/kubespray-downloads-bin/.lock"
  flock 9
  start=$SECONDS
  go run ./hack/kubespray-downloads -kubespray "$tree" -third-party "$third_party" -base "$base" \
    -pause "$pause" -pause-version "$PAUSE_VERSION" -cache "$cache_base/kubespray-downloads-bin" -o "$out" \
    ${kube_version:+-kube-version "$kube_version"}
  say "built in $((SECONDS - start)) s"
  # Earlier outputs (another key) are half a gigabyte each: only the newest is kept.
  for old in "$cache_base/$name-"*; do
    [[ "$old" = "$out" || "${old#"$cache_base/$name-"}" == *-* ]] || rm -rf "$old"
  done
fi
echo "$out"
