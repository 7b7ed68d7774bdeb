package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/identity"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// parallel runs each(i) for i in [0, n) on clients goroutines, and returns the first error.
func parallel(ctx context.Context, n, clients int, each func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += clients {
				if err := each(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// provisioning is the sample Provisioning as CR i of a namespace: its own name and cluster.
func (h *harness) provisioning(ns string, i int) *bpav1.Provisioning {
	p := h.sample.DeepCopy()
	p.Namespace = ns
	p.Name = fmt.Sprintf("p-%04d", i)
	p.Labels = map[string]string{bpav1.ClusterLabel: fmt.Sprintf("c-%04d", i)}
	return p
}

func (h *harness) namespace(ctx context.Context, name string) error {
	return h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// burst creates n CRs through create, from clients at once, and returns how long until the
// n-th Workflow of the namespace was seen through a watch.
func (h *harness) burst(ctx context.Context, ns string, n, clients int, create func(context.Context, *bpav1.Provisioning) error) (time.Duration, error) {
	w, err := h.c.Watch(ctx, &wfv1.WorkflowList{}, client.InNamespace(ns))
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	start := time.Now()
	errs := make(chan error, 1)
	go func() {
		errs <- parallel(ctx, n, clients, func(ctx context.Context, i int) error { return create(ctx, h.provisioning(ns, i)) })
	}()
	seen := 0
	timeout := time.After(10 * time.Minute)
	for seen < n {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return 0, errors.New("the Workflow watch ended")
			}
			if e.Type == watch.Added {
				seen++
			}
		case err := <-errs:
			if err != nil {
				return 0, err
			}
			errs = nil
		case <-timeout:
			return 0, fmt.Errorf("%d of %d Workflows in 10 minutes", seen, n)
		}
	}
	return time.Since(start), nil
}

// direct makes the writes any controller must make for a new CR, as a client holding the
// controller's role: the CR, the finalizer, the Workflow, one status write; withIdentity adds
// the cluster's step identity (writes only: a client that knows they are new reads nothing).
func (h *harness) direct(withIdentity bool) func(context.Context, *bpav1.Provisioning) error {
	c := h.directClient
	return func(ctx context.Context, p *bpav1.Provisioning) error {
		if err := c.Create(ctx, p); err != nil {
			return err
		}
		before := p.DeepCopy()
		controllerutil.AddFinalizer(p, bpav1.HostsFinalizer)
		if err := c.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		plan, err := runkubespray.PlanFor(p, compile.KubesprayImageOf(p, h.compile))
		if err != nil {
			return err
		}
		opts := h.compile
		opts.Kubespray = plan
		opts.Run = compile.RunID(&p.ObjectMeta, compile.WorkflowScopeAll, "")
		wf, err := compile.Provisioning(p, opts)
		if err != nil {
			return err
		}
		if withIdentity {
			if err := createIdentity(ctx, c, p); err != nil {
				return err
			}
		}
		if err := c.Create(ctx, wf); err != nil {
			return err
		}
		before = p.DeepCopy()
		p.Status.ObservedGeneration = p.Generation
		p.Status.WorkflowName = wf.Name
		p.Status.Phase = bpav1.PhasePending
		for _, c := range workflowConditions(bpav1.ReasonWorkflowPending, "Workflow "+wf.Name+" is pending", p.Generation) {
			meta.SetStatusCondition(&p.Status.Conditions, c)
		}
		return c.Status().Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	}
}

// workflowConditions are the conditions of a CR whose Workflow is on its way: not Ready, and
// Reconciling, both for reason and saying message, as the controller writes them.
func workflowConditions(reason, message string, generation int64) []metav1.Condition {
	now := metav1.Now()
	out := []metav1.Condition{
		{Type: bpav1.ConditionReady, Status: metav1.ConditionFalse},
		{Type: bpav1.ConditionReconciling, Status: metav1.ConditionTrue},
	}
	for i := range out {
		out[i].Reason, out[i].Message, out[i].ObservedGeneration, out[i].LastTransitionTime = reason, message, generation, now
	}
	return out
}

// createIdentity creates the step identity of p's cluster in its namespace: its ServiceAccount,
// and its Role, then its RoleBinding (RBAC's escalation check needs the Role first).
func createIdentity(ctx context.Context, c client.Client, p *bpav1.Provisioning) error {
	cluster := p.Labels[bpav1.ClusterLabel]
	name := steps.StepServiceAccount(cluster)
	objMeta := metav1.ObjectMeta{Namespace: p.Namespace, Name: name}
	rules := identity.StepRules(cluster)
	if slices.Contains(p.HostNamespaces(), p.Namespace) {
		rules = append(rules, identity.HostRules()...)
	}
	errs := make(chan error, 1)
	go func() { errs <- c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: objMeta}) }()
	err := c.Create(ctx, &rbacv1.Role{ObjectMeta: objMeta, Rules: rules})
	if err == nil {
		err = c.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: objMeta,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: p.Namespace}},
		})
	}
	return errors.Join(err, <-errs)
}

