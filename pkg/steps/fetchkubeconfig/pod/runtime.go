package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/knownhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// KubeconfigRun is what the Workflow says of the run fetch-kubeconfig finishes, compiled from
// the generation it ran: the step runs after kubespray has changed the cluster, so it follows
// the Workflow, not a spec that may have moved on since.
type KubeconfigRun struct {
	// Master is the label of the first masters entry: the node admin.conf is read from.
	Master string
	// User logs in to it.
	User string
	// Leaving are the nodes the run removed: not in ConfigMap "<cluster>-hosts" any more.
	Leaving []string
}

// Run reads admin.conf from the first master over SSH (through sudo when the user
// is not root), points every cluster in it at that master's IP, and stores it in Secret
// "<cluster>-kubeconfig" (key "value"); it also writes ConfigMap "<cluster>-hosts" (label →
// IP and role) for the Software Workflows. Both are owned by the Provisioning. After a remove
// run it unpins the removed nodes' host keys. The kubeconfig never reaches a log, an error or
// an output.
func Run(ctx context.Context, c client.Client, ref stepcmd.CRRef, run KubeconfigRun, hosts []bpav1.Node, adminConf string, opts stepcmd.SSHOptions) error {
	p := &bpav1.Provisioning{}
	if err := stepcmd.GetIncarnation(ctx, c, ref, p, "Provisioning"); err != nil {
		return err
	}
	cluster := p.Labels[bpav1.ClusterLabel]
	master, err := placedMaster(run.Master, hosts)
	if err != nil {
		return err
	}
	cfg, err := opts.Login(c, p.Namespace, cluster, run.User)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(master.IP, strconv.Itoa(opts.Port))
	node, err := sshexec.Dial(ctx, cfg, addr)
	if err != nil {
		return stepcmd.RetryableUnlessHostKey(fmt.Errorf("master %q: %w", master.Label, err))
	}
	defer node.Close()
	command, err := stepcmd.RootCommand(run.User, "cat", "--", adminConf)
	if err != nil {
		return err
	}
	raw, err := node.Run(ctx, command)
	if err != nil {
		return stepcmd.WaitIfLost(fmt.Errorf("reading %s on master %q (%s): %w", adminConf, master.Label, master.IP, err))
	}
	kubeconfig, err := pointAt(raw, master.IP)
	if err != nil {
		return fmt.Errorf("%s on master %q: %w", adminConf, master.Label, err)
	}
	if err := writeKubeconfig(ctx, c, p, cluster, kubeconfig); err != nil {
		return err
	}
	if err := writeHosts(ctx, c, p, cluster, hosts, run.Leaving); err != nil {
		return err
	}
	return unpinLeaving(ctx, c, p, cluster, hosts, run.Leaving, opts.Port)
}

// unpinLeaving forgets the pinned host keys of the nodes the run removed: their addresses may
// go to other hosts, and their hosts may come back reinstalled.
func unpinLeaving(ctx context.Context, c client.Client, p *bpav1.Provisioning, cluster string, hosts []bpav1.Node, leaving []string, port int) error {
	var addrs []string
	for _, h := range hosts {
		if slices.Contains(leaving, h.Label) && h.IP != "" {
			addrs = append(addrs, net.JoinHostPort(h.IP, strconv.Itoa(port)))
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	if err := knownhosts.For(c, p.Namespace, cluster).OwnedBy(p).Unpin(ctx, addrs); err != nil {
		return steps.Retryable(fmt.Errorf("unpinning the host keys of the removed nodes: %w", err))
	}
	return nil
}

func ownedBy(p *bpav1.Provisioning, obj metav1.Object, c client.Client) error {
	return controllerutil.SetOwnerReference(p, obj, c.Scheme())
}

func writeKubeconfig(ctx context.Context, c client.Client, p *bpav1.Provisioning, cluster string, kubeconfig []byte) error {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: cluster + bpav1.KubeconfigSecretSuffix}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, sec, func() error {
		if sec.Labels == nil {
			sec.Labels = map[string]string{}
		}
		sec.Labels[bpav1.ClusterLabel] = cluster
		sec.Data = map[string][]byte{bpav1.KubeconfigSecretKey: kubeconfig}
		return ownedBy(p, sec, c)
	})
	if err != nil {
		return steps.Retryable(fmt.Errorf("writing Secret %s/%s: %w", sec.Namespace, sec.Name, err))
	}
	return nil
}

func writeHosts(ctx context.Context, c client.Client, p *bpav1.Provisioning, cluster string, hosts []bpav1.Node, leaving []string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: cluster + bpav1.HostsConfigMapSuffix}}
	data := map[string]string{}
	for _, h := range hosts {
		if slices.Contains(leaving, h.Label) {
			continue // a node the run removed
		}
		raw, err := json.Marshal(h)
		if err != nil {
			return err
		}
		data[h.Label] = string(raw)
	}
	_, err := controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[bpav1.ClusterLabel] = cluster
		cm.Data = data
		return ownedBy(p, cm, c)
	})
	if err != nil {
		return steps.Retryable(fmt.Errorf("writing ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err))
	}
	return nil
}
