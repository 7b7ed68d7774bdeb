// Command demoargo plays Argo's workflow-controller and the step pods for `make demo`, where
// no container runtime runs: it loads the sample site's BareMetalHosts (with their inspected
// status) into the local API server, then drives every Workflow the controller creates
// through Running to Succeeded, node by node, writing the Workflow status as Argo does —
// node outputs included, computed by the same placement, lease and inventory code the steps
// run — and prints each transition and the CR status the controller mirrors from it.
//
// It is a demo driver, never part of the product binary. The end-to-end suite runs Argo's own
// workflow-controller instead.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/scheme"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

// stepDelay spaces the transitions so that a person can follow them.
const stepDelay = 300 * time.Millisecond

type driver struct {
	c         client.Client
	namespace string
	leases    leases.Table
	driven    map[string]bool
}

func main() {
	hostsFile := flag.String("hosts", "config/samples/site/sample-site-baremetalhosts.yaml", "the site's BareMetalHosts, with status")
	leaseFile := flag.String("leases", "config/samples/site/sample-site-dhcpd.leases", "the DHCP server's lease file")
	namespace := flag.String("namespace", "default", "namespace of the CRs")
	timeout := flag.Duration("timeout", 3*time.Minute, "give up after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *hostsFile, *leaseFile, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "demoargo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, hostsFile, leaseFile, namespace string) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(leaseFile)
	if err != nil {
		return err
	}
	table, err := leases.Parse(leases.Detect(raw), strings.NewReader(string(raw)))
	if err != nil {
		return err
	}
	d := &driver{c: c, namespace: namespace, leases: table, driven: map[string]bool{}}
	if err := d.loadSite(ctx, hostsFile); err != nil {
		return err
	}
	for {
		done, err := d.pass(ctx)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not every CR became Ready: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// loadSite creates the site's BareMetalHosts and writes their status, as the
// baremetal-operator would after inspecting and provisioning them.
func (d *driver) loadSite(ctx context.Context, path string) error {
	hosts, err := manifest.BareMetalHosts(path)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.Namespace}}
		if err := d.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		obj := &metal3v1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Name: h.Name, Namespace: h.Namespace, Labels: h.Labels}, Spec: h.Spec}
		if err := d.c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating BareMetalHost %s/%s: %w", h.Namespace, h.Name, err)
		}
		obj.Status = h.Status
		if err := d.c.Status().Update(ctx, obj); err != nil {
			return fmt.Errorf("writing the status of BareMetalHost %s/%s: %w", h.Namespace, h.Name, err)
		}
	}
	fmt.Printf("argo stand-in: loaded %d BareMetalHosts from %s (provisioned, inspected)\n", len(hosts), path)
	return nil
}

// pass drives the Workflows not driven yet; it is done when every CR is Ready.
func (d *driver) pass(ctx context.Context) (bool, error) {
	var wfs wfv1.WorkflowList
	if err := d.c.List(ctx, &wfs, client.InNamespace(d.namespace)); err != nil {
		return false, err
	}
	slices.SortFunc(wfs.Items, func(a, b wfv1.Workflow) int { return strings.Compare(a.Name, b.Name) })
	for i := range wfs.Items {
		wf := &wfs.Items[i]
		if d.driven[wf.Name] {
			continue
		}
		d.driven[wf.Name] = true
		if err := d.drive(ctx, wf); err != nil {
			return false, fmt.Errorf("driving Workflow %s: %w", wf.Name, err)
		}
	}
	return d.allReady(ctx)
}

func (d *driver) allReady(ctx context.Context) (bool, error) {
	var provs bpav1.ProvisioningList
	var sws bpav1.SoftwareList
	if err := d.c.List(ctx, &provs, client.InNamespace(d.namespace)); err != nil {
		return false, err
	}
	if err := d.c.List(ctx, &sws, client.InNamespace(d.namespace)); err != nil {
		return false, err
	}
	ready := func(conds []metav1.Condition, gen int64) bool {
		for _, c := range conds {
			if c.Type == bpav1.ConditionReady {
				return c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
			}
		}
		return false
	}
	for _, p := range provs.Items {
		if !ready(p.Status.Conditions, p.Generation) {
			return false, nil
		}
	}
	for _, s := range sws.Items {
		if !ready(s.Status.Conditions, s.Generation) {
			return false, nil
		}
	}
	return len(provs.Items) > 0, nil
}

