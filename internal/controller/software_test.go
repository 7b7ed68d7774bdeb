package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/argovalidate"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
)

var xyzHosts = []bpav1.Node{
	{Label: "master-1", Role: "master", BareMetalHost: "metal3/node-1", MAC: "00:c5:16:05:61:b2"},
	{Label: "master-2", Role: "master", BareMetalHost: "metal3/node-2", MAC: "00:c2:14:06:61:b5"},
	{Label: "worker", Role: "worker", BareMetalHost: "metal3/node-3", MAC: "00:c6:14:04:61:b2"},
}

// installed drives a Software Workflow to Succeeded with one report per node.
func installed(t *testing.T, wf *wfv1.Workflow, nodes ...bpav1.Node) {
	t.Helper()
	now := time.Now()
	all := []wfv1.NodeStatus{node(wf.Name, "resolve-cluster-hosts", wfv1.NodeSucceeded, now.Add(-2*time.Second), nil)}
	for i, n := range nodes {
		r := installsoftware.Report{Node: n.Label, Role: n.Role, PackageManager: "apt", Changed: []string{"curl=7.88.1-10"}, Unchanged: []string{"htop"}}
		nd := node(wf.Name, "install-software", wfv1.NodeSucceeded, now.Add(time.Duration(i)*time.Millisecond), reportJSON(t, r))
		all = append(all, nd)
	}
	succeed(t, wf, all...)
}

