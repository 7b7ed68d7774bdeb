package controller_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/controller"
)

// TestStatusWriteFromAStaleCopy: a status computed from a copy older than the controller's own
// last write must not land as a merge patch that silently keeps the newer server value of the
// fields it happens to share with the old copy. It is refused (and reconciled again) instead.
func TestStatusWriteFromAStaleCopy(t *testing.T) {
	ns := newNamespace(t)
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, p)
	p.Status.Phase = bpav1.PhaseSucceeded
	if err := env.Client.Status().Update(ctx(), p); err != nil {
		t.Fatal(err)
	}
	stale := getProvisioning(t, p) // what a lagging cache still holds: Succeeded
	newer := stale.DeepCopy()
	newer.Status.Phase = bpav1.PhasePending // the controller's own later write
	if err := env.Client.Status().Update(ctx(), newer); err != nil {
		t.Fatal(err)
	}

	// From the stale copy, the next status is Succeeded again: against that base the phase
	// "did not change", so a plain merge patch would leave Pending on the server.
	next := stale.DeepCopy()
	next.Status.WorkflowName = "prov-x-2"
	written, requeue, err := controller.WriteStatus(ctx(), env.Client, next, stale, true)
	if err != nil || written || !requeue {
		t.Fatalf("written %v, requeue %v, err %v; want a refused write and a requeue", written, requeue, err)
	}
	if got := getProvisioning(t, p); got.Status.Phase != bpav1.PhasePending || got.Status.WorkflowName != "" {
		t.Errorf("the stale write landed in part: %+v", got.Status.WorkflowStatus)
	}

	fresh := getProvisioning(t, p)
	next = fresh.DeepCopy()
	next.Status.Phase = bpav1.PhaseSucceeded
	if written, requeue, err := controller.WriteStatus(ctx(), env.Client, next, fresh, true); err != nil || !written || requeue {
		t.Fatalf("from a fresh copy: written %v, requeue %v, err %v", written, requeue, err)
	}
	if got := getProvisioning(t, p); got.Status.Phase != bpav1.PhaseSucceeded {
		t.Errorf("phase %s after a write from a fresh copy", got.Status.Phase)
	}
}

// TestFinalizerFromAStaleCopy: the finalizer is added with a patch conditioned on the copy's
// resourceVersion: a stale copy (another writer's change since) never writes over it.
func TestFinalizerFromAStaleCopy(t *testing.T) {
	ns := newNamespace(t)
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, p)
	stale := getProvisioning(t, p)
	patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.KUDPlugins = []string{"multus"} })
	err := controller.EnsureFinalizer(ctx(), env.Client, stale, bpav1.HostsFinalizer)
	if !apierrors.IsConflict(err) {
		t.Fatalf("%v; want a conflict from a stale copy", err)
	}
	fresh := getProvisioning(t, p)
	if err := controller.EnsureFinalizer(ctx(), env.Client, fresh, bpav1.HostsFinalizer); err != nil {
		t.Fatal(err)
	}
	if got := getProvisioning(t, p); len(got.Finalizers) != 1 || len(got.Spec.KUDPlugins) != 1 {
		t.Errorf("finalizers %v, plugins %v", got.Finalizers, got.Spec.KUDPlugins)
	}
}
