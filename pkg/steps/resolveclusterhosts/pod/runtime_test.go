package pod_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveclusterhosts/pod"
)

func TestResolveClusterHosts(t *testing.T) {
	ns := env.Namespace(t)
	ref := env.Software(t, ns, bpav1.SoftwareSpec{MasterSoftware: []bpav1.SoftwarePackage{{Name: "curl"}}})
	if _, err := pod.Run(ctx(), env.Client, ref, nil); err == nil || !steps.IsRetryable(err) {
		t.Fatalf("%v; want a retryable error while the cluster's hosts are unknown", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-abc-hosts"}, Data: map[string]string{
		"worker-1": `{"ip":"192.0.2.13","role":"worker"}`,
		"master":   `{"ip":"192.0.2.11","role":"master"}`,
	}}
	if err := env.Client.Create(ctx(), cm); err != nil {
		t.Fatal(err)
	}
	nodes, err := pod.Run(ctx(), env.Client, ref, nil)
	want := []bpav1.Node{{Label: "master", Role: "master", IP: "192.0.2.11"}, {Label: "worker-1", Role: "worker", IP: "192.0.2.13"}}
	if err != nil || !cmp.Equal(want, nodes) {
		t.Errorf("nodes = %+v (%v), want %+v", nodes, err, want)
	}
	if nodes, err := pod.Run(ctx(), env.Client, ref, []string{"worker-1"}); err != nil || len(nodes) != 1 || nodes[0].Label != "worker-1" {
		t.Errorf("--only worker-1: %+v (%v)", nodes, err)
	}
	if _, err := pod.Run(ctx(), env.Client, ref, []string{"worker-9"}); err == nil || !strings.Contains(err.Error(), `"worker-9" is not in cluster cluster-abc`) {
		t.Errorf("--only worker-9: %v", err)
	}
}
