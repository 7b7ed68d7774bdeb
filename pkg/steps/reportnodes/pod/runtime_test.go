package pod_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes/pod"
)

var env *testenv.Env

// TestMain starts one real kube-apiserver and etcd: the new cluster the step reads.
func TestMain(m *testing.M) {
	testenv.Main(m, &env)
}

// TestRunReadsTheNodes: through a kubeconfig, a real API server's nodes grouped by kubelet
// version, those not Ready said; no kubeconfig, or a cluster that does not answer, is a report
// that says so, not a failure.
func TestRunReadsTheNodes(t *testing.T) {
	ctx := context.Background()
	for _, n := range []struct {
		name, version string
		ready         corev1.ConditionStatus
		cordoned      bool
	}{{"master", "v1.34.3", corev1.ConditionTrue, true}, {"worker-1", "v1.34.3", corev1.ConditionFalse, false}, {"worker-2", "v1.33.7", corev1.ConditionTrue, false}} {
		// The first master as kubespray's upgrade with serial 1 can leave it: cordoned.
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}, Spec: corev1.NodeSpec{Unschedulable: n.cordoned}}
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		node.Status = corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: n.version},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: n.ready}}}
		if err := env.Client.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := env.AdminKubeconfig(t)
	got := pod.Run(ctx, kubeconfig, 10*time.Second)
	want := reportnodes.Report{Kubelets: []bpav1.KubeletVersion{
		{Version: "v1.33.7", Nodes: []string{"worker-2"}},
		{Version: "v1.34.3", Nodes: []string{"master", "worker-1"}, NotReady: []string{"worker-1"}, Cordoned: []string{"master"}},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if s := got.Summary(); s != "v1.33.7 ×1, v1.34.3 ×2 (1 NotReady, 1 cordoned)" {
		t.Errorf("Summary() = %q", s)
	}

	if r := pod.Run(ctx, filepath.Join(t.TempDir(), "value"), time.Second); !strings.Contains(r.Unreadable, "no kubeconfig stored yet") || r.Kubelets != nil {
		t.Errorf("without a kubeconfig: %+v", r)
	}
	// A cluster that does not answer: said, within the timeout.
	kubeconfig = testenv.UnansweredKubeconfig(t, kubeconfig)
	start := time.Now()
	if r := pod.Run(ctx, kubeconfig, 2*time.Second); !strings.Contains(r.Unreadable, "listing the nodes at https://127.0.0.1:1") || time.Since(start) > 30*time.Second {
		t.Errorf("a cluster that does not answer: %+v after %s", r, time.Since(start))
	}
}