// drive runs one Workflow's DAG, task by task in dependency order.
func (d *driver) drive(ctx context.Context, wf *wfv1.Workflow) error {
	outputs, err := d.outputs(ctx, wf)
	if err != nil {
		return err
	}
	tasks := order(wf.GetTemplateByName(wf.Spec.Entrypoint).DAG.Tasks)
	type podRun struct {
		task  string
		item  *bpav1.Node
		nodes map[string]string
	}
	var runs []podRun
	for _, t := range tasks {
		if t.WithParam == "" {
			runs = append(runs, podRun{task: t.Name, nodes: outputs[t.Name]})
			continue
		}
		var items []bpav1.Node
		if err := json.Unmarshal([]byte(outputs["resolve-cluster-hosts"][steps.NodesParam]), &items); err != nil {
			return fmt.Errorf("the fan-out items: %w", err)
		}
		for _, item := range items {
			runs = append(runs, podRun{task: t.Name, item: &item, nodes: d.report(item)})
		}
	}
	fmt.Printf("\nargo stand-in: running Workflow %s (%d pods)\n", wf.Name, len(runs))
	start := metav1.Now()
	root := wfv1.NodeStatus{ID: wf.Name, Name: wf.Name, DisplayName: wf.Name, Type: wfv1.NodeTypeDAG,
		TemplateName: wf.Spec.Entrypoint, Phase: wfv1.NodeRunning, StartedAt: start}
	nodes := wfv1.Nodes{root.ID: root}
	for i, r := range runs {
		name := wf.Name + "." + r.task
		display := r.task
		var inputs *wfv1.Inputs
		if r.item != nil {
			display = fmt.Sprintf("%s(%d:%s)", r.task, i, r.item.Label)
			inputs = &wfv1.Inputs{Parameters: []wfv1.Parameter{{Name: installsoftware.NodeParam, Value: wfv1.AnyStringPtr(r.item.Label)}}}
		}
		n := wfv1.NodeStatus{ID: nodeID(wf.Name, display), Name: name + "(" + fmt.Sprint(i) + ")", DisplayName: display,
			Type: wfv1.NodeTypePod, TemplateName: templateOf(wf, r.task), TemplateRef: templateRefOf(wf, r.task),
			BoundaryID: wf.Name, Phase: wfv1.NodeRunning, StartedAt: metav1.Now(), Inputs: inputs}
		nodes[n.ID] = n
		if err := d.write(ctx, wf, wfv1.WorkflowRunning, fmt.Sprintf("%d/%d", i, len(runs)), start, nodes); err != nil {
			return err
		}
		time.Sleep(stepDelay)
		n.Phase, n.FinishedAt = wfv1.NodeSucceeded, metav1.Now()
		for k, v := range r.nodes {
			if n.Outputs == nil {
				n.Outputs = &wfv1.Outputs{}
			}
			n.Outputs.Parameters = append(n.Outputs.Parameters, wfv1.Parameter{Name: k, Value: wfv1.AnyStringPtr(v)})
		}
		slices.SortFunc(outputsOf(&n), func(a, b wfv1.Parameter) int { return strings.Compare(a.Name, b.Name) })
		nodes[n.ID] = n
		phase := wfv1.WorkflowRunning
		if i == len(runs)-1 {
			root.Phase, root.FinishedAt = wfv1.NodeSucceeded, metav1.Now()
			nodes[root.ID] = root
			phase = wfv1.WorkflowSucceeded
		}
		if err := d.write(ctx, wf, phase, fmt.Sprintf("%d/%d", i+1, len(runs)), start, nodes); err != nil {
			return err
		}
		fmt.Printf("  %-48s Succeeded  %s\n", display, summarise(r.nodes))
		time.Sleep(stepDelay)
		d.printCR(ctx, wf)
	}
	return nil
}