// clean removes a namespace's CRs and Workflows (the test API server has no garbage collector
// and no namespace controller).
func (h *harness) clean(ctx context.Context, ns string) error {
	if err := h.c.DeleteAllOf(ctx, &wfv1.Workflow{}, client.InNamespace(ns)); err != nil {
		return err
	}
	var list bpav1.ProvisioningList
	if err := h.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err
	}
	return parallel(ctx, len(list.Items), 16, func(ctx context.Context, i int) error {
		p := &list.Items[i]
		before := p.DeepCopy()
		p.Finalizers = nil
		if err := h.c.Patch(ctx, p, client.MergeFrom(before)); err != nil {
			return err
		}
		return client.IgnoreNotFound(h.c.Delete(ctx, p))
	})
}

// create is a plain create, as `kubectl apply` of a new CR.
func (h *harness) create(ctx context.Context, p *bpav1.Provisioning) error { return h.c.Create(ctx, p) }

// applyLatency creates n CRs through create one after the other, each once the previous one's
// Workflow is seen, and returns the time from each create to its Workflow.
func (h *harness) applyLatency(ctx context.Context, ns string, n int, create func(context.Context, *bpav1.Provisioning) error) ([]time.Duration, error) {
	w, err := h.c.Watch(ctx, &wfv1.WorkflowList{}, client.InNamespace(ns))
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var out []time.Duration
	for i := range n {
		start := time.Now()
		if err := create(ctx, h.provisioning(ns, i)); err != nil {
			return nil, err
		}
		select {
		case e := <-w.ResultChan():
			if e.Type != watch.Added {
				return nil, fmt.Errorf("watch event %s, not a new Workflow", e.Type)
			}
			out = append(out, time.Since(start))
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("no Workflow 30s after CR %d", i)
		}
	}
	return out, nil
}

// knownClusterLatency takes n CRs of a namespace (their first Workflows seen) to a new
// generation, one after the other, each once the previous one's new Workflow is seen: its
// first Workflow is marked Succeeded, as Argo would, then its spec changed (a KUD plugin
// added), and the time from the spec change to the new Workflow is returned. The cluster's
// step identity is in place already: this is what a day-2 change costs.
func (h *harness) knownClusterLatency(ctx context.Context, ns string, n int) ([]time.Duration, error) {
	var list bpav1.ProvisioningList
	if err := h.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	if len(list.Items) < n {
		return nil, fmt.Errorf("%d CRs in %s, not %d", len(list.Items), ns, n)
	}
	w, err := h.c.Watch(ctx, &wfv1.WorkflowList{}, client.InNamespace(ns))
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var out []time.Duration
	for i := range n {
		p := &list.Items[i]
		wf := &wfv1.Workflow{}
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: p.Status.WorkflowName}, wf); err != nil {
			return nil, err
		}
		now := metav1.Now()
		wf.Status.Phase, wf.Status.StartedAt, wf.Status.FinishedAt, wf.Status.Progress = wfv1.WorkflowSucceeded, now, now, "6/6"
		if err := h.c.Update(ctx, wf); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &bpav1.Provisioning{}
			if err := h.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
				return err
			}
			cur.Spec.KUDPlugins = []string{"multus"}
			return h.c.Update(ctx, cur)
		}); err != nil {
			return nil, err
		}
		for seen := false; !seen; {
			select {
			case e := <-w.ResultChan():
				if got, ok := e.Object.(*wfv1.Workflow); ok && e.Type == watch.Added && got.Labels[bpav1.WorkflowGenerationLabel] == "2" {
					out = append(out, time.Since(start))
					seen = true
				}
			case <-time.After(30 * time.Second):
				return nil, fmt.Errorf("no Workflow of generation 2 30s after changing CR %s", p.Name)
			}
		}
	}
	return out, nil
}

