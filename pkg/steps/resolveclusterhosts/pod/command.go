// Package pod is what the resolve-cluster-hosts step's pod runs: its command
// (`bpa-workflow-controller step resolve-cluster-hosts`) and the runtime that does its I/O. The
// compiler never imports it; the step's template and decisions are the package
// resolveclusterhosts, one folder up.
package pod

import (
	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveclusterhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var cr stepcmd.CRFlags
	var only, output string
	cmd := &cobra.Command{
		Use:   resolveclusterhosts.Name + " --namespace NS --name N --uid U --generation G [--only a,b] --output FILE",
		Short: "List the cluster's nodes (ConfigMap <cluster>-hosts) as the JSON the install fan-out iterates over",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, c, err := cr.Connect()
			if err != nil {
				return err
			}
			nodes, err := Run(cmd.Context(), c, ref, stepcmd.List(only))
			if err != nil {
				return err
			}
			return stepcmd.WriteJSON(cmd.OutOrStdout(), output, nodes)
		},
	}
	cr.AddTo(cmd)
	cmd.Flags().StringVar(&only, "only", "", "comma-separated nodes to list (day 2); default: all")
	cmd.Flags().StringVar(&output, "output", "", "where to write the nodes (JSON; default stdout)")
	return cmd
}
