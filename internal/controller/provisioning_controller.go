package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/identity"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/observe"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
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
	// Argo says whether Workflows are served; until they are, CRs wait (ArgoNotInstalled).
	Argo *ArgoAPI
	// MaxConcurrentReconciles is how many Provisionings are reconciled at once (one CR is
	// never reconciled twice at once).
	MaxConcurrentReconciles int
	// Logs reads the running kubespray step's log for its progress (status.kubespray); nil
	// reads none.
	Logs PodLogs
	// Clock is the time progress reads are spaced by; nil is time.Now.
	Clock func() time.Time
	// ArgoUI is the address of Argo's UI, for status.workflowURL; "": no link.
	ArgoUI string

	progress progressReads
}

// +kubebuilder:rbac:groups=bpa.akraino.org,resources=provisionings,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=bpa.akraino.org,resources=provisionings/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=bpa.akraino.org,resources=provisionings/finalizers,verbs=update
// +kubebuilder:rbac:groups=argoproj.io,resources=workflows,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=metal3.io,resources=baremetalhosts,verbs=get;list;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// provisioningScope carries what one reconcile reads and decides.
type provisioningScope struct {
	reconcileScope
	p *bpav1.Provisioning
	// before is p as read, the base of the status patch.
	before *bpav1.Provisioning
	// run is the run this generation asks for: its uid, generation and rerun request.
	run string
	// requeue asks for another reconcile once the status is written: a record that the next
	// decision must read back from the server.
	requeue bool
	// stale: p was stale (the cache catching up); nothing more is written, and the reconcile
	// runs again through the rate limiter.
	stale error
	// pollAfter asks for another reconcile after it, to read progress that reaches no watch.
	pollAfter time.Duration
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

	before := p.DeepCopy()
	s := &provisioningScope{p: p, before: before, run: wantedRun(&p.ObjectMeta, compile.WorkflowScopeAll)}
	defer func() {
		if s.stale != nil {
			res, retErr = ctrl.Result{}, s.stale
			return
		}
		p.Status.WorkflowURL = WorkflowURL(r.ArgoUI, p.Namespace, p.Status.WorkflowName)
		written, err := s.writeBack(ctx, r.Client, p, before, &p.Status.Conditions, p.Generation,
			func() bool { return !equality.Semantic.DeepEqual(before.Status, p.Status) })
		retErr = errors.Join(retErr, err)
		if retErr == nil && written && s.requeue {
			res = ctrl.Result{RequeueAfter: readBackAfter}
		}
		if retErr == nil && res.IsZero() && s.pollAfter > 0 {
			res = ctrl.Result{RequeueAfter: s.pollAfter}
		}
		if written {
			r.emit(p, before, s)
		}
	}()

	for _, step := range []func(context.Context, *provisioningScope) (bool, error){
		r.requireArgo, r.requireOwnCluster, r.listWorkflows, r.keepKubesprayFacts, r.recordSucceeded, r.ensureWorkflow, r.observeWorkflow,
	} {
		done, err := step(ctx, s)
		if err != nil || done {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

func (r *ProvisioningReconciler) requireArgo(_ context.Context, s *provisioningScope) (bool, error) {
	return s.requireArgo(r.Argo)
}

func (r *ProvisioningReconciler) listWorkflows(ctx context.Context, s *provisioningScope) (bool, error) {
	return s.listWorkflows(ctx, r.Client, bpav1.WorkflowKindProvisioning, s.p)
}

// recordSucceeded records the newest succeeded run not recorded yet, of this generation or an
// older one that finished while the spec moved on: the cluster as that Workflow left it (its
// outcome annotation, compiled from the spec it ran), and the claims of the hosts it took out
// handed back. The record, not the presence of a Workflow, is what the next generation is
// planned against, so a run that recorded something other than this generation's stops here
// and plans on the next reconcile, from the record as the server stores it.
func (r *ProvisioningReconciler) recordSucceeded(ctx context.Context, s *provisioningScope) (bool, error) {
	wf := unrecordedSuccess(s.workflows, s.p.Status.Provisioned)
	if wf == nil {
		return false, nil
	}
	outcome, err := outcomeOf(s.p, wf)
	if err != nil {
		// Nothing to plan against: the next run is planned against the older record, which
		// kubespray's idempotent playbooks tolerate; the event says why.
		r.Recorder.Eventf(s.p, corev1.EventTypeWarning, bpav1.EventRecordFailed, "Workflow %s succeeded but cannot be recorded: %v", wf.Name, err)
		return false, nil
	}
	if len(outcome.Leaving) > 0 {
		if err := r.releaseLeaving(ctx, s, wf, outcome.Leaving); err != nil {
			s.summary = summary{reconciling, bpav1.ReasonReleaseFailed, "cannot release the claims of removed hosts yet; retrying"}
			return true, err
		}
	}
	rec := outcome.Provisioned
	rec.Run = wf.Labels[bpav1.WorkflowRunLabel]
	s.p.Status.Provisioned = &rec
	if rec.Run != s.run {
		s.summary = summary{reconciling, bpav1.ReasonWorkflowSucceeded, fmt.Sprintf(
			"recorded Workflow %s of generation %d; planning generation %d next", wf.Name, rec.Generation, s.p.Generation)}
		s.requeue = true
		return true, nil
	}
	return false, nil
}

// releaseLeaving hands back the BareMetalHosts of the nodes a succeeded remove-node.yml run
// took out of the cluster, and no other: only then has Kubernetes let them go. Their hosts are
// read from the run's own placement, or, when its node status is offloaded, from the status
// this CR mirrored before; a node whose host neither says is not released, and an Event says so.
func (r *ProvisioningReconciler) releaseLeaving(ctx context.Context, s *provisioningScope, wf *wfv1.Workflow, leaving []string) error {
	hosts := observe.Of(wf).Hosts
	if hosts == nil {
		hosts = s.p.Status.Hosts
	}
	release := map[string]bool{}
	var unknown []string
	for _, label := range leaving {
		i := slices.IndexFunc(hosts, func(h bpav1.Node) bool { return h.Label == label })
		if i < 0 {
			unknown = append(unknown, label)
			continue
		}
		release[hosts[i].BareMetalHost] = true
	}
	if len(unknown) > 0 {
		r.Recorder.Eventf(s.p, corev1.EventTypeWarning, bpav1.EventReleaseFailed,
			"Workflow %s removed %s, but which BareMetalHosts they ran on is not known (node status unreadable): their claims are kept; clear spec.consumerRef by hand",
			wf.Name, strings.Join(unknown, ", "))
	}
	released, err := releaseClaims(ctx, r.APIReader, r.Client, s.p, func(name string) bool { return release[name] })
	for _, name := range released {
		ctrl.LoggerFrom(ctx).Info("Released BareMetalHost", "bareMetalHost", name, "workflow", klog.KObj(wf))
		r.Recorder.Eventf(s.p, corev1.EventTypeNormal, bpav1.EventHostReleased, "Released BareMetalHost %s", name)
	}
	return err
}

// outcomeOf reads the outcome a Workflow carries. A Workflow compiled before outcomes were
// carried has none: its generation's spec stands in, when it is the current one.
func outcomeOf(p *bpav1.Provisioning, wf *wfv1.Workflow) (runkubespray.Outcome, error) {
	if raw, ok := wf.Annotations[bpav1.WorkflowRecordAnnotation]; ok {
		return runkubespray.ParseOutcome(raw)
	}
	if wf.Labels[bpav1.WorkflowGenerationLabel] != strconv.FormatInt(p.Generation, 10) {
		return runkubespray.Outcome{}, fmt.Errorf("no annotation %s, and generation %s is not the current one", bpav1.WorkflowRecordAnnotation, wf.Labels[bpav1.WorkflowGenerationLabel])
	}
	return runkubespray.Outcome{Provisioned: *runkubespray.Record(p, runkubespray.Plan{})}, nil
}

// ensureWorkflow creates this run's Workflow unless it exists or has finished. A finished run
// whose Workflow Argo deleted keeps its recorded outcome and is not run again. It waits while
// an older run is still going: the new run's kubespray mode depends on its outcome.
func (r *ProvisioningReconciler) ensureWorkflow(ctx context.Context, s *provisioningScope) (bool, error) {
	p := s.p
	if run := workflowsOfRun(s.workflows, s.run); len(run) > 0 {
		if unfinished(run) == nil {
			return false, nil
		}
		// Kept while the run goes on: a grant someone deleted is written again. Read from the
		// cache: no request when in place.
		return r.identify(s, identity.Keep(ctx, r.Client, p, p.HostNamespaces()))
	}
	if rec := p.Status.LastRun; rec != nil && rec.Run == s.run {
		s.summary = restoreRecord(&p.Status.WorkflowStatus, p.Generation, rec)
		return true, nil
	}
	if started := p.Status.StartedRun; started != nil && started.Run == s.run {
		return r.startedBefore(ctx, s, started)
	}
	if busy := unfinished(s.workflows); busy != nil {
		resetWorkflowStatus(&p.Status.WorkflowStatus, p.Generation)
		s.summary = summary{reconciling, bpav1.ReasonWaitingForWorkflow,
			fmt.Sprintf("waiting for Workflow %s of generation %s to finish", busy.Name, busy.Labels[bpav1.WorkflowGenerationLabel])}
		return true, nil
	}
	opts := r.Options
	plan, err := runkubespray.PlanFor(p, compile.KubesprayImageOf(p, r.Options))
	if err != nil {
		return r.stall(s, bpav1.ReasonDay2Unsupported, err)
	}
	opts.Kubespray = plan
	opts.Run = s.run
	wf, err := compile.Provisioning(p, opts)
	if err != nil {
		compileErrors.WithLabelValues(bpav1.WorkflowKindProvisioning).Inc()
		return r.stall(s, bpav1.ReasonInvalidSpec, err)
	}
	wf.Annotations[bpav1.WorkflowRecordAnnotation] = runkubespray.OutcomeOf(p, plan).Annotation()
	// In order, before the Workflow: the finalizer (its steps claim hosts, which the finalizer
	// releases), the step identity (its pods and their API calls need it), the run's start.
	if done, err := r.addFinalizer(ctx, s); done || err != nil {
		return true, err
	}
	if done, err := r.identify(s, identity.Ensure(ctx, r.Client, r.APIReader, p, p.HostNamespaces())); done || err != nil {
		return true, err
	}
	previous := p.Status.StartedRun
	if done, err := r.recordStart(ctx, s, wf); done || err != nil {
		return true, err
	}
	created, err := createWorkflow(ctx, r.Client, wf)
	if err != nil {
		// Not started after all: the status written with the failure says so again.
		p.Status.StartedRun = previous
		s.summary, err = createFailed(&p.Status.WorkflowStatus, p.Generation, wf, err)
		return true, err
	}
	if created {
		ctrl.LoggerFrom(ctx).Info("Created Workflow", "workflow", klog.KObj(wf), "run", s.run, "kubespray", plan.String())
		workflowsCreated.WithLabelValues(bpav1.WorkflowKindProvisioning).Inc()
		r.Recorder.Eventf(p, corev1.EventTypeNormal, bpav1.ReasonWorkflowCreated,
			"Created Workflow %s: kubespray %s", wf.Name, plan)
		s.evented = true
	}
	// Mirrored now, as the Workflow's own events would have it mirrored: its creation is not
	// watched, so this status is the run's second status write (the first recorded its start).
	s.workflows = append(s.workflows, *wf)
	return false, nil
}

// recordStart records, on the CR and conditioned on the copy it was read as, that this run is
// starting, before its Workflow exists: whatever happens to the Workflow later (finished and
// deleted while the controller was down), the controller knows the run was started.
func (r *ProvisioningReconciler) recordStart(ctx context.Context, s *provisioningScope, wf *wfv1.Workflow) (bool, error) {
	p := s.p
	p.Status.StartedRun = &bpav1.RunStart{Run: s.run, Generation: p.Generation, WorkflowName: wf.Name}
	switch err := patchStatus(ctx, r.Client, p, s.before); {
	case apierrors.IsConflict(err):
		s.stale = &staleError{what: "the status of " + p.Name, err: err}
		return true, nil
	case err != nil:
		p.Status.StartedRun = s.before.Status.StartedRun
		s.summary = summary{reconciling, bpav1.ReasonCreateFailed, "cannot record the start of Workflow " + wf.Name + " yet; retrying"}
		return true, err
	}
	// The status patch that follows is computed from what this one wrote.
	*s.before = *p.DeepCopy()
	return false, nil
}

// startedBefore handles a run that was started but has no Workflow in the cache and no
// recorded end. The cache may only be behind the Workflow's creation, so the API server is
// asked; a Workflow that is gone there was deleted before its end was seen, and the run is
// Stalled rather than started again on a cluster it may already have changed.
func (r *ProvisioningReconciler) startedBefore(ctx context.Context, s *provisioningScope, started *bpav1.RunStart) (bool, error) {
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.p.Namespace, Name: started.WorkflowName}, &wfv1.Workflow{})
	switch {
	case err == nil:
		s.requeue = true // the cache has yet to see it
		s.summary = summary{reconciling, bpav1.ReasonWorkflowPending, "Workflow " + started.WorkflowName + " created"}
		return true, nil
	case !apierrors.IsNotFound(err):
		s.summary = summary{reconciling, bpav1.ReasonListFailed, "cannot read Workflow " + started.WorkflowName + "; retrying"}
		return true, err
	}
	return r.stall(s, bpav1.ReasonWorkflowDeleted, fmt.Errorf(
		"the run of generation %d was started as Workflow %s, which is gone with no recorded end (deleted while the controller was not watching): it is not run again by itself; set annotation %s to a new value to run generation %d again, or change the spec",
		started.Generation, started.WorkflowName, bpav1.RerunAnnotation, started.Generation))
}

// identify goes on once the cluster's step identity is written (err, from identity.Ensure or
// Keep); until it is, the CR says so and the reconcile is retried.
func (r *ProvisioningReconciler) identify(s *provisioningScope, err error) (bool, error) {
	if err != nil {
		s.summary = summary{reconciling, bpav1.ReasonIdentityFailed, "cannot write the step pods' ServiceAccounts, Roles and RoleBindings yet; retrying"}
		return true, err
	}
	return false, nil
}

// addFinalizer adds the finalizer before the first Workflow, whose steps claim hosts the
// finalizer releases. A CR that never runs a Workflow claims nothing and gets no finalizer.
func (r *ProvisioningReconciler) addFinalizer(ctx context.Context, s *provisioningScope) (bool, error) {
	p := s.p
	switch err := ensureFinalizer(ctx, r.Client, p, bpav1.HostsFinalizer); {
	case apierrors.IsConflict(err):
		s.stale = &staleError{what: p.Name, err: err}
		return true, nil
	case err != nil:
		s.summary = summary{reconciling, bpav1.ReasonCreateFailed, "cannot add finalizer " + bpav1.HostsFinalizer + " yet; retrying"}
		return true, err
	}
	// The status patch is computed from the object the finalizer's patch returned: conditioned
	// on its resourceVersion, and carrying no metadata (the response's managedFields, which the
	// cached copy lacks, would otherwise be written back with the status).
	s.before.ObjectMeta = *p.ObjectMeta.DeepCopy()
	return false, nil
}

// stall records a generation nobody can run until the spec changes: no Workflow, no retry.
func (r *ProvisioningReconciler) stall(s *provisioningScope, reason string, err error) (bool, error) {
	s.summary = stalledBy(&s.p.Status.WorkflowStatus, s.p.Generation, reason, err)
	return true, nil
}

// observeWorkflow mirrors the newest Workflow of this run (a resubmitted one, after `argo
// resubmit`) into the status, and records its outcome once it has finished.
func (r *ProvisioningReconciler) observeWorkflow(ctx context.Context, s *provisioningScope) (bool, error) {
	p := s.p
	wf := observe.Newest(workflowsOfRun(s.workflows, s.run))
	o := observe.Of(wf)
	leaving := []string(nil)
	if outcome, err := outcomeOf(p, wf); err == nil {
		leaving = outcome.Leaving
	}
	applyProvisioningObservation(p, o, leaving)
	r.mirrorKubespray(ctx, s, o.Kubespray)
	if o.Finished() {
		p.Status.LastRun = recordOf(wf, o)
	}
	s.summary = summaryOf(o.Phase, o.Name, o.Message)
	if u := o.Upgrade; u != nil && u.Waiting != "" && o.Phase == bpav1.PhaseRunning {
		s.summary = summary{reconciling, bpav1.ReasonWaitingForApproval, fmt.Sprintf(
			"Workflow %s waits for approval before %s of %d (%s): argo resume %s, or Resume in Argo's UI",
			o.Name, u.Waiting, u.Waves, strings.Join(u.Nodes, ", "), o.Name)}
	}
	return o.Phase != bpav1.PhaseSucceeded, nil
}

func (r *ProvisioningReconciler) emit(p *bpav1.Provisioning, before *bpav1.Provisioning, s *provisioningScope) {
	if p.Status.Phase != before.Status.Phase && p.Status.Phase != "" {
		phaseTransitions.WithLabelValues(bpav1.WorkflowKindProvisioning, string(p.Status.Phase)).Inc()
	}
	emitReadyChange(r.Recorder, p, before.Status.Conditions, p.Status.Conditions, s.summary, s.evented)
}

// SetupWithManager watches Provisionings and, once Argo serves them, the Workflows they own
// (argo resubmit copies the owner reference, so resubmitted Workflows are seen too). The step
// identities it writes are read through the cache (written only when they differ; the cache
// holds only those, identity.CacheSelector), not watched for changes.
func (r *ProvisioningReconciler) SetupWithManager(mgr ctrl.Manager) error {
	for _, obj := range append(identity.Cached(), &corev1.ConfigMap{}) {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return fmt.Errorf("caching %T: %w", obj, err)
		}
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&bpav1.Provisioning{}, builder.WithPredicates(specOrLifecycleChanged(bpav1.HostsFinalizer))).
		// A Provisioning gone lets the next one of its cluster run.
		Watches(&bpav1.Provisioning{}, handler.EnqueueRequestsFromMapFunc(r.clusterSiblings), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
			DeleteFunc: func(event.DeleteEvent) bool { return true },
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Named("provisioning").
		Build(r)
	if err != nil {
		return err
	}
	return r.Argo.watchWorkflows(mgr, c, &bpav1.Provisioning{}, func(ctx context.Context) ([]client.Object, error) {
		var list bpav1.ProvisioningList
		err := r.List(ctx, &list)
		return objectsOf(list.Items), err
	})
}

// applyProvisioningObservation mirrors one Workflow into the status; leaving are the nodes the
// run removes, which a succeeded run no longer counts among the cluster's hosts.
func applyProvisioningObservation(p *bpav1.Provisioning, o observe.Observation, leaving []string) {
	applyObservation(&p.Status.WorkflowStatus, p.Generation, o)
	if o.Hosts != nil {
		p.Status.Hosts = o.Hosts
		if o.Phase == bpav1.PhaseSucceeded {
			p.Status.Hosts = slices.DeleteFunc(p.Status.Hosts, func(h bpav1.Node) bool { return slices.Contains(leaving, h.Label) })
		}
	}
	p.Status.Upgrade = o.Upgrade
	if o.NotAnswering != nil {
		p.Status.NotAnswering = o.NotAnswering
	}
	if r := o.NodesReport; r != nil && r.Unreadable == "" {
		p.Status.Kubelets, p.Status.KubeletVersions = r.Kubelets, r.Summary()
	}
	if o.Certificates != nil {
		p.Status.Certificates = o.Certificates
	}
	if o.KubeconfigWritten {
		p.Status.KubeconfigSecretName = p.Labels[bpav1.ClusterLabel] + bpav1.KubeconfigSecretSuffix
	}
}
