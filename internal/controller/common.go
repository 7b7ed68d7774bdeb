package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/mirror"
)

func observeDuration(kind string, start time.Time) {
	reconcileDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
}

// resetWorkflowStatus empties the mirrored fields for a generation that has no Workflow (yet):
// the status describes this generation, not the last one's run.
func resetWorkflowStatus(st *bpav1.WorkflowStatus, generation int64) {
	conds := st.Conditions
	*st = bpav1.WorkflowStatus{ObservedGeneration: generation, Conditions: conds}
}

// stalledBy records a generation nobody can run until the spec changes: no Workflow, no
// retry, the reason's message in status and conditions.
func stalledBy(st *bpav1.WorkflowStatus, generation int64, reason string, err error) summary {
	resetWorkflowStatus(st, generation)
	st.Message = err.Error()
	return summary{stalled, reason, err.Error()}
}

// applyObservation mirrors what both kinds share.
func applyObservation(st *bpav1.WorkflowStatus, generation int64, o mirror.Observation) {
	st.ObservedGeneration = generation
	st.WorkflowName = o.Name
	st.Phase = o.Phase
	st.Progress = o.Progress
	st.StartedAt = o.StartedAt
	st.FinishedAt = o.FinishedAt
	st.Message = o.Message
	if o.NodesUnavailable != "" && st.Message == "" {
		st.Message = o.NodesUnavailable
	}
}

// emitReadyChange records an Event when the Ready condition changes, with the condition's
// reason and message: no Event for a reconcile that changed nothing.
func emitReadyChange(rec record.EventRecorder, obj runtime.Object, before, after []metav1.Condition, s summary) {
	if _, changed := readyChanged(before, after); !changed {
		return
	}
	kind := corev1.EventTypeNormal
	if s.state == stalled {
		kind = corev1.EventTypeWarning
	}
	rec.Event(obj, kind, s.reason, s.message)
}

// specOrLifecycleChanged lets through what needs a reconcile — creation, a new generation,
// labels (the cluster label), deletion — and not the status patches the controller makes
// itself.
func specOrLifecycleChanged() predicate.Predicate {
	deleting := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero() ||
			len(e.ObjectOld.GetFinalizers()) != len(e.ObjectNew.GetFinalizers())
	}}
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, deleting)
}

// patchStatus writes the status computed from before, conditioned on before's resourceVersion.
// The cache may not hold the controller's own last write yet; a merge patch computed against
// such a stale base would silently drop the fields that happen to equal it (a phase written
// back to what the stale copy said). The condition turns that into a conflict, and the
// reconcile runs again on a fresh copy.
func patchStatus(ctx context.Context, c client.Client, obj, before client.Object) error {
	return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// writeStatus patches the status when it changed. A conflict asks for the reconcile to run
// again (it is the cache catching up, not a failure worth an error); a CR deleted meanwhile
// is no error either. written says whether the status now on the server is this one.
func writeStatus(ctx context.Context, c client.Client, obj, before client.Object, changed bool) (written, requeue bool, err error) {
	if !changed {
		return true, false, nil
	}
	switch err := patchStatus(ctx, c, obj, before); {
	case err == nil:
		return true, false, nil
	case apierrors.IsConflict(err):
		return false, true, nil
	case apierrors.IsNotFound(err):
		return false, false, nil
	default:
		return false, false, fmt.Errorf("patching the status: %w", err)
	}
}

// requestsFor turns listed objects into reconcile requests (for the watches that map one
// kind's events to another's objects).
func requestsFor[T any, P interface {
	*T
	client.Object
}](items []T) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(items))
	for i := range items {
		obj := P(&items[i])
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	}
	return reqs
}
