#!/usr/bin/env bash
# The local control plane for development and the demo: `hack/dev.sh up` starts etcd and
# kube-apiserver on 127.0.0.1 (data under bin/dev/, kubeconfig bin/dev/kubeconfig) in the
# background; `hack/dev.sh down` stops them; `hack/dev.sh install-crds` installs our CRDs and
# admission policy, metal3's BareMetalHost CRD and Argo's CRDs into the cluster KUBECONFIG
# points at (default: bin/dev/kubeconfig). DEV_DIR moves bin/dev elsewhere (the demo uses its own).
# `up` also starts Argo's workflow-controller for namespace ARGO_NAMESPACE (default: default);
# ARGO=0 leaves it out.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
dev="${DEV_DIR:-bin/dev}"
pidfile=$dev/devcluster.pid
say() { echo "dev: $*" >&2; }

alive() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
argo_alive() { [ -f "$dev/workflow-controller.pid" ] && kill -0 "$(cat "$dev/workflow-controller.pid")" 2>/dev/null; }

# up starts what is not running: after a start that failed half-way (the control plane up, Argo
# not), it starts the rest; a failure stops what it started, so the next `up` starts cleanly.
up() {
  if alive; then
    if [ "${ARGO:-1}" = 1 ] && ! argo_alive; then
      start_argo || { down; exit 1; }
    fi
    say "up (pid $(cat "$pidfile")); KUBECONFIG=$root/$dev/kubeconfig"
    return
  fi
  hack/control-plane.sh >/dev/null
  mkdir -p "$dev"
  go build -o bin/devcluster ./hack/devcluster
  rm -f "$dev/kubeconfig"
  setsid bin/devcluster -dir "$dev" -assets bin/k8s >"$dev/devcluster.log" 2>&1 < /dev/null &
  echo $! >"$pidfile"
  for _ in $(seq 1 120); do
    [ -s "$dev/kubeconfig" ] && break
    if ! alive; then
      say "the control plane did not start; its log:"
      cat "$dev/devcluster.log" >&2
      exit 1
    fi
    sleep 0.5
  done
  [ -s "$dev/kubeconfig" ] || { say "no kubeconfig after 60 s; see $dev/devcluster.log"; down; exit 1; }
  if [ "${ARGO:-1}" = 1 ]; then
    start_argo || { down; exit 1; }
  fi
  say "up: export KUBECONFIG=$root/$dev/kubeconfig"
}

# start_argo runs Argo's workflow-controller against the local API server: its minimal CRDs,
# the config map it needs (metrics off), --namespaced for ARGO_NAMESPACE (default: default),
# no leader election, and a 1 s requeue (Argo's 10 s default makes every DAG level take 10 s).
start_argo() {
  local ns="${ARGO_NAMESPACE:-default}" kubectl=bin/k8s/kubectl
  hack/control-plane.sh argo >/dev/null
  export KUBECONFIG="$root/$dev/kubeconfig"
  "$kubectl" apply --server-side -f config/thirdparty/argo/ >/dev/null || return 1
  "$kubectl" wait --for condition=established --timeout=60s crd/workflows.argoproj.io crd/workflowtaskresults.argoproj.io >/dev/null || return 1
  "$kubectl" get namespace "$ns" >/dev/null 2>&1 || "$kubectl" create namespace "$ns" >/dev/null
  "$kubectl" apply -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: workflow-controller-configmap
data:
  metricsConfig: |
    enabled: false
  telemetryConfig: |
    enabled: false
EOF
  # Argo finds its config map in its kubeconfig context's namespace.
  cp "$dev/kubeconfig" "$dev/argo-kubeconfig"
  "$kubectl" config set-context --current --namespace="$ns" --kubeconfig="$dev/argo-kubeconfig" >/dev/null
  KUBECONFIG="$root/$dev/argo-kubeconfig" LEADER_ELECTION_DISABLE=true DEFAULT_REQUEUE_TIME=1s \
    setsid bin/k8s/workflow-controller --namespaced --managed-namespace "$ns" \
    --configmap workflow-controller-configmap --executor-image argoexec:dev \
    >"$dev/workflow-controller.log" 2>&1 </dev/null &
  echo $! >"$dev/workflow-controller.pid"
  sleep 2
  if ! argo_alive; then
    say "Argo's workflow-controller did not start; its log:"
    tail -20 "$dev/workflow-controller.log" >&2
    return 1
  fi
  say "Argo's workflow-controller runs Workflows in namespace $ns (log: $dev/workflow-controller.log)"
}

down() {
  if [ -f "$dev/workflow-controller.pid" ]; then
    kill -TERM "$(cat "$dev/workflow-controller.pid")" 2>/dev/null || true
    rm -f "$dev/workflow-controller.pid"
  fi
  if ! alive; then
    rm -f "$pidfile"
    say "not running"
    return
  fi
  local pid
  pid="$(cat "$pidfile")"
  kill -TERM "$pid"
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "still running after 30 s; killing its process group"
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  say "down"
}

install_crds() {
  export KUBECONFIG="${KUBECONFIG:-$root/$dev/kubeconfig}"
  hack/control-plane.sh >/dev/null
  local kubectl=bin/k8s/kubectl
  "$kubectl" apply --server-side -k config/crd >/dev/null
  "$kubectl" apply --server-side -f config/thirdparty/metal3/metal3.io_baremetalhosts.yaml >/dev/null
  "$kubectl" apply --server-side -f config/thirdparty/argo/ >/dev/null
  "$kubectl" wait --for condition=established --timeout=60s \
    crd/provisionings.bpa.akraino.org crd/softwares.bpa.akraino.org crd/clusters.bpa.akraino.org \
    crd/baremetalhosts.metal3.io crd/workflows.argoproj.io crd/workflowtemplates.argoproj.io >/dev/null
  "$kubectl" apply --server-side -k config/policy >/dev/null
  say "installed: our CRDs and cluster-label policy, metal3's BareMetalHost CRD, Argo's CRDs"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  install-crds) install_crds ;;
  *) echo "usage: $0 up|down|install-crds" >&2; exit 2 ;;
esac
