package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/observe"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
)

// reconcileScope is what both kinds' reconciles read and decide alike: the CR's Workflows and the
// summary the conditions are written from.
type reconcileScope struct {
	workflows []wfv1.Workflow
	summary   summary
	// evented: the reconcile said what it did in an Event of its own (created a Workflow).
	evented bool
}

// requireArgo stops the reconcile while Argo's Workflows are not served, saying so.
func (o *reconcileScope) requireArgo(a *ArgoAPI) (bool, error) { return a.missing(&o.summary), nil }

// listWorkflows reads the Workflows the CR owns (of kind) from the cache.
func (o *reconcileScope) listWorkflows(ctx context.Context, c client.Reader, kind string, cr client.Object) (bool, error) {
	wfs, err := ownedWorkflows(ctx, c, kind, cr)
	if err != nil {
		o.summary = summary{reconciling, bpav1.ReasonListFailed, "cannot list Workflows; retrying"}
	}
	o.workflows = wfs
	return false, err
}

// writeBack sets the conditions the reconcile's summary says and writes the status when it
// differs from before's (changed, asked once the conditions are set). written says whether the
// status on the server is this one: the reconcile's Events follow only a written status.
func (o *reconcileScope) writeBack(ctx context.Context, c client.Client, obj, before client.Object, conds *[]metav1.Condition, generation int64, changed func() bool) (bool, error) {
	setConditions(conds, generation, o.summary)
	return writeStatus(ctx, c, obj, before, changed())
}

func observeDuration(kind string, start time.Time) {
	reconcileDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
}

// resetWorkflowStatus empties the mirrored fields for a generation that has no Workflow (yet):
// the status describes this generation, not the last one's run. The record of the last
// finished run stays.
func resetWorkflowStatus(st *bpav1.WorkflowStatus, generation int64) {
	*st = bpav1.WorkflowStatus{ObservedGeneration: generation, Conditions: st.Conditions, LastRun: st.LastRun}
}

// readBackAfter is how soon a reconcile runs again after writing a record the next decision
// must read back from the server. A write conflict (the cache catching up with the
// controller's own write) is returned as an error instead: the controller's rate limiter
// spaces the retries, backing off should the object keep changing.
const readBackAfter = 100 * time.Millisecond

// staleError is a write refused because the copy it was computed from was stale.
type staleError struct {
	what string
	err  error
}

func (e *staleError) Error() string {
	return e.what + " was changed meanwhile; reconciling again from the new copy: " + e.err.Error()
}
func (e *staleError) Unwrap() error { return e.err }

// ensureFinalizer adds a finalizer with a patch conditioned on the copy's resourceVersion, so
// a stale copy never writes, and the reconcile goes on with the object as the server now has it.
func ensureFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	if controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, finalizer)
	return c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// wantedRun is the run a CR's generation asks for over scope: its uid, generation, the rerun
// annotation, and salt.
func wantedRun(om *metav1.ObjectMeta, scope string, salt ...string) string {
	return compile.RunID(om, scope, append(salt, om.Annotations[bpav1.RerunAnnotation])...)
}

// recordOf is the record of a finished Workflow.
func recordOf(wf *wfv1.Workflow, o observe.Observation) *bpav1.RunRecord {
	gen, _ := strconv.ParseInt(wf.Labels[bpav1.WorkflowGenerationLabel], 10, 64)
	return &bpav1.RunRecord{
		Run: wf.Labels[bpav1.WorkflowRunLabel], Generation: gen, WorkflowName: o.Name,
		Phase: o.Phase, Message: o.Message, FinishedAt: o.FinishedAt,
	}
}

// restoreRecord shows a finished run whose Workflow is gone (Argo's TTL, archiving, argo
// delete) as its record says. It is not run again: a succeeded run stays Ready, a failed one
// Stalled until the spec changes or the rerun annotation asks.
func restoreRecord(st *bpav1.WorkflowStatus, generation int64, rec *bpav1.RunRecord) summary {
	resetWorkflowStatus(st, generation)
	st.WorkflowName, st.Phase, st.Message, st.FinishedAt = rec.WorkflowName, rec.Phase, rec.Message, rec.FinishedAt
	if rec.Phase == bpav1.PhaseSucceeded {
		return summary{ready, bpav1.ReasonWorkflowSucceeded, "Workflow " + rec.WorkflowName + " succeeded (it has been deleted since; the outcome is recorded)"}
	}
	msg := rec.Message
	if msg == "" {
		msg = "no message"
	}
	return summary{stalled, bpav1.ReasonWorkflowDeleted, fmt.Sprintf(
		"Workflow %s %s: %s; it has been deleted since: set annotation %s to a new value to run generation %d again, or change the spec",
		rec.WorkflowName, strings.ToLower(string(rec.Phase)), msg, bpav1.RerunAnnotation, rec.Generation)}
}

