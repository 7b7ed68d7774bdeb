#!/usr/bin/env bash
# Installs what the tests need beyond Go, idempotently: ansible-core (ansible-inventory parses
# every rendered inventory), shellcheck (run-kubespray's scripts), openssh-server (the SSH steps are tested against a real sshd; the
# package's own service is not started), dnsmasq-base (the site's DHCP server), apt-utils (apt-ftparchive builds the test nodes' package repositories),
# containerd, runc, containernetworking-plugins and mmdebstrap (the end-to-end suite's node),
# qemu-system-x86 and qemu-utils (the site's servers as virtual machines), chromium, nodejs and
# npm (Argo's UI, built from its source and used in a browser).
# Needs root, or sudo, for apt-get.
set -euo pipefail

need=()
command -v ansible-inventory >/dev/null 2>&1 || need+=(ansible-core)
# run-kubespray's scripts are checked by shellcheck.
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
# The site: dnsmasq hands out the servers' addresses by MAC.
command -v dnsmasq >/dev/null 2>&1 || need+=(dnsmasq-base)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
# The SSH steps' tests run the real apt-get on test nodes with a file: repository built by
# dpkg-deb (dpkg) and apt-ftparchive (apt-utils).
command -v apt-ftparchive >/dev/null 2>&1 || need+=(apt-utils)
# The end-to-end suite's node: containerd and runc run the pods (their services are not
# started: the suite starts its own containerd), the CNI bridge plugin wires them, nsenter
# (util-linux) starts them in the node's network namespace, and mmdebstrap builds the kubespray
# stand-in image's Debian root filesystem.
command -v containerd >/dev/null 2>&1 || need+=(containerd)
command -v runc >/dev/null 2>&1 || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
# The site's servers are virtual machines: QEMU's software emulation runs them (qemu-system-x86,
# qemu-img from qemu-utils), and hack/vm-image.sh makes their ext4 image (mkfs.ext4: e2fsprogs).
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
command -v qemu-img >/dev/null 2>&1 || need+=(qemu-utils)
command -v mkfs.ext4 >/dev/null 2>&1 || need+=(e2fsprogs)
# The node's pause image is built static from Kubernetes' pause.c, as its Makefile does.
command -v gcc >/dev/null 2>&1 || need+=(gcc)
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -f /usr/lib/aarch64-linux-gnu/libc.a ] || need+=(libc6-dev)
# The test cluster's runc is static with seccomp, as upstream's release: libseccomp's static
# library and pkg-config, which its Go binding asks for it.
[ -f /usr/lib/x86_64-linux-gnu/libseccomp.a ] || [ -f /usr/lib/aarch64-linux-gnu/libseccomp.a ] || need+=(libseccomp-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
# The scale run's benchmark (make bench-scale) logs in to simulated nodes, sshd in network
# namespaces of this machine, as root with kubespray's become (sudo), and kubespray's
# preinstall pings each node's address.
command -v sudo >/dev/null 2>&1 || need+=(sudo)
command -v ping >/dev/null 2>&1 || need+=(iputils-ping)
# Argo's UI in a real browser (the end-to-end suite): Debian's Chromium, headless; and Node.js
# and npm, which build that UI from its source (hack/argo-ui.sh).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
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
