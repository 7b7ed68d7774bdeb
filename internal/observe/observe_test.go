package observe_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/file"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/observe"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checknodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/readcertificates"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func pod(id, template string, phase wfv1.NodePhase, at int, outputs map[string]string) wfv1.NodeStatus {
	n := wfv1.NodeStatus{ID: id, Name: "prov-x-1." + template + "(" + id + ")", Type: wfv1.NodeTypePod, TemplateName: template, DisplayName: template + "(0)", Phase: phase,
		StartedAt: metav1.NewTime(t0.Add(time.Duration(at-1) * time.Second)), FinishedAt: metav1.NewTime(t0.Add(time.Duration(at) * time.Second))}
	for k, v := range outputs {
		if n.Outputs == nil {
			n.Outputs = &wfv1.Outputs{}
		}
		n.Outputs.Parameters = append(n.Outputs.Parameters, wfv1.Parameter{Name: k, Value: wfv1.AnyStringPtr(v)})
	}
	return n
}

// retryNode is the node Argo puts over a retried step's attempts.
func retryNode(id string, phase wfv1.NodePhase, attempts ...string) wfv1.NodeStatus {
	return wfv1.NodeStatus{ID: id, Type: wfv1.NodeTypeRetry, DisplayName: "run-kubespray", Phase: phase, Children: attempts}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func workflow(phase wfv1.WorkflowPhase, nodes ...wfv1.NodeStatus) *wfv1.Workflow {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "prov-x-1"}, Status: wfv1.WorkflowStatus{Phase: phase, Progress: "2/6", Nodes: wfv1.Nodes{}}}
	for _, n := range nodes {
		wf.Status.Nodes[n.ID] = n
	}
	return wf
}

