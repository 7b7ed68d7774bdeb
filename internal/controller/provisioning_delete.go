package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/identity"
)

// reconcileDelete lets a deleted Provisioning go only once nothing of it can touch a host:
// its unfinished Workflows are stopped first (Argo's own stop, so exit handlers run) and the
// claims are released only when none runs any more. Released earlier, a host could be claimed
// by another Provisioning while this one's kubespray still runs against it; the garbage
// collector, which deletes the Workflows after the CR is gone, comes too late for that.
func (r *ProvisioningReconciler) reconcileDelete(ctx context.Context, p *bpav1.Provisioning) error {
	r.progress.forget(p.UID)
	if !controllerutil.ContainsFinalizer(p, bpav1.HostsFinalizer) {
		return nil
	}
	if running, err := r.stopWorkflows(ctx, p); err != nil || len(running) > 0 {
		return errors.Join(err, r.sayStopping(ctx, p, running, err))
	}
	released, err := releaseClaims(ctx, r.APIReader, r.Client, p, nil)
	if err != nil {
		r.Recorder.Eventf(p, corev1.EventTypeWarning, bpav1.EventReleaseFailed, "Cannot release the claimed BareMetalHosts yet: %v", err)
		return err
	}
	log := ctrl.LoggerFrom(ctx)
	for _, name := range released {
		log.Info("Released BareMetalHost", "bareMetalHost", name)
	}
	if err := identity.Release(ctx, r.Client, p); err != nil {
		return err
	}
	if len(released) > 0 {
		r.Recorder.Eventf(p, corev1.EventTypeNormal, bpav1.EventHostsReleased, "Released %d BareMetalHosts on deletion", len(released))
	}
	before := p.DeepCopy()
	controllerutil.RemoveFinalizer(p, bpav1.HostsFinalizer)
	if err := r.Patch(ctx, p, client.MergeFrom(before)); err != nil {
		return client.IgnoreNotFound(err)
	}
	log.Info("Removed finalizer", "finalizer", bpav1.HostsFinalizer)
	return nil
}

// stopWorkflows asks Argo to stop every unfinished Workflow of p that has not been asked yet,
// and returns those still unfinished. Without Argo's API there is nothing to stop.
func (r *ProvisioningReconciler) stopWorkflows(ctx context.Context, p *bpav1.Provisioning) ([]wfv1.Workflow, error) {
	if !r.Argo.Served() {
		return nil, nil
	}
	wfs, err := ownedWorkflows(ctx, r.Client, bpav1.WorkflowKindProvisioning, p)
	if err != nil {
		return nil, err
	}
	running := allUnfinished(wfs)
	for i := range running {
		wf := &running[i]
		if wf.Spec.Shutdown != "" {
			continue
		}
		before := wf.DeepCopy()
		wf.Spec.Shutdown = wfv1.ShutdownStrategyStop
		if err := r.Patch(ctx, wf, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
			return running, fmt.Errorf("stopping Workflow %s: %w", wf.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Stopping Workflow of a deleted Provisioning", "workflow", klog.KObj(wf))
		r.Recorder.Eventf(p, corev1.EventTypeNormal, bpav1.ReasonStoppingWorkflows,
			"Stopping Workflow %s (argo stop): the BareMetalHosts are released once it has stopped", wf.Name)
	}
	return running, nil
}

// sayStopping writes, into the deleted CR's status, which Workflows its deletion waits for.
func (r *ProvisioningReconciler) sayStopping(ctx context.Context, p *bpav1.Provisioning, running []wfv1.Workflow, stopErr error) error {
	before := p.DeepCopy()
	names := make([]string, 0, len(running))
	for _, wf := range running {
		names = append(names, wf.Name)
	}
	msg := fmt.Sprintf("being deleted: waiting for Workflow %s to stop (argo stop; its exit handlers run) before the BareMetalHosts are released; argo delete ends the wait at once",
		strings.Join(names, ", "))
	if stopErr != nil {
		msg = "being deleted: cannot stop its Workflows yet; retrying"
	}
	setConditions(&p.Status.Conditions, p.Generation, summary{reconciling, bpav1.ReasonStoppingWorkflows, msg})
	_, err := writeStatus(ctx, r.Client, p, before, !equality.Semantic.DeepEqual(before.Status, p.Status))
	return err
}
