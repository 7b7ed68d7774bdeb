// Command bpa-workflow-controller compiles BPA Provisioning and Software CRs into Argo
// Workflows, plans placements offline, and runs the Workflows' steps. Wiring only: the
// commands live in internal/cli.
package main

import (
	"os"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdout, os.Stderr))
}
