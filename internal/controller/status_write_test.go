package controller_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/controller"
)

// TestStatusWriteFromAStaleCopy: a status computed from a copy older than the controller's own
// last write must not land as a merge patch that silently keeps the newer server value of the
// fields it happens to share with the old copy. It is refused (and reconciled again) instead.
func TestStatusWriteFromAStaleCopy(t *testing.T) {
	ns := newNamespace(t)
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, p)
	p.Status.Phase = bpav1.PhaseSucceeded
	if err := env.Client.Status().Update(ctx(), p); err != nil {
		t.Fatal(err)
	}
	stale := getProvisioning(t, p) // what a lagging cache still holds: Succeeded
	newer := stale.DeepCopy()
	newer.Status.Phase = bpav1.PhasePending // the controller's own later write
	if err := env.Client.Status().Update(ctx(), newer); err != nil {
		t.Fatal(err)
	}

	// From the stale copy, the next status is Succeeded again: against that base the phase
	// "did not change", so a plain merge patch would leave Pending on the server.
	next := stale.DeepCopy()
	next.Status.WorkflowName = "prov-x-2"
	written, err := controller.WriteStatus(ctx(), env.Client, next, stale, true)
	if written || !apierrors.IsConflict(err) {
		t.Fatalf("written %v, err %v; want a refused write, returned as a conflict (the rate limiter runs it again)", written, err)
	}
	if got := getProvisioning(t, p); got.Status.Phase != bpav1.PhasePending || got.Status.WorkflowName != "" {
		t.Errorf("the stale write landed in part: %+v", got.Status.WorkflowStatus)
	}

	fresh := getProvisioning(t, p)
	next = fresh.DeepCopy()
	next.Status.Phase = bpav1.PhaseSucceeded
	if written, err := controller.WriteStatus(ctx(), env.Client, next, fresh, true); err != nil || !written {
		t.Fatalf("from a fresh copy: written %v, err %v", written, err)
	}
	if got := getProvisioning(t, p); got.Status.Phase != bpav1.PhaseSucceeded {
		t.Errorf("phase %s after a write from a fresh copy", got.Status.Phase)
	}
}

// TestFinalizerFromAStaleCopy: the finalizer is added with a patch conditioned on the copy's
// resourceVersion: a stale copy (another writer's change since) never writes over it.
func TestFinalizerFromAStaleCopy(t *testing.T) {
	ns := newNamespace(t)
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, p)
	stale := getProvisioning(t, p)
	patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.KUDPlugins = []string{"multus"} })
	err := controller.EnsureFinalizer(ctx(), env.Client, stale, bpav1.HostsFinalizer)
	if !apierrors.IsConflict(err) {
		t.Fatalf("%v; want a conflict from a stale copy", err)
	}
	fresh := getProvisioning(t, p)
	if err := controller.EnsureFinalizer(ctx(), env.Client, fresh, bpav1.HostsFinalizer); err != nil {
		t.Fatal(err)
	}
	if got := getProvisioning(t, p); len(got.Finalizers) != 1 || len(got.Spec.KUDPlugins) != 1 {
		t.Errorf("finalizers %v, plugins %v", got.Finalizers, got.Spec.KUDPlugins)
	}
}

// TestStatusPatchesCarryOnlyTheStatus: every status patch the controller sends holds the status
// and the resourceVersion it is conditioned on, and no other metadata: not the managedFields
// of the finalizer's patch response, which a patch computed from the cached copy would write
// back, on every new CR, along with the status.
func TestStatusPatchesCarryOnlyTheStatus(t *testing.T) {
	ns := newNamespace(t)
	var mu sync.Mutex
	var bodies []string
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/namespaces/"+ns+"/") && strings.HasSuffix(r.URL.Path, "/status") {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					return nil, err
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				mu.Lock()
				bodies = append(bodies, string(body))
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	startManagerWith(t, cfg, nil)
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, p)
	wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
	setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) { st.Phase = wfv1.WorkflowRunning })
	eventually(t, "the CR mirroring Running", func() error {
		if got := getProvisioning(t, p); got.Status.Phase != bpav1.PhaseRunning {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		return nil
	})

	mu.Lock()
	defer mu.Unlock()
	if len(bodies) < 2 {
		t.Fatalf("%d status patches; want the new run's and the phase change's", len(bodies))
	}
	for _, body := range bodies {
		var patch struct {
			Metadata map[string]any `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(body), &patch); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		delete(patch.Metadata, "resourceVersion")
		if len(patch.Metadata) > 0 {
			t.Errorf("a status patch carries metadata %v besides its resourceVersion: %s", slices.Collect(maps.Keys(patch.Metadata)), body)
		}
	}
}
