#!/usr/bin/env bash
# Lays out hack/tools/argo/src, the copy of Argo's module its go.mod replaces Argo with: the
# module at the version go.mod requires, made buildable as Argo's own Makefile does without
# static files. Argo's repository has signal_linux.go as a symlink to signal_darwin.go, and
# module zips drop symlinks, so argoexec does not build for linux from the module alone; the
# CLI's `ui` package embeds ui/dist/app, the UI's build output, which the module does not carry:
# the folder given as the argument (hack/argo-ui.sh's build), or else a placeholder index.html.
# src is git-ignored and laid out again when missing or laid out with another UI.
#
#   prepare.sh [DIST_APP]
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
version="$(env -C "$dir" GOWORK=off go list -m -f '{{.Version}}' github.com/argoproj/argo-workflows/v3)"
[ -n "$version" ] || { echo "argo/prepare: no argo-workflows version in $dir/go.mod" >&2; exit 1; }
ui="${1:-}"
stamp="$version${ui:+ ui $ui}"
if [ -f "$dir/src/.version" ] && [ "$(cat "$dir/src/.version")" = "$stamp" ]; then
  exit 0
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
printf 'module scratch\n\ngo 1.25.7\n' >"$scratch/go.mod"
module="$(env -C "$scratch" GOFLAGS=-mod=mod GOWORK=off go mod download -json "github.com/argoproj/argo-workflows/v3@$version" |
  sed -n 's/.*"Dir": "\(.*\)",*/\1/p')"
[ -d "$module" ] || { echo "argo/prepare: could not download argo-workflows $version" >&2; exit 1; }
rm -rf "$dir/src.tmp" && cp -r "$module" "$dir/src.tmp" && chmod -R u+w "$dir/src.tmp"
osspecific="$dir/src.tmp/workflow/executor/osspecific"
[ -e "$osspecific/signal_linux.go" ] || ln -s signal_darwin.go "$osspecific/signal_linux.go"
if [ -n "$ui" ]; then
  mkdir -p "$dir/src.tmp/ui/dist" && cp -r "$ui" "$dir/src.tmp/ui/dist/app"
else
  mkdir -p "$dir/src.tmp/ui/dist/app"
  echo "Built without static files" >"$dir/src.tmp/ui/dist/app/index.html"
fi
echo "$stamp" >"$dir/src.tmp/.version"
rm -rf "$dir/src" && mv "$dir/src.tmp" "$dir/src"