func TestObserve(t *testing.T) {
	placed := []bpav1.Node{
		{Label: "worker-1", Role: "worker", BareMetalHost: "m/node-3", MAC: "00:c6:14:04:61:b2"},
		{Label: "master", Role: "master", BareMetalHost: "m/node-1", MAC: "00:c5:16:05:61:b2"},
	}
	withIPs := []bpav1.Node{placed[0], placed[1]}
	withIPs[0].IP, withIPs[1].IP = "10.0.0.3", "10.0.0.1"
	hosts := map[string]string{"hosts": mustJSON(t, placed)}
	hostsIP := map[string]string{"hosts": mustJSON(t, withIPs)}

	failedLeases := pod("b", "resolve-leases", wfv1.NodeFailed, 2, nil)
	failedLeases.Message = "host worker-1 has no lease"
	olderFailure := pod("a", "discover-hosts", wfv1.NodeFailed, 1, nil)
	olderFailure.Message = "host not provisioned yet"
	plugin := pod("p", "", wfv1.NodeError, 3, nil)
	plugin.TemplateRef = &wfv1.TemplateRef{Name: "bpa-plugin-multus", Template: "install"}
	plugin.Message = "kubectl apply: connection refused"

	failedKubespray := pod("k1", "run-kubespray", wfv1.NodeFailed, 4, nil)
	failedKubespray.Message = "exit status 2"

	cases := []struct {
		name, reason string
		wf           *wfv1.Workflow
		want         observe.Observation
	}{{
		name:   "not picked up",
		reason: "a Workflow Argo has not seen has no phase: Pending",
		wf:     workflow(""),
		want:   observe.Observation{Name: "prov-x-1", Phase: bpav1.PhasePending, Progress: "2/6"},
	}, {
		name:   "running with discover-hosts done",
		reason: "hosts come from discover-hosts until resolve-leases has run, sorted by label",
		wf:     workflow(wfv1.WorkflowRunning, pod("a", "discover-hosts", wfv1.NodeSucceeded, 1, hosts)),
		want: observe.Observation{Name: "prov-x-1", Phase: bpav1.PhaseRunning, Progress: "2/6", Hosts: []bpav1.Node{
			{Label: "master", Role: "master", BareMetalHost: "m/node-1", MAC: "00:c5:16:05:61:b2"},
			{Label: "worker-1", Role: "worker", BareMetalHost: "m/node-3", MAC: "00:c6:14:04:61:b2"},
		}},
	}, {
		name:   "resolve-leases wins",
		reason: "resolve-leases' output carries the IPs",
		wf: workflow(wfv1.WorkflowSucceeded, pod("a", "discover-hosts", wfv1.NodeSucceeded, 1, hosts),
			pod("b", "resolve-leases", wfv1.NodeSucceeded, 2, hostsIP), pod("c", "fetch-kubeconfig", wfv1.NodeSucceeded, 3, nil)),
		want: observe.Observation{Name: "prov-x-1", Phase: bpav1.PhaseSucceeded, Progress: "2/6", KubeconfigWritten: true, Hosts: []bpav1.Node{
			{Label: "master", Role: "master", BareMetalHost: "m/node-1", MAC: "00:c5:16:05:61:b2", IP: "10.0.0.1"},
			{Label: "worker-1", Role: "worker", BareMetalHost: "m/node-3", MAC: "00:c6:14:04:61:b2", IP: "10.0.0.3"},
		}},
	}, {
		name:   "failed: the newest failed step",
		reason: "an earlier retried failure is not the cause; the last one is",
		wf:     workflow(wfv1.WorkflowFailed, olderFailure, failedLeases),
		want:   observe.Observation{Name: "prov-x-1", Phase: bpav1.PhaseFailed, Progress: "2/6", Message: "step resolve-leases failed: host worker-1 has no lease"},
	}, {
		name:   "error in a plugin",
		reason: "a templateRef step is named by its WorkflowTemplate",
		wf:     workflow(wfv1.WorkflowError, plugin),
		want:   observe.Observation{Name: "prov-x-1", Phase: bpav1.PhaseError, Progress: "2/6", Message: "step bpa-plugin-multus failed: kubectl apply: connection refused"},
	}, {
		name:   "running: a failed attempt being retried",
		reason: "the newest failed attempt under a retry node that has not finished is said while the Workflow runs",
		wf:     workflow(wfv1.WorkflowRunning, retryNode("r", wfv1.NodeRunning, "k1", "k2"), failedKubespray, pod("k2", "run-kubespray", wfv1.NodeRunning, 5, nil)),
		want: observe.Observation{Name: "prov-x-1", Phase: bpav1.PhaseRunning, Progress: "2/6",
			Message:   "step run-kubespray failed and is being retried: exit status 2",
			Kubespray: &observe.RunningKubespray{Step: "run-kubespray", Pod: "prov-x-1-run-kubespray-124249869"}},
	}, {
		name:   "running: the retry succeeded",
		reason: "a failed attempt whose retry succeeded is history, not news",
		wf:     workflow(wfv1.WorkflowRunning, retryNode("r", wfv1.NodeSucceeded, "k1", "k2"), failedKubespray, pod("k2", "run-kubespray", wfv1.NodeSucceeded, 5, nil)),
		want:   observe.Observation{Name: "prov-x-1", Phase: bpav1.PhaseRunning, Progress: "2/6"},
	}, {
		name:   "offloaded",
		reason: "phase and progress are still mirrored when the nodes are in Argo's database",
		wf: func() *wfv1.Workflow {
			wf := workflow(wfv1.WorkflowRunning)
			wf.Status.Nodes = nil
			wf.Status.OffloadNodeStatusVersion = "fnv:123"
			return wf
		}(),
		want: observe.Observation{Name: "prov-x-1", Phase: bpav1.PhaseRunning, Progress: "2/6",
			NodesUnavailable: "the Workflow's node status is offloaded to Argo's database; hosts and reports are not mirrored"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := observe.Of(tc.wf)
			got.StartedAt, got.FinishedAt = nil, nil
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, d)
			}
		})
	}
}

