package stepcmd

import (
	"context"
	"fmt"
	"regexp"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/knownhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
)

// NodeStepFlags are the flags of a step that logs in to the cluster's nodes after kubespray:
// the CR, the cluster it was compiled for, the addressed hosts, the SSH access and user.
type NodeStepFlags struct {
	CR        CRFlags
	SSH       SSHOptions
	Cluster   string
	HostsFile string
	User      string
}

// AddTo declares the flags on cmd.
func (f *NodeStepFlags) AddTo(cmd *cobra.Command) {
	f.CR.AddTo(cmd)
	f.SSH.AddTo(cmd)
	cmd.Flags().StringVar(&f.Cluster, "cluster", "", "the cluster the Workflow was compiled for (checked against the CR's label)")
	cmd.Flags().StringVar(&f.HostsFile, "hosts", "", "addressed hosts, as resolve-leases wrote them (required)")
	cmd.Flags().StringVar(&f.User, "ssh-user", bpav1.DefaultSSHUser, "user to log in as (sudo when not root)")
	_ = cmd.MarkFlagRequired("hosts")
}

// NodeStep is what such a step starts from.
type NodeStep struct {
	Ref    CRRef
	Client client.Client
	Hosts  []bpav1.Node
}

var nodePath = regexp.MustCompile(`^/[A-Za-z0-9._/-]+$`)

// Start checks the flags and paths (flag name → a path on the nodes, which reaches their shell
// and must be absolute and plain), reads the hosts and connects, the Workflow's cluster checked
// against the CR's label.
func (f *NodeStepFlags) Start(ctx context.Context, paths map[string]string) (NodeStep, error) {
	ref, err := f.CR.Ref()
	if err != nil {
		return NodeStep{}, err
	}
	for flag, path := range paths {
		if !nodePath.MatchString(path) {
			return NodeStep{}, fmt.Errorf("--%s %q is not an absolute path", flag, path)
		}
	}
	if !bpav1.IsSSHUser(f.User) {
		return NodeStep{}, fmt.Errorf("--ssh-user %q is not a user name", f.User)
	}
	hosts, err := ReadHosts(f.HostsFile)
	if err != nil {
		return NodeStep{}, err
	}
	c, err := ClusterClient()
	if err != nil {
		return NodeStep{}, err
	}
	if err := CheckCluster(ctx, c, ref, f.Cluster); err != nil {
		return NodeStep{}, err
	}
	return NodeStep{Ref: ref, Client: c, Hosts: hosts}, nil
}

// Login is how a step logs in to a cluster's nodes as user: the mounted key, host keys checked
// against the cluster's pins (Secret "<cluster>-known-hosts" in namespace).
func (o SSHOptions) Login(c client.Client, namespace, cluster, user string) (sshexec.Config, error) {
	signer, err := sshexec.LoadSigner(o.KeyFile)
	if err != nil {
		return sshexec.Config{}, err
	}
	return sshexec.Config{User: user, Signer: signer, Keys: knownhosts.For(c, namespace, cluster), Timeout: o.Timeout}, nil
}

// RootCommand is words as one command line run as root by user: as they are for root, through
// sudo without a password prompt otherwise.
func RootCommand(user string, words ...string) (string, error) {
	if user != bpav1.DefaultSSHUser {
		words = sshexec.Privileged(nil, words...)
	}
	return sshexec.Quote(words...)
}