// swWorkflows lists the Software's Workflows of one generation and scope.
func swWorkflow(t *testing.T, sw *bpav1.Software, generation int64, scope string) *wfv1.Workflow {
	t.Helper()
	var found *wfv1.Workflow
	eventually(t, fmt.Sprintf("a Software Workflow of generation %d, scope %s", generation, scope), func() error {
		for _, wf := range workflowsOf(t, bpav1.WorkflowKindSoftware, sw) {
			if wf.Labels[bpav1.WorkflowGenerationLabel] == fmt.Sprint(generation) && wf.Labels[bpav1.WorkflowScopeLabel] == scope {
				found = wf.DeepCopy()
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	return found
}

func waitSoftwareReady(t *testing.T, sw *bpav1.Software, generation int64) *bpav1.Software {
	t.Helper()
	var cur *bpav1.Software
	eventually(t, "the Software Ready", func() error {
		cur = getSoftware(t, sw)
		if err := expectConditions(cur.Status.Conditions, generation, "True/UpToDate", "absent", "absent"); err != nil {
			return fmt.Errorf("%w (message %q)", err, cur.Status.Message)
		}
		return nil
	})
	return cur
}

// softwareStory is a Software with its Cluster and the Provisioning that makes it, in a
// namespace of their own, with a running controller.
type softwareStory struct {
	sw      *bpav1.Software
	p       *bpav1.Provisioning
	cluster *bpav1.Cluster
}

// TestSoftwareFollowsItsCluster: a Software waits for its cluster, then follows it, each stage
// from where the one before left it: nodes joining, its own spec changing, a failed run, a
// rerun, a node leaving and rejoining.
func TestSoftwareFollowsItsCluster(t *testing.T) {
	s := softwareWaitsForItsCluster(t)
	softwareFollowsChanges(t, s)
	softwareStallsOnFailure(t, s)
	softwareRunsRejoinedNodes(t, s)
}

// softwareWaitsForItsCluster: the Software waits while there is no Provisioning and while the
// cluster is made, then runs on every node once the cluster is Ready.
func softwareWaitsForItsCluster(t *testing.T) *softwareStory {
	ns := newNamespace(t)
	startManager(t)

	sw := loadSoftware(t, ns)
	create(t, sw)
	eventually(t, "WaitingForCluster without a Provisioning", func() error {
		cur := getSoftware(t, sw)
		return expectConditions(cur.Status.Conditions, 1, "False/WaitingForCluster", "True/WaitingForCluster", "absent")
	})

	docs, err := manifest.ReadFile(testutil.Fixture(t, "cluster-xyz.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cluster := docs[0].Object.(*bpav1.Cluster)
	cluster.Namespace = ns
	create(t, cluster)

	p := loadProvisioning(t, "provisioning-cluster-xyz-resources.yaml", ns)
	create(t, p)
	wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
	eventually(t, "WaitingForCluster while the cluster is provisioned", func() error {
		cur := getSoftware(t, sw)
		c := condition(cur.Status.Conditions, bpav1.ConditionReady, 1)
		if c != "False/WaitingForCluster" {
			return fmt.Errorf("Ready %s", c)
		}
		if !strings.Contains(cur.Status.Conditions[0].Message, "provisioning-xyz") {
			return fmt.Errorf("message %q does not name the Provisioning", cur.Status.Conditions[0].Message)
		}
		return nil
	})
	consistently(t, "no Software Workflow before the cluster is Ready", time.Second, func() error {
		if n := len(workflowsOf(t, bpav1.WorkflowKindSoftware, sw)); n != 0 {
			return fmt.Errorf("%d Workflows", n)
		}
		return nil
	})

	provisioned(t, wf, xyzHosts)
	waitReady(t, p, 1)
	first := swWorkflow(t, sw, 1, compile.WorkflowScopeAll)
	if err := argovalidate.Workflow(first); err != nil {
		t.Errorf("Argo's validator refuses the Software Workflow: %v", err)
	}
	installed(t, first, xyzHosts...)
	cur := waitSoftwareReady(t, sw, 1)
	if len(cur.Status.Nodes) != 3 || cur.Status.Nodes[2].Digest == "" {
		t.Fatalf("node reports = %+v, want 3, each with the digest of what it installed", cur.Status.Nodes)
	}
	want := bpav1.NodeSoftwareReport{Node: "worker", Role: "worker", Generation: 1, Digest: cur.Status.Nodes[2].Digest,
		Unchanged: 1, Changed: []string{"curl=7.88.1-10"}}
	if diff := cmp.Diff(want, cur.Status.Nodes[2]); diff != "" {
		t.Errorf("the worker's report (-want +got):\n%s", diff)
	}
	if cur.Status.Phase != bpav1.PhaseSucceeded || cur.Status.WorkflowName != first.Name {
		t.Errorf("status %+v", cur.Status.WorkflowStatus)
	}
	eventually(t, "the Cluster Ready", func() error {
		c := &bpav1.Cluster{}
		if err := env.Client.Get(ctx(), clientKey(cluster), c); err != nil {
			return err
		}
		if c.Status.Phase != bpav1.PhaseSucceeded || c.Status.KubeconfigSecretName != "cluster-xyz-kubeconfig" {
			return fmt.Errorf("status %+v", c.Status)
		}
		return expectConditions(c.Status.Conditions, 1, "True/Ready", "absent", "absent")
	})

	return &softwareStory{sw: sw, p: p, cluster: cluster}
}

// softwareFollowsChanges: a node joining runs the Software on it alone; a worker's package
// changing runs it on the workers only.
func softwareFollowsChanges(t *testing.T, s *softwareStory) {
	sw, p := s.sw, s.p
	t.Run("a node joins: a run for it alone", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) {
			cur.Spec.Workers = append(cur.Spec.Workers, bpav1.HostEntry{"worker-b": {MACAddress: "00:c2:12:03:62:b2"}})
		})
		pwf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 2)
		joined := bpav1.Node{Label: "worker-b", Role: "worker", BareMetalHost: "metal3/node-4", MAC: "00:c2:12:03:62:b2"}
		provisioned(t, pwf, append(slices.Clone(xyzHosts), joined))
		waitReady(t, p, 2)
		wf := swWorkflow(t, sw, 1, compile.Scope([]string{"worker-b"}))
		if got := resolveArgs(wf); !strings.Contains(got, "--only=worker-b") {
			t.Errorf("resolve-cluster-hosts runs %q, want it limited to worker-b", got)
		}
		installed(t, wf, joined)
		cur := waitSoftwareReady(t, sw, 1)
		if len(cur.Status.Nodes) != 4 {
			t.Errorf("node reports = %+v, want 4", cur.Status.Nodes)
		}
	})

	t.Run("a worker's pinned version changes: a run for the workers only", func(t *testing.T) {
		patchSpec(t, sw, func(cur *bpav1.Software) {
			cur.Spec.WorkerSoftware = append(cur.Spec.WorkerSoftware, bpav1.SoftwarePackage{Name: "vim", Version: "2:9.0.1378-2"})
		})
		wf := swWorkflow(t, sw, 2, compile.Scope([]string{"worker", "worker-b"}))
		if got := resolveArgs(wf); !strings.Contains(got, "--only=worker,worker-b") {
			t.Errorf("resolve-cluster-hosts runs %q, want it limited to the workers", got)
		}
		installed(t, wf, xyzHosts[2], bpav1.Node{Label: "worker-b", Role: "worker"})
		cur := waitSoftwareReady(t, sw, 2)
		for _, n := range cur.Status.Nodes {
			if wantGen := map[bool]int64{true: 1, false: 2}[strings.HasPrefix(n.Node, "master")]; n.Generation != wantGen {
				t.Errorf("node %s last installed at generation %d, want %d", n.Node, n.Generation, wantGen)
			}
		}
		if n := len(workflowsOf(t, bpav1.WorkflowKindSoftware, sw)); n != 3 {
			t.Errorf("%d Software Workflows, want 3", n)
		}
	})

}

// softwareStallsOnFailure: a failed run stalls the Software and its Cluster and is not started
// again, even once its Workflow is deleted, until the rerun annotation asks.
func softwareStallsOnFailure(t *testing.T, s *softwareStory) {
	sw, cluster := s.sw, s.cluster
	t.Run("a failed run stalls, and is not started again", func(t *testing.T) {
		patchSpec(t, sw, func(cur *bpav1.Software) { cur.Spec.MasterSoftware = cur.Spec.MasterSoftware[:1] })
		wf := swWorkflow(t, sw, 3, compile.Scope([]string{"master-1", "master-2"}))
		setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
			st.Phase = wfv1.WorkflowFailed
			n := node(wf.Name, "install-software", wfv1.NodeFailed, time.Now(), reportJSON(t, installsoftware.Report{
				Node: "master-1", Role: "master", Failed: []installsoftware.Failure{{Package: "curl", Reason: "no candidate version"}},
			}))
			n.Message = "curl: no candidate version"
			n.Inputs = &wfv1.Inputs{Parameters: []wfv1.Parameter{{Name: "node", Value: wfv1.AnyStringPtr("master-1")}}}
			st.Nodes = wfv1.Nodes{n.ID: n}
		})
		eventually(t, "Stalled on the failed run", func() error {
			cur := getSoftware(t, sw)
			if cur.Status.Message != "step install-software on master-1 failed: curl: no candidate version" {
				return fmt.Errorf("message %q", cur.Status.Message)
			}
			return expectConditions(cur.Status.Conditions, 3, "False/WorkflowFailed", "absent", "True/WorkflowFailed")
		})
		consistently(t, "no new run after a failure", time.Second, func() error {
			if n := len(workflowsOf(t, bpav1.WorkflowKindSoftware, sw)); n != 4 {
				return fmt.Errorf("%d Software Workflows, want 4", n)
			}
			return nil
		})
		eventually(t, "the Cluster Stalled with the Software's message", func() error {
			c := &bpav1.Cluster{}
			if err := env.Client.Get(ctx(), clientKey(cluster), c); err != nil {
				return err
			}
			if !strings.Contains(c.Status.Message, "no candidate version") {
				return fmt.Errorf("message %q", c.Status.Message)
			}
			return expectConditions(c.Status.Conditions, 1, "False/WorkflowFailed", "absent", "True/WorkflowFailed")
		})
	})

	t.Run("the failed run's Workflow deleted: still Stalled, not run again", func(t *testing.T) {
		failed := swWorkflow(t, sw, 3, compile.Scope([]string{"master-1", "master-2"}))
		if err := env.Client.Delete(ctx(), failed); err != nil {
			t.Fatal(err)
		}
		eventually(t, "Stalled on the recorded failure", func() error {
			cur := getSoftware(t, sw)
			if !strings.Contains(cur.Status.Message, "no candidate version") || cur.Status.WorkflowName != failed.Name {
				return fmt.Errorf("status %+v", cur.Status.WorkflowStatus)
			}
			return expectConditions(cur.Status.Conditions, 3, "False/WorkflowDeleted", "absent", "True/WorkflowDeleted")
		})
		consistently(t, "no new run after the deletion", 2*time.Second, func() error {
			if n := len(workflowsOf(t, bpav1.WorkflowKindSoftware, sw)); n != 3 {
				return fmt.Errorf("%d Software Workflows, want 3", n)
			}
			return nil
		})
	})

	t.Run("the rerun annotation starts the run again, under a new name", func(t *testing.T) {
		old := getSoftware(t, sw).Status.WorkflowName
		patchSpec(t, sw, func(cur *bpav1.Software) { cur.Annotations = map[string]string{bpav1.RerunAnnotation: "2026-11-22"} })
		var again *wfv1.Workflow
		eventually(t, "a rerun Workflow", func() error {
			for _, wf := range workflowsOf(t, bpav1.WorkflowKindSoftware, sw) {
				if wf.Labels[bpav1.WorkflowGenerationLabel] == "3" && wf.Name != old {
					again = wf.DeepCopy()
					return nil
				}
			}
			return fmt.Errorf("none yet")
		})
		installed(t, again, xyzHosts[0], xyzHosts[1])
		waitSoftwareReady(t, sw, 3)
	})

}

