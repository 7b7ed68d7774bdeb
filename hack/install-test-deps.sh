#!/usr/bin/env bash
# Installs what the tests need beyond Go, idempotently: ansible-core (ansible-inventory parses
# every rendered inventory). Needs root, or sudo, for apt-get.
set -euo pipefail

need=()
command -v ansible-inventory >/dev/null 2>&1 || need+=(ansible-core)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "install-test-deps: installing ${need[*]} with apt-get" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
command -v ansible-inventory >/dev/null
