package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manager"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

// wait bounds every wait of the suite: generous for a loaded 2-core CI machine, and still a
// failure, not a hang.
const wait = 30 * time.Second

var env *testenv.Env

// TestMain starts one real kube-apiserver and etcd for the package; each test runs its own
// controller manager in its own namespace.
func TestMain(m *testing.M) {
	logTo := io.Discard
	if os.Getenv("BPA_TEST_LOG") != "" {
		logTo = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logTo), zap.UseDevMode(true)))
	testenv.Main(m, &env)
}

// startManager runs the controller until the returned stop is called (or the test ends).
func startManager(t *testing.T) (stop func()) {
	t.Helper()
	return startManagerWith(t, env.Config, nil)
}

// startManagerWith runs the controller with its options changed by with, talking to the API
// server through cfg.
func startManagerWith(t *testing.T, cfg *rest.Config, with func(*manager.Options)) (stop func()) {
	t.Helper()
	plugins, err := workflows.Plugins()
	if err != nil {
		t.Fatal(err)
	}
	opts := manager.Options{
		MetricsBindAddress:     "0",
		HealthProbeBindAddress: "0",
		Compile:                compile.DefaultOptions(plugins),
		SkipNameValidation:     true,
	}
	if with != nil {
		with(&opts)
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(wait):
			t.Errorf("the manager did not stop within %s", wait)
		}
	}
	t.Cleanup(stop)
	return stop
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t-" + strings.ToLower(rand.String(8))}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// eventually polls cond until it returns nil, failing the test with its last error after wait.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, wait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// consistently checks that cond holds for a while: for "nothing happens" assertions.
func consistently(t *testing.T, what string, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := cond(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ctx() context.Context { return context.Background() }

func loadProvisioning(t *testing.T, fixture, ns string) *bpav1.Provisioning {
	t.Helper()
	p := testutil.Provisioning(t, fixture)
	p.Namespace = ns
	return p
}

func loadSoftware(t *testing.T, ns string) *bpav1.Software {
	t.Helper()
	docs, err := manifest.ReadFile(testutil.Fixture(t, "software-cluster-xyz.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sw := docs[0].Object.(*bpav1.Software)
	sw.Namespace = ns
	return sw
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(ctx(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// workflowsOf lists the Workflows of a CR, straight from the API server.
func workflowsOf(t *testing.T, kind string, owner client.Object) []wfv1.Workflow {
	t.Helper()
	var list wfv1.WorkflowList
	if err := env.Client.List(ctx(), &list, client.InNamespace(owner.GetNamespace()),
		client.MatchingLabels{bpav1.WorkflowKindLabel: kind, bpav1.WorkflowNameLabel: owner.GetName()}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitWorkflow waits for the Workflow of one generation and returns it.
func waitWorkflow(t *testing.T, kind string, owner client.Object, generation int64) *wfv1.Workflow {
	t.Helper()
	var found *wfv1.Workflow
	eventually(t, fmt.Sprintf("a Workflow of %s generation %d", owner.GetName(), generation), func() error {
		for _, wf := range workflowsOf(t, kind, owner) {
			if wf.Labels[bpav1.WorkflowGenerationLabel] == fmt.Sprint(generation) {
				found = wf.DeepCopy()
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	return found
}

// setWorkflowStatus plays Argo's workflow-controller: it writes the Workflow's status as Argo
// does (the Workflow CRD has no status subresource; Argo updates the whole object).
func setWorkflowStatus(t *testing.T, wf *wfv1.Workflow, mutate func(*wfv1.WorkflowStatus)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &wfv1.Workflow{}
		if err := env.Client.Get(ctx(), client.ObjectKeyFromObject(wf), cur); err != nil {
			return err
		}
		mutate(&cur.Status)
		return env.Client.Update(ctx(), cur)
	})
	if err != nil {
		t.Fatalf("updating Workflow %s: %v", wf.Name, err)
	}
}

// node is one pod node of a Workflow's status, as Argo writes it.
func node(wf, template string, phase wfv1.NodePhase, at time.Time, outputs map[string]string) wfv1.NodeStatus {
	id := wf + "-" + template + "-" + fmt.Sprint(at.UnixNano())
	n := wfv1.NodeStatus{
		ID: id, Name: wf + "." + template + "(0)", DisplayName: template + "(0)", Type: wfv1.NodeTypePod,
		TemplateName: template, Phase: phase,
		StartedAt: metav1.NewTime(at.Add(-time.Second)), FinishedAt: metav1.NewTime(at),
	}
	for name, value := range outputs {
		if n.Outputs == nil {
			n.Outputs = &wfv1.Outputs{}
		}
		n.Outputs.Parameters = append(n.Outputs.Parameters, wfv1.Parameter{Name: name, Value: wfv1.AnyStringPtr(value)})
	}
	return n
}

func hostsJSON(t *testing.T, hosts ...bpav1.Node) map[string]string {
	t.Helper()
	raw, err := json.Marshal(hosts)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{steps.HostsParam: string(raw)}
}

func reportJSON(t *testing.T, r installsoftware.Report) map[string]string {
	t.Helper()
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{steps.ReportParam: string(raw)}
}

// succeed drives a Workflow to Succeeded with the given nodes.
func succeed(t *testing.T, wf *wfv1.Workflow, nodes ...wfv1.NodeStatus) {
	t.Helper()
	setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
		now := time.Now()
		st.Phase = wfv1.WorkflowSucceeded
		st.StartedAt = metav1.NewTime(now.Add(-time.Minute))
		st.FinishedAt = metav1.NewTime(now)
		st.Progress = wfv1.Progress(fmt.Sprintf("%d/%d", len(nodes), len(nodes)))
		st.Nodes = wfv1.Nodes{}
		for _, n := range nodes {
			st.Nodes[n.ID] = n
		}
	})
}

func getProvisioning(t *testing.T, p *bpav1.Provisioning) *bpav1.Provisioning {
	t.Helper()
	cur := &bpav1.Provisioning{}
	if err := env.Client.Get(ctx(), client.ObjectKeyFromObject(p), cur); err != nil {
		t.Fatal(err)
	}
	return cur
}

func getSoftware(t *testing.T, sw *bpav1.Software) *bpav1.Software {
	t.Helper()
	cur := &bpav1.Software{}
	if err := env.Client.Get(ctx(), client.ObjectKeyFromObject(sw), cur); err != nil {
		t.Fatal(err)
	}
	return cur
}

// condition returns "Status/Reason" of a condition at a generation, or what is wrong.
func condition(conds []metav1.Condition, typ string, generation int64) string {
	for _, c := range conds {
		if c.Type == typ {
			if c.ObservedGeneration != generation {
				return fmt.Sprintf("%s at generation %d", c.Status, c.ObservedGeneration)
			}
			return string(c.Status) + "/" + c.Reason
		}
	}
	return "absent"
}

// expectConditions compares Ready, Reconciling and Stalled in one go, as kstatus reads them.
func expectConditions(conds []metav1.Condition, generation int64, ready, reconciling, stalled string) error {
	got := [3]string{
		condition(conds, bpav1.ConditionReady, generation),
		condition(conds, bpav1.ConditionReconciling, generation),
		condition(conds, bpav1.ConditionStalled, generation),
	}
	if want := [3]string{ready, reconciling, stalled}; got != want {
		return fmt.Errorf("conditions Ready, Reconciling, Stalled = %v, want %v", got, want)
	}
	return nil
}

// patchSpec changes a CR's spec (a new generation), retrying on conflicts with the
// controller's status patches.
func patchSpec[T client.Object](t *testing.T, obj T, mutate func(T)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return env.Client.Update(ctx(), obj)
	})
	if err != nil {
		t.Fatalf("updating %s: %v", obj.GetName(), err)
	}
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

func clientKey(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }
