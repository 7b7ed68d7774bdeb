# Sourced by the scripts that build from Go modules: the versions of Kubernetes and Argo are
# the product's own (its go.mod), stated there once and derived here, so the control plane,
# the node and the images run what the product is built against. Each may be overridden from
# the environment.
_bpa_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_bpa_module_version() { (cd "$_bpa_root" && go list -m -f '{{.Version}}' "$1"); }
# k8s.io/api v0.33.13 is Kubernetes v1.33.13.
KUBE_VERSION="${KUBE_VERSION:-$(_bpa_module_version k8s.io/api | sed 's/^v0\./v1./')}"
ARGO_VERSION="${ARGO_VERSION:-$(_bpa_module_version github.com/argoproj/argo-workflows/v3)}"