func outputsOf(n *wfv1.NodeStatus) []wfv1.Parameter {
	if n.Outputs == nil {
		return nil
	}
	return n.Outputs.Parameters
}

// write updates the Workflow's status as Argo does: the whole object (its CRD has no status
// subresource), retried on conflicts.
func (d *driver) write(ctx context.Context, wf *wfv1.Workflow, phase wfv1.WorkflowPhase, progress string, start metav1.Time, nodes wfv1.Nodes) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &wfv1.Workflow{}
		if err := d.c.Get(ctx, client.ObjectKeyFromObject(wf), cur); err != nil {
			return err
		}
		cur.Status.Phase = phase
		cur.Status.Progress = wfv1.Progress(progress)
		cur.Status.StartedAt = start
		if phase == wfv1.WorkflowSucceeded {
			cur.Status.FinishedAt = metav1.Now()
		}
		cur.Status.Nodes = nodes.DeepCopy()
		return d.c.Update(ctx, cur)
	})
}

// outputs computes each task's outputs with the steps' own code: placement on the site's
// hosts (claiming them, as discover-hosts does), addresses from the lease file, the inventory,
// and for Software the nodes of the cluster.
func (d *driver) outputs(ctx context.Context, wf *wfv1.Workflow) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	crName := wf.Spec.Arguments.GetParameterByName(steps.ParamName).Value.String()
	switch wf.Labels[bpav1.WorkflowKindLabel] {
	case bpav1.WorkflowKindProvisioning:
		p := &bpav1.Provisioning{}
		if err := d.c.Get(ctx, client.ObjectKey{Namespace: wf.Namespace, Name: crName}, p); err != nil {
			return nil, err
		}
		var hosts metal3v1alpha1.BareMetalHostList
		if err := d.c.List(ctx, &hosts); err != nil {
			return nil, err
		}
		placed, err := discoverhosts.Place(p, hosts.Items)
		if err != nil {
			return nil, err
		}
		if err := d.claim(ctx, p, placed); err != nil {
			return nil, err
		}
		addressed, err := leases.Resolve(placed, leases.FileSource{Table: d.leases, Name: "the lease file", Now: time.Now()})
		if err != nil {
			return nil, err
		}
		inventory, extraVars, err := renderinventory.Render(p, addressed, renderinventory.Options{})
		if err != nil {
			return nil, err
		}
		out["discover-hosts"] = map[string]string{steps.HostsParam: mustJSON(placed)}
		out["resolve-leases"] = map[string]string{steps.HostsParam: mustJSON(addressed)}
		out["render-inventory"] = map[string]string{steps.InventoryParam: string(inventory), steps.ExtraVarsParam: string(extraVars)}
	case bpav1.WorkflowKindSoftware:
		var provs bpav1.ProvisioningList
		if err := d.c.List(ctx, &provs, client.InNamespace(wf.Namespace), client.MatchingLabels{bpav1.ClusterLabel: wf.Labels[bpav1.WorkflowClusterLabel]}); err != nil {
			return nil, err
		}
		if len(provs.Items) != 1 {
			return nil, fmt.Errorf("%d Provisionings for cluster %s", len(provs.Items), wf.Labels[bpav1.WorkflowClusterLabel])
		}
		only := onlyNodes(wf)
		var nodes []bpav1.Node
		for _, h := range provs.Items[0].Status.Hosts {
			if len(only) == 0 || slices.Contains(only, h.Label) {
				nodes = append(nodes, h)
			}
		}
		out["resolve-cluster-hosts"] = map[string]string{steps.NodesParam: mustJSON(nodes)}
	}
	return out, nil
}

