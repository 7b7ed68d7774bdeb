package cli_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manager"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

func TestRunRefusesBadInputBeforeStarting(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--step-image=not an image"}, `options: step image "not an image" is not an image reference`},
		{[]string{"run", "--lease-file=/var/lib/dhcp/dhcpd.leases", "--lease-format=csv"}, "--lease-format"},
		{[]string{"run", "--max-concurrent-reconciles=0"}, "--max-concurrent-reconciles: 0: must be at least 1"},
		{[]string{"run", "--kube-api-qps=-1"}, "--kube-api-qps: -1: must be 0 (no client-side limit) or more"},
		{[]string{"run", "--kube-api-qps=50"}, "--kube-api-burst: must be at least 1 with --kube-api-qps"},
		{[]string{"run", "--argo-poll-interval=1ms"}, "--argo-poll-interval: 1ms: must be at least 100ms"},
		{[]string{"run", "--argo-ui-url=argo.site.example"}, `--argo-ui-url: "argo.site.example": want an http:// or https:// address`},
		{[]string{"run", "--site-registry-poll-interval=10ms"}, "--site-registry-poll-interval: 10ms: must be at least 1s"},
		{[]string{"run", "--site-registry=-x:5000"}, `options: site registry "-x:5000" is not host[:port][/prefix]`},
		{[]string{"run", "--site-registry-secret=Not_A_Name"}, `options: site registry Secret "Not_A_Name" is not a Secret name`},
		{[]string{"run", "--site-registry=10.0.0.2:5000", "--site-registry-ca-file=/nonexistent/ca.crt"}, "--site-registry: registry CA file"},
		{[]string{"run"}, "finding the cluster"},
		{[]string{}, "finding the cluster"},
	} {
		code, stdout, stderr := run(tc.args...)
		if code == 0 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want a failure saying %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// TestRunServesAgainstKUBECONFIG runs the command as an operator does, against a real API
// server named by KUBECONFIG: it elects itself leader, serves health and metrics on the given
// addresses, reconciles, and stops cleanly when its context ends.
func TestRunServesAgainstKUBECONFIG(t *testing.T) {
	env := testenv.ForTest(t, testenv.Start)
	path := env.AdminKubeconfig(t)
	t.Setenv("KUBECONFIG", path)

	metrics, probes, pprof := testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr testutil.SyncBuffer
	go func() {
		done <- cli.ExecuteContext(ctx, []string{"run", "--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probes,
			"--pprof-bind-address=" + pprof, "--leader-election-namespace=default"}, io.Discard, &stderr)
	}()
	stopped := false
	stop := func() int {
		stopped = true
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(30 * time.Second):
			t.Fatalf("run did not stop within 30s; log:\n%s", stderr.String())
		}
		return -1
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})

	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	testutil.Within(t, "readyz answers 200", func() error {
		if code, body := get("http://" + probes + "/readyz"); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	testutil.Within(t, "the leader lease taken", func() error {
		return env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: manager.LeaderElectionID}, &coordinationv1.Lease{})
	})

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "run-test"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	p := testutil.Provisioning(t, "provisioning-cluster-abc.yaml")
	p.Namespace = ns.Name
	if err := env.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, "a Workflow created", func() error {
		var list wfv1.WorkflowList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns.Name)); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d Workflows", len(list.Items))
		}
		return nil
	})
	testutil.Within(t, "our metrics served", func() error {
		code, body := get("http://" + metrics + "/metrics")
		for _, m := range []string{`bpa_workflows_created_total{kind="provisioning"} 1`, "bpa_reconcile_duration_seconds_bucket"} {
			if code != http.StatusOK || !strings.Contains(body, m) {
				return fmt.Errorf("%d, no %s", code, m)
			}
		}
		return nil
	})
	if code, body := get("http://" + pprof + "/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Errorf("--pprof-bind-address: %d %.80s", code, body)
	}
	if code := stop(); code != 0 {
		t.Errorf("run exited %d on a clean stop; log:\n%s", code, stderr.String())
	}
}
