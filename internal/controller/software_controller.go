package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/observe"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
)

// SoftwareReconciler runs a Software generation on its cluster's nodes once the cluster is
// Ready, and again for nodes that join later or whose package list changed.
type SoftwareReconciler struct {
	client.Client
	Recorder record.EventRecorder
	// Options are the compiler's options for this site; the node limit is set per run.
	Options compile.Options
	// Argo says whether Workflows are served; until they are, Software waits (ArgoNotInstalled).
	Argo *ArgoAPI
	// MaxConcurrentReconciles is how many Software are reconciled at once.
	MaxConcurrentReconciles int
	// Registry resolves binaries in the site registry; nil: a Software naming binaries is
	// refused when compiled (no site registry).
	Registry BinaryResolver
	// RegistryPollInterval is how often a Software with binaries looks for new uploads; 0:
	// DefaultRegistryPollInterval.
	RegistryPollInterval time.Duration
	// RegistryTimeout bounds the site registry's answers in one reconcile: a registry that
	// stalls must not hold a worker. 0: DefaultRegistryTimeout.
	RegistryTimeout time.Duration
	// ArgoUI is the address of Argo's UI, for status.workflowURL; "": no link.
	ArgoUI string
}

// DefaultRegistryTimeout is how long a reconcile waits for the site registry to resolve a
// Software's binaries: a few round trips on a site's network.
const DefaultRegistryTimeout = 10 * time.Second

// +kubebuilder:rbac:groups=bpa.akraino.org,resources=softwares,verbs=get;list;watch
// +kubebuilder:rbac:groups=bpa.akraino.org,resources=softwares/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=bpa.akraino.org,resources=provisionings,verbs=get;list;watch

type softwareScope struct {
	reconcileScope
	sw      *bpav1.Software
	cluster *bpav1.Provisioning
	// requeueAfter: look again then (a Software with binaries follows the site registry).
	requeueAfter time.Duration
}

// Reconcile follows a running Workflow, else waits for the cluster, else starts the run the
// nodes need.
func (r *SoftwareReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	defer observeDuration(bpav1.WorkflowKindSoftware, time.Now())
	sw := &bpav1.Software{}
	if err := r.Get(ctx, req.NamespacedName, sw); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !sw.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // its Workflows are owned by it: the garbage collector has them
	}
	before := sw.DeepCopy()
	s := &softwareScope{sw: sw}
	defer func() {
		sw.Status.WorkflowURL = WorkflowURL(r.ArgoUI, sw.Namespace, sw.Status.WorkflowName)
		written, err := s.writeBack(ctx, r.Client, sw, before, &sw.Status.Conditions, sw.Generation,
			func() bool { return !equality.Semantic.DeepEqual(before.Status, sw.Status) })
		retErr = errors.Join(retErr, err)
		if retErr != nil {
			res = ctrl.Result{} // the error's backoff decides when it runs again
		}
		if !written {
			return
		}
		if sw.Status.Phase != before.Status.Phase && sw.Status.Phase != "" {
			phaseTransitions.WithLabelValues(bpav1.WorkflowKindSoftware, string(sw.Status.Phase)).Inc()
		}
		emitReadyChange(r.Recorder, sw, before.Status.Conditions, sw.Status.Conditions, s.summary, s.evented)
	}()

	for _, step := range []func(context.Context, *softwareScope) (bool, error){
		r.requireArgo, r.listWorkflows, r.followUnfinished, r.mergeLatest, r.findCluster, r.ensureRun,
	} {
		done, err := step(ctx, s)
		if err != nil || done {
			return ctrl.Result{RequeueAfter: s.requeueAfter}, err
		}
	}
	return ctrl.Result{RequeueAfter: s.requeueAfter}, nil
}

func (r *SoftwareReconciler) requireArgo(_ context.Context, s *softwareScope) (bool, error) {
	return s.requireArgo(r.Argo)
}

func (r *SoftwareReconciler) listWorkflows(ctx context.Context, s *softwareScope) (bool, error) {
	return s.listWorkflows(ctx, r.Client, bpav1.WorkflowKindSoftware, s.sw)
}

