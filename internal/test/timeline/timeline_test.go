package timeline

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOf: a run of discover-hosts and resolve-leases beside the site mirror's check, a
// run-kubespray that failed once and was retried after its backoff, fetch-kubeconfig, and the
// exit handler; one pod still running.
func TestOf(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	wf := &wfv1.Workflow{
		Spec: wfv1.WorkflowSpec{Entrypoint: "provision", Templates: []wfv1.Template{{Name: "provision", DAG: &wfv1.DAGTemplate{Tasks: []wfv1.DAGTask{
			{Name: "discover-hosts"},
			{Name: "resolve-leases", Depends: "discover-hosts.Succeeded"},
			{Name: "check-site-mirror", Depends: "discover-hosts.Succeeded"},
			{Name: "run-kubespray", Depends: "resolve-leases.Succeeded && check-site-mirror.Succeeded"},
			{Name: "fetch-kubeconfig", Dependencies: []string{"run-kubespray"}},
			{Name: "install-plugin", Depends: "fetch-kubeconfig.Succeeded"},
		}}}}},
		Status: wfv1.WorkflowStatus{StartedAt: at(0), Nodes: wfv1.Nodes{}},
	}
	for _, n := range []wfv1.NodeStatus{
		{ID: "wf", DisplayName: "wf", Type: wfv1.NodeTypeDAG, StartedAt: at(0), FinishedAt: at(430)},
		{ID: "d", DisplayName: "discover-hosts", Type: wfv1.NodeTypePod, StartedAt: at(1), FinishedAt: at(10)},
		{ID: "r", DisplayName: "resolve-leases", Type: wfv1.NodeTypePod, StartedAt: at(13), FinishedAt: at(20)},
		{ID: "m", DisplayName: "check-site-mirror", Type: wfv1.NodeTypePod, StartedAt: at(12), FinishedAt: at(30)},
		{ID: "k", DisplayName: "run-kubespray", Type: wfv1.NodeTypeRetry, StartedAt: at(33), FinishedAt: at(400)},
		{ID: "k0", DisplayName: "run-kubespray(0)", Type: wfv1.NodeTypePod, StartedAt: at(33), FinishedAt: at(50)},
		{ID: "k1", DisplayName: "run-kubespray(1)", Type: wfv1.NodeTypePod, StartedAt: at(111), FinishedAt: at(400)},
		{ID: "f", DisplayName: "fetch-kubeconfig", Type: wfv1.NodeTypePod, StartedAt: at(404), FinishedAt: at(410)},
		{ID: "p", DisplayName: "install-plugin", Type: wfv1.NodeTypePod, StartedAt: at(412)},
		{ID: "e", DisplayName: "report-nodes", Type: wfv1.NodeTypePod, StartedAt: at(414), FinishedAt: at(420)},
	} {
		wf.Status.Nodes[n.ID] = n
	}
	s := func(n int) time.Duration { return time.Duration(n) * time.Second }
	want := Timeline{
		Rows: []Row{
			{Step: "discover-hosts", Start: s(6), Waited: s(1), Ran: s(9)},
			{Step: "check-site-mirror", Start: s(17), Waited: s(2), Ran: s(18)},
			{Step: "resolve-leases", Start: s(18), Waited: s(3), Ran: s(7)},
			{Step: "run-kubespray(0)", Start: s(38), Waited: s(3), Ran: s(17)},
			{Step: "run-kubespray(1)", Start: s(116), Waited: s(61), Ran: s(289)},
			{Step: "fetch-kubeconfig", Start: s(409), Waited: s(4), Ran: s(6)},
			{Step: "report-nodes", Start: s(419), Waited: s(4), Ran: s(6)},
		},
		Created: s(5),
		Waited:  s(1 + 2 + 3 + 61 + 4 + 4),
		Ran:     s(9 + 18 + 17 + 289 + 6 + 6),
		Path:    []string{"discover-hosts", "check-site-mirror", "run-kubespray(0)", "run-kubespray(1)", "fetch-kubeconfig", "report-nodes"},
	}
	got := Of(wf, t0.Add(-5*time.Second))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if d := cmp.Diff(Timeline{Created: s(5)}, Of(&wfv1.Workflow{Status: wfv1.WorkflowStatus{StartedAt: at(0)}}, t0.Add(-5*time.Second))); d != "" {
		t.Errorf("no pods (-want +got):\n%s", d)
	}
}

func TestString(t *testing.T) {
	tl := Timeline{
		Rows:    []Row{{Step: "run-kubespray", Start: 40 * time.Second, Waited: 3 * time.Second, Ran: 289 * time.Second}},
		Created: 5 * time.Second, Waited: 3 * time.Second, Ran: 289 * time.Second, Path: []string{"run-kubespray"},
	}
	want := "pod                                 start s waited s    ran s\n" +
		"run-kubespray                            40        3      289\n" +
		"apply → Workflow started 5 s; on the critical path (run-kubespray): waited 3 s, ran 289 s"
	if d := cmp.Diff(want, tl.String()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
