package pod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checketcdmembers"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Check is what a task asks: which nodes etcd's members must be, how to log in, and the
// etcdctl wrapper to run on the first of them.
type Check struct {
	Members []string
	User    string
	Etcdctl string
}

// Run logs in to the first expected member (through sudo when the user is not root, the host
// key pinned), runs `etcdctl.sh member list -w json` there and compares etcd's answer with the
// expected members. A node that does not answer, or an etcd that does not (yet), is retried;
// a membership that differs is final: nothing more is done to a cluster whose etcd is not the
// one planned.
func Run(ctx context.Context, c client.Client, ref stepcmd.CRRef, hosts []bpav1.Node, check Check, opts stepcmd.SSHOptions, stdout io.Writer) error {
	p := &bpav1.Provisioning{}
	if err := stepcmd.GetIncarnation(ctx, c, ref, p, "Provisioning"); err != nil {
		return err
	}
	if len(check.Members) == 0 {
		return errors.New("no expected etcd members")
	}
	first := check.Members[0]
	i := slices.IndexFunc(hosts, func(h bpav1.Node) bool { return h.Label == first })
	if i < 0 || hosts[i].IP == "" {
		return fmt.Errorf("etcd member %q is not among the addressed hosts", first)
	}
	cfg, err := opts.Login(c, p.Namespace, p.Labels[bpav1.ClusterLabel], check.User)
	if err != nil {
		return err
	}
	node, err := sshexec.Dial(ctx, cfg, net.JoinHostPort(hosts[i].IP, strconv.Itoa(opts.Port)))
	if err != nil {
		return stepcmd.RetryableUnlessHostKey(fmt.Errorf("etcd member %q: %w", first, err))
	}
	defer node.Close()
	command, err := stepcmd.RootCommand(check.User, check.Etcdctl, "member", "list", "--write-out=json")
	if err != nil {
		return err
	}
	raw, err := node.Run(ctx, command)
	if err != nil {
		if refused := sshexec.SudoRefused(err); refused != nil {
			return refused
		}
		// etcd restarting under kubespray, or a node busy: worth waiting for.
		return steps.Retryable(fmt.Errorf("asking etcd for its members on %q (%s): %w", first, hosts[i].IP, err))
	}
	members, err := checketcdmembers.Parse(raw)
	if err != nil {
		return fmt.Errorf("on %q: %w", first, err)
	}
	if err := checketcdmembers.Compare(members, check.Members, hosts); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "etcd has the %d members planned: %s\n", len(members), strings.Join(check.Members, ", "))
	return err
}