func TestObserveCompressedNodes(t *testing.T) {
	placed := []bpav1.Node{{Label: "master", Role: "master", BareMetalHost: "m/node-1", MAC: "00:c5:16:05:61:b2"}}
	nodes := wfv1.Nodes{"a": pod("a", "discover-hosts", wfv1.NodeSucceeded, 1, map[string]string{"hosts": mustJSON(t, placed)})}
	wf := workflow(wfv1.WorkflowRunning)
	wf.Status.Nodes = nil
	// Compressed as Argo's own workflow-controller compresses large Workflows.
	wf.Status.CompressedNodes = file.CompressEncodeString(mustJSON(t, nodes))
	got := observe.Of(wf)
	if len(got.Hosts) != 1 || got.Hosts[0].BareMetalHost != "m/node-1" || got.NodesUnavailable != "" {
		t.Errorf("hosts from compressed nodes = %+v (%s)", got.Hosts, got.NodesUnavailable)
	}

	wf.Status.CompressedNodes = "not base64 at all!"
	got = observe.Of(wf)
	if got.Phase != bpav1.PhaseRunning || !strings.Contains(got.NodesUnavailable, "compressed node status cannot be read") {
		t.Errorf("undecodable nodes: phase %s, %q; want Running and a reason", got.Phase, got.NodesUnavailable)
	}
}

func TestObserveReports(t *testing.T) {
	report := func(node string, changed ...string) map[string]string {
		return map[string]string{"report": mustJSON(t, installsoftware.Report{Node: node, Role: "worker", Changed: changed})}
	}
	wf := workflow(wfv1.WorkflowSucceeded,
		pod("w1-try0", "install-software", wfv1.NodeFailed, 1, report("worker-1", "first")),
		pod("w1-try1", "install-software", wfv1.NodeSucceeded, 2, report("worker-1", "second")),
		pod("w0", "install-software", wfv1.NodeSucceeded, 1, report("worker-0", "curl=1")),
		pod("bad", "install-software", wfv1.NodeSucceeded, 1, map[string]string{"report": "{not json"}),
	)
	got := observe.Of(wf).Reports
	want := []installsoftware.Report{
		{Node: "worker-0", Role: "worker", Changed: []string{"curl=1"}},
		{Node: "worker-1", Role: "worker", Changed: []string{"second"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the newest attempt per node, sorted, unreadable ones left out (-want +got):\n%s", d)
	}
}

func TestObserveTruncatesLongMessages(t *testing.T) {
	n := pod("a", "run-kubespray", wfv1.NodeFailed, 1, nil)
	n.Message = strings.Repeat("é", observe.MaxMessageLength)
	got := observe.Of(workflow(wfv1.WorkflowFailed, n)).Message
	if len(got) > observe.MaxMessageLength || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "step run-kubespray failed: é") {
		t.Errorf("message of %d bytes: %.60q…", len(got), got)
	}
}

func TestNewest(t *testing.T) {
	at := func(name string, sec int, resubmitted bool) wfv1.Workflow {
		wf := wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(sec) * time.Second)), Labels: map[string]string{}}}
		if resubmitted {
			wf.Labels[bpav1.ResubmittedFromLabel] = "x"
		}
		return wf
	}
	cases := []struct {
		name string
		wfs  []wfv1.Workflow
		want string
	}{
		{"none", nil, ""},
		{"the later creation", []wfv1.Workflow{at("b", 2, false), at("a", 1, false)}, "b"},
		{"resubmitted in the same second", []wfv1.Workflow{at("z", 1, false), at("a", 1, true)}, "a"},
		{"then by name", []wfv1.Workflow{at("a", 1, true), at("b", 1, true)}, "b"},
	}
	for _, tc := range cases {
		got := observe.Newest(tc.wfs)
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != tc.want {
			t.Errorf("%s: Newest = %q, want %q", tc.name, name, tc.want)
		}
	}
}