// followUnfinished mirrors a running Workflow of this generation, or waits for one of an
// older generation to end before deciding anything.
func (r *SoftwareReconciler) followUnfinished(_ context.Context, s *softwareScope) (bool, error) {
	busy := unfinished(s.workflows)
	if busy == nil {
		return false, nil
	}
	if running := observe.Newest(allUnfinished(workflowsOfGeneration(s.workflows, compile.Generation(&s.sw.ObjectMeta)))); running != nil {
		o := observe.Of(running)
		applySoftwareObservation(s.sw, o)
		s.summary = summaryOf(o.Phase, o.Name, o.Message)
		return true, nil
	}
	resetWorkflowStatus(&s.sw.Status.WorkflowStatus, s.sw.Generation)
	s.summary = summary{reconciling, bpav1.ReasonWaitingForWorkflow,
		fmt.Sprintf("waiting for Workflow %s of generation %s to finish", busy.Name, busy.Labels[bpav1.WorkflowGenerationLabel])}
	return true, nil
}

// mergeLatest merges the node reports of this generation's finished Workflows, each finish
// once (status.merged remembers them), in the order they finished, mirrors the last one, and
// records its outcome: the next run is decided from the reports, and a failed run stands
// (Stalled) even once Argo deletes its Workflow. Merged once, an old Workflow still lying around
// never brings back the report of a node that has left the cluster since.
func (r *SoftwareReconciler) mergeLatest(_ context.Context, s *softwareScope) (bool, error) {
	finished := slices.DeleteFunc(workflowsOfGeneration(s.workflows, compile.Generation(&s.sw.ObjectMeta)), func(wf wfv1.Workflow) bool {
		return !wf.Status.Phase.Completed()
	})
	slices.SortStableFunc(finished, func(a, b wfv1.Workflow) int {
		if c := a.Status.FinishedAt.Compare(b.Status.FinishedAt.Time); c != 0 {
			return c
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	merged := s.sw.Status.Merged
	s.sw.Status.Merged = nil
	for i := range finished {
		// A Workflow `argo retry` finished again is a new finish.
		key := finished[i].Name + "@" + finished[i].Status.FinishedAt.UTC().Format(time.RFC3339)
		s.sw.Status.Merged = append(s.sw.Status.Merged, key)
		if slices.Contains(merged, key) {
			continue
		}
		o := observe.Of(&finished[i])
		applySoftwareObservation(s.sw, o)
		s.sw.Status.LastRun = recordOf(&finished[i], o) // finishes come in order: the last is the newest
	}
	slices.Sort(s.sw.Status.Merged)
	return false, nil
}

// findCluster finds the cluster's Provisioning and waits until it is Ready.
func (r *SoftwareReconciler) findCluster(ctx context.Context, s *softwareScope) (bool, error) {
	cluster := s.sw.Labels[bpav1.ClusterLabel]
	var list bpav1.ProvisioningList
	if err := r.List(ctx, &list, client.InNamespace(s.sw.Namespace), client.MatchingLabels{bpav1.ClusterLabel: cluster}); err != nil {
		s.summary = summary{reconciling, bpav1.ReasonListFailed, "cannot list Provisionings; retrying"}
		return true, err
	}
	switch len(list.Items) {
	case 0:
		s.summary = summary{reconciling, bpav1.ReasonWaitingForCluster,
			fmt.Sprintf("waiting for a Provisioning labelled %s=%s in namespace %s", bpav1.ClusterLabel, cluster, s.sw.Namespace)}
		return true, nil
	case 1:
	default:
		s.summary = summary{stalled, bpav1.ReasonWaitingForCluster,
			fmt.Sprintf("%d Provisionings are labelled %s=%s in namespace %s; a cluster has one", len(list.Items), bpav1.ClusterLabel, cluster, s.sw.Namespace)}
		return true, nil
	}
	s.cluster = &list.Items[0]
	if !isReady(s.cluster.Status.Conditions, s.cluster.Generation) {
		s.summary = summary{reconciling, bpav1.ReasonWaitingForCluster,
			fmt.Sprintf("waiting for Provisioning %s of cluster %s to be Ready", s.cluster.Name, cluster)}
		return true, nil
	}
	return false, nil
}

// ensureRun starts a run for the nodes that need one (all of them, new ones, or those whose
// role's packages changed); with none, the Software is Ready. A run is named by the nodes, the
// cluster generation it installs on (a node that leaves and rejoins is a new run) and the rerun
// annotation; a run that already happened is shown, never started again by itself.
func (r *SoftwareReconciler) ensureRun(ctx context.Context, s *softwareScope) (bool, error) {
	sw := s.sw
	nodes := clusterNodes(s.cluster)
	if len(nodes) == 0 {
		s.summary = stalledBy(&sw.Status.WorkflowStatus, sw.Generation, bpav1.ReasonNoNodes, fmt.Errorf(
			"nothing to install on: Provisioning %s of cluster %s is Ready but its status lists no nodes (its Workflow's node status could not be read); set annotation %s on it to run it again",
			s.cluster.Name, s.cluster.Labels[bpav1.ClusterLabel], bpav1.RerunAnnotation))
		return true, nil
	}
	pruneReports(sw, nodes)
	binaries, resolved := r.resolveRegistryBinaries(ctx, s)
	if !resolved {
		return true, nil
	}
	need, all := installsoftware.SoftwareNodes(sw, nodes, binaries)
	if len(need) == 0 {
		if sw.Status.ObservedGeneration != sw.Generation {
			resetWorkflowStatus(&sw.Status.WorkflowStatus, sw.Generation)
		}
		s.summary = summary{ready, bpav1.ReasonUpToDate, fmt.Sprintf("packages installed on all %d nodes", len(nodes))}
		return true, nil
	}
	opts := r.runOptions(s, need, all, binaries)
	if ranBefore(s, opts.Run, need) {
		return true, nil
	}
	return r.createRun(ctx, s, opts, need)
}

// resolveRegistryBinaries resolves the Software's binaries to the site registry's files; false
// when they cannot be, with the summary saying why.
func (r *SoftwareReconciler) resolveRegistryBinaries(ctx context.Context, s *softwareScope) (map[string]string, bool) {
	if !installsoftware.HasBinaries(&s.sw.Spec) || r.Registry == nil {
		return nil, true
	}
	// The registry's content decides too: look again after the poll interval, so a new
	// upload reaches the nodes whose files differ.
	s.requeueAfter = r.RegistryPollInterval
	if s.requeueAfter <= 0 {
		s.requeueAfter = DefaultRegistryPollInterval
	}
	timeout := r.RegistryTimeout
	if timeout <= 0 {
		timeout = DefaultRegistryTimeout
	}
	resolveCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	binaries, err := resolveBinaries(resolveCtx, r.Registry, &s.sw.Spec)
	if err != nil {
		s.summary = summary{reconciling, bpav1.ReasonBinariesUnresolved, fmt.Sprintf(
			"cannot resolve the binaries in the site registry: %v; retrying every %s", err, s.requeueAfter)}
		return nil, false
	}
	return binaries, true
}

// runOptions are the compile options of the run that installs on need (every node when all).
func (r *SoftwareReconciler) runOptions(s *softwareScope, need []string, all bool, binaries map[string]string) compile.Options {
	opts := r.Options
	if !all {
		opts.SoftwareNodes = need
	}
	salt := []string{clusterGeneration(s.cluster)}
	if len(binaries) > 0 {
		// New uploads make a new run of the same generation and nodes.
		salt = append(salt, binariesSalt(binaries))
	}
	opts.Run = wantedRun(&s.sw.ObjectMeta, compile.Scope(opts.SoftwareNodes), salt...)
	// The run is named for these files, and installs them: an upload made meanwhile is the
	// next run's.
	opts.BinaryDigests = binaries
	return opts
}

// ranBefore shows a run that already happened, from its Workflow or its record, and says
// whether there was one: a run is never started twice.
func ranBefore(s *softwareScope, run string, need []string) bool {
	sw := s.sw
	if ran := observe.Newest(workflowsOfRun(s.workflows, run)); ran != nil {
		// Finished (followUnfinished follows running ones), so mergeLatest has merged its
		// reports already: mirror the run, never merge them again.
		o := observe.Of(ran)
		applyObservation(&sw.Status.WorkflowStatus, sw.Generation, o)
		s.summary = summaryOf(o.Phase, o.Name, o.Message)
		if o.Phase == bpav1.PhaseSucceeded {
			// That run succeeded yet left nodes without a report: running it again would not
			// tell more.
			s.summary = summary{stalled, bpav1.ReasonWorkflowFailed, fmt.Sprintf(
				"Workflow %s succeeded without a report for nodes %v; resubmit it once the reports can be read", ran.Name, need)}
			sw.Status.Message = s.summary.message
		}
		return true
	}
	rec := sw.Status.LastRun
	if rec == nil || rec.Run != run {
		return false
	}
	s.summary = restoreRecord(&sw.Status.WorkflowStatus, sw.Generation, rec)
	if rec.Phase == bpav1.PhaseSucceeded {
		s.summary = summary{stalled, bpav1.ReasonWorkflowDeleted, fmt.Sprintf(
			"Workflow %s succeeded without a report for nodes %v and has been deleted since; set annotation %s to a new value to run again",
			rec.WorkflowName, need, bpav1.RerunAnnotation)}
		sw.Status.Message = s.summary.message
	}
	return true
}

// createRun compiles the run and creates its Workflow.
func (r *SoftwareReconciler) createRun(ctx context.Context, s *softwareScope, opts compile.Options, need []string) (bool, error) {
	sw := s.sw
	wf, err := compile.Software(sw, opts)
	if err != nil {
		compileErrors.WithLabelValues(bpav1.WorkflowKindSoftware).Inc()
		s.summary = stalledBy(&sw.Status.WorkflowStatus, sw.Generation, bpav1.ReasonInvalidSpec, err)
		return true, nil
	}
	created, err := createWorkflow(ctx, r.Client, wf)
	if err != nil {
		s.summary, err = createFailed(&sw.Status.WorkflowStatus, sw.Generation, wf, err)
		return true, err
	}
	if created {
		ctrl.LoggerFrom(ctx).Info("Created Workflow", "workflow", klog.KObj(wf), "run", opts.Run, "nodes", need)
		workflowsCreated.WithLabelValues(bpav1.WorkflowKindSoftware).Inc()
		r.Recorder.Eventf(sw, corev1.EventTypeNormal, bpav1.ReasonWorkflowCreated, "Created Workflow %s for nodes %v", wf.Name, need)
		s.evented = true
	}
	// Mirrored now, as followUnfinished would on the Workflow's own events: its creation is not
	// watched, so this status is the one write the new run costs.
	o := observe.Of(wf)
	applySoftwareObservation(sw, o)
	s.summary = summaryOf(o.Phase, o.Name, o.Message)
	return true, nil
}

// clusterGeneration is the Provisioning generation the cluster's nodes are as: a node that
// leaves and rejoins does so in two generations, so its next Software run has a new name.
func clusterGeneration(p *bpav1.Provisioning) string {
	if p.Status.Provisioned == nil {
		return ""
	}
	return "cluster-" + strconv.FormatInt(p.Status.Provisioned.Generation, 10)
}

// SetupWithManager watches Software, Provisionings (a cluster becoming Ready, or gaining
// nodes, starts a run) and, once Argo serves them, the Workflows Software own.
func (r *SoftwareReconciler) SetupWithManager(mgr ctrl.Manager) error {
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&bpav1.Software{}, builder.WithPredicates(specOrLifecycleChanged(""))).
		Watches(&bpav1.Provisioning{}, handler.EnqueueRequestsFromMapFunc(r.softwareOfCluster)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Named("software").
		Build(r)
	if err != nil {
		return err
	}
	return r.Argo.watchWorkflows(mgr, c, &bpav1.Software{}, func(ctx context.Context) ([]client.Object, error) {
		var list bpav1.SoftwareList
		err := r.List(ctx, &list)
		return objectsOf(list.Items), err
	})
}

func (r *SoftwareReconciler) softwareOfCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	cluster, ok := obj.GetLabels()[bpav1.ClusterLabel]
	if !ok {
		return nil
	}
	var list bpav1.SoftwareList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingLabels{bpav1.ClusterLabel: cluster}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot list the Software of a cluster", "cluster", cluster)
		return nil
	}
	return requestsFor(list.Items)
}
