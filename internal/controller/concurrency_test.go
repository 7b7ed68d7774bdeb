package controller_test

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manager"
)

// writeCounter counts the writes a client makes to one namespace, by verb and resource
// ("PATCH provisionings/status"); those the API server refuses also by code ("POST roles 409").
type writeCounter struct {
	namespace string
	mu        sync.Mutex
	n         map[string]int
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (w *writeCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			res, err := rt.RoundTrip(r)
			if r.Method != http.MethodGet && err == nil {
				w.count(r.Method, r.URL.Path, res.StatusCode)
			}
			return res, err
		})
	})
	return cfg
}

// count takes /api(s)/.../namespaces/NS/RESOURCE[/NAME[/SUBRESOURCE]].
func (w *writeCounter) count(method, path string, code int) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	i := slices.Index(parts, "namespaces")
	if i < 0 || i+2 >= len(parts) || parts[i+1] != w.namespace {
		return
	}
	key := method + " " + parts[i+2]
	if len(parts) > i+4 {
		key += "/" + parts[i+4]
	}
	if code >= 300 {
		key += fmt.Sprintf(" %d", code)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n[key]++
}

// refusedKeys are the writes the API server refused, with their codes.
func (w *writeCounter) refusedKeys() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, n := range w.n {
		if strings.Count(k, " ") == 2 {
			out[k] = n
		}
	}
	return out
}

// snapshot returns the writes that went through, and the number refused.
func (w *writeCounter) snapshot() (done map[string]int, refused int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	done = map[string]int{}
	for k, n := range w.n {
		if strings.Count(k, " ") == 2 {
			refused += n
		} else {
			done[k] = n
		}
	}
	return done, refused
}

// TestConcurrentReconcilesWriteOnceEach: with 8 workers, CRs created at once by 8 clients each
// get one Workflow and one status, through the fewest writes (the finalizer, the Workflow, one
// status patch, one Event; the cluster's step identity once), and nothing more once the burst
// is over. Then their Workflows all change phase at once, and each CR mirrors its own, with one
// status write each (and an Event when it fails, not when it starts running).
func TestConcurrentReconcilesWriteOnceEach(t *testing.T) {
	const crs, clients = 24, 8
	ns := newNamespace(t)
	counter := &writeCounter{namespace: ns, n: map[string]int{}}
	startManagerWith(t, counter.wrap(env.Config), func(o *manager.Options) { o.MaxConcurrentReconciles = 8 })

	var wg sync.WaitGroup
	errs := make(chan error, crs)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < crs; i += clients {
				p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
				p.Name = fmt.Sprintf("burst-%02d", i)
				p.Labels[bpav1.ClusterLabel] = fmt.Sprintf("burst-%02d", i)
				if err := env.Client.Create(ctx(), p); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	mirrors := func(phase bpav1.WorkflowPhase, reason string) func() error {
		return func() error {
			var list bpav1.ProvisioningList
			if err := env.Client.List(ctx(), &list, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, p := range list.Items {
				wfs := workflowsOf(t, bpav1.WorkflowKindProvisioning, &p)
				if len(wfs) != 1 {
					return fmt.Errorf("%s has %d Workflows", p.Name, len(wfs))
				}
				if p.Status.WorkflowName != wfs[0].Name || p.Status.Phase != phase || condition(p.Status.Conditions, bpav1.ConditionReady, 1) != "False/"+reason {
					return fmt.Errorf("%s: status %+v, Ready %s; its Workflow is %s", p.Name, p.Status.WorkflowStatus, condition(p.Status.Conditions, bpav1.ConditionReady, 1), wfs[0].Name)
				}
			}
			return nil
		}
	}
	eventually(t, "every CR with one Workflow, mirrored as pending", mirrors(bpav1.PhasePending, bpav1.ReasonWorkflowPending))
	identity := crs + 1 // one per cluster, one for the namespace's Argo executor
	// Two status writes a new run: its start recorded before its Workflow is created (so that a
	// run deleted unseen is never started again), then the Workflow mirrored.
	want := map[string]int{
		"PATCH provisionings": crs, "POST workflows": crs, "PATCH provisionings/status": 2 * crs, "POST events": crs,
		"POST serviceaccounts": identity, "POST roles": identity, "POST rolebindings": identity, "POST secrets": 1,
	}
	// The namespace's executor identity, which every worker finds missing from its cache at
	// first, is created once: the other workers' creates are refused as already there (409),
	// at most one per worker and object (its account, token Secret, Role and RoleBinding), and
	// nothing else is refused.
	shared := map[string]bool{"POST serviceaccounts 409": true, "POST secrets 409": true, "POST roles 409": true, "POST rolebindings 409": true}
	check := func() error {
		got, _ := counter.snapshot()
		if !maps.Equal(got, want) {
			return fmt.Errorf("writes %v, want %v", got, want)
		}
		for key, n := range counter.refusedKeys() {
			if !shared[key] || n > 8-1 {
				return fmt.Errorf("%d writes %q refused: %v", n, key, counter.refusedKeys())
			}
		}
		return nil
	}
	eventually(t, "the writes of the burst, and its Events", check)
	consistently(t, "no write once the burst is over", 2*time.Second, check)
	_, refusedInBurst := counter.snapshot()

	// Every Workflow changes phase at once: each CR mirrors its own, with one status write.
	var all wfv1.WorkflowList
	if err := env.Client.List(ctx(), &all, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []wfv1.WorkflowPhase{wfv1.WorkflowRunning, wfv1.WorkflowFailed} {
		for i := range all.Items {
			wg.Add(1)
			go func() {
				defer wg.Done()
				setWorkflowStatus(t, &all.Items[i], func(st *wfv1.WorkflowStatus) {
					st.Phase = phase
					st.StartedAt = metav1.Now()
					if phase == wfv1.WorkflowFailed {
						st.FinishedAt = metav1.Now()
						st.Message = "failed: " + all.Items[i].Name
					}
				})
			}()
		}
		wg.Wait()
		reason, mirrored := bpav1.ReasonWorkflowRunning, bpav1.PhaseRunning
		if phase == wfv1.WorkflowFailed {
			reason, mirrored = bpav1.ReasonWorkflowFailed, bpav1.PhaseFailed
		}
		want["PATCH provisionings/status"] += crs
		if phase == wfv1.WorkflowFailed { // Running is progress within Reconciling: no Event
			want["POST events"] += crs
		}
		eventually(t, "every CR mirroring its Workflow "+string(phase), mirrors(mirrored, reason))
		eventually(t, "one status write and one Event per CR for "+string(phase), func() error {
			got, refused := counter.snapshot()
			if !maps.Equal(got, want) || refused != refusedInBurst {
				return fmt.Errorf("writes %v (%d refused), want %v", got, refused, want)
			}
			return nil
		})
	}
	var list bpav1.ProvisioningList
	if err := env.Client.List(ctx(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if !strings.Contains(p.Status.Message, "failed: "+p.Status.WorkflowName) {
			t.Errorf("%s mirrors message %q, not its Workflow %s's", p.Name, p.Status.Message, p.Status.WorkflowName)
		}
	}
}