// phaseChanges moves n Workflows of a namespace (those of its CRs from the from-th on, by name)
// to Running at once, as Argo would, and returns for each the time from its change to its CR's
// status saying Running (the CR's watch event). The change is timed by the first of two signs
// that the API server committed it: the Workflow's watch event, and the answer to its update
// (which comes first when the API server has ended the watch and it is watched again).
func (h *harness) phaseChanges(ctx context.Context, ns string, from, n int) ([]time.Duration, error) {
	var list bpav1.ProvisioningList
	if err := h.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	if from+n > len(list.Items) {
		return nil, fmt.Errorf("%d CRs in %s, not the %d to %d asked for", len(list.Items), ns, from, from+n)
	}
	list.Items = list.Items[from : from+n]
	crOf := map[string]string{}
	for _, p := range list.Items {
		crOf[p.Status.WorkflowName] = p.Name
	}
	var wfs wfv1.WorkflowList
	if err := h.c.List(ctx, &wfs, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	wfs.Items = slices.DeleteFunc(wfs.Items, func(wf wfv1.Workflow) bool { return crOf[wf.Name] == "" })
	if len(wfs.Items) != len(list.Items) {
		return nil, fmt.Errorf("%d Workflows for %d CRs", len(wfs.Items), len(list.Items))
	}
	// Watched from now on: no initial events for the objects already there (hundreds of large
	// Workflows, which would arrive before, and delay, the changes measured). Workflows watched
	// by their metadata: Argo labels a Workflow with its phase as it writes its status, and a
	// metadata watch times the change without decoding hundreds of large objects.
	wfList := &metav1.PartialObjectMetadataList{}
	wfList.SetGroupVersionKind(wfv1.SchemeGroupVersion.WithKind("WorkflowList"))
	// Each watch is drained by its own goroutine, so that an event is timed when it arrives,
	// not when the other watch's backlog lets it be read.
	var mu sync.Mutex
	changed, mirrored := map[string]time.Time{}, map[string]time.Time{}
	stamp := func(at map[string]time.Time, of func(runtime.Object) string) func(runtime.Object) {
		return func(obj runtime.Object) {
			if name := of(obj); name != "" {
				mu.Lock()
				if at[name].IsZero() { // the first sign: stamps are taken as they happen
					at[name] = time.Now()
				}
				mu.Unlock()
			}
		}
	}
	watching, stop := context.WithCancel(ctx)
	defer stop()
	watchErrs := make(chan error, 2)
	go func() {
		watchErrs <- follow(watching, h.c, wfList, ns, list.ResourceVersion, stamp(changed, func(obj runtime.Object) string {
			if wf, ok := obj.(*metav1.PartialObjectMetadata); ok && wf.Labels[phaseLabel] == string(wfv1.WorkflowRunning) {
				return crOf[wf.Name]
			}
			return ""
		}))
	}()
	go func() {
		watchErrs <- follow(watching, h.c, &bpav1.ProvisioningList{}, ns, list.ResourceVersion, stamp(mirrored, func(obj runtime.Object) string {
			if p, ok := obj.(*bpav1.Provisioning); ok && p.Status.Phase == bpav1.PhaseRunning {
				return p.Name
			}
			return ""
		}))
	}()
	errs := make(chan error, 1)
	go func() {
		errs <- parallel(ctx, len(wfs.Items), len(wfs.Items), func(ctx context.Context, i int) error {
			name := wfs.Items[i].Name
			err := h.setWorkflow(ctx, &wfs.Items[i], func(st *wfv1.WorkflowStatus) {
				st.Phase = wfv1.WorkflowRunning
				st.StartedAt = metav1.Now()
			})
			if err == nil {
				stamp(changed, func(runtime.Object) string { return crOf[name] })(nil)
			}
			return err
		})
	}()
	if err := <-errs; err != nil {
		return nil, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		c, m := len(changed), len(mirrored)
		mu.Unlock()
		if c == len(list.Items) && m == len(list.Items) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d Workflows changed, %d CRs mirrored them, in 2 minutes", c, len(list.Items), m)
		}
		select {
		case err := <-watchErrs:
			return nil, err
		case <-time.After(10 * time.Millisecond):
		}
	}
	mu.Lock()
	defer mu.Unlock()
	out := make([]time.Duration, 0, len(mirrored))
	for cr, at := range mirrored {
		out = append(out, max(0, at.Sub(changed[cr])))
	}
	return out, nil
}

