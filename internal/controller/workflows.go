package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/identity"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/observe"
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

// CacheOptions are the manager's cache options: Workflows, ServiceAccounts, Roles,
// RoleBindings and ConfigMaps restricted to ours, and no object cached with its managed fields, which the controller never reads (on a Workflow Argo has
// updated, they are a large part of the object).
func CacheOptions() cache.Options {
	byObject := map[client.Object]cache.ByObject{&wfv1.Workflow{}: WorkflowCacheSelector()}
	// The ConfigMaps the controller writes: each cluster's kept kubespray facts.
	for _, obj := range append(identity.Cached(), &corev1.ConfigMap{}) {
		byObject[obj] = cache.ByObject{Label: identity.CacheSelector()}
	}
	return cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()}
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

// workflowsOfRun keeps the Workflows of one run (its bpa.akraino.org/run label).
func workflowsOfRun(wfs []wfv1.Workflow, run string) []wfv1.Workflow {
	var out []wfv1.Workflow
	for _, wf := range wfs {
		if wf.Labels[bpav1.WorkflowRunLabel] == run {
			out = append(out, wf)
		}
	}
	return out
}

// workflowsOfGeneration keeps the Workflows of one generation, whatever their run.
func workflowsOfGeneration(wfs []wfv1.Workflow, generation int64) []wfv1.Workflow {
	gen := strconv.FormatInt(generation, 10)
	var out []wfv1.Workflow
	for _, wf := range wfs {
		if wf.Labels[bpav1.WorkflowGenerationLabel] == gen {
			out = append(out, wf)
		}
	}
	return out
}

// unrecordedSuccess is the succeeded Workflow the record (status.provisioned) has not taken in
// yet: of a run other than the recorded one, of the recorded generation or a later one; the
// latest generation first, then the newest.
func unrecordedSuccess(wfs []wfv1.Workflow, rec *bpav1.ProvisionedNodes) *wfv1.Workflow {
	var best *wfv1.Workflow
	var bestGen int64
	for i := range wfs {
		wf := &wfs[i]
		gen, err := strconv.ParseInt(wf.Labels[bpav1.WorkflowGenerationLabel], 10, 64)
		if err != nil || wf.Status.Phase != wfv1.WorkflowSucceeded {
			continue
		}
		if rec != nil && (gen < rec.Generation || wf.Labels[bpav1.WorkflowRunLabel] == rec.Run) {
			continue
		}
		if best == nil || gen > bestGen || (gen == bestGen && observe.Newest([]wfv1.Workflow{*best, *wf}).Name == wf.Name) {
			best, bestGen = wf, gen
		}
	}
	return best
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

// nameTakenError is a Workflow of the run's name that belongs to another object: a deleted CR
// of the same name whose Workflows were orphaned, or someone else's.
type nameTakenError struct {
	name  string
	owner string
}

func (e *nameTakenError) Error() string {
	return fmt.Sprintf("Workflow %s already exists and belongs to %s, not to this object; delete it, or set annotation %s to a new value to run under another name",
		e.name, e.owner, bpav1.RerunAnnotation)
}

// createFailed says why a Workflow could not be created: a name taken by another object's
// Workflow is Stalled with its cause (nothing clears it but a person); anything else is
// returned, to be retried.
func createFailed(st *bpav1.WorkflowStatus, generation int64, wf *wfv1.Workflow, err error) (summary, error) {
	var taken *nameTakenError
	if errors.As(err, &taken) {
		return stalledBy(st, generation, bpav1.ReasonWorkflowConflict, err), nil
	}
	return summary{reconciling, bpav1.ReasonCreateFailed, "cannot create Workflow " + wf.Name + "; retrying"}, err
}

// createWorkflow creates a compiled Workflow, and leaves in wf the Workflow as the server has
// it. Its name is deterministic per run, so a create that finds it there already (a restart, a
// stale cache) is not an error and creates nothing; unless the Workflow there is not this
// object's, which is a *nameTakenError saying whose.
func createWorkflow(ctx context.Context, c client.Client, wf *wfv1.Workflow) (bool, error) {
	err := c.Create(ctx, wf)
	if err == nil {
		return true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("creating Workflow %s/%s: %w", wf.Namespace, wf.Name, err)
	}
	existing := &wfv1.Workflow{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(wf), existing); err != nil {
		return false, fmt.Errorf("reading Workflow %s/%s, which exists: %w", wf.Namespace, wf.Name, err)
	}
	if owner := metav1.GetControllerOf(existing); len(wf.OwnerReferences) > 0 && (owner == nil || owner.UID != wf.OwnerReferences[0].UID) {
		whose := "no object"
		if owner != nil {
			whose = fmt.Sprintf("%s %s (uid %s)", owner.Kind, owner.Name, owner.UID)
		}
		return false, &nameTakenError{name: wf.Name, owner: whose}
	}
	*wf = *existing
	return false, nil
}
