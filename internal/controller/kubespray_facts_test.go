package controller_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// TestKubesprayFactsKept: the facts a run's kubespray steps hand over are kept in the
// cluster's ConfigMap, owned by the Provisioning, each node's newest; an output that cannot be
// read keeps nothing of it, and facts no newer than those kept change nothing.
func TestKubesprayFactsKept(t *testing.T) {
	site := newABCSiteWith(t, func(*bpav1.Provisioning) {})
	p := site.p
	wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
	const t1, t2 = "2026-12-01T10:00:00Z", "2026-12-02T10:00:00Z"
	kept := func(entries map[string]runkubespray.KeptEntry) map[string]string {
		raw, err := json.Marshal(entries)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{runkubespray.FactsParam: string(raw)}
	}
	now := time.Now()
	running := func(nodes ...wfv1.NodeStatus) {
		setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
			st.Phase, st.StartedAt = wfv1.WorkflowRunning, metav1.NewTime(now.Add(-time.Minute))
			st.Nodes = wfv1.Nodes{}
			for _, n := range nodes {
				st.Nodes[n.ID] = n
			}
		})
	}
	create := node(wf.Name, runkubespray.Name, wfv1.NodeSucceeded, now.Add(-3*time.Second), kept(map[string]runkubespray.KeptEntry{
		"master": {GatheredAt: t1, Data: []byte("master at t1")}, "worker-1": {GatheredAt: t1, Data: []byte("worker-1 at t1")},
	}))
	bad := node(wf.Name, runkubespray.Name, wfv1.NodeFailed, now.Add(-4*time.Second), map[string]string{
		runkubespray.FactsParam: `{"../etc":{"gatheredAt":"` + t2 + `","data":"AA=="}}`,
	})
	running(bad, create)

	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: p.Namespace, Name: "cluster-abc" + bpav1.KubesprayFactsConfigMapSuffix}
	want := map[string][]byte{"master": []byte("master at t1"), "worker-1": []byte("worker-1 at t1")}
	waitKept := func(what string) {
		eventually(t, what, func() error {
			if err := env.Client.Get(ctx(), key, cm); err != nil {
				return err
			}
			if diff := cmp.Diff(want, cm.BinaryData); diff != "" {
				return fmt.Errorf("kept (-want +got):\n%s", diff)
			}
			return nil
		})
	}
	waitKept("the facts kept")
	if diff := cmp.Diff(map[string]string{runkubespray.FactsIndexKey: `{"master":"` + t1 + `","worker-1":"` + t1 + `"}`}, cm.Data); diff != "" {
		t.Errorf("the index (-want +got):\n%s", diff)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != p.UID || cm.Labels[bpav1.ClusterLabel] != "cluster-abc" {
		t.Errorf("kept with owners %v and labels %v, want the Provisioning's and its cluster's", cm.OwnerReferences, cm.Labels)
	}

	// The same facts again, and older ones, change nothing (Merge decides no write).
	written := cm.ResourceVersion
	stale := node(wf.Name, runkubespray.ControlPlaneTask, wfv1.NodeSucceeded, now.Add(-2*time.Second), kept(map[string]runkubespray.KeptEntry{
		"master": {GatheredAt: "2026-11-30T10:00:00Z", Data: []byte("master before")},
	}))
	running(bad, create, stale)
	consistently(t, "the kept facts unwritten", 3*time.Second, func() error {
		if err := env.Client.Get(ctx(), key, cm); err != nil {
			return err
		}
		if cm.ResourceVersion != written {
			return fmt.Errorf("written again: %v", cm.BinaryData)
		}
		return nil
	})

	// A wave's newer facts of a node replace those kept.
	wave := node(wf.Name, runkubespray.WaveTask(1), wfv1.NodeSucceeded, now.Add(-time.Second), kept(map[string]runkubespray.KeptEntry{
		"worker-1": {GatheredAt: t2, Data: []byte("worker-1 at t2")},
	}))
	running(bad, create, stale, wave)
	want["worker-1"] = []byte("worker-1 at t2")
	waitKept("the newer facts kept")
}