// follow passes each object a watch of list in ns by c reports, from resourceVersion rv, to seen
// until ctx ends. When the API server ends the watch (it closes a watcher that falls behind a
// burst of large events), it watches again from the last event seen: no change is missed.
func follow(ctx context.Context, c client.WithWatch, list client.ObjectList, ns, rv string, seen func(runtime.Object)) error {
	for resumed := 0; ; resumed++ {
		if resumed > 0 {
			progress("  the API server ended a watch of %T; resumed from resourceVersion %s (%d)", list, rv, resumed)
		}
		w, err := c.Watch(ctx, list, &client.ListOptions{Namespace: ns, Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching %T: %w", list, err)
		}
		for e := range w.ResultChan() {
			if e.Type == watch.Error {
				w.Stop()
				if ctx.Err() != nil { // the watch's end, as client-go reports it
					return nil
				}
				return fmt.Errorf("watching %T from resourceVersion %s: %v", list, rv, apierrors.FromObject(e.Object))
			}
			if obj, err := meta.Accessor(e.Object); err == nil {
				rv = obj.GetResourceVersion()
			}
			seen(e.Object)
		}
		w.Stop()
		if ctx.Err() != nil {
			return nil
		}
	}
}

// phaseRounds runs rounds of phaseChanges, each on the next n CRs of the namespace, and
// returns their figures together: one round's p99 is its one or two slowest changes, which
// vary more from run to run than the figure they stand for. settle runs between rounds.
func (h *harness) phaseRounds(ctx context.Context, ns string, rounds, n int, settle func() error) ([]time.Duration, error) {
	var out []time.Duration
	for round := range rounds {
		if round > 0 {
			if err := settle(); err != nil {
				return nil, err
			}
		}
		d, err := h.phaseChanges(ctx, ns, round*n, n)
		if err != nil {
			return nil, err
		}
		out = append(out, d...)
	}
	return out, nil
}

// phaseChangesMirroredDirectly is phaseRounds with mirrorDirectly in the controller's place.
func (h *harness) phaseChangesMirroredDirectly(ctx context.Context, ns string, rounds, n int) ([]time.Duration, error) {
	mirroring, stop := context.WithCancel(ctx)
	mirrored := make(chan error, 1)
	go func() { mirrored <- h.mirrorDirectly(mirroring, ns) }()
	out, err := h.phaseRounds(ctx, ns, rounds, n, func() error { return pause(ctx, time.Second) })
	stop()
	return out, errors.Join(err, <-mirrored)
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mirrorDirectly is the least any controller must do to mirror phase changes, as a client
// holding the controller's role: watch the namespace's Workflows (whole objects, as the
// controller's informer does) and, as each one starts running, patch its CR's status to say
// so (patchRunning), with as many workers as the controller has by default. It runs until ctx
// ends.
func (h *harness) mirrorDirectly(ctx context.Context, ns string) error {
	c := h.directClient
	from := &metav1.PartialObjectMetadataList{}
	from.SetGroupVersionKind(wfv1.SchemeGroupVersion.WithKind("WorkflowList"))
	if err := c.List(ctx, from, client.InNamespace(ns), client.Limit(1)); err != nil {
		return err
	}
	running := make(chan *wfv1.Workflow, 1024)
	var wg sync.WaitGroup
	errs := make(chan error, directMirrorWorkers)
	for range directMirrorWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wf := range running {
				if err := patchRunning(ctx, c, wf); err != nil && ctx.Err() == nil {
					select {
					case errs <- fmt.Errorf("mirroring %s directly: %w", wf.Name, err):
					default:
					}
				}
			}
		}()
	}
	err := follow(ctx, c, &wfv1.WorkflowList{}, ns, from.ResourceVersion, func(obj runtime.Object) {
		if wf, ok := obj.(*wfv1.Workflow); ok && wf.Status.Phase == wfv1.WorkflowRunning {
			running <- wf
		}
	})
	close(running)
	wg.Wait()
	select {
	case werr := <-errs:
		return errors.Join(err, werr)
	default:
		return err
	}
}

