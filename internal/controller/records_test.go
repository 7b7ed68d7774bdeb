package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// TestRunsAreRecords: what runs next follows what the Workflows really did, kept in the CR's
// status, whatever Argo does with finished Workflows and however the spec moves meanwhile.
func TestRunsAreRecords(t *testing.T) {
	site := newABCSite(t)
	p, consumer, hosts, at := site.p, site.consumer, site.hosts, site.at
	worker3 := bpav1.Node{Label: "worker-3", Role: "worker", BareMetalHost: "metal3/node-5", MAC: "00:e1:ba:ce:df:bd"}

	wf1 := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
	provisioned(t, wf1, at(abcHosts...))
	waitReady(t, p, 1)

	t.Run("a finished Workflow deleted: recorded, never run again", func(t *testing.T) {
		if err := env.Client.Delete(ctx(), wf1); err != nil {
			t.Fatal(err)
		}
		consistently(t, "no Workflow after the deletion, still Ready", 2*time.Second, func() error {
			if n := len(workflowsOf(t, bpav1.WorkflowKindProvisioning, p)); n != 0 {
				return fmt.Errorf("%d Workflows: kubespray would run again on a live cluster", n)
			}
			cur := getProvisioning(t, p)
			if !strings.Contains(cur.Status.Conditions[0].Message, "deleted since") && cur.Status.LastRun != nil {
				return nil // the deletion not seen yet
			}
			return expectConditions(cur.Status.Conditions, 1, "True/WorkflowSucceeded", "absent", "absent")
		})
	})

	t.Run("the rerun annotation runs the generation again, under a new name", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Annotations = map[string]string{bpav1.RerunAnnotation: "1"} })
		again := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
		if again.Name == wf1.Name || !runsClusterYML(kubesprayArgs(again)) {
			t.Errorf("rerun Workflow %s runs %q; want a new name and cluster.yml", again.Name, kubesprayArgs(again))
		}
		provisioned(t, again, at(abcHosts...))
		waitReady(t, p, 1)
	})

	var wf2 *wfv1.Workflow
	t.Run("a scale run whose node status is offloaded: no claim released", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) {
			cur.Spec.Workers = append(cur.Spec.Workers, bpav1.HostEntry{"worker-3": {MACAddress: worker3.MAC}})
		})
		wf2 = waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 2)
		patchSpec(t, hosts["node-5"], func(h *metal3v1alpha1.BareMetalHost) { h.Spec.ConsumerRef = consumer })
		succeedOffloaded(t, wf2)
		cur := waitReady(t, p, 2)
		if rec := cur.Status.Provisioned; rec == nil || rec.Generation != 2 || len(rec.Workers) != 3 {
			t.Errorf("record %+v, want generation 2 with worker-3", rec)
		}
		consistently(t, "worker-3's host kept", time.Second, func() error {
			if consumerOf(t, hosts["node-5"]) == nil {
				return fmt.Errorf("node-5 released: a live node's host")
			}
			return nil
		})
	})

	t.Run("the spec edited while a run goes on: the run is recorded as it ran", func(t *testing.T) {
		// Generation 3 removes worker-3; while it runs, generation 4 adds a plugin.
		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.Workers = cur.Spec.Workers[:2] })
		wf3 := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 3)
		setWorkflowStatus(t, wf3, func(st *wfv1.WorkflowStatus) { st.Phase = wfv1.WorkflowRunning })
		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.KUDPlugins = []string{"multus"} })
		eventually(t, "generation 4 waiting for generation 3", func() error {
			return expectConditions(getProvisioning(t, p).Status.Conditions, 4, "False/WaitingForWorkflow", "True/WaitingForWorkflow", "absent")
		})
		provisioned(t, wf3, at(append(slices.Clone(abcHosts), worker3)...))
		wf4 := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 4)
		if args := kubesprayArgs(wf4); !runsClusterYML(args) {
			t.Errorf("generation 4 runs %q, want cluster.yml against generation 3's record", args)
		}
		cur := getProvisioning(t, p)
		if rec := cur.Status.Provisioned; rec == nil || rec.Generation != 3 || len(rec.Workers) != 2 {
			t.Errorf("record %+v, want generation 3 without worker-3", rec)
		}
		eventually(t, "worker-3's host released after its removal ran", func() error {
			if ref := consumerOf(t, hosts["node-5"]); ref != nil {
				return fmt.Errorf("node-5 still claimed")
			}
			return nil
		})
		provisioned(t, wf4, at(abcHosts...))
		waitReady(t, p, 4)
	})

	t.Run("a failed run's Workflow deleted: still Stalled, not run again", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.KUDPlugins = nil })
		wf5 := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 5)
		setWorkflowStatus(t, wf5, func(st *wfv1.WorkflowStatus) {
			st.Phase, st.FinishedAt = wfv1.WorkflowFailed, metav1.Now()
			n := node(wf5.Name, "run-kubespray", wfv1.NodeFailed, time.Now(), nil)
			n.Message = "unreachable"
			st.Nodes = wfv1.Nodes{n.ID: n}
		})
		eventually(t, "Stalled", func() error {
			return expectConditions(getProvisioning(t, p).Status.Conditions, 5, "False/WorkflowFailed", "absent", "True/WorkflowFailed")
		})
		if err := env.Client.Delete(ctx(), wf5); err != nil {
			t.Fatal(err)
		}
		eventually(t, "Stalled on the record", func() error {
			cur := getProvisioning(t, p)
			if !strings.Contains(cur.Status.Message, "unreachable") {
				return fmt.Errorf("message %q", cur.Status.Message)
			}
			return expectConditions(cur.Status.Conditions, 5, "False/WorkflowDeleted", "absent", "True/WorkflowDeleted")
		})
		consistently(t, "no new run", time.Second, func() error {
			for _, wf := range workflowsOf(t, bpav1.WorkflowKindProvisioning, p) {
				if wf.Labels[bpav1.WorkflowGenerationLabel] == "5" {
					return fmt.Errorf("Workflow %s ran generation 5 again", wf.Name)
				}
			}
			return nil
		})
	})
}

