// Package pod is what the discover-hosts step's pod runs: its command (`bpa-workflow-controller
// step discover-hosts`) and the runtime that does its I/O. The compiler never imports it; the
// step's template and decisions are the package discoverhosts, one folder up.
package pod

import (
	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Command is the step as its pod runs it, and as `plan` runs it on files.
func Command() *cobra.Command {
	var cr stepcmd.CRFlags
	var crFile, hostsFile, output, leaving string
	cmd := &cobra.Command{
		Use:   discoverhosts.Name + " (--namespace NS --name N --uid U --generation G | --cr FILE --hosts FILE) --output FILE",
		Short: "Place a Provisioning's entries on BareMetalHosts (claiming them, in cluster); write the placed hosts as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if crFile == "" {
				ref, c, err := cr.Connect()
				if err != nil {
					return err
				}
				placed, err := Run(cmd.Context(), c, ref, stepcmd.List(leaving))
				if err != nil {
					return err
				}
				return stepcmd.WriteJSON(cmd.OutOrStdout(), output, placed)
			}
			p, err := manifest.Provisioning(crFile)
			if err != nil {
				return err
			}
			hosts, err := manifest.BareMetalHosts(hostsFile)
			if err != nil {
				return err
			}
			placed, err := discoverhosts.Place(p, hosts)
			if err != nil {
				if placement.IsRetryable(err) {
					return steps.Retryable(err)
				}
				return err
			}
			return stepcmd.WriteJSON(cmd.OutOrStdout(), output, placed)
		},
	}
	cr.AddTo(cmd)
	cmd.Flags().StringVar(&crFile, "cr", "", "file holding the Provisioning")
	cmd.Flags().StringVar(&leaving, "leaving", "", "comma-separated nodes a remove run takes out (added from the CR's status)")
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "file of BareMetalHosts")
	cmd.Flags().StringVar(&output, "output", "", "where to write the placed hosts (JSON; default stdout)")
	return cmd
}
