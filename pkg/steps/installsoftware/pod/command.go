// Package pod is what the install-software step's pod runs: its command (`bpa-workflow-controller
// step install-software`) and the runtime that does its I/O. The compiler never imports it; the
// step's template and decisions are the package installsoftware, one folder up.
package pod

import (
	"errors"

	"github.com/spf13/cobra"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var cr stepcmd.CRFlags
	var ssh stepcmd.SSHOptions
	var reg siteregistry.Flags
	var node, role, address, output string
	var digests map[string]string
	cmd := &cobra.Command{
		Use:   installsoftware.Name + " --namespace NS --name N --uid U --generation G --node N --role R --address IP --output FILE [--registry HOST --ca-file PEM --binary-digest ROLE:NAME=DIGEST...]",
		Short: "Over SSH, install or upgrade what differs from the Software on one node; write its report as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, c, err := cr.Connect()
			if err != nil {
				return err
			}
			// The site registry, for binaries; its account comes from the environment (the
			// pod's Secret), never a flag.
			var registry *siteregistry.Client
			if reg.Registry != "" {
				if registry, err = reg.Client(cmd.InOrStdin()); err != nil {
					return err
				}
			}
			report, runErr := Run(cmd.Context(), c, ref, node, bpav1.NodeRoles(role), address, InstallOptions{
				SSH: ssh, Registry: registry, Digests: digests,
			})
			// The report is written even when the step fails: it says which packages and why.
			if err := stepcmd.WriteJSON(cmd.OutOrStdout(), output, report); err != nil {
				return errors.Join(runErr, err)
			}
			return runErr
		},
	}
	cr.AddTo(cmd)
	ssh.AddTo(cmd)
	cmd.Flags().StringVar(&node, "node", "", "the node's label")
	cmd.Flags().StringVar(&role, "role", "", "the node's role: master, worker or master,worker")
	cmd.Flags().StringVar(&address, "address", "", "the node's IP address")
	cmd.Flags().StringVar(&output, "output", "", "where to write the report (JSON; default stdout)")
	cmd.Flags().StringToStringVar(&digests, "binary-digest", nil, "the file a binary must be, as the controller resolved it when it named the run: role:name=sha256:<hex> (repeated); another file in the registry fails the step")
	reg.AddTo(cmd.Flags())
	return cmd
}
