// Package pod is what the fetch-kubeconfig step's pod runs: its command (`bpa-workflow-controller
// step fetch-kubeconfig`) and the runtime that does its I/O. The compiler never imports it; the
// step's template and decisions are the package fetchkubeconfig, one folder up.
package pod

import (
	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var f stepcmd.NodeStepFlags
	var adminConf, master, leaving string
	cmd := &cobra.Command{
		Use:   fetchkubeconfig.Name + " --namespace NS --name N --uid U --generation G --cluster C --hosts FILE --master LABEL",
		Short: "Over SSH, read the first master's admin.conf into Secret <cluster>-kubeconfig; write ConfigMap <cluster>-hosts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			step, err := f.Start(cmd.Context(), map[string]string{"admin-conf": adminConf})
			if err != nil {
				return err
			}
			run := KubeconfigRun{Master: master, User: f.User, Leaving: stepcmd.List(leaving)}
			return Run(cmd.Context(), step.Client, step.Ref, run, step.Hosts, adminConf, f.SSH)
		},
	}
	f.AddTo(cmd)
	cmd.Flags().StringVar(&adminConf, "admin-conf", DefaultAdminConf, "admin kubeconfig on the master")
	cmd.Flags().StringVar(&master, "master", "", "label of the first master, whose admin.conf is read (required)")
	cmd.Flags().StringVar(&leaving, "leaving", "", "comma-separated nodes the run removed (left out of <cluster>-hosts)")
	_ = cmd.MarkFlagRequired("master")
	return cmd
}
