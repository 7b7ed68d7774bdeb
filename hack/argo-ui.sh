#!/usr/bin/env bash
# Builds Argo's web UI of the Argo release hack/tools/argo/go.mod pins, from the module's own
# ui/ and the one dependency no registry here serves, argo-ui, at the commit the UI's
# package.json pins (../shared/third_party/argo-ui-<commit>.tar.gz). Every other dependency
# comes from the npm registry at the version the UI's yarn.lock pins, installed by yarn 1 (itself
# pinned below). The output, Argo's ui/dist/app, is cached by Argo's version in the user's cache
# directory; hack/tools/argo/prepare.sh puts it where Argo's CLI embeds it, so `argo server`
# serves the UI of its own release.
#
#   hack/argo-ui.sh          build when missing; print the folder
#   hack/argo-ui.sh --check  print the folder, or say why it cannot be built (exit 3)
#
# About 4 minutes and 2.2 GB of memory on 2 cores (webpack), plus the first yarn install.
set -euo pipefail

YARN_VERSION=1.22.22

root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/hack/tools"
ARGO_VERSION="$(env -C "$tools/argo" GOWORK=off go list -m -f '{{.Version}}' github.com/argoproj/argo-workflows/v3)"
cache_base="${BPA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/bpa-workflow-controller}"
out="$cache_base/argo-ui-$ARGO_VERSION"
third_party="${BPA_THIRD_PARTY:-$root/../shared/third_party}"

say() { echo "argo-ui: $*" >&2; }

if [ -f "$out/app/index.html" ] && [ -f "$out/.built" ]; then
  echo "$out/app"
  exit 0
fi

bash "$tools/argo/prepare.sh"
src="$tools/argo/src/ui"
# The commit the UI pins argo-ui at, as "argo-ui.git#<commit>" in its package.json.
commit="$(sed -n 's/.*"argo-ui": *"[^"]*argo-ui\.git#\([0-9a-f]\{7,40\}\)".*/\1/p' "$src/package.json")"
[ -n "$commit" ] || { say "no argo-ui commit in $src/package.json"; exit 1; }
archive="$third_party/argo-ui-${commit:0:7}.tar.gz"
if [ ! -f "$archive" ]; then
  say "Argo's UI is not built: $archive is missing (argo-ui at $commit, which Argo $ARGO_VERSION's UI needs and no registry here serves)"
  exit 3
fi
for tool in node npm; do
  command -v "$tool" >/dev/null || { say "Argo's UI is not built: $tool is missing (Debian's nodejs and npm)"; exit 3; }
done
[ "${1:-}" != "--check" ] || { echo "$out/app"; exit 0; }

scratch="$cache_base/argo-ui-$ARGO_VERSION.build"
rm -rf "$scratch" && mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
cp -r "$src" "$scratch/ui" && chmod -R u+w "$scratch/ui"
# webpack copies the API's schemas from beside ui/, as in Argo's repository.
for f in api/openapi-spec/swagger.json api/jsonschema/schema.json; do
  mkdir -p "$scratch/$(dirname "$f")" && cp "$tools/argo/src/$f" "$scratch/$f"
done
cd "$scratch/ui"
# argo-ui from the archive; yarn resolves that one entry again and keeps every other one the
# lockfile pins. esbuild's platform binary is an optional dependency: .yarnrc's
# ignore-optional lines would leave webpack without it.
tarball="$(cd "$(dirname "$archive")" && pwd)/$(basename "$archive")"
sed -i "s|\"argo-ui\": *\"[^\"]*\"|\"argo-ui\": \"file:$tarball\"|" package.json
sed -i '/ignore-optional/d; /frozen-lockfile/d' .yarnrc
python3 - "$commit" <<'PY'
import re, sys
commit = sys.argv[1]
lock = open("yarn.lock").read()
# The lockfile entry of argo-ui at the git commit: a stanza from its key line to the blank
# line that ends it.
entry = re.compile(r'^"?argo-ui@[^\n]*' + commit + r'[^\n]*:\n(?:[ \t]+[^\n]*\n)*\n?', re.M)
lock, n = entry.subn("", lock)
if n != 1:
    sys.exit("argo-ui: %d entries of argo-ui at %s in yarn.lock, want 1" % (n, commit))
open("yarn.lock", "w").write(lock)
PY
yarn_dir="$cache_base/yarn-$YARN_VERSION"
if [ ! -x "$yarn_dir/node_modules/.bin/yarn" ]; then
  say "installing yarn $YARN_VERSION from the npm registry"
  npm install --silent --no-audit --no-fund --prefix "$yarn_dir" "yarn@$YARN_VERSION" >&2
fi
yarn="$yarn_dir/node_modules/.bin/yarn"
start=$SECONDS
say "yarn install (Argo $ARGO_VERSION's UI, argo-ui $commit from $(basename "$archive"))"
"$yarn" install --non-interactive --network-timeout 600000 --cache-folder "$cache_base/yarn-cache" >"$scratch/install.log" 2>&1 ||
  { tail -40 "$scratch/install.log" >&2; say "yarn install failed"; exit 1; }
say "yarn build (webpack, about 4 minutes on 2 cores)"
NODE_OPTIONS="--max-old-space-size=3072" "$yarn" build >"$scratch/build.log" 2>&1 ||
  { tail -40 "$scratch/build.log" >&2; say "yarn build failed"; exit 1; }
[ -f dist/app/index.html ] || { say "yarn build wrote no dist/app/index.html"; exit 1; }
rm -rf "$out.tmp" && mkdir -p "$out.tmp" && cp -r dist/app "$out.tmp/app"
echo "$ARGO_VERSION argo-ui $commit" >"$out.tmp/.built"
rm -rf "$out" && mv "$out.tmp" "$out"
say "built in $((SECONDS - start)) s: $out/app"
echo "$out/app"
