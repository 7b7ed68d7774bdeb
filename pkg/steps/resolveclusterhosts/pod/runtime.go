package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Run lists the cluster's nodes from ConfigMap "<cluster>-hosts" (written by
// fetch-kubeconfig, one node per label; an entry written before nodes had one shape holds only
// {"ip", "role"}), sorted by label: what install-software fans out over; with only, just those nodes. A cluster whose hosts are not
// known yet is a retryable failure.
func Run(ctx context.Context, c client.Reader, ref stepcmd.CRRef, only []string) ([]bpav1.Node, error) {
	sw := &bpav1.Software{}
	if err := stepcmd.Get(ctx, c, ref, sw, "Software"); err != nil {
		return nil, err
	}
	cluster := sw.Labels[bpav1.ClusterLabel]
	cm := &corev1.ConfigMap{}
	name := cluster + bpav1.HostsConfigMapSuffix
	if err := c.Get(ctx, client.ObjectKey{Namespace: sw.Namespace, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, steps.Retryable(fmt.Errorf("ConfigMap %s/%s does not exist yet: cluster %s has not been provisioned", sw.Namespace, name, cluster))
		}
		return nil, steps.Retryable(fmt.Errorf("reading ConfigMap %s/%s: %w", sw.Namespace, name, err))
	}
	var nodes []bpav1.Node
	for label, raw := range cm.Data {
		if len(only) > 0 && !slices.Contains(only, label) {
			continue
		}
		var n bpav1.Node
		if err := json.Unmarshal([]byte(raw), &n); err != nil || net.ParseIP(n.IP) == nil || n.Role.Validate() != nil {
			return nil, fmt.Errorf("ConfigMap %s/%s: node %q is not {\"ip\", \"role\"} with an IP address and a role", sw.Namespace, name, label)
		}
		n.Label = label
		nodes = append(nodes, n)
	}
	for _, want := range only {
		if !slices.ContainsFunc(nodes, func(n bpav1.Node) bool { return n.Label == want }) {
			return nil, fmt.Errorf("node %q is not in cluster %s (ConfigMap %s/%s)", want, cluster, sw.Namespace, name)
		}
	}
	slices.SortFunc(nodes, func(a, b bpav1.Node) int { return strings.Compare(a.Label, b.Label) })
	return nodes, nil
}
