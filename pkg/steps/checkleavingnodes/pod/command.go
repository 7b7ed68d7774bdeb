// Package pod is what the check-leaving-nodes step's pod runs: its command
// (`bpa-workflow-controller step check-leaving-nodes`) and the runtime that does its I/O. The
// compiler never imports it; the step's template and decisions are the package checkleavingnodes,
// one folder up.
package pod

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checkleavingnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var cr stepcmd.CRFlags
	var ssh stepcmd.SSHOptions
	var hostsFile, leaving, output string
	cmd := &cobra.Command{
		Use:   checkleavingnodes.Name + " --namespace NS --name N --uid U --generation G --hosts FILE --leaving A,B --output FILE",
		Short: "Ask each leaving node's sshd for its host key; write remove-node.yml's variables: a reset when all answer, an ungraceful removal when one does not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			hosts, err := stepcmd.ReadHosts(hostsFile)
			if err != nil {
				return err
			}
			ref, c, err := cr.Connect()
			if err != nil {
				return err
			}
			return Run(cmd.Context(), c, ref, hosts, strings.Split(leaving, ","), ssh.Port, ssh.Timeout, output, cmd.OutOrStdout())
		},
	}
	cr.AddTo(cmd)
	ssh.AddPortTo(cmd)
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "addressed hosts, as resolve-leases wrote them, the leaving ones among them (required)")
	cmd.Flags().StringVar(&leaving, "leaving", "", "the nodes the run removes, comma-separated (required)")
	cmd.Flags().StringVar(&output, "output", "", "where to write remove-node.yml's variables, JSON (required)")
	for _, f := range []string{"hosts", "leaving", "output"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}
