// Package pod is what the pin-host-keys step's pod runs: its command (`bpa-workflow-controller
// step pin-host-keys`) and the runtime that does its I/O. The compiler never imports it; the
// step's template and decisions are the package pinhostkeys, one folder up.
package pod

import (
	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var cr stepcmd.CRFlags
	var ssh stepcmd.SSHOptions
	var cluster, hostsFile, silentOutput string
	var mayNotAnswer []string
	cmd := &cobra.Command{
		Use:   pinhostkeys.Name + " --namespace NS --name N --uid U --generation G --cluster C --hosts FILE",
		Short: "Pin every addressed node's SSH host key in Secret <cluster>-known-hosts, or check it against the pinned one, before kubespray connects",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			placed, err := stepcmd.ReadHosts(hostsFile)
			if err != nil {
				return err
			}
			ref, c, err := cr.Connect()
			if err != nil {
				return err
			}
			if err := stepcmd.CheckCluster(cmd.Context(), c, ref, cluster); err != nil {
				return err
			}
			return Run(cmd.Context(), c, ref, placed, mayNotAnswer, ssh.Port, ssh.Timeout, silentOutput)
		},
	}
	cr.AddTo(cmd)
	ssh.AddPortTo(cmd)
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster the Workflow was compiled for (checked against the CR's label)")
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "addressed hosts, as resolve-leases wrote them (required)")
	cmd.Flags().StringSliceVar(&mayNotAnswer, "may-not-answer", nil, "nodes (entry labels) the run can do without: their pinned keys are kept when they do not answer")
	cmd.Flags().StringVar(&silentOutput, "silent-output", "", "where to write the nodes the run goes on without, silent (JSON)")
	_ = cmd.MarkFlagRequired("hosts")
	return cmd
}