// patchRunning writes the status a CR shows for its running Workflow, as the controller
// does: its phase, its start, and its Ready and Reconciling conditions saying so.
func patchRunning(ctx context.Context, c client.Client, wf *wfv1.Workflow) error {
	owner := metav1.GetControllerOf(wf)
	if owner == nil {
		return fmt.Errorf("no controller owns Workflow %s", wf.Name)
	}
	status := bpav1.ProvisioningStatus{}
	status.Phase, status.StartedAt = bpav1.PhaseRunning, &wf.Status.StartedAt
	status.Conditions = workflowConditions(bpav1.ReasonWorkflowRunning, "Workflow "+wf.Name+" is running", 1)
	raw, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	p := &bpav1.Provisioning{ObjectMeta: metav1.ObjectMeta{Namespace: wf.Namespace, Name: owner.Name}}
	return c.Status().Patch(ctx, p, client.RawPatch(types.MergePatchType, raw))
}

// directMirrorWorkers: as many as the controller has by default.
const directMirrorWorkers = cli.DefaultMaxConcurrentReconciles

// phaseLabel is the label Argo's workflow-controller keeps a Workflow's phase in.
const phaseLabel = "workflows.argoproj.io/phase"

// setWorkflow writes a Workflow's status as Argo's workflow-controller does: the whole object,
// with its phase label, updated from the copy it holds (its informer's; here, a list's), read
// again only when the update conflicts.
func (h *harness) setWorkflow(ctx context.Context, wf *wfv1.Workflow, mutate func(*wfv1.WorkflowStatus)) error {
	wf = wf.DeepCopy()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mutate(&wf.Status)
		wf.Labels[phaseLabel] = string(wf.Status.Phase)
		err := h.c.Update(ctx, wf)
		if apierrors.IsConflict(err) {
			if err := h.c.Get(ctx, client.ObjectKeyFromObject(wf), wf); err != nil {
				return err
			}
		}
		return err
	})
}

