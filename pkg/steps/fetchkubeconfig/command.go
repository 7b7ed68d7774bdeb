package fetchkubeconfig

import (
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

var adminConfPath = regexp.MustCompile(`^/[A-Za-z0-9._/-]+$`)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var cr stepcmd.CRFlags
	var ssh stepcmd.SSHOptions
	var cluster, hostsFile, adminConf, master, user, leaving string
	cmd := &cobra.Command{
		Use:   Name + " --namespace NS --name N --uid U --generation G --cluster C --hosts FILE --master LABEL",
		Short: "Over SSH, read the first master's admin.conf into Secret <cluster>-kubeconfig; write ConfigMap <cluster>-hosts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := cr.Ref()
			if err != nil {
				return err
			}
			if !adminConfPath.MatchString(adminConf) {
				return fmt.Errorf("--admin-conf %q is not an absolute path", adminConf)
			}
			if !bpav1.IsSSHUser(user) {
				return fmt.Errorf("--ssh-user %q is not a user name", user)
			}
			placed, err := stepcmd.ReadHosts(hostsFile)
			if err != nil {
				return err
			}
			c, err := stepcmd.ClusterClient()
			if err != nil {
				return err
			}
			if err := stepcmd.CheckCluster(cmd.Context(), c, ref, cluster); err != nil {
				return err
			}
			run := KubeconfigRun{Master: master, User: user, Leaving: stepcmd.List(leaving)}
			return Run(cmd.Context(), c, ref, run, placed, adminConf, ssh)
		},
	}
	cr.AddTo(cmd)
	ssh.AddTo(cmd)
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster the Workflow was compiled for (checked against the CR's label)")
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "addressed hosts, as resolve-leases wrote them (required)")
	cmd.Flags().StringVar(&adminConf, "admin-conf", DefaultAdminConf, "admin kubeconfig on the master")
	cmd.Flags().StringVar(&master, "master", "", "label of the first master, whose admin.conf is read (required)")
	cmd.Flags().StringVar(&user, "ssh-user", bpav1.DefaultSSHUser, "user to log in to the master as (sudo when not root)")
	cmd.Flags().StringVar(&leaving, "leaving", "", "comma-separated nodes the run removed (left out of <cluster>-hosts)")
	_ = cmd.MarkFlagRequired("hosts")
	_ = cmd.MarkFlagRequired("master")
	return cmd
}
