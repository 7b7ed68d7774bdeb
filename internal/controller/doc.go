// Package controller holds one reconciler per kind. Each compiles its CR generation into an
// Argo Workflow (pkg/compile), creates it once, and mirrors it back into the CR's status
// (internal/observe); the decisions — which kubespray mode, which nodes, which conditions — are
// pure functions (run-kubespray's and install-software's own, *_status.go here), and the
// reconcilers only read, create and patch.
package controller
