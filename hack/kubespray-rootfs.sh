#!/usr/bin/env bash
# Builds the root filesystem of the kubespray image the tests run, from ../shared/third_party
# and Debian's packages only, laid out as kubespray's own image (its Dockerfile): kubespray's
# playbooks, roles and ansible.cfg in /kubespray (the working directory), ansible-core at the
# version that kubespray release accepts, the Ansible collections kubespray's galaxy.yml names
# (from Debian's `ansible` package), and the Python libraries kubespray's requirements.txt
# names (from Debian: jinja2, yaml, cryptography, jmespath, netaddr), OpenSSH's client.
#
#   hack/kubespray-rootfs.sh [KUBESPRAY_VERSION]   (default v2.30.0)
#
# Prints the path of the root filesystem's tarball, cached by everything that decides its
# content under ~/.cache/bpa-workflow-controller (about 2 minutes the first time). Exits 3,
# saying so, when the third-party sources are absent (a clone without ../shared/third_party beside it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="${1:-v2.30.0}"
third_party="${BPA_THIRD_PARTY:-$root/../shared/third_party}"
cache_base="${BPA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/bpa-workflow-controller}"
SUITE=bookworm
say() { echo "kubespray-rootfs: $*" >&2; }

# The ansible-core each kubespray release accepts (its playbooks/ansible_version.yml).
case "$version" in
  v2.30.0) ansible_core=v2.17.5 ;;
  v2.31.0) ansible_core=v2.18.0rc1 ;;
  *) say "kubespray $version: no ansible-core is known for it (known: v2.30.0, v2.31.0)"; exit 2 ;;
esac
kubespray_src="$third_party/kubespray-$version.tar.gz"
ansible_src="$third_party/ansible-core-$ansible_core.tar.gz"
for f in "$kubespray_src" "$ansible_src"; do
  if [ ! -f "$f" ]; then
    say "$f is absent: kubespray's image cannot be built here (the third-party sources live in ../shared/third_party)"
    exit 3
  fi
done

# Debian's packages: Python and the libraries kubespray and ansible-core need, OpenSSH's client,
# and rsync and sshpass as in kubespray's image.
PACKAGES="python3,python3-jinja2,python3-yaml,python3-cryptography,python3-packaging,python3-resolvelib,python3-netaddr,python3-jmespath,openssh-client,rsync,sshpass,ca-certificates"
# The collections kubespray's galaxy.yml depends on.
COLLECTIONS="ansible/utils ansible/netcommon ansible/posix community/crypto community/general community/docker kubernetes/core"
# The key is content only (no path: every clone of the project shares the cache).
key="$( (printf '%s %s %s %s\n' "$SUITE" "$PACKAGES" "$COLLECTIONS" "$version $ansible_core"
  for f in "$kubespray_src" "$ansible_src" "$0"; do sha256sum <"$f"; done) | sha256sum | cut -c1-12)"
out="$cache_base/kubespray-rootfs-$version-$key.tar"
if [ -f "$out" ]; then
  echo "$out"
  exit 0
fi
for tool in mmdebstrap apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || { say "$tool is missing: run hack/install-test-deps.sh"; exit 1; }
done
mkdir -p "$cache_base"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS

say "unpacking kubespray $version and ansible-core $ansible_core"
tar -xzf "$kubespray_src" -C "$work"
tar -xzf "$ansible_src" -C "$work"
stage="$work/stage"
mkdir -p "$stage/kubespray" "$stage/site-packages" "$stage/bin" "$stage/collections/ansible_collections"
# What kubespray's Dockerfile copies into /kubespray.
(cd "$work/kubespray-$version" && cp -a ./*.yml ./*.cfg roles contrib inventory library extra_playbooks playbooks plugins "$stage/kubespray/")
cp -a "$work/ansible-core-$ansible_core/lib/ansible" "$stage/site-packages/"
# The commands, as pip's entry points make them.
for cmd in ansible:adhoc ansible-config:config ansible-console:console ansible-doc:doc ansible-galaxy:galaxy \
  ansible-inventory:inventory ansible-playbook:playbook ansible-pull:pull ansible-vault:vault; do
  name="${cmd%%:*}" module="${cmd#*:}"
  printf '#!/usr/bin/python3\nimport sys\nfrom ansible.cli.%s import main\nif __name__ == "__main__":\n    sys.exit(main())\n' "$module" >"$stage/bin/$name"
  chmod 0755 "$stage/bin/$name"
done
printf '#!/usr/bin/python3\nimport sys\nfrom ansible.cli.scripts.ansible_connection_cli_stub import main\nif __name__ == "__main__":\n    sys.exit(main())\n' >"$stage/bin/ansible-connection"
chmod 0755 "$stage/bin/ansible-connection"

say "the collections from Debian $SUITE's ansible package"
(cd "$work" && apt-get download -q -o APT::Sandbox::User=root ansible >/dev/null)
dpkg-deb -x "$work"/ansible_*.deb "$work/ansible-deb"
collections_src="$(dirname "$(find "$work/ansible-deb" -type d -name ansible_collections | head -1)")/ansible_collections"
for c in $COLLECTIONS; do
  mkdir -p "$stage/collections/ansible_collections/$(dirname "$c")"
  cp -a "$collections_src/$c" "$stage/collections/ansible_collections/$c"
done

sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list
say "Debian $SUITE with $PACKAGES (mmdebstrap)"
mmdebstrap --quiet --format=tar --variant=minbase --include="$PACKAGES" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --aptopt='Acquire::Check-Valid-Until "false"' \
  --customize-hook='mkdir -p "$1/kubespray" "$1/usr/local/lib/python3.11/dist-packages" "$1/usr/share/ansible/collections"' \
  --customize-hook="sync-in $stage/kubespray /kubespray" \
  --customize-hook="sync-in $stage/site-packages /usr/local/lib/python3.11/dist-packages" \
  --customize-hook="sync-in $stage/bin /usr/local/bin" \
  --customize-hook="sync-in $stage/collections /usr/share/ansible/collections" \
  --customize-hook='rm -rf "$1/var/lib/apt/lists"/* "$1/var/cache/apt"/*' \
  "$SUITE" "$out.tmp" "$sources"
mv "$out.tmp" "$out"
say "built in $((SECONDS - start)) s: $(du -h "$out" | cut -f1)"
echo "$out"
