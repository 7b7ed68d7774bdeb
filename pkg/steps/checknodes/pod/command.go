// Package pod is what the check-nodes step's pod runs: its command (`bpa-workflow-controller
// step check-nodes`) and the runtime that does its I/O. The compiler never imports it; the
// step's template and decisions are the package checknodes, one folder up.
package pod

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checknodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var kubeconfig, nodesFlag, hostsFile, silentFile, versionFlag string
	var wait, poll time.Duration
	cmd := &cobra.Command{
		Use:   checknodes.Name + " --kubeconfig FILE (--nodes A,B | --hosts FILE) [--except-silent FILE] [--version vX.Y.Z] [--wait D]",
		Short: "Wait until each node a run touched is Ready, schedulable and at the run's version; fail naming each that is not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			nodes, err := nodesOf(nodesFlag, hostsFile)
			if err != nil {
				return err
			}
			if nodes, err = withoutSilent(nodes, silentFile, cmd.OutOrStdout()); err != nil {
				return err
			}
			version, err := checknodes.ParseVersion(versionFlag)
			if err != nil {
				return err
			}
			return Run(cmd.Context(), kubeconfig, nodes, version, Timing{Wait: wait, Poll: poll}, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", reportnodes.KubeconfigPath, "the cluster's kubeconfig, as fetch-kubeconfig stored it")
	cmd.Flags().StringVar(&nodesFlag, "nodes", "", "the nodes the run touched, comma-separated")
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "the resolved hosts (JSON), every one of which the run touched")
	cmd.Flags().StringVar(&silentFile, "except-silent", "", "pin-host-keys' silent nodes (JSON): those of them are not checked")
	cmd.Flags().StringVar(&versionFlag, "version", "", "the kubelet version each must run (v1.34.3); empty checks no version")
	cmd.Flags().DurationVar(&wait, "wait", checknodes.Wait, "how long the nodes have to become as they should")
	cmd.Flags().DurationVar(&poll, "poll", 10*time.Second, "how often the nodes are read while they are not")
	cmd.MarkFlagsOneRequired("nodes", "hosts")
	cmd.MarkFlagsMutuallyExclusive("nodes", "hosts")
	return cmd
}

// nodesOf are the nodes to check: those --nodes names, or every one of the hosts file.
func nodesOf(nodesFlag, hostsFile string) ([]string, error) {
	if hostsFile == "" {
		return checknodes.ParseNodes(nodesFlag)
	}
	hosts, err := stepcmd.ReadHosts(hostsFile)
	if err != nil {
		return nil, fmt.Errorf("--hosts: %w", err)
	}
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Label
	}
	return checknodes.ParseNodes(checknodes.Names(names))
}

// withoutSilent are nodes but those the file silent (pin-host-keys' output) names, each said
// on out; no file leaves them all.
func withoutSilent(nodes []string, silent string, out io.Writer) ([]string, error) {
	if silent == "" {
		return nodes, nil
	}
	raw, err := os.ReadFile(silent) //nolint:gosec // G304: the step's own input file, which Argo wrote
	if err != nil {
		return nil, fmt.Errorf("--except-silent: %w", err)
	}
	gone, err := pinhostkeys.ParseSilent(string(raw))
	if err != nil {
		return nil, fmt.Errorf("--except-silent: %w", err)
	}
	checked, left, err := checknodes.WithoutSilent(nodes, gone)
	for _, n := range left {
		_, _ = fmt.Fprintf(out, "check-nodes: %s did not answer at %s when the run began: the run left it out, and so does the check\n", n.Node, n.Address)
	}
	if err != nil {
		return nil, fmt.Errorf("--except-silent: %w", err)
	}
	return checked, nil
}
