// Package pod is what the read-certificates step's pod runs: its command (`bpa-workflow-controller
// step read-certificates`) and the runtime that does its I/O. The compiler never imports it; the
// step's template and decisions are the package readcertificates, one folder up.
package pod

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/readcertificates"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var f stepcmd.NodeStepFlags
	var kubeadm, leaving, output string
	cmd := &cobra.Command{
		Use:   readcertificates.Name + " --namespace NS --name N --uid U --generation G --cluster C --hosts FILE --output FILE",
		Short: "Over SSH, read when each master's kubeadm-managed certificates expire, for the Provisioning's status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			step, err := f.Start(cmd.Context(), map[string]string{"kubeadm": kubeadm})
			if err != nil {
				return err
			}
			run := Run{User: f.User, Kubeadm: kubeadm, Leaving: stepcmd.List(leaving)}
			report, err := Read(cmd.Context(), step.Client, step.Ref, step.Hosts, run, f.SSH)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintln(cmd.OutOrStdout(), report.Summary()); err != nil {
				return err
			}
			return stepcmd.WriteJSON(cmd.OutOrStdout(), output, report)
		},
	}
	f.AddTo(cmd)
	cmd.Flags().StringVar(&leaving, "leaving", "", "comma-separated nodes the run removed (not read)")
	cmd.Flags().StringVar(&output, "output", "", "where to write the report, JSON (required)")
	cmd.Flags().StringVar(&kubeadm, "kubeadm", readcertificates.DefaultKubeadm, "kubeadm on the masters")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}
