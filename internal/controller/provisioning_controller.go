package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/day2"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/mirror"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
)

// ProvisioningReconciler compiles each Provisioning generation into a Workflow and mirrors it.
type ProvisioningReconciler struct {
	client.Client
	// APIReader reads BareMetalHosts uncached: the controller touches them only to release
	// claims, which does not justify a cluster-wide informer.
	APIReader client.Reader
	Recorder  record.EventRecorder
	// Options are the compiler's options for this site; the kubespray plan is set per
	// generation.
	Options compile.Options
}

// +kubebuilder:rbac:groups=bpa.akraino.org,resources=provisionings,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=bpa.akraino.org,resources=provisionings/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=bpa.akraino.org,resources=provisionings/finalizers,verbs=update
// +kubebuilder:rbac:groups=argoproj.io,resources=workflows,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=metal3.io,resources=baremetalhosts,verbs=get;list;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// provisioningScope carries what one reconcile reads and decides.
type provisioningScope struct {
	p         *bpav1.Provisioning
	workflows []wfv1.Workflow
	summary   summary
}

// Reconcile brings one Provisioning's status up to date with its Workflow, creating the
// Workflow of a new generation first.
func (r *ProvisioningReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	defer observeDuration(bpav1.WorkflowKindProvisioning, time.Now())
	p := &bpav1.Provisioning{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !p.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, p)
	}
	if !controllerutil.ContainsFinalizer(p, bpav1.HostsFinalizer) {
		before := p.DeepCopy()
		controllerutil.AddFinalizer(p, bpav1.HostsFinalizer)
		return ctrl.Result{Requeue: true}, r.Patch(ctx, p, client.MergeFrom(before))
	}

	before := p.DeepCopy()
	s := &provisioningScope{p: p}
	defer func() {
		setConditions(&p.Status.Conditions, p.Generation, s.summary)
		written, requeue, err := writeStatus(ctx, r.Client, p, before, !equality.Semantic.DeepEqual(before.Status, p.Status))
		retErr = errors.Join(retErr, err)
		if requeue {
			res = ctrl.Result{Requeue: true}
		}
		if written {
			r.emit(p, before, s.summary)
		}
	}()

	for _, step := range []func(context.Context, *provisioningScope) (bool, error){
		r.listWorkflows, r.ensureWorkflow, r.observeWorkflow, r.recordSuccess,
	} {
		done, err := step(ctx, s)
		if err != nil || done {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

func (r *ProvisioningReconciler) listWorkflows(ctx context.Context, s *provisioningScope) (bool, error) {
	wfs, err := ownedWorkflows(ctx, r.Client, bpav1.WorkflowKindProvisioning, s.p)
	if err != nil {
		s.summary = summary{reconciling, "ListFailed", "cannot list Workflows; retrying"}
	}
	s.workflows = wfs
	return false, err
}

// ensureWorkflow creates this generation's Workflow unless it exists. It waits while an older
// generation's Workflow is still running: the new run's kubespray mode depends on its outcome.
func (r *ProvisioningReconciler) ensureWorkflow(ctx context.Context, s *provisioningScope) (bool, error) {
	p := s.p
	if len(ofRun(s.workflows, compile.Generation(&p.ObjectMeta), "")) > 0 {
		return false, nil
	}
	if busy := unfinished(s.workflows); busy != nil {
		resetWorkflowStatus(&p.Status.WorkflowStatus, p.Generation)
		s.summary = summary{reconciling, bpav1.ReasonWaitingForWorkflow,
			fmt.Sprintf("waiting for Workflow %s of generation %s to finish", busy.Name, busy.Labels[bpav1.WorkflowGenerationLabel])}
		return true, nil
	}
	opts := r.Options
	plan, err := day2.KubesprayPlan(p)
	if err != nil {
		return r.stall(s, bpav1.ReasonDay2Unsupported, err)
	}
	opts.Kubespray = plan
	wf, err := compile.Provisioning(p, opts)
	if err != nil {
		compileErrors.WithLabelValues(bpav1.WorkflowKindProvisioning).Inc()
		return r.stall(s, bpav1.ReasonInvalidSpec, err)
	}
	created, err := createWorkflow(ctx, r.Client, wf)
	if err != nil {
		s.summary = summary{reconciling, "CreateFailed", "cannot create the Workflow; retrying"}
		return true, err
	}
	if created {
		workflowsCreated.WithLabelValues(bpav1.WorkflowKindProvisioning).Inc()
		r.Recorder.Eventf(p, corev1.EventTypeNormal, bpav1.ReasonWorkflowCreated,
			"Created Workflow %s: kubespray %s", wf.Name, plan)
	}
	resetWorkflowStatus(&p.Status.WorkflowStatus, p.Generation)
	p.Status.WorkflowName = wf.Name
	p.Status.Phase = bpav1.PhasePending
	s.summary = summary{reconciling, bpav1.ReasonWorkflowCreated, "Workflow " + wf.Name + " created"}
	return true, nil
}

// stall records a generation nobody can run until the spec changes: no Workflow, no retry.
func (r *ProvisioningReconciler) stall(s *provisioningScope, reason string, err error) (bool, error) {
	s.summary = stalledBy(&s.p.Status.WorkflowStatus, s.p.Generation, reason, err)
	return true, nil
}

// observeWorkflow mirrors the newest Workflow of this generation (a resubmitted one, after
// `argo resubmit`) into the status.
func (r *ProvisioningReconciler) observeWorkflow(_ context.Context, s *provisioningScope) (bool, error) {
	p := s.p
	wf := mirror.Newest(ofRun(s.workflows, compile.Generation(&p.ObjectMeta), ""))
	o := mirror.Observe(wf)
	applyProvisioningObservation(p, o)
	s.summary = summaryOf(o.Phase, o.Name, o.Message)
	return o.Phase != bpav1.PhaseSucceeded, nil
}

// recordSuccess runs once per generation, when its Workflow has succeeded: hosts this
// Provisioning claimed but no longer names (removed workers) are handed back, then the
// generation is recorded as the cluster as it is (status.provisioned). The record is what
// makes it once: later reconciles of a succeeded generation list no BareMetalHosts, and a
// release that failed is tried again because nothing was recorded.
func (r *ProvisioningReconciler) recordSuccess(ctx context.Context, s *provisioningScope) (bool, error) {
	if rec := s.p.Status.Provisioned; rec != nil && rec.Generation == s.p.Generation {
		return false, nil
	}
	if s.p.Status.Hosts != nil { // unknown (offloaded node status): release nothing
		// On success the status lists exactly the hosts the spec names
		// (applyProvisioningObservation drops the nodes a remove run took out): those are
		// kept, every other claim goes.
		keep := map[string]bool{}
		for _, h := range s.p.Status.Hosts {
			keep[h.BareMetalHost] = true
		}
		released, err := releaseClaims(ctx, r.APIReader, r.Client, s.p, keep)
		if err != nil {
			return true, err
		}
		for _, name := range released {
			r.Recorder.Eventf(s.p, corev1.EventTypeNormal, "HostReleased", "Released BareMetalHost %s", name)
		}
	}
	s.p.Status.Provisioned = day2.Record(s.p)
	return false, nil
}

func (r *ProvisioningReconciler) emit(p *bpav1.Provisioning, before *bpav1.Provisioning, s summary) {
	if p.Status.Phase != before.Status.Phase && p.Status.Phase != "" {
		phaseTransitions.WithLabelValues(bpav1.WorkflowKindProvisioning, string(p.Status.Phase)).Inc()
	}
	emitReadyChange(r.Recorder, p, before.Status.Conditions, p.Status.Conditions, s)
}

// SetupWithManager watches Provisionings and the Workflows they own (argo resubmit copies the
// owner reference, so resubmitted Workflows are seen too).
func (r *ProvisioningReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&bpav1.Provisioning{}, builder.WithPredicates(specOrLifecycleChanged())).
		Owns(&wfv1.Workflow{}).
		Named("provisioning").
		Complete(r)
}

// applyProvisioningObservation mirrors one Workflow into the status.
func applyProvisioningObservation(p *bpav1.Provisioning, o mirror.Observation) {
	applyObservation(&p.Status.WorkflowStatus, p.Generation, o)
	if o.Hosts != nil {
		p.Status.Hosts = o.Hosts
		if o.Phase == bpav1.PhaseSucceeded {
			// A remove run lists the nodes it took out; they are no longer the cluster's.
			p.Status.Hosts = slices.DeleteFunc(p.Status.Hosts, func(h bpav1.HostStatus) bool { return !p.Spec.HasEntry(h.Label) })
		}
	}
	if o.KubeconfigWritten {
		p.Status.KubeconfigSecretName = p.Labels[bpav1.ClusterLabel] + bpav1.KubeconfigSecretSuffix
	}
}
