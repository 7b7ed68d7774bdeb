package pod_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checknodes/pod"
)

var env *testenv.Env

// TestMain starts one real kube-apiserver and etcd: the new cluster the step reads.
func TestMain(m *testing.M) {
	testenv.Main(m, &env)
}

func putNode(t *testing.T, name, version string, ready corev1.ConditionStatus, cordoned bool) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	n.Spec.Unschedulable = cordoned
	if err := env.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status = corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: version},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}
	if err := env.Client.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
}

var fast = pod.Timing{Wait: 3 * time.Second, Poll: 100 * time.Millisecond}

// TestRunWaitsThenNamesEachNode: through a kubeconfig, a real API server's nodes. The step
// passes once the nodes it checks are as they should be, waiting for a node that becomes so
// within its wait; otherwise it fails naming each node and what is wrong.
func TestRunWaitsThenNamesEachNode(t *testing.T) {
	ctx := context.Background()
	putNode(t, "master", "v1.34.3", corev1.ConditionTrue, true)
	putNode(t, "worker-1", "v1.34.3", corev1.ConditionTrue, false)
	putNode(t, "worker-2", "v1.33.4", corev1.ConditionTrue, false)
	kubeconfig := env.AdminKubeconfig(t)

	t.Run("as they should be", func(t *testing.T) {
		var out bytes.Buffer
		if err := pod.Run(ctx, kubeconfig, []string{"worker-1"}, "v1.34.3", fast, &out); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff("check-nodes: worker-1: Ready, schedulable, at v1.34.3\n", out.String()); d != "" {
			t.Errorf("log (-want +got):\n%s", d)
		}
	})
	t.Run("wrong until the wait ends", func(t *testing.T) {
		var out bytes.Buffer
		err := pod.Run(ctx, kubeconfig, []string{"master", "worker-1", "worker-2", "worker-3"}, "v1.34.3", fast, &out)
		want := "after 3s: 3 of 4 nodes the run touched are not as it should leave them: master: cordoned; " +
			"worker-2: v1.33.4 instead of v1.34.3; worker-3: not in the cluster; " +
			"bring the node back or fix it (kubectl uncordon NODE for a node left cordoned), then retry this step"
		if err == nil || err.Error() != want {
			t.Errorf("Run() = %v\nwant %s", err, want)
		}
		// Said once, not at every read.
		if n := strings.Count(out.String(), "\n"); n != 1 {
			t.Errorf("log of %d lines, want 1:\n%s", n, out.String())
		}
	})
	t.Run("uncordoned while it waits", func(t *testing.T) {
		time.AfterFunc(500*time.Millisecond, func() { putNode(t, "master", "v1.34.3", corev1.ConditionTrue, false) })
		var out bytes.Buffer
		if err := pod.Run(ctx, kubeconfig, []string{"master"}, "v1.34.3", pod.Timing{Wait: 20 * time.Second, Poll: 100 * time.Millisecond}, &out); err != nil {
			t.Fatalf("Run() = %v; log:\n%s", err, out.String())
		}
		want := "check-nodes: 1 of 1 nodes the run touched are not as it should leave them: master: cordoned; " +
			"bring the node back or fix it (kubectl uncordon NODE for a node left cordoned), then retry this step\n" +
			"check-nodes: master: Ready, schedulable, at v1.34.3\n"
		if d := cmp.Diff(want, out.String()); d != "" {
			t.Errorf("log (-want +got):\n%s", d)
		}
	})
	t.Run("no kubeconfig", func(t *testing.T) {
		err := pod.Run(ctx, filepath.Join(t.TempDir(), "value"), []string{"master"}, "", fast, &bytes.Buffer{})
		if err == nil || err.Error() != "no kubeconfig stored yet (fetch-kubeconfig has not run)" {
			t.Errorf("Run() = %v", err)
		}
	})
	t.Run("a cluster that does not answer", func(t *testing.T) {
		gone := testenv.UnansweredKubeconfig(t, kubeconfig)
		err := pod.Run(ctx, gone, []string{"master"}, "", fast, &bytes.Buffer{})
		if err == nil || !strings.HasPrefix(err.Error(), "after 3s: listing the nodes at https://127.0.0.1:1: ") {
			t.Errorf("Run() = %v", err)
		}
	})
}

