package manager_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manager"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

// TestStartsBeforeArgoIsInstalled: on an API server without Argo's Workflow kind the controller
// starts anyway; a Provisioning says why nothing runs, and once Argo's CRDs are installed the
// controller notices, creates the Workflow and follows it, without a restart.
func TestStartsBeforeArgoIsInstalled(t *testing.T) {
	env := testenv.ForTest(t, testenv.StartWithoutArgo)
	plugins, err := workflows.Plugins()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(env.Config, manager.Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		Compile:          compile.DefaultOptions(plugins),
		ArgoPollInterval: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "no-argo"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	p := testutil.Provisioning(t, "provisioning-cluster-abc.yaml")
	p.Namespace = ns.Name
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	cur := &bpav1.Provisioning{}
	testutil.Within(t, "the Provisioning Stalled for want of Argo", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, bpav1.ConditionStalled)
		if c == nil || c.Reason != bpav1.ReasonArgoNotInstalled || !strings.Contains(c.Message, "Argo Workflows is not installed") {
			return fmt.Errorf("conditions %+v", cur.Status.Conditions)
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("the manager stopped without Argo: %v", err)
	default:
	}

	if err := env.InstallArgo(); err != nil {
		t.Fatal(err)
	}
	var wf wfv1.Workflow
	testutil.Within(t, "the Workflow created and mirrored once Argo is installed", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		if cur.Status.WorkflowName == "" || meta.IsStatusConditionTrue(cur.Status.Conditions, bpav1.ConditionStalled) {
			return fmt.Errorf("status %+v", cur.Status)
		}
		return env.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: cur.Status.WorkflowName}, &wf)
	})
	// The Workflow watch is in place: Argo's update is mirrored.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&wf), &wf); err != nil {
			return err
		}
		wf.Status.Phase = wfv1.WorkflowRunning
		return env.Client.Update(ctx, &wf)
	})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, "the Workflow's phase mirrored", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		if cur.Status.Phase != bpav1.PhaseRunning {
			return fmt.Errorf("phase %q", cur.Status.Phase)
		}
		return nil
	})
}
