// Package steprun is the in-cluster runtime of the Workflow steps: what
// `bpa-workflow-controller step NAME` does in a step pod, reading and writing the cluster
// through a client. The decisions (placement, leases, inventory, which packages to install)
// are the pure functions of pkg/; this package adds the I/O: the CR, BareMetalHost claims,
// SSH, Secrets and ConfigMaps.
package steprun

// The step pods' ServiceAccount needs what these markers say (config/rbac/step/role.yaml,
// generated): read the CRs and BareMetalHosts, claim BareMetalHosts, write the cluster's
// Secrets and ConfigMaps, and what Argo's executor writes for every step (its task results).
//
// +kubebuilder:rbac:groups=argoproj.io,resources=workflowtaskresults,verbs=create;patch
