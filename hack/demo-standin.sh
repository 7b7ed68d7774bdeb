#!/usr/bin/env bash
# The demo without root: the product on a local default. It starts a local control plane (etcd and
# kube-apiserver built from Go modules), installs the CRDs (ours, metal3's, Argo's), runs the
# controller against it, applies the sample CRs, and shows the Workflows the controller
# compiles. No container runtime runs here, so an Argo stand-in (hack/demoargo) then drives
# each Workflow through Running to Succeeded, writing node status and outputs as Argo does,
# and the CRs' status follows. Everything it started is stopped when it ends, however it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
bin=bin/bpa-workflow-controller
kubectl=bin/k8s/kubectl
# The demo's own control plane, started empty each time: bin/dev stays the developer's.
export DEV_DIR=bin/demo
export KUBECONFIG="$root/$DEV_DIR/kubeconfig"
controller_pid=""

cleanup() {
  if [ -n "$controller_pid" ] && kill -0 "$controller_pid" 2>/dev/null; then
    kill -TERM "$controller_pid"
    wait "$controller_pid" 2>/dev/null || true
  fi
  hack/dev.sh down
}
trap cleanup EXIT

banner() { printf '\n=== %s\n' "$*"; }
get() { "$kubectl" get provisioning,software,cluster,workflows -n default 2>/dev/null || true; }

banner "offline: where the sample site puts provisioning-cluster-rst-by-resources (plan)"
"$bin" plan -f config/samples/provisioning-cluster-rst-by-resources.yaml \
  --hosts config/samples/site/sample-site-baremetalhosts.yaml --leases config/samples/site/sample-site-dhcpd.leases -o text

banner "local control plane"
hack/dev.sh down >/dev/null 2>&1 || true
rm -rf "$DEV_DIR"
ARGO=0 hack/dev.sh up # the stand-in plays Argo here
hack/dev.sh install-crds
"$kubectl" apply -n default -f workflows/ >/dev/null
echo "WorkflowTemplates: $("$kubectl" get workflowtemplates -n default -o name | tr '\n' ' ')"
go build -o bin/demoargo ./hack/demoargo

banner "controller: $bin run (log in $DEV_DIR/controller.log)"
"$bin" run --leader-elect=false --metrics-bind-address=0 --health-probe-bind-address=0 >$DEV_DIR/controller.log 2>&1 &
controller_pid=$!

banner "the API server refuses a malformed CR, naming the field"
sed 's/00:c6:14:04:61:b2/00:c6:14:04:61/' config/samples/provisioning-cluster-abc.yaml >$DEV_DIR/bad-mac.yaml
if "$kubectl" apply -f $DEV_DIR/bad-mac.yaml 2>$DEV_DIR/bad-mac.err; then
  echo "unexpectedly accepted" >&2
  exit 1
fi
sed 's/^/  /' $DEV_DIR/bad-mac.err

banner "kubectl apply the samples: cluster-xyz (Provisioning, Software, Cluster) and cluster-efg (KUD plugins)"
for f in provisioning-cluster-xyz-resources software-cluster-xyz cluster-xyz provisioning-cluster-efg-kud-plugins; do
  "$kubectl" apply -f "config/samples/$f.yaml"
done
for _ in $(seq 1 100); do
  [ "$("$kubectl" get workflows -n default -o name | wc -l)" -ge 2 ] && break
  sleep 0.2
done
sleep 1
get
echo
echo "The Software waits for its cluster (no Workflow yet):"
"$kubectl" get software example-software -n default -o jsonpath='{range .status.conditions[*]}  {.type}={.status} {.reason}: {.message}{"\n"}{end}'

banner "Argo stand-in drives the Workflows; the CRs' status follows"
bin/demoargo -namespace default

banner "the end state"
get
echo
echo "provisioning-xyz status:"
"$kubectl" get provisioning provisioning-xyz -n default -o yaml | sed -n '/^status:/,$p' | sed 's/^/  /'
echo "BareMetalHosts claimed (spec.consumerRef):"
"$kubectl" get baremetalhosts -A -o custom-columns='HOST:.metadata.name,CONSUMER:.spec.consumerRef.name' | sed 's/^/  /'
banner "demo finished; stopping the controller and the control plane"
