package pod_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checkleavingnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checkleavingnodes/pod"
)

// TestALeavingNodeThatDoesNotAnswerIsRemovedUngracefully: with every leaving node's real sshd
// answering, remove-node.yml drains and resets (kubespray's defaults, written out); with one
// that does not answer (nothing listens at its address), the run removes without a reset, the
// log says which node and when it was tried, and a Warning Event on the Provisioning says
// why. A leaving node without an address in the hosts file is an error, not a guess.
func TestALeavingNodeThatDoesNotAnswerIsRemovedUngracefully(t *testing.T) {
	sshd := testsshd.Start(t)
	ns := env.Namespace(t)
	_, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	hosts := []bpav1.Node{
		{Label: "master", Role: bpav1.RoleMaster, IP: "127.0.0.1"},
		{Label: "worker-1", Role: bpav1.RoleWorker, IP: "127.0.0.1"},
		{Label: "worker-2", Role: bpav1.RoleWorker, IP: "127.0.0.2"}, // nothing listens there
	}
	for _, tc := range []struct {
		name      string
		leaving   []string
		want      checkleavingnodes.RemovalVars
		wantLog   []string
		wantEvent bool
	}{
		{"all answer", []string{"worker-1"}, checkleavingnodes.RemovalVars{ResetNodes: true},
			[]string{`node "worker-1" (127.0.0.1:`, "every leaving node answers"}, false},
		{"one does not", []string{"worker-1", "worker-2"}, checkleavingnodes.RemovalVars{AllowUngracefulRemoval: true},
			[]string{`node "worker-2": 127.0.0.2:`, "did not answer within 2s (tried at ", "leaving node(s) worker-2 do not answer", "reset_nodes=false"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "removal-vars.json")
			var log strings.Builder
			if err := pod.Run(ctx(), env.Client, ref, hosts, tc.leaving, sshd.Port, 2*time.Second, out, &log); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			// The JSON is what ansible-playbook reads: both of kubespray's names, booleans.
			if got["reset_nodes"] != tc.want.ResetNodes || got["allow_ungraceful_removal"] != tc.want.AllowUngracefulRemoval || len(got) != 2 {
				t.Errorf("removal variables %s, want %+v", raw, tc.want)
			}
			for _, w := range tc.wantLog {
				if !strings.Contains(log.String(), w) {
					t.Errorf("log does not say %q:\n%s", w, log.String())
				}
			}
			if found := ungracefulEvent(t, ns); found != tc.wantEvent {
				t.Errorf("Warning %s Event naming worker-2: %v, want %v", bpav1.EventUngracefulRemoval, found, tc.wantEvent)
			}
		})
	}
	err := pod.Run(ctx(), env.Client, ref, hosts[:2], []string{"worker-2"}, sshd.Port, 2*time.Second, filepath.Join(t.TempDir(), "out"), &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), `leaving node "worker-2" has no address`) {
		t.Errorf("a leaving node missing from the hosts file: %v", err)
	}
}

func ungracefulEvent(t *testing.T, ns string) bool {
	t.Helper()
	var events corev1.EventList
	if err := env.Client.List(ctx(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == bpav1.EventUngracefulRemoval && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "worker-2") && e.InvolvedObject.Kind == "Provisioning" {
			return true
		}
	}
	return false
}
