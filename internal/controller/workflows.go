package controller

import (
	"context"
	"fmt"
	"strconv"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
)

// WorkflowCacheSelector restricts the manager's Workflow cache to ours: the controller never
// holds the site's other Workflows in memory.
func WorkflowCacheSelector() cache.ByObject {
	req, err := labels.NewRequirement(bpav1.WorkflowKindLabel, selection.In,
		[]string{bpav1.WorkflowKindProvisioning, bpav1.WorkflowKindSoftware})
	if err != nil {
		panic(err) // constant input
	}
	return cache.ByObject{Label: labels.NewSelector().Add(*req)}
}

// CacheOptions are the manager's cache options: Workflows restricted to ours.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{&wfv1.Workflow{}: WorkflowCacheSelector()}}
}

// ownedWorkflows lists the Workflows of one CR: its labels, and its UID among the owner
// references (`argo resubmit` copies both), so a deleted and recreated CR of the same name
// never adopts its predecessor's Workflows.
func ownedWorkflows(ctx context.Context, c client.Reader, kind string, owner client.Object) ([]wfv1.Workflow, error) {
	var list wfv1.WorkflowList
	if err := c.List(ctx, &list, client.InNamespace(owner.GetNamespace()), client.MatchingLabels{
		bpav1.WorkflowKindLabel: kind,
		bpav1.WorkflowNameLabel: compile.LabelValue(owner.GetName()),
	}); err != nil {
		return nil, fmt.Errorf("listing the Workflows of %s %s/%s: %w", kind, owner.GetNamespace(), owner.GetName(), err)
	}
	var out []wfv1.Workflow
	for _, wf := range list.Items {
		for _, ref := range wf.OwnerReferences {
			if ref.UID == owner.GetUID() {
				out = append(out, wf)
				break
			}
		}
	}
	return out, nil
}

// ofRun keeps the Workflows of one run: a generation and, for Software, a scope ("" matches
// any scope).
func ofRun(wfs []wfv1.Workflow, generation int64, scope string) []wfv1.Workflow {
	gen := strconv.FormatInt(generation, 10)
	var out []wfv1.Workflow
	for _, wf := range wfs {
		if wf.Labels[bpav1.WorkflowGenerationLabel] != gen {
			continue
		}
		if scope != "" && wf.Labels[bpav1.WorkflowScopeLabel] != scope {
			continue
		}
		out = append(out, wf)
	}
	return out
}

// unfinished returns a Workflow that Argo is still running (or has yet to start), if any.
func unfinished(wfs []wfv1.Workflow) *wfv1.Workflow {
	for i := range wfs {
		if !wfs[i].Status.Phase.Completed() {
			return &wfs[i]
		}
	}
	return nil
}

// allUnfinished keeps the Workflows Argo is still running (or has yet to start).
func allUnfinished(wfs []wfv1.Workflow) []wfv1.Workflow {
	var out []wfv1.Workflow
	for _, wf := range wfs {
		if !wf.Status.Phase.Completed() {
			out = append(out, wf)
		}
	}
	return out
}

// createWorkflow creates a compiled Workflow. Its name is deterministic per run, so a create
// that finds it there already (a restart, a stale cache) is not an error and creates nothing.
func createWorkflow(ctx context.Context, c client.Client, wf *wfv1.Workflow) (bool, error) {
	if err := c.Create(ctx, wf); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return false, fmt.Errorf("creating Workflow %s/%s: %w", wf.Namespace, wf.Name, err)
	}
	return true, nil
}
