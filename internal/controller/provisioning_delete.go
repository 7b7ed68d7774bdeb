package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/identity"
)

// reconcileDelete releases every BareMetalHost the Provisioning claimed, then lets it go. Its
// Workflows are deleted by the garbage collector (they are owned by it).
func (r *ProvisioningReconciler) reconcileDelete(ctx context.Context, p *bpav1.Provisioning) error {
	if !controllerutil.ContainsFinalizer(p, bpav1.HostsFinalizer) {
		return nil
	}
	released, err := releaseClaims(ctx, r.APIReader, r.Client, p, nil)
	if err != nil {
		r.Recorder.Eventf(p, corev1.EventTypeWarning, bpav1.EventReleaseFailed, "Cannot release the claimed BareMetalHosts yet: %v", err)
		return err
	}
	if err := identity.Release(ctx, r.Client, p); err != nil {
		return err
	}
	if len(released) > 0 {
		r.Recorder.Eventf(p, corev1.EventTypeNormal, bpav1.EventHostsReleased, "Released %d BareMetalHosts on deletion", len(released))
	}
	before := p.DeepCopy()
	controllerutil.RemoveFinalizer(p, bpav1.HostsFinalizer)
	return client.IgnoreNotFound(r.Patch(ctx, p, client.MergeFrom(before)))
}
