#!/usr/bin/env bash
# make demo: the product on a local default.
#
# As root (CI, a fresh Debian machine's root shell): the whole flow for real, narrated — a
# local kube-apiserver, Argo's own workflow-controller and CLI, our controller, and every
# Workflow step a pod in real containers (kubelet, containerd, runc) from the images `make image`
# builds, reaching the site's three servers (virtual machines under QEMU: Debian's kernel,
# systemd, sshd, apt; hack/vm-image.sh) over real SSH, with kubespray's playbooks run by a real
# ansible-playbook (only the playbooks are stood in for). It is the end-to-end suite (test/e2e) run verbosely, and it cleans up every
# process, container, mount and file it made.
#
# KEEP=1 leaves it all running afterwards (a playground) and prints the kubectl and argo
# commands to explore it and the ssh commands to log in to each server; `make demo-down` (hack/demo.sh down) stops it.
#
# CLUSTER=real makes a real cluster instead: the real kubespray (built from ../shared/third_party)
# installs Kubernetes on two servers through the controller and Argo, offline from the site's
# mirror (the end-to-end suite's TestRealClusterUnderArgo, about an hour under emulation), and
# leaves it running with the commands to use its kubeconfig; `make demo-down` stops it.
#
# Without root (network namespaces and containers need it): the controller on a local control
# plane, with an Argo stand-in driving the Workflows' status (hack/demo-standin.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
playground="$PWD/bin/playground"

if [ "${1:-}" = down ]; then
  if [ ! -f "$playground/pid" ] || ! kill -0 "$(cat "$playground/pid")" 2>/dev/null; then
    echo "demo-down: no playground is running"
    exit 0
  fi
  touch "$playground/stop"
  pid="$(cat "$playground/pid")"
  for _ in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "demo-down: the playground did not stop within 60 s; killing it"
    kill -- "-$pid" 2>/dev/null || true
  fi
  rm -rf "$playground"
  echo "demo-down: stopped; every process, namespace and mount it made is gone"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "demo: not root, so no network namespaces or containers: running the controller with an Argo stand-in instead" >&2
  exec hack/demo-standin.sh
fi
hack/install-test-deps.sh
hack/control-plane.sh node >/dev/null
hack/node-images.sh
BPA_VM_IMAGE="$(hack/vm-image.sh)"
export BPA_VM_IMAGE
narrate() {
  sed -un -e 's/^ *[a-z0-9_]*_test.go:[0-9]*: ==> /  /p' -e '/^--- /p' -e '/^\(ok\|FAIL\|panic:\)/p'
}

# explain_failure says why the flow ended: the stage it was in, Go's own timeout or the test's
# error, and the end of the full log, which the narration leaves out.
explain_failure() {
  local log="$1" seconds="$2" stage
  stage="$(sed -n 's/^ *[a-z0-9_]*_test.go:[0-9]*: ==> //p' "$log" | tail -n 1)"
  echo "=== demo: the flow failed after $seconds s"
  echo "  in the stage: ${stage:-(before the first stage)}"
  if grep -q '^panic: test timed out' "$log"; then
    echo "  why: $(grep -m1 '^panic: test timed out' "$log") (the deadline; DEMO_TIMEOUT=90m make demo gives it longer)"
  fi
  echo "  the end of the log ($log):"
  # Up to Go's goroutine dump, which says nothing an operator can act on.
  awk '/^goroutine [0-9]+ \[/ { exit } NF { print "    " $0 }' "$log" | tail -n 25
}

# The test the demo runs, how long it takes, and what it needs besides the node.
demo_test='^TestEndToEnd$' demo_time="about 15 minutes on 2 idle cores"
case "${CLUSTER:-}" in
"") ;;
real)
  KEEP=1 demo_test='^TestRealClusterUnderArgo$' demo_time="about an hour under emulation"
  images="$(hack/kubespray-image.sh v2.30.0)"
  downloads="$(hack/kubespray-downloads.sh)"
  if [ -z "$images" ] || [ -z "$downloads" ]; then
    echo "demo: CLUSTER=real needs kubespray's image and downloads, built from ../shared/third_party, which is absent" >&2
    exit 1
  fi
  export BPA_REAL_CLUSTER=1 BPA_KUBESPRAY_IMAGES="$images" BPA_KUBESPRAY_DOWNLOADS="$downloads"
  ;;
*)
  echo "demo: CLUSTER=$CLUSTER: want CLUSTER=real, or nothing for the quick demo" >&2
  exit 2
  ;;
esac

if [ "${KEEP:-0}" = 1 ]; then
  if [ -f "$playground/pid" ] && kill -0 "$(cat "$playground/pid")" 2>/dev/null; then
    echo "demo: a playground is already running:"
    cat "$playground/README"
    exit 0
  fi
  rm -rf "$playground" && mkdir -p "$playground"
  echo "=== the end-to-end flow, then a playground left running ($demo_time; log: $playground/demo.log)"
  BPA_PLAYGROUND="$playground" KUBEBUILDER_ASSETS="$PWD/bin/k8s" setsid go test -tags e2e -count=1 -v -timeout 0 \
    -run "$demo_test" ./test/e2e/ >"$playground/demo.log" 2>&1 </dev/null &
  echo $! >"$playground/pid"
  while [ ! -f "$playground/ready" ]; do
    if ! kill -0 "$(cat "$playground/pid")" 2>/dev/null; then
      narrate <"$playground/demo.log"
      explain_failure "$playground/demo.log" "$SECONDS"
      echo "demo: the flow failed before the playground was up"
      exit 1
    fi
    sleep 1
  done
  narrate <"$playground/demo.log"
  cat "$playground/README"
  exit 0
fi

# The flow's own deadline: ample on a busy or slower machine, and DEMO_TIMEOUT moves it.
timeout="${DEMO_TIMEOUT:-60m}"
log="$PWD/bin/demo.log"
mkdir -p bin
echo "=== the end-to-end flow under Argo's workflow-controller ($demo_time; deadline $timeout, DEMO_TIMEOUT=90m extends it; log: $log)"
start=$SECONDS
set +e
KUBEBUILDER_ASSETS="$PWD/bin/k8s" go test -tags e2e -count=1 -v -timeout "$timeout" -run '^TestEndToEnd$' ./test/e2e/ 2>&1 | tee "$log" | narrate
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  explain_failure "$log" "$((SECONDS - start))"
fi
echo "=== demo finished in $((SECONDS - start)) s (exit $rc); every process, mount and scratch file it made is gone"
exit "$rc"