// TestARunFinishedWhileTheControllerWasDown: a run that finished and was deleted (Argo's TTL,
// argo delete) while no controller watched is never started again: its start was recorded
// before its Workflow was created.
func TestARunFinishedWhileTheControllerWasDown(t *testing.T) {
	ns := newNamespace(t)
	stop := startManager(t)
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, p)
	wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
	if started := getProvisioning(t, p).Status.StartedRun; started == nil || started.WorkflowName != wf.Name {
		t.Fatalf("status.startedRun = %+v, want Workflow %s recorded", started, wf.Name)
	}
	stop()
	succeed(t, wf)
	if err := env.Client.Delete(ctx(), wf); err != nil {
		t.Fatal(err)
	}
	startManager(t)
	eventually(t, "Stalled on a run gone without a recorded end", func() error {
		cur := getProvisioning(t, p)
		if !strings.Contains(cur.Status.Message, "the run of generation 1 was started as Workflow "+wf.Name+", which is gone with no recorded end") {
			return fmt.Errorf("message %q", cur.Status.Message)
		}
		return expectConditions(cur.Status.Conditions, 1, "False/WorkflowDeleted", "absent", "True/WorkflowDeleted")
	})
	consistently(t, "kubespray not started again", time.Second, func() error {
		if n := len(workflowsOf(t, bpav1.WorkflowKindProvisioning, p)); n != 0 {
			return fmt.Errorf("%d Workflows: the run was started again on a live cluster", n)
		}
		return nil
	})
	patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Annotations = map[string]string{bpav1.RerunAnnotation: "again"} })
	if again := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1); again.Name == wf.Name {
		t.Errorf("the rerun reused the name %s", again.Name)
	}
}

// TestRecreatedCRGetsItsOwnWorkflow: a Workflow left behind by a deleted CR of the same name
// (orphaned, or not collected yet) never stands in for the new CR's.
func TestRecreatedCRGetsItsOwnWorkflow(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	first := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, first)
	old := waitWorkflow(t, bpav1.WorkflowKindProvisioning, first, 1)
	deleteAndWait(t, first)
	// The test's API server runs no garbage collector: the old Workflow stays, as an orphan.
	second := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, second)
	eventually(t, "the new CR's own Workflow", func() error {
		cur := getProvisioning(t, second)
		if cur.Status.WorkflowName == "" || cur.Status.WorkflowName == old.Name {
			return fmt.Errorf("status names Workflow %q (the old one is %s)", cur.Status.WorkflowName, old.Name)
		}
		return expectConditions(cur.Status.Conditions, 1, "False/WorkflowPending", "True/WorkflowPending", "absent")
	})
}

// TestSoftwareWithNoNodes: a Ready cluster whose Provisioning lists no nodes (its Workflow's
// node status offloaded) gives its Software nothing to install on: Stalled, saying so, not
// Ready "on all 0 nodes".
func TestSoftwareWithNoNodes(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	p := loadProvisioning(t, "provisioning-cluster-xyz-resources.yaml", ns)
	create(t, p)
	wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
	succeedOffloaded(t, wf)
	waitReady(t, p, 1)
	sw := loadSoftware(t, ns)
	create(t, sw)
	eventually(t, "the Software Stalled with nothing to install on", func() error {
		cur := getSoftware(t, sw)
		if !strings.Contains(cur.Status.Message, "nothing to install on") {
			return fmt.Errorf("message %q", cur.Status.Message)
		}
		return expectConditions(cur.Status.Conditions, 1, "False/NoNodes", "absent", "True/NoNodes")
	})
	if n := len(workflowsOf(t, bpav1.WorkflowKindSoftware, sw)); n != 0 {
		t.Errorf("%d Software Workflows for a cluster without nodes", n)
	}
}
