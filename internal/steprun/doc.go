// Package steprun is the in-cluster runtime of the Workflow steps: what
// `bpa-workflow-controller step NAME` does in a step pod, reading and writing the cluster
// through a client. The decisions (placement, leases, inventory, which packages to install)
// are the pure functions of pkg/; this package adds the I/O: the CR, BareMetalHost claims,
// SSH, Secrets and ConfigMaps.
package steprun

// The step pods run as their cluster's ServiceAccount, with the Role internal/identity writes:
// read the CRs, list and claim BareMetalHosts where the CR may take them, read and write that
// cluster's own Secrets and ConfigMap, report task results. leak_test.go runs every step as
// that ServiceAccount.
