package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/identity"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/observe"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// The controller keeps kubespray's facts per cluster: run-kubespray's pod holds no token, so
// it hands the facts it gathered over as an output, and the controller writes them where the
// next run's pod mounts them. The ConfigMap is read from the manager's cache (the objects the
// controller writes, identity.CacheSelector) and written only when a run gathered newer facts.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update

// keepKubesprayFacts keeps what the Provisioning's kubespray runs gathered in the cluster's
// "<cluster>-kubespray-facts" ConfigMap. An output that cannot be read is logged and left: the
// next run gathers those facts again.
func (r *ProvisioningReconciler) keepKubesprayFacts(ctx context.Context, s *provisioningScope) (bool, error) {
	var runs []runkubespray.KeptFacts
	for i := range s.workflows {
		kept, errs := observe.KeptFacts(&s.workflows[i])
		for _, err := range errs {
			logf.FromContext(ctx).Info("kubespray's facts not kept", "error", err.Error())
		}
		runs = append(runs, kept...)
	}
	if len(runs) == 0 {
		return false, nil
	}
	if err := keepFacts(ctx, r.Client, s.p, runs); err != nil {
		return false, fmt.Errorf("keeping kubespray's facts: %w", err)
	}
	return false, nil
}

// keepFacts merges runs into the cluster's kept facts (runkubespray.Merge), owned by p: a
// create, or an update conditioned on the version read, only when something changed.
func keepFacts(ctx context.Context, c client.Client, p *bpav1.Provisioning, runs []runkubespray.KeptFacts) error {
	cluster := p.Labels[bpav1.ClusterLabel]
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: p.Namespace, Name: cluster + bpav1.KubesprayFactsConfigMapSuffix}
	if err := c.Get(ctx, key, cm); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	index := map[string]string{}
	if raw, ok := cm.Data[runkubespray.FactsIndexKey]; ok {
		// An index that does not parse keeps nothing: every entry is replaced.
		_ = json.Unmarshal([]byte(raw), &index)
	}
	data, index, changed := runkubespray.Merge(cm.BinaryData, index, runs...)
	if !changed && !missingOwner(c, cm, p) {
		return nil
	}
	rawIndex, err := json.Marshal(index)
	if err != nil {
		return err
	}
	cm.Name, cm.Namespace = key.Name, key.Namespace
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[identity.ManagedByLabel], cm.Labels[bpav1.ClusterLabel] = identity.ManagedBy, cluster
	cm.BinaryData, cm.Data = data, map[string]string{runkubespray.FactsIndexKey: string(rawIndex)}
	if err := controllerutil.SetOwnerReference(p, cm, c.Scheme()); err != nil {
		return err
	}
	if cm.ResourceVersion == "" {
		return c.Create(ctx, cm)
	}
	return c.Update(ctx, cm)
}

// missingOwner says whether the kept facts exist without p among their owners (kept by an
// earlier Provisioning of the cluster): p then keeps them too.
func missingOwner(c client.Client, cm *corev1.ConfigMap, p *bpav1.Provisioning) bool {
	if cm.ResourceVersion == "" {
		return false
	}
	owned, err := controllerutil.HasOwnerReference(cm.OwnerReferences, p, c.Scheme())
	return err == nil && !owned
}