// TestObserveUpgrade: an upgrade's waves as its Workflow runs them: the control plane's
// running, then upgraded but its nodes not yet checked, then done with the first wave of
// workers waiting for approval, then that wave failed (the failing step names its limit), or
// its nodes' check failed; a Workflow that is no upgrade has none.
func TestObserveUpgrade(t *testing.T) {
	p := testutil.Provisioning(t, "provisioning-cluster-abc.yaml")
	opts := compile.DefaultOptions(p.Spec.KUDPlugins)
	opts.Kubespray = runkubespray.Plan{Mode: runkubespray.ModeUpgrade, KubernetesVersion: "1.34.3", Approval: true, Waves: [][]string{{"worker-1"}, {"worker-2"}}}
	wf, err := compile.Provisioning(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	task := func(name string, typ wfv1.NodeType, phase wfv1.NodePhase) wfv1.NodeStatus {
		return wfv1.NodeStatus{ID: name, DisplayName: name, Type: typ, Phase: phase}
	}
	wave1 := pod("w1", runkubespray.Name, wfv1.NodeFailed, 3, nil)
	wave1.DisplayName, wave1.Message = runkubespray.WaveTask(1)+"(0)", "exit code 2"
	wave1.Inputs = &wfv1.Inputs{Parameters: []wfv1.Parameter{{Name: runkubespray.LimitParam, Value: wfv1.AnyStringPtr("worker-1")}}}
	check1 := pod("c1", checknodes.Name, wfv1.NodeFailed, 1, nil)
	check1.DisplayName, check1.Message = checknodes.Task(runkubespray.WaveTask(1))+"(0)", "after 5m0s: 1 of 1 nodes the run touched are not as it should leave them: worker-1: cordoned"
	for _, tc := range []struct {
		name  string
		nodes []wfv1.NodeStatus
		phase wfv1.WorkflowPhase
		want  bpav1.UpgradeStatus
		msg   string
	}{
		{"the control plane upgrades", []wfv1.NodeStatus{task(runkubespray.ControlPlaneTask, wfv1.NodeTypeRetry, wfv1.NodeRunning)}, wfv1.WorkflowRunning,
			bpav1.UpgradeStatus{KubernetesVersion: "1.34.3", Waves: 2, Running: runkubespray.ControlPlaneTask, Nodes: []string{runkubespray.ControlPlaneLimit}}, ""},
		{"the control plane's nodes are checked", []wfv1.NodeStatus{
			task(runkubespray.ControlPlaneTask, wfv1.NodeTypeRetry, wfv1.NodeSucceeded), task(checknodes.Task(runkubespray.ControlPlaneTask), wfv1.NodeTypeRetry, wfv1.NodeRunning),
		}, wfv1.WorkflowRunning,
			bpav1.UpgradeStatus{KubernetesVersion: "1.34.3", Waves: 2, Running: runkubespray.ControlPlaneTask, Nodes: []string{runkubespray.ControlPlaneLimit}}, ""},
		{"the control plane upgraded, its check not started", []wfv1.NodeStatus{task(runkubespray.ControlPlaneTask, wfv1.NodeTypeRetry, wfv1.NodeSucceeded)}, wfv1.WorkflowRunning,
			bpav1.UpgradeStatus{KubernetesVersion: "1.34.3", Waves: 2, Running: runkubespray.ControlPlaneTask, Nodes: []string{runkubespray.ControlPlaneLimit}}, ""},
		{"the first wave waits for approval", []wfv1.NodeStatus{
			task(runkubespray.ControlPlaneTask, wfv1.NodeTypeRetry, wfv1.NodeSucceeded), task(checknodes.Task(runkubespray.ControlPlaneTask), wfv1.NodeTypeRetry, wfv1.NodeSucceeded),
			task(runkubespray.ApprovalTask(1), wfv1.NodeTypeSuspend, wfv1.NodeRunning),
		}, wfv1.WorkflowRunning, bpav1.UpgradeStatus{KubernetesVersion: "1.34.3", Waves: 2, Upgraded: []string{runkubespray.ControlPlaneTask},
			Waiting: runkubespray.WaveTask(1), Nodes: []string{"worker-1"}}, ""},
		{"the first wave failed", []wfv1.NodeStatus{
			task(runkubespray.ControlPlaneTask, wfv1.NodeTypeRetry, wfv1.NodeSucceeded), task(checknodes.Task(runkubespray.ControlPlaneTask), wfv1.NodeTypeRetry, wfv1.NodeSucceeded),
			task(runkubespray.ApprovalTask(1), wfv1.NodeTypeSuspend, wfv1.NodeSucceeded),
			task(runkubespray.WaveTask(1), wfv1.NodeTypeRetry, wfv1.NodeFailed), wave1,
		}, wfv1.WorkflowFailed, bpav1.UpgradeStatus{KubernetesVersion: "1.34.3", Waves: 2, Upgraded: []string{runkubespray.ControlPlaneTask},
			Failed: runkubespray.WaveTask(1), Nodes: []string{"worker-1"}}, "step run-kubespray on worker-1 failed: exit code 2"},
		{"the first wave's nodes are not as it should leave them", []wfv1.NodeStatus{
			task(runkubespray.ControlPlaneTask, wfv1.NodeTypeRetry, wfv1.NodeSucceeded), task(checknodes.Task(runkubespray.ControlPlaneTask), wfv1.NodeTypeRetry, wfv1.NodeSucceeded),
			task(runkubespray.ApprovalTask(1), wfv1.NodeTypeSuspend, wfv1.NodeSucceeded),
			task(runkubespray.WaveTask(1), wfv1.NodeTypeRetry, wfv1.NodeSucceeded), task(checknodes.Task(runkubespray.WaveTask(1)), wfv1.NodeTypeRetry, wfv1.NodeFailed), check1,
		}, wfv1.WorkflowFailed, bpav1.UpgradeStatus{KubernetesVersion: "1.34.3", Waves: 2, Upgraded: []string{runkubespray.ControlPlaneTask},
			Failed: runkubespray.WaveTask(1), Nodes: []string{"worker-1"}}, "step check-nodes failed: after 5m0s: 1 of 1 nodes the run touched are not as it should leave them: worker-1: cordoned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := wf.DeepCopy()
			w.Status.Phase = tc.phase
			w.Status.Nodes = wfv1.Nodes{}
			for _, n := range tc.nodes {
				w.Status.Nodes[n.ID] = n
			}
			o := observe.Of(w)
			if o.Upgrade == nil {
				t.Fatal("no upgrade observed")
			}
			if d := cmp.Diff(tc.want, *o.Upgrade); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if tc.msg != "" && o.Message != tc.msg {
				t.Errorf("message %q, want %q", o.Message, tc.msg)
			}
		})
	}
	opts.Kubespray = runkubespray.Plan{}
	if plain, err := compile.Provisioning(p, opts); err != nil || observe.Of(plain).Upgrade != nil {
		t.Errorf("a cluster.yml run: %v, upgrade %+v", err, observe.Of(plain).Upgrade)
	}
}

