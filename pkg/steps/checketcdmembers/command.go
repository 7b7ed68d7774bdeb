package checketcdmembers

import (
	"fmt"
	"regexp"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

var etcdctlPath = regexp.MustCompile(`^/[A-Za-z0-9._/-]+$`)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var cr stepcmd.CRFlags
	var ssh stepcmd.SSHOptions
	var cluster, hostsFile, members string
	check := Check{}
	cmd := &cobra.Command{
		Use:   Name + " --namespace NS --name N --uid U --generation G --cluster C --hosts FILE --members A,B,C",
		Short: "Over SSH, ask etcd for its members on the first expected one; fail unless they are exactly the expected nodes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := cr.Ref()
			if err != nil {
				return err
			}
			if !etcdctlPath.MatchString(check.Etcdctl) {
				return fmt.Errorf("--etcdctl %q is not an absolute path", check.Etcdctl)
			}
			if !bpav1.IsSSHUser(check.User) {
				return fmt.Errorf("--ssh-user %q is not a user name", check.User)
			}
			check.Members = stepcmd.List(members)
			for _, m := range check.Members {
				if msgs := validation.IsDNS1123Label(m); len(msgs) > 0 {
					return fmt.Errorf("--members: %q is not a node label: %v", m, msgs)
				}
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
			return Run(cmd.Context(), c, ref, placed, check, ssh, cmd.OutOrStdout())
		},
	}
	cr.AddTo(cmd)
	ssh.AddTo(cmd)
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster the Workflow was compiled for (checked against the CR's label)")
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "addressed hosts, as resolve-leases wrote them (required)")
	cmd.Flags().StringVar(&members, MembersParam, "", "the nodes etcd's members must be, comma-separated, the one asked first (required)")
	cmd.Flags().StringVar(&check.User, "ssh-user", bpav1.DefaultSSHUser, "user to log in as (sudo when not root)")
	cmd.Flags().StringVar(&check.Etcdctl, "etcdctl", DefaultEtcdctl, "kubespray's etcdctl wrapper on the member")
	for _, f := range []string{"hosts", MembersParam} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}
