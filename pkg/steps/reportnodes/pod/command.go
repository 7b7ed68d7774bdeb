// Package pod is what the report-nodes step's pod runs: its command (`bpa-workflow-controller step
// report-nodes`) and the runtime that does its I/O. The compiler never imports it; the step's
// template and decisions are the package reportnodes, one folder up.
package pod

import (
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/atomicfile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var kubeconfig, output string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   reportnodes.Name + " --kubeconfig FILE --output FILE",
		Short: "Report which kubelet version each node of the cluster runs, and whether it is Ready",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := Run(cmd.Context(), kubeconfig, timeout)
			raw, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if r.Unreadable != "" {
				cmd.PrintErrln("report-nodes: " + r.Unreadable)
			} else {
				cmd.Println("report-nodes: " + r.Summary())
			}
			return atomicfile.Write(output, raw)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", reportnodes.KubeconfigPath, "the cluster's kubeconfig, as fetch-kubeconfig stored it")
	cmd.Flags().StringVar(&output, "output", "", "where to write the report (required)")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long one request to the cluster may take")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}
