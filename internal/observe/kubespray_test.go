package observe_test

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/observe"
)

// TestPodName: the pod a node runs in is named as Argo names it (workflow/util/pod_name.go),
// for both of Argo's formats and a Workflow name long enough to be cut. The hashes are FNV-1a
// of the node's name, worked out apart from Go's hash/fnv; the end-to-end suite reads the logs
// of the pods its real Argo names.
func TestPodName(t *testing.T) {
	long := strings.Repeat("p", 250)
	for _, tc := range []struct {
		wf, format string
		node       wfv1.NodeStatus
		want       string
	}{
		{wf: "prov-abc-1", node: wfv1.NodeStatus{ID: "prov-abc-1-123", Name: "prov-abc-1.run-kubespray(0)", TemplateName: "run-kubespray"},
			want: "prov-abc-1-run-kubespray-1681399692"},
		{wf: "prov-abc-1", format: "v2", node: wfv1.NodeStatus{ID: "prov-abc-1-9", Name: "prov-abc-1.upgrade-wave-2(1)", TemplateName: "run-kubespray"},
			want: "prov-abc-1-run-kubespray-291102290"},
		{wf: "prov-abc-1", format: "v1", node: wfv1.NodeStatus{ID: "prov-abc-1-9", Name: "prov-abc-1.upgrade-wave-2(1)", TemplateName: "run-kubespray"},
			want: "prov-abc-1-9"},
		{wf: "prov-abc-1", node: wfv1.NodeStatus{ID: "prov-abc-1", Name: "prov-abc-1"}, want: "prov-abc-1"},
		{wf: long, node: wfv1.NodeStatus{ID: long + "-1", Name: long + ".run-kubespray(0)", TemplateName: "run-kubespray"},
			want: (long + "-run-kubespray")[:242] + "-3566866696"},
	} {
		wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: tc.wf}}
		if tc.format != "" {
			wf.Annotations = map[string]string{"workflows.argoproj.io/pod-name-format": tc.format}
		}
		if got := observe.PodName(wf, &tc.node); got != tc.want {
			t.Errorf("PodName(%.20s, %.40s, format %q) = %q, want %q", tc.wf, tc.node.Name, tc.format, got, tc.want)
		}
	}
}

// TestObserveRunningKubespray: the run-kubespray attempt that runs now is the one read, named
// by its DAG task (a wave of an upgrade), whether Argo put it under a retry node or not.
func TestObserveRunningKubespray(t *testing.T) {
	wave := pod("w2", "run-kubespray", wfv1.NodeRunning, 9, nil)
	wave.DisplayName = "upgrade-wave-2(1)"
	retry := retryNode("r2", wfv1.NodeRunning, "w1", "w2")
	retry.DisplayName = "upgrade-wave-2"
	for _, tc := range []struct {
		name string
		wf   *wfv1.Workflow
		want *observe.RunningKubespray
	}{
		{name: "none has started", wf: workflow(wfv1.WorkflowRunning, pod("a", "discover-hosts", wfv1.NodeRunning, 1, nil))},
		{name: "it ended", wf: workflow(wfv1.WorkflowRunning, pod("k", "run-kubespray", wfv1.NodeSucceeded, 4, nil), pod("f", "fetch-kubeconfig", wfv1.NodeRunning, 5, nil))},
		{name: "a second attempt under its retry node", wf: workflow(wfv1.WorkflowRunning, retry, pod("w1", "run-kubespray", wfv1.NodeFailed, 8, nil), wave),
			want: &observe.RunningKubespray{Step: "upgrade-wave-2", Pod: "prov-x-1-run-kubespray-1750375137"}},
		{name: "without a retry node", wf: workflow(wfv1.WorkflowRunning, wave),
			want: &observe.RunningKubespray{Step: "upgrade-wave-2", Pod: "prov-x-1-run-kubespray-1750375137"}},
		{name: "a Workflow that is not running", wf: workflow(wfv1.WorkflowFailed, wave)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, observe.Of(tc.wf).Kubespray); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
