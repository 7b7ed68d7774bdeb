package checknodes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

func node(name, version string, ready corev1.ConditionStatus, cordoned bool) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	n.Status.NodeInfo.KubeletVersion = version
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: ready}}
	}
	return n
}

func TestProblems(t *testing.T) {
	cluster := []corev1.Node{
		node("master", "v1.34.3", corev1.ConditionTrue, true), // as kubespray #13030 leaves the first master
		node("worker-1", "v1.34.3", corev1.ConditionTrue, false),
		node("worker-2", "v1.33.4", corev1.ConditionTrue, false),
		node("worker-3", "v1.34.3", corev1.ConditionFalse, false),
		node("worker-4", "v1.34.3", corev1.ConditionUnknown, true),
		node("worker-5", "", "", false), // registered, no status yet
		node("other", "v1.20.0", corev1.ConditionFalse, true),
		node("worker-6", "v1.34.3\n; rm -rf /", corev1.ConditionTrue, false), // a version the message must not take as it is
	}
	for _, tc := range []struct {
		name     string
		want     []string
		version  string
		problems []Problem
	}{
		{"all as they should be", []string{"worker-1"}, "v1.34.3", nil},
		{"nodes not touched are not read", []string{"worker-1", "master"}, "", []Problem{{"master", []string{"cordoned"}}}},
		{"cordoned", []string{"master"}, "v1.34.3", []Problem{{"master", []string{"cordoned"}}}},
		{"at the old version", []string{"worker-2"}, "v1.34.3", []Problem{{"worker-2", []string{"v1.33.4 instead of v1.34.3"}}}},
		{"no version asked", []string{"worker-2"}, "", nil},
		{"NotReady", []string{"worker-3"}, "v1.34.3", []Problem{{"worker-3", []string{"NotReady"}}}},
		{"unknown and cordoned", []string{"worker-4"}, "v1.34.3", []Problem{{"worker-4", []string{"NotReady", "cordoned"}}}},
		{"no status yet", []string{"worker-5"}, "v1.34.3", []Problem{{"worker-5", []string{"NotReady", "no version reported instead of v1.34.3"}}}},
		{"a version that is no plain string", []string{"worker-6"}, "v1.34.3", []Problem{{"worker-6", []string{`"v1.34.3\n; rm -rf /" instead of v1.34.3`}}}},
		{"not in the cluster", []string{"worker-9"}, "v1.34.3", []Problem{{"worker-9", []string{"not in the cluster"}}}},
		{"in the plan's order", []string{"worker-9", "worker-1", "master"}, "v1.34.3", []Problem{
			{"worker-9", []string{"not in the cluster"}}, {"master", []string{"cordoned"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.problems, Problems(cluster, tc.want, tc.version)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestFailure(t *testing.T) {
	got := Failure([]Problem{{"master", []string{"cordoned"}}, {"worker-2", []string{"NotReady", "v1.33.4 instead of v1.34.3"}}}, 3).Error()
	want := "2 of 3 nodes the run touched are not as it should leave them: master: cordoned; worker-2: NotReady, v1.33.4 instead of v1.34.3; " +
		"bring the node back or fix it (kubectl uncordon NODE for a node left cordoned), then retry this step"
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		nodes   string
		want    []string
		wantErr string // the start of the error: the validator's own words follow
	}{
		{"master,worker-1", []string{"master", "worker-1"}, ""},
		{"", nil, "--nodes: no node to check"},
		{"master,", nil, `--nodes: node "": `},
		{"a;b", nil, `--nodes: node "a;b": `},
		{"Master", nil, `--nodes: node "Master": `},
	} {
		got, err := ParseNodes(tc.nodes)
		if d := cmp.Diff(tc.want, got); d != "" || (tc.wantErr == "") != (err == nil) || !strings.HasPrefix(errText(err), tc.wantErr) {
			t.Errorf("ParseNodes(%q) = %v, %v; want %v, %q", tc.nodes, got, err, tc.want, tc.wantErr)
		}
	}
	for _, tc := range []struct{ flag, want, wantErr string }{
		{"v1.34.3", "v1.34.3", ""},
		{"", "", ""},
		{"1.34.3", "", `--version "1.34.3": want a kubelet version like v1.34.3`},
		{"v1.34.3 --x", "", `--version "v1.34.3 --x": want a kubelet version like v1.34.3`},
	} {
		got, err := ParseVersion(tc.flag)
		if got != tc.want || errText(err) != tc.wantErr {
			t.Errorf("ParseVersion(%q) = %q, %v; want %q, %q", tc.flag, got, err, tc.want, tc.wantErr)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestWithoutSilent(t *testing.T) {
	silent := func(names ...string) []bpav1.SilentNode {
		var out []bpav1.SilentNode
		for _, n := range names {
			out = append(out, bpav1.SilentNode{Node: n, Address: "10.0.0.1:22"})
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		nodes         []string
		silent        []bpav1.SilentNode
		checked, left []string
		err           string
	}{
		{name: "none silent", nodes: []string{"master", "master-2"}, checked: []string{"master", "master-2"}},
		{name: "one silent, in the nodes' order", nodes: []string{"master", "master-2", "master-3"}, silent: silent("master-2"),
			checked: []string{"master", "master-3"}, left: []string{"master-2"}},
		{name: "a silent worker is no master", nodes: []string{"master", "master-2"}, silent: silent("worker-1", "master-2"),
			checked: []string{"master"}, left: []string{"master-2"}},
		{name: "named twice, left once", nodes: []string{"master", "master-2"}, silent: silent("master-2", "master-2"),
			checked: []string{"master"}, left: []string{"master-2"}},
		{name: "all silent", nodes: []string{"master-2"}, silent: silent("master-2"), left: []string{"master-2"},
			err: "every node to check did not answer when the run began"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checked, left, err := WithoutSilent(tc.nodes, tc.silent)
			var leftNames []string
			for _, n := range left {
				leftNames = append(leftNames, n.Node)
			}
			if d := cmp.Diff(tc.checked, checked); d != "" {
				t.Errorf("checked (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.left, leftNames); d != "" {
				t.Errorf("left out (-want +got):\n%s", d)
			}
			if got := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && got != tc.err) {
				t.Errorf("err %v, want %q", err, tc.err)
			}
		})
	}
}
