package controller

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// state is where a CR stands, in kstatus terms.
type state int

const (
	// reconciling: work is under way or waiting for something that will happen by itself.
	reconciling state = iota
	// stalled: nothing happens until someone acts (a spec change, argo retry or resubmit).
	stalled
	// ready: the generation is done.
	ready
)

// summary is the outcome of one reconcile, turned into conditions by setConditions.
type summary struct {
	state   state
	reason  string
	message string
}

// setConditions writes Ready, Reconciling and Stalled (the last two with abnormal-true
// polarity, present only when true), each stamped with the generation they describe.
// meta.SetStatusCondition keeps LastTransitionTime unless the status changes.
func setConditions(conds *[]metav1.Condition, generation int64, s summary) {
	set := func(t string, status metav1.ConditionStatus) {
		meta.SetStatusCondition(conds, metav1.Condition{
			Type: t, Status: status, Reason: s.reason, Message: s.message, ObservedGeneration: generation,
		})
	}
	switch s.state {
	case ready:
		set(bpav1.ConditionReady, metav1.ConditionTrue)
		meta.RemoveStatusCondition(conds, bpav1.ConditionReconciling)
		meta.RemoveStatusCondition(conds, bpav1.ConditionStalled)
	case stalled:
		set(bpav1.ConditionReady, metav1.ConditionFalse)
		set(bpav1.ConditionStalled, metav1.ConditionTrue)
		meta.RemoveStatusCondition(conds, bpav1.ConditionReconciling)
	default:
		set(bpav1.ConditionReady, metav1.ConditionFalse)
		set(bpav1.ConditionReconciling, metav1.ConditionTrue)
		meta.RemoveStatusCondition(conds, bpav1.ConditionStalled)
	}
	slices.SortFunc(*conds, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
}

// isReady reports whether conditions say Ready for this generation.
func isReady(conds []metav1.Condition, generation int64) bool {
	c := meta.FindStatusCondition(conds, bpav1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation
}

// readyChanged reports whether the Ready condition's reason or message changed: what is worth
// an Event.
func readyChanged(before, after []metav1.Condition) (*metav1.Condition, bool) {
	a := meta.FindStatusCondition(after, bpav1.ConditionReady)
	if a == nil {
		return nil, false
	}
	b := meta.FindStatusCondition(before, bpav1.ConditionReady)
	return a, b == nil || b.Reason != a.Reason || b.Message != a.Message || b.Status != a.Status
}

// summaryOf maps a mirrored Workflow phase to a summary.
func summaryOf(phase bpav1.WorkflowPhase, workflow, message string) summary {
	switch phase {
	case bpav1.PhaseSucceeded:
		return summary{ready, bpav1.ReasonWorkflowSucceeded, "Workflow " + workflow + " succeeded"}
	case bpav1.PhaseFailed, bpav1.PhaseError:
		if message == "" {
			message = "no message"
		}
		return summary{stalled, bpav1.ReasonWorkflowFailed, "Workflow " + workflow + " " + strings.ToLower(string(phase)) + ": " + message +
			" (argo retry or argo resubmit it, or change the spec)"}
	case bpav1.PhaseRunning:
		if message != "" {
			return summary{reconciling, bpav1.ReasonWorkflowRunning, "Workflow " + workflow + " is running: " + message}
		}
		return summary{reconciling, bpav1.ReasonWorkflowRunning, "Workflow " + workflow + " is running"}
	}
	return summary{reconciling, bpav1.ReasonWorkflowPending, "Workflow " + workflow + " is pending"}
}
