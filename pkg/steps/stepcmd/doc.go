// Package stepcmd is what every step's command shares in its pod: the flags naming the CR and
// the check that the CR is still the one the Workflow was compiled from, the cluster client, the
// SSH flags, and the JSON files steps hand on to each other. Each step's own runtime and command
// live in its folder, pkg/steps/<step>.
//
// The step pods run as their cluster's ServiceAccount, with the Role internal/identity writes:
// read the CRs, list and claim BareMetalHosts where the CR may take them, read and write that
// cluster's own Secrets and ConfigMap, report task results. pkg/steps/leak_test.go runs every
// step as that ServiceAccount.
package stepcmd
