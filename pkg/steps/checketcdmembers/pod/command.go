// Package pod is what the check-etcd-members step's pod runs: its command
// (`bpa-workflow-controller step check-etcd-members`) and the runtime that does its I/O. The
// compiler never imports it; the step's template and decisions are the package checketcdmembers,
// one folder up.
package pod

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checketcdmembers"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var f stepcmd.NodeStepFlags
	var members, etcdctl string
	cmd := &cobra.Command{
		Use:   checketcdmembers.Name + " --namespace NS --name N --uid U --generation G --cluster C --hosts FILE --members A,B,C",
		Short: "Over SSH, ask etcd for its members on the first expected one; fail unless they are exactly the expected nodes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			check := Check{Members: stepcmd.List(members), User: f.User, Etcdctl: etcdctl}
			for _, m := range check.Members {
				if msgs := validation.IsDNS1123Label(m); len(msgs) > 0 {
					return fmt.Errorf("--%s: %q is not a node label: %v", checketcdmembers.MembersParam, m, msgs)
				}
			}
			step, err := f.Start(cmd.Context(), map[string]string{"etcdctl": etcdctl})
			if err != nil {
				return err
			}
			return Run(cmd.Context(), step.Client, step.Ref, step.Hosts, check, f.SSH, cmd.OutOrStdout())
		},
	}
	f.AddTo(cmd)
	cmd.Flags().StringVar(&members, checketcdmembers.MembersParam, "", "the nodes etcd's members must be, comma-separated, the one asked first (required)")
	cmd.Flags().StringVar(&etcdctl, "etcdctl", checketcdmembers.DefaultEtcdctl, "kubespray's etcdctl wrapper on the member")
	_ = cmd.MarkFlagRequired(checketcdmembers.MembersParam)
	return cmd
}