// TestObserveNodesReport: report-nodes' output, newest successful attempt; one that does not
// parse is unreadable; none before it has run.
func TestObserveNodesReport(t *testing.T) {
	wf := &wfv1.Workflow{Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowFailed, Nodes: wfv1.Nodes{}}}
	if o := observe.Of(wf); o.NodesReport != nil {
		t.Errorf("before report-nodes ran: %+v", o.NodesReport)
	}
	wf.Status.Nodes["old"] = pod("old", reportnodes.Name, wfv1.NodeSucceeded, 1, map[string]string{reportnodes.ReportParam: `{"unreadable":"old"}`})
	wf.Status.Nodes["new"] = pod("new", reportnodes.Name, wfv1.NodeSucceeded, 2, map[string]string{reportnodes.ReportParam: `{"kubelets":[{"version":"v1.34.3","nodes":["master"]}]}`})
	if o := observe.Of(wf); o.NodesReport == nil || o.NodesReport.Summary() != "v1.34.3 ×1" {
		t.Errorf("the newest report: %+v", o.NodesReport)
	}
	wf.Status.Nodes["bad"] = pod("bad", reportnodes.Name, wfv1.NodeSucceeded, 3, map[string]string{reportnodes.ReportParam: `{"kubelets":[{"version":"v1","nodes":["a;b"]}]}`})
	if o := observe.Of(wf); o.NodesReport == nil || !strings.Contains(o.NodesReport.Unreadable, `node "a;b"`) {
		t.Errorf("a report that does not parse: %+v", o.NodesReport)
	}
}

