package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checknodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// TestProvisioningUpgrade: the controller's default kubespray (v2.30.0) makes cluster-abc at
// the version the spec names and records it; a version going down is refused, naming the
// versions the cluster can go to, with no Workflow; so is the recorded version once a failed
// wave left the master above it; raising it one minor version compiles an
// upgrade of the control plane, then of each worker after its approval, and the status says
// which wave waits on which nodes, then that the cluster runs the new version.
func TestProvisioningUpgrade(t *testing.T) {
	site := newABCSiteWith(t, func(p *bpav1.Provisioning) { p.Spec.KubernetesVersion = "1.33.7" })
	p := site.p
	wf1 := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
	if args := strings.Join(wf1.GetTemplateByName("render-inventory").Container.Args, " "); !strings.Contains(args, "--kubernetes-version=1.33.7") {
		t.Errorf("render-inventory runs %q, want kube_version 1.33.7", args)
	}
	provisioned(t, wf1, site.at(abcHosts...))
	if v := waitReady(t, p, 1).Status.Provisioned.KubernetesVersion; v != "1.33.7" {
		t.Errorf("recorded version %q, want 1.33.7", v)
	}

	t.Run("going down: Stalled, naming the versions it can go to, no Workflow", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.KubernetesVersion = "1.32.11" })
		expectUnsupported(t, p, 2, "spec.kubernetesVersion: 1.32.11 is older than the cluster's 1.33.7: Kubernetes does not go down (kubespray v2.30.0 can upgrade it to 1.34.0–1.34.3)")
		if n := len(workflowsOf(t, bpav1.WorkflowKindProvisioning, p)); n != 1 {
			t.Errorf("%d Workflows, want the first alone", n)
		}
	})

	t.Run("a wave failed, then the version set back: Stalled, no Workflow", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.KubernetesVersion = "1.34.0" })
		wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 3)
		// The control plane went up, then a worker's wave failed; report-nodes read the nodes.
		report := `{"kubelets":[{"version":"v1.33.7","nodes":["worker-1","worker-2"]},{"version":"v1.34.0","nodes":["master"]}]}`
		setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
			now := time.Now()
			st.Phase, st.StartedAt, st.FinishedAt = wfv1.WorkflowFailed, metav1.NewTime(now.Add(-time.Minute)), metav1.NewTime(now)
			st.Nodes = wfv1.Nodes{}
			for _, n := range []wfv1.NodeStatus{
				node(wf.Name, runkubespray.ControlPlaneTask, wfv1.NodeSucceeded, now.Add(-2*time.Second), nil),
				node(wf.Name, "upgrade-wave-1", wfv1.NodeFailed, now.Add(-time.Second), nil),
				node(wf.Name, reportnodes.Name, wfv1.NodeSucceeded, now, map[string]string{reportnodes.ReportParam: report}),
			} {
				st.Nodes[n.ID] = n
			}
		})
		eventually(t, "the failed upgrade's kubelets in the status", func() error {
			if cur := getProvisioning(t, p); cur.Status.Phase != bpav1.PhaseFailed || len(cur.Status.Kubelets) != 2 {
				return fmt.Errorf("phase %q, kubelets %+v", cur.Status.Phase, cur.Status.Kubelets)
			}
			return nil
		})
		if v := getProvisioning(t, p).Status.Provisioned.KubernetesVersion; v != "1.33.7" {
			t.Fatalf("recorded version %q after the failed wave, want still 1.33.7", v)
		}

		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.KubernetesVersion = "1.33.7" })
		expectUnsupported(t, p, 4, "spec.kubernetesVersion: 1.33.7 is older than 1.34.0, which master already run (an upgrade that did not finish): Kubernetes does not go down; set 1.34.0 to finish the upgrade")
		if n := len(workflowsOf(t, bpav1.WorkflowKindProvisioning, p)); n != 2 {
			t.Errorf("%d Workflows, want the first and the failed upgrade's", n)
		}
	})

	t.Run("one minor version up, a worker a wave, each approved", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) {
			cur.Spec.KubernetesVersion = "1.34.3"
			cur.Spec.Upgrade = &bpav1.UpgradePolicy{Serial: ptr.To(intstr.FromInt32(1)), Approval: bpav1.UpgradeApprovalPerWave}
		})
		wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 5)
		var tasks []string
		for _, task := range wf.GetTemplateByName(wf.Spec.Entrypoint).DAG.Tasks {
			tasks = append(tasks, task.Name)
		}
		for _, want := range []string{"upgrade-control-plane", "check-upgrade-control-plane", "approve-wave-1", "upgrade-wave-1", "check-upgrade-wave-1", "approve-wave-2", "upgrade-wave-2", "check-upgrade-wave-2"} {
			if !slices.Contains(tasks, want) {
				t.Errorf("the upgrade's tasks %v lack %s", tasks, want)
			}
		}
		now := time.Now()
		setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
			st.Phase = wfv1.WorkflowRunning
			st.Nodes = wfv1.Nodes{}
			for _, n := range []wfv1.NodeStatus{
				{ID: "cp", DisplayName: runkubespray.ControlPlaneTask, Type: wfv1.NodeTypeRetry, Phase: wfv1.NodeSucceeded},
				{ID: "cp-check", DisplayName: checknodes.Task(runkubespray.ControlPlaneTask), Type: wfv1.NodeTypeRetry, Phase: wfv1.NodeSucceeded},
				{ID: "a1", DisplayName: runkubespray.ApprovalTask(1), Type: wfv1.NodeTypeSuspend, Phase: wfv1.NodeRunning, StartedAt: metav1.NewTime(now)},
			} {
				st.Nodes[n.ID] = n
			}
		})
		eventually(t, "the status says the first wave waits for approval", func() error {
			cur := getProvisioning(t, p)
			want := &bpav1.UpgradeStatus{KubernetesVersion: "1.34.3", Waves: 2, Upgraded: []string{"upgrade-control-plane"}, Waiting: "upgrade-wave-1", Nodes: []string{"worker-1"}}
			if d := cmp.Diff(want, cur.Status.Upgrade); d != "" {
				return fmt.Errorf("status.upgrade (-want +got):\n%s", d)
			}
			c := meta.FindStatusCondition(cur.Status.Conditions, bpav1.ConditionReconciling)
			if c == nil || c.Reason != bpav1.ReasonWaitingForApproval || c.ObservedGeneration != 5 ||
				c.Message != "Workflow "+wf.Name+" waits for approval before upgrade-wave-1 of 2 (worker-1): argo resume "+wf.Name+", or Resume in Argo's UI" {
				return fmt.Errorf("Reconciling %+v", c)
			}
			return nil
		})
		// The exit handler read the nodes: one worker still at the old version, and NotReady.
		report := `{"kubelets":[{"version":"v1.33.7","nodes":["worker-2"],"notReady":["worker-2"]},{"version":"v1.34.3","nodes":["master","worker-1"]}]}`
		provisioned(t, wf, site.at(abcHosts...), node(wf.Name, reportnodes.Name, wfv1.NodeSucceeded, time.Now(), map[string]string{reportnodes.ReportParam: report}))
		cur := waitReady(t, p, 5)
		if cur.Status.Provisioned.KubernetesVersion != "1.34.3" {
			t.Errorf("after the upgrade, recorded version %q", cur.Status.Provisioned.KubernetesVersion)
		}
		wantKubelets := []bpav1.KubeletVersion{{Version: "v1.33.7", Nodes: []string{"worker-2"}, NotReady: []string{"worker-2"}}, {Version: "v1.34.3", Nodes: []string{"master", "worker-1"}}}
		if d := cmp.Diff(wantKubelets, cur.Status.Kubelets); d != "" || cur.Status.KubeletVersions != "v1.33.7 ×1 (1 NotReady), v1.34.3 ×2" {
			t.Errorf("status.kubelets (-want +got):\n%s\nkubeletVersions %q", d, cur.Status.KubeletVersions)
		}
	})
}
