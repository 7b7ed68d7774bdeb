package controller

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// clusterHolder is the Provisioning that holds p's cluster in its namespace: the oldest of
// those labelled with the cluster (the first created; by name when created in the same
// second), being deleted or not. A cluster has one identity (step ServiceAccount, Secrets,
// host claims), so only its holder runs; nil when that is p itself.
func clusterHolder(p *bpav1.Provisioning, same []bpav1.Provisioning) *bpav1.Provisioning {
	var holder *bpav1.Provisioning
	for i := range same {
		o := &same[i]
		if holder == nil || older(o, holder) {
			holder = o
		}
	}
	if holder == nil || holder.UID == p.UID || !older(holder, p) {
		return nil
	}
	return holder
}

func older(a, b *bpav1.Provisioning) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// sameCluster lists the Provisionings of p's namespace labelled with p's cluster, p included.
func sameCluster(ctx context.Context, c client.Reader, p *bpav1.Provisioning) ([]bpav1.Provisioning, error) {
	var list bpav1.ProvisioningList
	if err := c.List(ctx, &list, client.InNamespace(p.Namespace), client.MatchingLabels{bpav1.ClusterLabel: p.Labels[bpav1.ClusterLabel]}); err != nil {
		return nil, fmt.Errorf("listing the Provisionings of cluster %s: %w", p.Labels[bpav1.ClusterLabel], err)
	}
	return list.Items, nil
}

// requireOwnCluster stops a Provisioning whose cluster another one of its namespace holds:
// Stalled, naming it, until that one is gone.
func (r *ProvisioningReconciler) requireOwnCluster(ctx context.Context, s *provisioningScope) (bool, error) {
	same, err := sameCluster(ctx, r.Client, s.p)
	if err != nil {
		s.summary = summary{reconciling, bpav1.ReasonListFailed, "cannot list the Provisionings of its cluster; retrying"}
		return true, err
	}
	holder := clusterHolder(s.p, same)
	if holder == nil {
		return false, nil
	}
	return r.stall(s, bpav1.ReasonClusterTaken, fmt.Errorf(
		"cluster %s belongs to Provisioning %s of this namespace: a cluster has one Provisioning; change metadata.labels.cluster (delete and create this CR again), or delete %s",
		s.p.Labels[bpav1.ClusterLabel], holder.Name, holder.Name))
}

// clusterSiblings maps a deleted Provisioning to the others of its cluster in its namespace:
// the one that waited for the cluster may now take it.
func (r *ProvisioningReconciler) clusterSiblings(ctx context.Context, obj client.Object) []reconcile.Request {
	p, ok := obj.(*bpav1.Provisioning)
	if !ok {
		return nil
	}
	same, err := sameCluster(ctx, r.Client, p)
	if err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range same {
		if same[i].UID != p.UID {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&same[i])})
		}
	}
	return reqs
}