// succeedAll drives every Workflow of the namespaces to Succeeded, with the node outputs the
// controller records (the hosts the run placed).
func (h *harness) succeedAll(ctx context.Context, namespaces ...string) error {
	var all []wfv1.Workflow
	for _, ns := range namespaces {
		var list wfv1.WorkflowList
		if err := h.c.List(ctx, &list, client.InNamespace(ns), client.HasLabels{bpav1.WorkflowKindLabel}); err != nil {
			return err
		}
		all = append(all, list.Items...)
	}
	return parallel(ctx, len(all), 16, func(ctx context.Context, i int) error {
		wf := &all[i]
		hosts, err := json.Marshal([]bpav1.Node{{Label: "master", Role: "master", BareMetalHost: wf.Namespace + "/bmh-" + wf.Name, MAC: "00:c5:16:05:61:b2", IP: "192.168.20.10"}})
		if err != nil {
			return err
		}
		return h.setWorkflow(ctx, wf, func(st *wfv1.WorkflowStatus) {
			now := time.Now()
			st.Phase = wfv1.WorkflowSucceeded
			st.StartedAt = metav1.NewTime(now.Add(-time.Minute))
			st.FinishedAt = metav1.NewTime(now)
			st.Progress = "2/2"
			st.Nodes = wfv1.Nodes{}
			for j, tmpl := range []string{"discover-hosts", "resolve-leases"} {
				id := fmt.Sprintf("%s-%d", wf.Name, j)
				st.Nodes[id] = wfv1.NodeStatus{
					ID: id, Name: wf.Name + "." + tmpl + "(0)", DisplayName: tmpl + "(0)", Type: wfv1.NodeTypePod,
					TemplateName: tmpl, Phase: wfv1.NodeSucceeded,
					StartedAt: metav1.NewTime(now.Add(-time.Duration(3-j) * time.Second)), FinishedAt: metav1.NewTime(now.Add(-time.Duration(2-j) * time.Second)),
					Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: steps.HostsParam, Value: wfv1.AnyStringPtr(string(hosts))}}},
				}
			}
		})
	})
}

// converged waits until every CR of the namespace has exactly one Workflow and its status
// says phase (and Ready, for Succeeded); it returns the CRs that do not, and duplicates.
func (h *harness) converged(ctx context.Context, ns string, phase bpav1.WorkflowPhase, within time.Duration) (left, duplicates int, err error) {
	deadline := time.Now().Add(within)
	for {
		left, duplicates, err = h.check(ctx, ns, phase)
		if err != nil || (left == 0 && duplicates == 0) || time.Now().After(deadline) {
			return left, duplicates, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (h *harness) check(ctx context.Context, ns string, phase bpav1.WorkflowPhase) (left, duplicates int, err error) {
	var crs bpav1.ProvisioningList
	if err := h.c.List(ctx, &crs, client.InNamespace(ns)); err != nil {
		return 0, 0, err
	}
	var wfs wfv1.WorkflowList
	if err := h.c.List(ctx, &wfs, client.InNamespace(ns)); err != nil {
		return 0, 0, err
	}
	// One Workflow a CR generation: a CR taken to a new generation (knownClusterLatency) has
	// one of each.
	owned := map[string]int{}
	for _, wf := range wfs.Items {
		if ref := metav1.GetControllerOf(&wf); ref != nil {
			owned[string(ref.UID)+"/"+wf.Labels[bpav1.WorkflowGenerationLabel]]++
		}
	}
	for _, p := range crs.Items {
		n := owned[string(p.UID)+"/"+strconv.FormatInt(p.Generation, 10)]
		if n > 1 {
			duplicates += n - 1
		}
		ready := phase != bpav1.PhaseSucceeded || meta.IsStatusConditionTrue(p.Status.Conditions, bpav1.ConditionReady)
		if n != 1 || p.Status.Phase != phase || p.Status.WorkflowName == "" || !ready {
			left++
		}
	}
	return left, duplicates, nil
}

// unrelated creates n Workflows that are not the controller's (no bpa labels), as other users
// of the site's Argo have.
func (h *harness) unrelated(ctx context.Context, ns string, n int) error {
	return parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		wf := &wfv1.Workflow{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("other-%05d", i), Labels: map[string]string{"team": "data"}},
			Spec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{
				Name:      "main",
				Container: &corev1.Container{Image: "busybox:1.36", Command: []string{"sh", "-c", "echo hello from an unrelated Workflow"}},
			}}},
		}
		return h.c.Create(ctx, wf)
	})
}

// percentile of durations (p in [0, 100]), nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
