#!/usr/bin/env bash
# Installs what the tests need beyond Go, idempotently: ansible-core (ansible-inventory parses
# every rendered inventory) and openssh-server (the SSH steps are tested against a real sshd on
# 127.0.0.1; the package's own service is not started). Needs root, or sudo, for apt-get.
set -euo pipefail

need=()
command -v ansible-inventory >/dev/null 2>&1 || need+=(ansible-core)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
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
[ -x /usr/sbin/sshd ]