// TestObserveCertificates: read-certificates' output, newest successful attempt, as the status
// shows it; none before it has run, none from a report that does not parse or read nothing
// (the status keeps what it knew).
func TestObserveCertificates(t *testing.T) {
	wf := &wfv1.Workflow{Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowSucceeded, Nodes: wfv1.Nodes{}}}
	if o := observe.Of(wf); o.Certificates != nil {
		t.Errorf("before read-certificates ran: %+v", o.Certificates)
	}
	wf.Status.Nodes["old"] = pod("old", readcertificates.Name, wfv1.NodeSucceeded, 1, map[string]string{readcertificates.ReportParam: `{"masters":[{"node":"master","certificates":[{"name":"apiserver","expires":"2026-12-01T00:00:00Z"}]}]}`})
	wf.Status.Nodes["new"] = pod("new", readcertificates.Name, wfv1.NodeSucceeded, 2, map[string]string{readcertificates.ReportParam: `{"masters":[{"node":"master","certificates":[{"name":"apiserver","expires":"2027-12-01T00:00:00Z"},{"name":"ca","expires":"2035-12-01T00:00:00Z","authority":true}]}]}`})
	o := observe.Of(wf)
	if o.Certificates == nil || o.Certificates.NextToExpire != "apiserver on master" || o.Certificates.NextExpiry.Year() != 2027 {
		t.Errorf("the newest report: %+v", o.Certificates)
	}
	for i, bad := range []string{`{"masters":[{"node":"a;b"}]}`, `{"masters":[{"node":"master","unreadable":"did not answer"}]}`} {
		wf.Status.Nodes["bad"] = pod("bad", readcertificates.Name, wfv1.NodeSucceeded, 3+i, map[string]string{readcertificates.ReportParam: bad})
		if o := observe.Of(wf); o.Certificates != nil {
			t.Errorf("%s: %+v, want nil", bad, o.Certificates)
		}
	}
}

// TestObserveNotAnswering: the nodes pin-host-keys' newest attempt that succeeded went on
// without; none before it has, and none said by an output that does not parse.
func TestObserveNotAnswering(t *testing.T) {
	wf := &wfv1.Workflow{Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Nodes: wfv1.Nodes{}}}
	if o := observe.Of(wf); o.NotAnswering != nil {
		t.Errorf("before pin-host-keys ran: %+v", o.NotAnswering)
	}
	at := metav1.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	wf.Status.Nodes["failed"] = pod("failed", pinhostkeys.Name, wfv1.NodeFailed, 1, nil)
	wf.Status.Nodes["old"] = pod("old", pinhostkeys.Name, wfv1.NodeSucceeded, 2, map[string]string{pinhostkeys.SilentParam: `[]`})
	wf.Status.Nodes["new"] = pod("new", pinhostkeys.Name, wfv1.NodeSucceeded, 3, map[string]string{
		pinhostkeys.SilentParam: `[{"node":"worker-1","address":"10.0.0.2:22","triedAt":"2026-12-06T03:00:00Z"}]`})
	if diff := cmp.Diff([]bpav1.SilentNode{{Node: "worker-1", Address: "10.0.0.2:22", TriedAt: at}}, observe.Of(wf).NotAnswering); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	wf.Status.Nodes["bad"] = pod("bad", pinhostkeys.Name, wfv1.NodeSucceeded, 4, map[string]string{pinhostkeys.SilentParam: `[{"node":"worker-1"}]`})
	if got := observe.Of(wf).NotAnswering; got == nil || len(got) != 0 {
		t.Errorf("an output that does not parse: %+v, want none", got)
	}
}