// softwareRunsRejoinedNodes: worker-b leaves the cluster and rejoins it, twice.
func softwareRunsRejoinedNodes(t *testing.T, s *softwareStory) {
	sw, p := s.sw, s.p
	// A node that leaves and rejoins within one Software generation is a new run each time: the
	// cluster generation it joins at names the run.
	leaveAndRejoin := func(t *testing.T, gen int64) *wfv1.Workflow {
		t.Helper()
		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.Workers = cur.Spec.Workers[:len(cur.Spec.Workers)-1] })
		joined := bpav1.Node{Label: "worker-b", Role: "worker", BareMetalHost: "metal3/node-4", MAC: "00:c2:12:03:62:b2"}
		provisioned(t, waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, gen), append(slices.Clone(xyzHosts), joined))
		waitReady(t, p, gen)
		eventually(t, "the Software without worker-b", func() error {
			if cur := waitSoftwareReady(t, sw, 3); len(cur.Status.Nodes) != 3 {
				return fmt.Errorf("reports of %d nodes", len(cur.Status.Nodes))
			}
			return nil
		})
		patchSpec(t, p, func(cur *bpav1.Provisioning) {
			cur.Spec.Workers = append(cur.Spec.Workers, bpav1.HostEntry{"worker-b": {MACAddress: "00:c2:12:03:62:b2"}})
		})
		provisioned(t, waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, gen+1), append(slices.Clone(xyzHosts), joined))
		waitReady(t, p, gen+1)
		var run *wfv1.Workflow
		eventually(t, "a Software run for the rejoined node", func() error {
			cur := getSoftware(t, sw)
			for _, wf := range workflowsOf(t, bpav1.WorkflowKindSoftware, sw) {
				if wf.Name == cur.Status.WorkflowName && wf.Labels[bpav1.WorkflowScopeLabel] == compile.Scope([]string{"worker-b"}) && !wf.Status.Phase.Completed() {
					run = wf.DeepCopy()
					return nil
				}
			}
			return fmt.Errorf("status %+v", cur.Status.WorkflowStatus)
		})
		installed(t, run, joined)
		waitSoftwareReady(t, sw, 3)
		return run
	}
	t.Run("a node leaves and rejoins twice: a new run each time", func(t *testing.T) {
		first := leaveAndRejoin(t, 3)
		second := leaveAndRejoin(t, 5)
		if first.Name == second.Name {
			t.Errorf("both rejoins ran as Workflow %s", first.Name)
		}
	})
}

func resolveArgs(wf *wfv1.Workflow) string {
	t := wf.GetTemplateByName("resolve-cluster-hosts")
	if t == nil || t.Container == nil {
		return ""
	}
	return strings.Join(t.Container.Args, " ")
}