// stalledBy records a generation nobody can run until the spec changes: no Workflow, no
// retry, the reason's message in status and conditions.
func stalledBy(st *bpav1.WorkflowStatus, generation int64, reason string, err error) summary {
	resetWorkflowStatus(st, generation)
	st.Message = err.Error()
	return summary{stalled, reason, err.Error()}
}

// applyObservation mirrors what both kinds share.
func applyObservation(st *bpav1.WorkflowStatus, generation int64, o observe.Observation) {
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
// reason and message: no Event for a reconcile that changed nothing; none for progress within
// Reconciling (a Workflow pending, then running), which the status shows and which would cost
// the API server as many writes again as the status itself; and none for a reconcile that has
// already said what it did in an Event of its own (created a Workflow). One Event per reconcile
// at most.
func emitReadyChange(rec record.EventRecorder, obj runtime.Object, before, after []metav1.Condition, s summary, evented bool) {
	if _, changed := readyChanged(before, after); !changed || evented {
		return
	}
	if s.state == reconciling && meta.IsStatusConditionTrue(before, bpav1.ConditionReconciling) {
		return
	}
	kind := corev1.EventTypeNormal
	if s.state == stalled {
		kind = corev1.EventTypeWarning
	}
	rec.Event(obj, kind, s.reason, s.message)
}

// specOrLifecycleChanged lets through what needs a reconcile — creation, a new generation,
// labels (the cluster label), deletion, a rerun request, finalizer (when not empty) taken away by
// someone else — and not the writes the controller makes itself: its status patches and adding
// finalizer, which would each cost a reconcile that finds nothing to do.
func specOrLifecycleChanged(finalizer string) predicate.Predicate {
	lifecycle := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero() ||
			(finalizer != "" && controllerutil.ContainsFinalizer(e.ObjectOld, finalizer) && !controllerutil.ContainsFinalizer(e.ObjectNew, finalizer))
	}}
	rerun := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[bpav1.RerunAnnotation] != e.ObjectNew.GetAnnotations()[bpav1.RerunAnnotation]
	}}
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, lifecycle, rerun)
}

// workflowChanged lets through the Workflow events a CR's status follows: Argo's updates,
// deletions, and the creation of a Workflow the controller did not create itself (`argo
// resubmit`, which labels its copy). The controller mirrors the Workflows it creates in the
// reconcile that creates them, and at start every CR is reconciled anyway, so their creation
// events would only cost reconciles that find nothing to do.
func workflowChanged() predicate.TypedPredicate[*wfv1.Workflow] {
	return predicate.TypedFuncs[*wfv1.Workflow]{CreateFunc: func(e event.TypedCreateEvent[*wfv1.Workflow]) bool {
		_, resubmitted := e.Object.GetLabels()[bpav1.ResubmittedFromLabel]
		return resubmitted
	}}
}

// patchStatus writes the status computed from before, conditioned on before's resourceVersion.
// The cache may not hold the controller's own last write yet; a merge patch computed against
// such a stale base would silently drop the fields that happen to equal it (a phase written
// back to what the stale copy said). The condition turns that into a conflict, and the
// reconcile runs again on a fresh copy.
func patchStatus(ctx context.Context, c client.Client, obj, before client.Object) error {
	return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// writeStatus patches the status when it changed. A conflict is a *staleError, which runs the
// reconcile again through the rate limiter; a CR deleted meanwhile is no error. written says
// whether the status now on the server is this one.
func writeStatus(ctx context.Context, c client.Client, obj, before client.Object, changed bool) (written bool, err error) {
	if !changed {
		return true, nil
	}
	switch err := patchStatus(ctx, c, obj, before); {
	case err == nil:
		return true, nil
	case apierrors.IsConflict(err):
		return false, &staleError{what: "the status of " + obj.GetName(), err: err}
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("patching the status: %w", err)
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