func (d *driver) claim(ctx context.Context, p *bpav1.Provisioning, placed []bpav1.Node) error {
	ref := placement.ConsumerFor(p).Ref()
	for _, pl := range placed {
		ns, name, _ := strings.Cut(pl.BareMetalHost, "/")
		h := &metal3v1alpha1.BareMetalHost{}
		if err := d.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, h); err != nil {
			return err
		}
		before := h.DeepCopy()
		h.Spec.ConsumerRef = ref
		if err := d.c.Patch(ctx, h, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("claiming %s: %w", pl.BareMetalHost, err)
		}
	}
	return nil
}

// report is install-software's output for one node: every package of its role installed.
func (d *driver) report(item bpav1.Node) map[string]string {
	return map[string]string{steps.ReportParam: mustJSON(installsoftware.Report{
		Node: item.Label, Role: item.Role, PackageManager: "apt", Changed: []string{"(demo: nothing really installed)"},
	})}
}

func (d *driver) printCR(ctx context.Context, wf *wfv1.Workflow) {
	crName := wf.Spec.Arguments.GetParameterByName(steps.ParamName).Value.String()
	key := client.ObjectKey{Namespace: wf.Namespace, Name: crName}
	var st bpav1.WorkflowStatus
	kind := "provisioning"
	if wf.Labels[bpav1.WorkflowKindLabel] == bpav1.WorkflowKindSoftware {
		kind = "software"
		sw := &bpav1.Software{}
		if d.c.Get(ctx, key, sw) != nil {
			return
		}
		st = sw.Status.WorkflowStatus
	} else {
		p := &bpav1.Provisioning{}
		if d.c.Get(ctx, key, p) != nil {
			return
		}
		st = p.Status.WorkflowStatus
	}
	fmt.Printf("    -> %s/%s status: phase=%s progress=%s workflow=%s\n", kind, crName, st.Phase, st.Progress, st.WorkflowName)
}

// order sorts DAG tasks so that each comes after what it depends on (names break ties).
func order(tasks []wfv1.DAGTask) []wfv1.DAGTask {
	done := map[string]bool{}
	var out []wfv1.DAGTask
	for len(out) < len(tasks) {
		progressed := false
		for _, t := range tasks {
			if done[t.Name] {
				continue
			}
			ready := true
			for _, dep := range strings.Fields(strings.NewReplacer("&&", " ", "(", " ", ")", " ", ".Succeeded", "").Replace(t.Depends)) {
				if !done[dep] {
					ready = false
				}
			}
			if ready {
				done[t.Name] = true
				out = append(out, t)
				progressed = true
			}
		}
		if !progressed {
			break
		}
	}
	return out
}

func templateOf(wf *wfv1.Workflow, task string) string {
	for _, t := range wf.GetTemplateByName(wf.Spec.Entrypoint).DAG.Tasks {
		if t.Name == task {
			if t.TemplateRef != nil {
				return t.TemplateRef.Template
			}
			return t.Template
		}
	}
	return task
}

func templateRefOf(wf *wfv1.Workflow, task string) *wfv1.TemplateRef {
	for _, t := range wf.GetTemplateByName(wf.Spec.Entrypoint).DAG.Tasks {
		if t.Name == task && t.TemplateRef != nil {
			return t.TemplateRef.DeepCopy()
		}
	}
	return nil
}

func onlyNodes(wf *wfv1.Workflow) []string {
	t := wf.GetTemplateByName("resolve-cluster-hosts")
	if t == nil || t.Container == nil {
		return nil
	}
	for _, a := range t.Container.Args {
		if v, ok := strings.CutPrefix(a, "--only="); ok {
			return strings.Split(v, ",")
		}
	}
	return nil
}

func nodeID(wf, display string) string {
	h := fnv.New32a()
	h.Write([]byte(display))
	return fmt.Sprintf("%s-%d", wf, h.Sum32())
}

func summarise(outputs map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(outputs)) {
		v := strings.ReplaceAll(outputs[k], "\n", " ")
		if len(v) > 70 {
			v = v[:67] + "..."
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

func mustJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(raw)
}
