package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

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
