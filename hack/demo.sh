#!/usr/bin/env bash
# make demo: the product on a local default.
#
# As root (CI, a fresh Debian machine's root shell): the whole flow for real, narrated — a
# local kube-apiserver, Argo's own workflow-controller, our controller, and our real steps
# (run by the test pod runner in place of a container runtime) reaching three test hosts (each
# its own loopback address, sshd and /etc/kubernetes) over real SSH, with kubespray's playbooks
# run by a real ansible-playbook (only the playbooks are stood in for). It is the end-to-end
# suite (test/e2e) run verbosely, and it cleans up every process, mount and file it made.
#
# Without root (mount namespaces need it): the controller on a local control plane, with an Argo
# stand-in driving the Workflows' status (hack/demo-standin.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "demo: not root, so no mount namespaces: running the controller with an Argo stand-in instead" >&2
  exec hack/demo-standin.sh
fi
hack/install-test-deps.sh
hack/control-plane.sh argo >/dev/null
echo "=== the end-to-end flow under Argo's workflow-controller (about 2 minutes)"
start=$SECONDS
set +e
KUBEBUILDER_ASSETS="$PWD/bin/k8s" go test -tags e2e -count=1 -v -timeout 20m -run '^TestEndToEnd$' ./test/e2e/ 2>&1 |
  sed -un -e 's/^ *e2e_test.go:[0-9]*: ==> /  /p' -e 's/^ *e2e_test.go:[0-9]*: podrunner: /      /p' -e '/^--- /p' -e '/^\(ok\|FAIL\)/p'
rc=${PIPESTATUS[0]}
set -e
echo "=== demo finished in $((SECONDS - start)) s (exit $rc); every process, mount and scratch file it made is gone"
exit "$rc"