// TestCommandChoosesItsNodes: after cluster.yml the step is given the resolved hosts, not
// their names, and checks every one of them; it takes the nodes one way or the other. After a
// renewal, it leaves out the nodes pin-host-keys went on without, saying so.
func TestCommandChoosesItsNodes(t *testing.T) {
	putNode(t, "host-a", "v1.34.3", corev1.ConditionTrue, false)
	putNode(t, "host-b", "v1.34.3", corev1.ConditionFalse, false)
	kubeconfig := env.AdminKubeconfig(t)
	hosts := filepath.Join(t.TempDir(), "hosts.json")
	if err := os.WriteFile(hosts, []byte(`[{"label":"host-a","role":"master","bareMetalHost":"site/a","mac":"52:54:00:00:00:01"},{"label":"host-b","role":"worker","bareMetalHost":"site/b","mac":"52:54:00:00:00:02"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	silent := func(nodes ...string) string {
		var entries []string
		for _, n := range nodes {
			entries = append(entries, `{"node":"`+n+`","address":"10.10.0.12:22","triedAt":"2026-12-06T06:00:00Z"}`)
		}
		file := filepath.Join(t.TempDir(), "silent-nodes.json")
		if err := os.WriteFile(file, []byte("["+strings.Join(entries, ",")+"]"), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	for _, tc := range []struct {
		name string
		args []string
		err  string
		said string
	}{
		{name: "a silent node left out", args: []string{"--nodes=host-a,host-b", "--except-silent=" + silent("host-b", "worker-9")},
			said: "check-nodes: host-b did not answer at 10.10.0.12:22 when the run began: the run left it out, and so does the check\n" +
				"check-nodes: host-a: Ready, schedulable\n"},
		{name: "no silent node", args: []string{"--nodes=host-a,host-b", "--except-silent=" + silent()},
			err: "after 1s: 1 of 2 nodes the run touched are not as it should leave them: host-b: NotReady; "},
		{name: "every node silent", args: []string{"--nodes=host-b", "--except-silent=" + silent("host-b")},
			err: "--except-silent: every node to check did not answer when the run began"},
		{name: "no silent file", args: []string{"--nodes=host-a", "--except-silent=" + hosts + "x"},
			err: "--except-silent: open /"},
		{name: "a silent file of other things", args: []string{"--nodes=host-a", "--except-silent=" + hosts},
			err: "--except-silent: silent-nodes: a node without a name, an address or a time"},
		{name: "every host", args: []string{"--hosts=" + hosts, "--version=v1.34.3"},
			err: "after 1s: 1 of 2 nodes the run touched are not as it should leave them: host-b: NotReady; " +
				"bring the node back or fix it (kubectl uncordon NODE for a node left cordoned), then retry this step"},
		{name: "named", args: []string{"--nodes=host-a", "--version=v1.34.3"}},
		{name: "neither", args: nil, err: "at least one of the flags in the group [nodes hosts] is required"},
		{name: "both", args: []string{"--nodes=host-a", "--hosts=" + hosts},
			err: "if any flags in the group [nodes hosts] are set none of the others can be; [hosts nodes] were all set"},
		{name: "a hosts file that is not", args: []string{"--hosts=" + filepath.Join(t.TempDir(), "none.json")},
			err: "--hosts: open /"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := pod.Command()
			cmd.SetArgs(append([]string{"--kubeconfig=" + kubeconfig, "--wait=1s", "--poll=100ms"}, tc.args...))
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if tc.said != "" {
				if d := cmp.Diff(tc.said, out.String()); d != "" {
					t.Errorf("log (-want +got):\n%s", d)
				}
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("Execute() = %v", err)
			case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err) && err.Error() != tc.err):
				t.Errorf("Execute() = %v\nwant %s", err, tc.err)
			}
		})
	}
}
