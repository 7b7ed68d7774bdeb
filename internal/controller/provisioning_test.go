package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/argovalidate"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// abcHosts is where the sample site puts cluster-abc's entries (see the fixtures' README).
var abcHosts = []bpav1.Node{
	{Label: "master", Role: "master", BareMetalHost: "metal3/node-1", MAC: "00:c5:16:05:61:b2"},
	{Label: "worker-1", Role: "worker", BareMetalHost: "metal3/node-3", MAC: "00:c6:14:04:61:b2"},
	{Label: "worker-2", Role: "worker", BareMetalHost: "metal3/node-4", MAC: "00:c2:12:03:62:b2"},
}

func withIPs(hosts []bpav1.Node) []bpav1.Node {
	out := slices.Clone(hosts)
	for i := range out {
		out[i].IP = fmt.Sprintf("192.168.20.%d", 10+i)
	}
	return out
}

// provisioned drives a Provisioning Workflow to Succeeded with every step's outputs, as Argo
// would leave it.
func provisioned(t *testing.T, wf *wfv1.Workflow, hosts []bpav1.Node, more ...wfv1.NodeStatus) {
	t.Helper()
	now := time.Now()
	succeed(t, wf, append([]wfv1.NodeStatus{
		node(wf.Name, "discover-hosts", wfv1.NodeSucceeded, now.Add(-5*time.Second), hostsJSON(t, hosts...)),
		node(wf.Name, "resolve-leases", wfv1.NodeSucceeded, now.Add(-4*time.Second), hostsJSON(t, withIPs(hosts)...)),
		node(wf.Name, "render-inventory", wfv1.NodeSucceeded, now.Add(-3*time.Second), nil),
		node(wf.Name, "run-kubespray", wfv1.NodeSucceeded, now.Add(-2*time.Second), nil),
		node(wf.Name, "fetch-kubeconfig", wfv1.NodeSucceeded, now.Add(-time.Second), nil),
	}, more...)...)
}

func waitReady(t *testing.T, p *bpav1.Provisioning, generation int64) *bpav1.Provisioning {
	t.Helper()
	var cur *bpav1.Provisioning
	eventually(t, "the Provisioning Ready", func() error {
		cur = getProvisioning(t, p)
		if cur.Status.Phase != bpav1.PhaseSucceeded {
			return fmt.Errorf("phase %q", cur.Status.Phase)
		}
		return expectConditions(cur.Status.Conditions, generation, "True/WorkflowSucceeded", "absent", "absent")
	})
	return cur
}

func TestProvisioningFollowsItsWorkflow(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, p)

	wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
	t.Run("the Workflow is DESIGN.md's", func(t *testing.T) {
		wantLabels := map[string]string{
			bpav1.WorkflowClusterLabel: "cluster-abc", bpav1.WorkflowKindLabel: "provisioning",
			bpav1.WorkflowNameLabel: p.Name, bpav1.WorkflowGenerationLabel: "1",
		}
		for k, v := range wantLabels {
			if wf.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, wf.Labels[k], v)
			}
		}
		if ref := metav1.GetControllerOf(wf); ref == nil || ref.UID != getProvisioning(t, p).UID || ref.Kind != "Provisioning" {
			t.Errorf("controller owner = %+v, want the Provisioning", ref)
		}
		if diff := cmp.Diff(&wfv1.Synchronization{Mutexes: []*wfv1.Mutex{{Name: "bpa-cluster-cluster-abc"}}}, wf.Spec.Synchronization); diff != "" {
			t.Errorf("synchronization, want one mutex for cluster-abc (-want +got):\n%s", diff)
		}
		if err := argovalidate.Workflow(wf); err != nil {
			t.Errorf("Argo's validator refuses the created Workflow: %v", err)
		}
	})
	eventually(t, "status Pending", func() error {
		cur := getProvisioning(t, p)
		if cur.Status.WorkflowName != wf.Name || cur.Status.Phase != bpav1.PhasePending || cur.Status.ObservedGeneration != 1 {
			return fmt.Errorf("status %+v", cur.Status.WorkflowStatus)
		}
		if !slices.Contains(cur.Finalizers, bpav1.HostsFinalizer) {
			return fmt.Errorf("finalizers %v", cur.Finalizers)
		}
		// Created, then seen through the watch with no phase yet: Argo has not picked it up.
		return expectConditions(cur.Status.Conditions, 1, "False/WorkflowPending", "True/WorkflowPending", "absent")
	})

	start := time.Now()
	setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
		st.Phase = wfv1.WorkflowRunning
		st.StartedAt = metav1.NewTime(start)
		st.Progress = "1/6"
		n := node(wf.Name, "discover-hosts", wfv1.NodeSucceeded, start.Add(time.Second), hostsJSON(t, abcHosts...))
		st.Nodes = wfv1.Nodes{n.ID: n}
	})
	eventually(t, "status Running with the placed hosts", func() error {
		cur := getProvisioning(t, p)
		if cur.Status.Phase != bpav1.PhaseRunning || cur.Status.Progress != "1/6" || cur.Status.StartedAt == nil {
			return fmt.Errorf("status %+v", cur.Status.WorkflowStatus)
		}
		if len(cur.Status.Hosts) != 3 || cur.Status.Hosts[1].BareMetalHost != "metal3/node-3" {
			return fmt.Errorf("hosts %+v", cur.Status.Hosts)
		}
		return expectConditions(cur.Status.Conditions, 1, "False/WorkflowRunning", "True/WorkflowRunning", "absent")
	})

	// A failed attempt Argo retries shows while the Workflow still runs, with its reason.
	firstTry := node(wf.Name, "resolve-leases", wfv1.NodeFailed, start.Add(2*time.Second), nil)
	firstTry.Message = "no lease yet"
	retry := wfv1.NodeStatus{ID: wf.Name + "-resolve-leases", Name: wf.Name + ".resolve-leases", DisplayName: "resolve-leases",
		Type: wfv1.NodeTypeRetry, TemplateName: "resolve-leases", Phase: wfv1.NodeRunning, Children: []string{firstTry.ID}}
	setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
		st.Nodes[firstTry.ID], st.Nodes[retry.ID] = firstTry, retry
	})
	eventually(t, "status Running naming the step being retried", func() error {
		cur := getProvisioning(t, p)
		want := "step resolve-leases failed and is being retried: no lease yet"
		if cur.Status.Phase != bpav1.PhaseRunning || cur.Status.Message != want {
			return fmt.Errorf("status %+v, want Running with message %q", cur.Status.WorkflowStatus, want)
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, bpav1.ConditionReconciling); c == nil || !strings.Contains(c.Message, want) {
			return fmt.Errorf("Reconciling condition %+v does not say %q", c, want)
		}
		return expectConditions(cur.Status.Conditions, 1, "False/WorkflowRunning", "True/WorkflowRunning", "absent")
	})

	failedAt := start.Add(3 * time.Second)
	setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
		st.Phase = wfv1.WorkflowFailed
		st.FinishedAt = metav1.NewTime(failedAt)
		st.Message = "child 'x' failed"
		n := node(wf.Name, "resolve-leases", wfv1.NodeFailed, failedAt, nil)
		n.Message = `host "worker-2" (MAC 00:c2:12:03:62:b2) has no active lease`
		st.Nodes[n.ID] = n
	})
	eventually(t, "status Failed naming the step", func() error {
		cur := getProvisioning(t, p)
		want := `step resolve-leases failed: host "worker-2" (MAC 00:c2:12:03:62:b2) has no active lease`
		if cur.Status.Phase != bpav1.PhaseFailed || cur.Status.Message != want || cur.Status.FinishedAt == nil {
			return fmt.Errorf("status %+v", cur.Status.WorkflowStatus)
		}
		return expectConditions(cur.Status.Conditions, 1, "False/WorkflowFailed", "absent", "True/WorkflowFailed")
	})
	eventually(t, "a Warning event for the failure", func() error {
		var events corev1.EventList
		if err := env.Client.List(ctx(), &events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == bpav1.ReasonWorkflowFailed && strings.Contains(e.Message, "no active lease") {
				return nil
			}
		}
		return fmt.Errorf("%d events, none a WorkflowFailed warning", len(events.Items))
	})

	// argo retry restarts the same object: Failed was not final.
	setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
		st.Phase = wfv1.WorkflowRunning
		st.FinishedAt = metav1.Time{}
		st.Message = ""
		for id, n := range st.Nodes {
			if n.Phase == wfv1.NodeFailed {
				delete(st.Nodes, id)
			}
		}
	})
	eventually(t, "status back to Running after argo retry", func() error {
		cur := getProvisioning(t, p)
		if cur.Status.Phase != bpav1.PhaseRunning || cur.Status.Message != "" || cur.Status.FinishedAt != nil {
			return fmt.Errorf("status %+v", cur.Status.WorkflowStatus)
		}
		return expectConditions(cur.Status.Conditions, 1, "False/WorkflowRunning", "True/WorkflowRunning", "absent")
	})

	provisioned(t, wf, abcHosts)
	cur := waitReady(t, p, 1)
	if cur.Status.KubeconfigSecretName != "cluster-abc-kubeconfig" {
		t.Errorf("kubeconfigSecretName = %q", cur.Status.KubeconfigSecretName)
	}
	if cur.Status.Hosts[0].IP != "192.168.20.10" {
		t.Errorf("hosts are not resolve-leases' (with IPs): %+v", cur.Status.Hosts)
	}
	if rec := cur.Status.Provisioned; rec == nil || rec.Generation != 1 || len(rec.Workers) != 2 {
		t.Errorf("provisioned = %+v, want generation 1 with 2 workers", rec)
	}

	// argo resubmit: a new Workflow with the same labels and owner, and Argo's label.
	resub := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{
		Name: wf.Name + "-resub", Namespace: ns, Labels: map[string]string{}, OwnerReferences: wf.OwnerReferences,
	}, Spec: wf.Spec}
	for k, v := range wf.Labels {
		resub.Labels[k] = v
	}
	resub.Labels[bpav1.ResubmittedFromLabel] = wf.Name
	create(t, resub)
	setWorkflowStatus(t, resub, func(st *wfv1.WorkflowStatus) { st.Phase = wfv1.WorkflowRunning; st.Progress = "0/6" })
	eventually(t, "the resubmitted Workflow mirrored", func() error {
		cur := getProvisioning(t, p)
		if cur.Status.WorkflowName != resub.Name || cur.Status.Phase != bpav1.PhaseRunning {
			return fmt.Errorf("status %+v", cur.Status.WorkflowStatus)
		}
		return nil
	})
	if n := len(workflowsOf(t, bpav1.WorkflowKindProvisioning, p)); n != 2 {
		t.Errorf("%d Workflows, want the original and the resubmitted one", n)
	}
}

func TestProvisioningRestartCreatesNoSecondWorkflow(t *testing.T) {
	ns := newNamespace(t)
	stop := startManager(t)
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, p)
	wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
	stop()

	// While the controller is down, Argo finishes the run and another CR arrives.
	provisioned(t, wf, abcHosts)
	other := loadProvisioning(t, "provisioning-cluster-efg-kud-plugins.yaml", ns)
	create(t, other)

	startManager(t)
	waitReady(t, p, 1)
	waitWorkflow(t, bpav1.WorkflowKindProvisioning, other, 1)
	// Touch the CR (a label: not a new generation) so it is reconciled again and again.
	for i := range 3 {
		patchSpec(t, getProvisioning(t, p), func(cur *bpav1.Provisioning) { cur.Labels["touched"] = fmt.Sprint(i) })
	}
	consistently(t, "exactly one Workflow per generation", 2*time.Second, func() error {
		if n := len(workflowsOf(t, bpav1.WorkflowKindProvisioning, p)); n != 1 {
			return fmt.Errorf("%d Workflows for generation 1", n)
		}
		return nil
	})
}

func TestProvisioningRefusals(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)

	t.Run("the API server refuses a malformed MAC, naming the field", func(t *testing.T) {
		p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
		p.Name = "bad-mac"
		p.Spec.Masters[0]["master"] = bpav1.HostRequirements{MACAddress: "00:c5:16:05:61"}
		err := env.Client.Create(ctx(), p)
		if err == nil || !strings.Contains(err.Error(), "spec.masters[0].master.mac-address") {
			t.Fatalf("create: %v, want a refusal naming spec.masters[0].master.mac-address", err)
		}
	})

	t.Run("the API server refuses a malformed version or upgrade policy, naming the field", func(t *testing.T) {
		for i, tc := range []struct {
			mutate func(*bpav1.Provisioning)
			want   string
		}{
			{func(p *bpav1.Provisioning) { p.Spec.KubernetesVersion = "v1.34.3" }, "spec.kubernetesVersion"},
			{func(p *bpav1.Provisioning) { p.Spec.KubernetesVersion = "1.34.3;reboot" }, "spec.kubernetesVersion"},
			{func(p *bpav1.Provisioning) { p.Spec.KubernetesVersion = "1.034.3" }, `spec.kubernetesVersion: Invalid value: "1.034.3"`},
			{func(p *bpav1.Provisioning) {
				p.Spec.Upgrade = &bpav1.UpgradePolicy{Serial: ptr.To(intstr.FromInt32(0))}
			}, "spec.upgrade.serial: Invalid value: \"\": serial is a count of at least 1 or a percentage from 1% to 100%"},
			{func(p *bpav1.Provisioning) {
				p.Spec.Upgrade = &bpav1.UpgradePolicy{Serial: ptr.To(intstr.FromString("150%"))}
			}, "serial is a count of at least 1 or a percentage from 1% to 100%"},
			{func(p *bpav1.Provisioning) { p.Spec.Upgrade = &bpav1.UpgradePolicy{Approval: "sometimes"} }, `spec.upgrade.approval: Unsupported value: "sometimes"`},
		} {
			p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
			p.Name = fmt.Sprintf("bad-upgrade-%d", i)
			tc.mutate(p)
			if err := env.Client.Create(ctx(), p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create: %v, want a refusal saying %q", err, tc.want)
			}
		}
		ok := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
		ok.Name, ok.Labels[bpav1.ClusterLabel] = "upgrade-ok", "upgrade-ok"
		ok.Spec.KubernetesVersion = "1.34.3"
		ok.Spec.Upgrade = &bpav1.UpgradePolicy{Serial: ptr.To(intstr.FromString("25%")), Approval: bpav1.UpgradeApprovalPerWave}
		create(t, ok)
	})

	t.Run("the API server refuses a missing or malformed cluster label", func(t *testing.T) {
		for _, tc := range []struct{ label, want string }{
			{"", "metadata.labels.cluster: Required value"},
			{"Cluster_ABC", `metadata.labels.cluster: Invalid value: "Cluster_ABC"`},
			{strings.Repeat("c", bpav1.MaxClusterNameLength+1), "a DNS-1123 label of at most 40 characters"},
		} {
			p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
			p.Name = "label-" + fmt.Sprint(len(tc.label))
			delete(p.Labels, bpav1.ClusterLabel)
			if tc.label != "" {
				p.Labels[bpav1.ClusterLabel] = tc.label
			}
			// The policy takes effect once the API server has loaded it: wait for the first
			// refusal, then expect the message.
			var err error
			eventually(t, "the policy refuses "+tc.label, func() error {
				err = env.Client.Create(ctx(), p.DeepCopy())
				if err == nil {
					_ = env.Client.Delete(ctx(), p)
					return fmt.Errorf("created")
				}
				if apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("the one created before the policy was loaded is still there")
				}
				return nil
			})
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("label %q: %v, want %q", tc.label, err, tc.want)
			}
		}
		sw := loadSoftware(t, ns)
		delete(sw.Labels, bpav1.ClusterLabel)
		if err := env.Client.Create(ctx(), sw); err == nil || !strings.Contains(err.Error(), "metadata.labels.cluster") {
			t.Errorf("a Software without the label: %v", err)
		}
		// A package name in map form that would reach a shell: only the policy sees map keys.
		bad := loadSoftware(t, ns)
		bad.Name = "bad-package"
		bad.Spec.WorkerSoftware = append(bad.Spec.WorkerSoftware, bpav1.SoftwarePackage{Name: "jq;reboot", Version: "1.6-2"})
		if err := env.Client.Create(ctx(), bad); err == nil || !strings.Contains(err.Error(), "must be a Debian or RPM package name") {
			t.Errorf("a Software with package jq;reboot: %v", err)
		}
		ok := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
		ok.Name, ok.Labels[bpav1.ClusterLabel] = "label-ok", strings.Repeat("c", bpav1.MaxClusterNameLength)
		create(t, ok)
	})

	t.Run("the cluster label cannot change once set", func(t *testing.T) {
		p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
		p.Name, p.Labels[bpav1.ClusterLabel] = "moving", "moving"
		create(t, p)
		sw := loadSoftware(t, ns)
		sw.Name = "moving-software"
		create(t, sw)
		for _, obj := range []client.Object{p, sw} {
			err := env.Client.Get(ctx(), clientKey(obj), obj)
			if err == nil {
				labels := obj.GetLabels()
				labels[bpav1.ClusterLabel] = "elsewhere"
				obj.SetLabels(labels)
				err = env.Client.Update(ctx(), obj)
			}
			if err == nil || !strings.Contains(err.Error(), `metadata.labels.cluster: Invalid value: "elsewhere": the cluster label cannot change once set`) {
				t.Errorf("%s: relabelled: %v; want a refusal naming the label", obj.GetName(), err)
			}
		}
	})

	t.Run("package names ending with + are real names", func(t *testing.T) {
		sw := loadSoftware(t, ns)
		sw.Name = "plus-names"
		sw.Spec.MasterSoftware = []bpav1.SoftwarePackage{{Name: "g++"}, {Name: "libsigc++", Version: "2.12.0-1"}}
		create(t, sw)
		bad := loadSoftware(t, ns)
		bad.Name = "minus-name"
		bad.Spec.MasterSoftware = []bpav1.SoftwarePackage{{Name: "openssh-server-"}}
		if err := env.Client.Create(ctx(), bad); err == nil || !strings.Contains(err.Error(), "openssh-server-") {
			t.Errorf("a package name ending with -: %v; want a refusal (apt would remove it)", err)
		}
	})

	t.Run("a kubespray image the administrator does not allow: Stalled naming the field, no Workflow", func(t *testing.T) {
		p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
		p.Name, p.Labels[bpav1.ClusterLabel] = "own-image", "own-image"
		p.Spec.Kubespray = &bpav1.KubesprayOptions{Image: "attacker/kubespray:latest"}
		create(t, p)
		expectRefused(t, p, "spec.kubespray.image")
	})

	t.Run("the compiler refuses an unknown plugin: Stalled, no Workflow", func(t *testing.T) {
		p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
		p.Name, p.Labels[bpav1.ClusterLabel] = "unknown-plugin", "unknown-plugin"
		p.Spec.KUDPlugins = []string{"multus", "no-such-plugin"}
		create(t, p)
		expectRefused(t, p, "spec.KUDPlugins[1]")
		// Fixing the spec compiles the new generation.
		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.KUDPlugins = []string{"multus"} })
		waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 2)
	})
}

// TestOneProvisioningPerCluster: a second Provisioning of a cluster in a namespace runs
// nothing and says which one holds the cluster; once that one is gone it runs.
func TestOneProvisioningPerCluster(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	first := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	first.Name = "first"
	create(t, first)
	waitWorkflow(t, bpav1.WorkflowKindProvisioning, first, 1)
	second := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	second.Name = "second"
	create(t, second)
	eventually(t, "the second Stalled, naming the first", func() error {
		cur := getProvisioning(t, second)
		if !strings.Contains(cur.Status.Message, "cluster cluster-abc belongs to Provisioning first of this namespace") {
			return fmt.Errorf("message %q", cur.Status.Message)
		}
		return expectConditions(cur.Status.Conditions, 1, "False/ClusterTaken", "absent", "True/ClusterTaken")
	})
	if n := len(workflowsOf(t, bpav1.WorkflowKindProvisioning, second)); n != 0 {
		t.Errorf("the second has %d Workflows", n)
	}
	deleteAndWait(t, first)
	waitWorkflow(t, bpav1.WorkflowKindProvisioning, second, 1)
}

// expectRefused waits for a Provisioning Stalled by the compiler with a message naming field,
// and checks that no Workflow was created for it.
// expectUnsupported waits for p to be Stalled at generation for an unsupported change, its
// message holding message.
func expectUnsupported(t *testing.T, p *bpav1.Provisioning, generation int64, message string) {
	t.Helper()
	eventually(t, "Stalled for an unsupported change, saying "+message, func() error {
		cur := getProvisioning(t, p)
		if !strings.Contains(cur.Status.Message, message) {
			return fmt.Errorf("message %q, want it to say %q", cur.Status.Message, message)
		}
		return expectConditions(cur.Status.Conditions, generation, "False/UnsupportedChange", "absent", "True/UnsupportedChange")
	})
}

func expectRefused(t *testing.T, p *bpav1.Provisioning, field string) {
	t.Helper()
	eventually(t, "Stalled with the compiler's message naming "+field, func() error {
		cur := getProvisioning(t, p)
		if !strings.Contains(cur.Status.Message, field) || cur.Status.ObservedGeneration != 1 {
			return fmt.Errorf("status %+v", cur.Status.WorkflowStatus)
		}
		return expectConditions(cur.Status.Conditions, 1, "False/InvalidSpec", "absent", "True/InvalidSpec")
	})
	consistently(t, "no Workflow", time.Second, func() error {
		if n := len(workflowsOf(t, bpav1.WorkflowKindProvisioning, p)); n != 0 {
			return fmt.Errorf("%d Workflows for a refused spec", n)
		}
		return nil
	})
}

// deleteAndWait deletes a CR and waits until its finalizer has let it go, playing Argo's part:
// a Workflow the deletion asks to stop stops.
func deleteAndWait(t *testing.T, p *bpav1.Provisioning) {
	t.Helper()
	if err := env.Client.Delete(ctx(), getProvisioning(t, p)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Provisioning gone", func() error {
		for _, wf := range workflowsOf(t, bpav1.WorkflowKindProvisioning, p) {
			if wf.Spec.Shutdown != "" && !wf.Status.Phase.Completed() {
				setWorkflowStatus(t, &wf, func(st *wfv1.WorkflowStatus) { st.Phase, st.FinishedAt = wfv1.WorkflowFailed, metav1.Now() })
			}
		}
		if err := env.Client.Get(ctx(), client.ObjectKeyFromObject(p), &bpav1.Provisioning{}); !isNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

// succeedOffloaded drives a Workflow to Succeeded with its node status offloaded to Argo's
// database: phase and progress, no nodes to read hosts from.
func succeedOffloaded(t *testing.T, wf *wfv1.Workflow) {
	t.Helper()
	setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
		st.Phase, st.Progress = wfv1.WorkflowSucceeded, "5/5"
		st.StartedAt, st.FinishedAt = metav1.NewTime(time.Now().Add(-time.Minute)), metav1.Now()
		st.OffloadNodeStatusVersion = "fnv:1"
		st.Nodes = nil
	})
}

// claim makes a BareMetalHost from the sample site, claimed by consumer (nil: free).
func claim(t *testing.T, ns, name string, consumer *corev1.ObjectReference) *metal3v1alpha1.BareMetalHost {
	t.Helper()
	for _, h := range testutil.SiteHosts(t) {
		if h.Name != name {
			continue
		}
		host := &metal3v1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Name: h.Name, Namespace: ns, Labels: h.Labels}, Spec: h.Spec}
		host.Spec.ConsumerRef = consumer
		create(t, host)
		return host
	}
	t.Fatalf("no host %s in the sample site", name)
	return nil
}

func consumerOf(t *testing.T, h *metal3v1alpha1.BareMetalHost) *corev1.ObjectReference {
	t.Helper()
	cur := &metal3v1alpha1.BareMetalHost{}
	if err := env.Client.Get(ctx(), client.ObjectKeyFromObject(h), cur); err != nil {
		t.Fatal(err)
	}
	return cur.Spec.ConsumerRef
}

// runsClusterYML says whether a run-kubespray's command line (kubesprayArgs) is a plain
// cluster.yml run.
func runsClusterYML(args string) bool {
	return strings.HasPrefix(args, "/bin/sh -c "+runkubespray.ClusterScript+" "+runkubespray.Name+" --inventory=")
}

func kubesprayArgs(wf *wfv1.Workflow) string {
	t := wf.GetTemplateByName("run-kubespray")
	if t == nil || t.Container == nil {
		return ""
	}
	return strings.Join(append(append([]string{}, t.Container.Command...), t.Container.Args...), " ")
}

// abcSite is cluster-abc's Provisioning in a namespace of its own, with a running controller:
// its three hosts claimed by it, as discover-hosts leaves them, and node-5 free.
type abcSite struct {
	ns       string
	p        *bpav1.Provisioning
	consumer *corev1.ObjectReference
	hosts    map[string]*metal3v1alpha1.BareMetalHost
}

func newABCSite(t *testing.T) *abcSite { return newABCSiteWith(t, func(*bpav1.Provisioning) {}) }

// newABCSiteWith is newABCSite with the Provisioning changed by mutate before it is created.
func newABCSiteWith(t *testing.T, mutate func(*bpav1.Provisioning)) *abcSite {
	t.Helper()
	ns := newNamespace(t)
	startManager(t)
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	mutate(p)
	create(t, p)
	p = getProvisioning(t, p)
	s := &abcSite{ns: ns, p: p, consumer: placement.ConsumerFor(p).Ref(), hosts: map[string]*metal3v1alpha1.BareMetalHost{}}
	for _, name := range []string{"node-1", "node-3", "node-4"} {
		s.hosts[name] = claim(t, ns, name, s.consumer)
	}
	s.hosts["node-5"] = claim(t, ns, "node-5", nil) // free until worker-3 claims it
	return s
}

// atAll is at for a list.
func (s *abcSite) atAll(hs []bpav1.Node) []bpav1.Node { return s.at(hs...) }

// at places hosts of the sample site ("metal3/node-1") in the site's namespace.
func (s *abcSite) at(hs ...bpav1.Node) []bpav1.Node {
	out := slices.Clone(hs)
	for i := range out {
		out[i].BareMetalHost = s.ns + "/" + strings.TrimPrefix(out[i].BareMetalHost, "metal3/")
	}
	return out
}

// TestProvisioningDay2 takes one cluster through the day-2 changes in turn, each stage from where
// the one before left it: workers added and removed, the changes refused, masters added and
// removed, a certificate renewal, and deletion.
func TestProvisioningDay2(t *testing.T) {
	site := newABCSite(t)
	elsewhere := claim(t, site.ns, "node-6", &corev1.ObjectReference{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "Metal3Machine", Namespace: site.ns, Name: "m"})

	wf1 := waitWorkflow(t, bpav1.WorkflowKindProvisioning, site.p, 1)
	if args := kubesprayArgs(wf1); !runsClusterYML(args) {
		t.Errorf("generation 1 runs %q, want cluster.yml", args)
	}
	provisioned(t, wf1, site.at(abcHosts...))
	waitReady(t, site.p, 1)

	day2Workers(t, site)
	day2Refusals(t, site)
	day2Masters(t, site)
	day2Renewal(t, site)
	p, hosts := site.p, site.hosts
	t.Run("delete: every claim released, the other consumer's untouched", func(t *testing.T) {
		deleteAndWait(t, p)
		for name, h := range hosts {
			if ref := consumerOf(t, h); ref != nil {
				t.Errorf("%s still claimed by %v", name, ref)
			}
		}
		if consumerOf(t, elsewhere) == nil {
			t.Errorf("node-6, claimed by another consumer, was released")
		}
	})
}

// day2Workers: generations 2 and 3, a worker added (scale.yml) and removed (remove-node.yml).
func day2Workers(t *testing.T, site *abcSite) {
	p, hosts, consumer, atNS := site.p, site.hosts, site.consumer, site.atAll
	t.Run("a worker added: scale.yml limited to it", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) {
			cur.Spec.Workers = append(cur.Spec.Workers, bpav1.HostEntry{"worker-3": {MACAddress: "00:e1:ba:ce:df:bd"}})
		})
		wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 2)
		if args := kubesprayArgs(wf); !strings.HasPrefix(args, "/bin/sh -c "+runkubespray.LimitedScript) || !strings.Contains(args, "run-kubespray worker-3 scale.yml ") {
			t.Errorf("generation 2 runs %q, want scale.yml limited to worker-3", args)
		}
		// discover-hosts claims the new host, as it does for real.
		patchSpec(t, hosts["node-5"], func(h *metal3v1alpha1.BareMetalHost) { h.Spec.ConsumerRef = consumer })
		provisioned(t, wf, atNS(append(slices.Clone(abcHosts),
			bpav1.Node{Label: "worker-3", Role: "worker", BareMetalHost: "metal3/node-5", MAC: "00:e1:ba:ce:df:bd"})))
		waitReady(t, p, 2)
	})

	t.Run("a worker removed: remove-node.yml for it, its claim released", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.Workers = cur.Spec.Workers[:2] })
		wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 3)
		if args := kubesprayArgs(wf); !strings.Contains(args, "--extra-vars=node=worker-3") || !strings.Contains(args, " run-kubespray worker-3 remove-node.yml ") {
			t.Errorf("generation 3 runs %q, want remove-node.yml for worker-3", args)
		}
		if args := strings.Join(wf.GetTemplateByName("discover-hosts").Container.Args, " "); !strings.Contains(args, "--leaving=worker-3") {
			t.Errorf("discover-hosts runs %q, want worker-3 added to the inventory as leaving", args)
		}
		if consumerOf(t, hosts["node-5"]) == nil {
			t.Errorf("node-5 was released before the removal ran")
		}
		provisioned(t, wf, atNS(append(slices.Clone(abcHosts),
			bpav1.Node{Label: "worker-3", Role: "worker", BareMetalHost: "metal3/node-5", MAC: "00:e1:ba:ce:df:bd"})))
		if cur := waitReady(t, p, 3); len(cur.Status.Hosts) != 3 {
			t.Errorf("hosts after the removal = %+v, want the 3 left", cur.Status.Hosts)
		}
		eventually(t, "node-5 released", func() error {
			if ref := consumerOf(t, hosts["node-5"]); ref != nil {
				return fmt.Errorf("still claimed by %v", ref)
			}
			return nil
		})
		for _, name := range []string{"node-1", "node-3", "node-4"} {
			if consumerOf(t, hosts[name]) == nil {
				t.Errorf("%s, still in the cluster, was released", name)
			}
		}
	})

}

// day2Refusals: generations 4 and 5, changes one kubespray run cannot make, refused.
func day2Refusals(t *testing.T, site *abcSite) {
	p, hosts := site.p, site.hosts
	t.Run("workers added and removed at once: Stalled, no Workflow", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) {
			cur.Spec.Workers = []bpav1.HostEntry{cur.Spec.Workers[0], {"worker-4": {MACAddress: "00:e1:ba:ce:df:bd"}}}
		})
		expectUnsupported(t, p, 4, "worker-4 added and worker-2 removed")
		if wfs := workflowsOf(t, bpav1.WorkflowKindProvisioning, p); len(wfs) != 3 {
			t.Errorf("%d Workflows, want 3: none for the refused generation", len(wfs))
		}
	})

	t.Run("a master replaced: Stalled, no Workflow, its host kept", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) {
			cur.Spec.Workers = []bpav1.HostEntry{cur.Spec.Workers[0], {"worker-2": {MACAddress: "00:c2:12:03:62:b2"}}}
			cur.Spec.Masters = []bpav1.HostEntry{{"master-2": {MACAddress: "00:e1:ba:ce:df:bd"}}}
		})
		expectUnsupported(t, p, 5, "masters master-2 added and master removed in one generation: add the new masters in one generation and remove the others in the next")
		consistently(t, "no Workflow for the masters change, node-1 kept", time.Second, func() error {
			if wfs := workflowsOf(t, bpav1.WorkflowKindProvisioning, p); len(wfs) != 3 {
				return fmt.Errorf("%d Workflows, want 3: none for the refused generation", len(wfs))
			}
			if consumerOf(t, hosts["node-1"]) == nil {
				return fmt.Errorf("node-1, a live control-plane host, was released")
			}
			return nil
		})
	})

}

// day2Masters: generations 6 to 9, a cluster.yml run, a master added, the first master
// refused, another master removed.
func day2Masters(t *testing.T, site *abcSite) {
	p, hosts, consumer, ns, atNS := site.p, site.hosts, site.consumer, site.ns, site.atAll
	t.Run("a cluster.yml run releases no claim, even of a host it did not place", func(t *testing.T) {
		// A host this Provisioning holds but no node runs on (left by an earlier placement).
		stray := claim(t, ns, "node-2", consumer)
		patchSpec(t, p, func(cur *bpav1.Provisioning) {
			cur.Spec.Masters = []bpav1.HostEntry{{"master": {MACAddress: "00:c5:16:05:61:b2"}}}
			cur.Spec.KUDPlugins = []string{"multus"}
		})
		wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 6)
		if args := kubesprayArgs(wf); !runsClusterYML(args) || strings.Contains(args, "--limit") {
			t.Errorf("generation 6 runs %q, want cluster.yml", args)
		}
		provisioned(t, wf, atNS(abcHosts))
		waitReady(t, p, 6)
		consistently(t, "node-2 kept", time.Second, func() error {
			if consumerOf(t, stray) == nil {
				return fmt.Errorf("node-2 released by a cluster.yml run")
			}
			return nil
		})
		hosts["node-2"] = stray
	})

	masterTwo := bpav1.Node{Label: "master-2", Role: "master", BareMetalHost: "metal3/node-2", MAC: "00:c2:14:06:61:b5"}
	t.Run("a master added: cluster.yml with it last, etcd checked on either side", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) {
			cur.Spec.Masters = append(cur.Spec.Masters, bpav1.HostEntry{"master-2": {MACAddress: masterTwo.MAC}})
		})
		wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 7)
		// cluster.yml after the reset of a join an earlier attempt left half done, on master-2.
		if args := kubesprayArgs(wf); !strings.HasPrefix(args, "/bin/sh -c "+runkubespray.ResetFailedJoinsScript) ||
			!strings.HasSuffix(args, " run-kubespray master-2 --inventory=/inputs/hosts.ini --private-key=/etc/bpa/ssh/id --become --extra-vars=@/inputs/extra-vars.json --extra-vars=credentials_dir=/tmp/credentials") ||
			!strings.Contains(args, "--limit=\"$limit\" \"$playbook\" || exit") {
			t.Errorf("generation 7 runs %q, want master-2's half-done join reset, then cluster.yml", args)
		}
		render := strings.Join(wf.GetTemplateByName("render-inventory").Container.Args, " ")
		if !strings.Contains(render, "--control-plane=master,master-2 --etcd=master") {
			t.Errorf("render-inventory runs %q, want master first, master-2 last, etcd kept odd", render)
		}
		if tasks := taskNames(wf); !slices.Contains(tasks, "check-etcd-before") || !slices.Contains(tasks, "check-etcd-after") || slices.Contains(tasks, "update-control-plane") {
			t.Errorf("tasks %v, want etcd checked before and after, and no update (etcd does not grow)", tasks)
		}
		provisioned(t, wf, atNS(append(slices.Clone(abcHosts), masterTwo)))
		rec := waitReady(t, p, 7).Status.Provisioned
		if rec == nil || !slices.Equal(rec.ControlPlane, []string{"master", "master-2"}) || !slices.Equal(rec.Etcd, []string{"master"}) {
			t.Errorf("recorded %+v, want control plane [master master-2], etcd [master]", rec)
		}
	})

	t.Run("the first master removed: Stalled, saying kubespray cannot", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.Masters = cur.Spec.Masters[1:] })
		expectUnsupported(t, p, 8, "master master is the cluster's first master")
	})

	t.Run("a master that is not the first removed: remove-node.yml, its claim released", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) {
			cur.Spec.Masters = []bpav1.HostEntry{{"master": {MACAddress: "00:c5:16:05:61:b2"}}}
		})
		wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 9)
		if args := kubesprayArgs(wf); !strings.Contains(args, "--extra-vars=node=master-2") || !strings.Contains(args, " run-kubespray master-2 remove-node.yml ") {
			t.Errorf("generation 9 runs %q, want remove-node.yml for master-2", args)
		}
		if tasks := taskNames(wf); !slices.Contains(tasks, "check-etcd-before") || !slices.Contains(tasks, "check-etcd-after") {
			t.Errorf("tasks %v, want etcd checked before and after", tasks)
		}
		provisioned(t, wf, atNS(append(slices.Clone(abcHosts), masterTwo)))
		rec := waitReady(t, p, 9).Status.Provisioned
		if rec == nil || !slices.Equal(rec.ControlPlane, []string{"master"}) || !slices.Equal(rec.Etcd, []string{"master"}) {
			t.Errorf("recorded %+v, want control plane [master], etcd [master]", rec)
		}
		eventually(t, "node-2 released", func() error {
			if ref := consumerOf(t, hosts["node-2"]); ref != nil {
				return fmt.Errorf("still claimed by %v", ref)
			}
			return nil
		})
	})

}

// day2Renewal: generation 10, the certificates renewed.
func day2Renewal(t *testing.T, site *abcSite) {
	p, atNS := site.p, site.atAll
	t.Run("certificates renewed: upgrade-cluster.yml for the control plane, the expiry read into the status", func(t *testing.T) {
		patchSpec(t, p, func(cur *bpav1.Provisioning) { cur.Spec.CertificateRenewal = "2026-11" })
		wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 10)
		if tasks := taskNames(wf); !slices.Contains(tasks, "renew-certificates") || slices.Contains(tasks, "run-kubespray") || !slices.Contains(tasks, "read-certificates") {
			t.Errorf("tasks %v, want renew-certificates in place of run-kubespray, and read-certificates", tasks)
		}
		report := `{"masters":[{"node":"master","certificates":[{"name":"apiserver","expires":"2027-11-26T11:00:00Z"},{"name":"ca","expires":"2036-11-23T11:00:00Z","authority":true}]}]}`
		provisioned(t, wf, atNS(abcHosts), node(wf.Name, "read-certificates", wfv1.NodeSucceeded, time.Now(), map[string]string{"certificates-report": report}))
		cur := waitReady(t, p, 10)
		if c := cur.Status.Certificates; c == nil || c.NextToExpire != "apiserver on master" || c.NextExpiry.UTC().Format(time.RFC3339) != "2027-11-26T11:00:00Z" {
			t.Errorf("status.certificates = %+v", c)
		}
		if rec := cur.Status.Provisioned; rec == nil || rec.CertificateRenewal != "2026-11" {
			t.Errorf("recorded %+v, want the renewal's value", rec)
		}
	})

}

// TestDeletionStopsTheRunFirst: a Provisioning deleted while kubespray runs keeps its hosts
// until Argo has stopped the run; only then are they released and the CR let go.
func TestDeletionStopsTheRunFirst(t *testing.T) {
	site := newABCSite(t)
	p, hosts := site.p, site.hosts
	wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
	setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) { st.Phase = wfv1.WorkflowRunning })
	eventually(t, "the run mirrored as running", func() error {
		if phase := getProvisioning(t, p).Status.Phase; phase != bpav1.PhaseRunning {
			return fmt.Errorf("phase %q", phase)
		}
		return nil
	})
	if err := env.Client.Delete(ctx(), getProvisioning(t, p)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "argo stop asked, the deletion waiting for it", func() error {
		cur := &wfv1.Workflow{}
		if err := env.Client.Get(ctx(), clientKey(wf), cur); err != nil {
			return err
		}
		if cur.Spec.Shutdown != wfv1.ShutdownStrategyStop {
			return fmt.Errorf("shutdown %q, want Stop", cur.Spec.Shutdown)
		}
		c := meta.FindStatusCondition(getProvisioning(t, p).Status.Conditions, bpav1.ConditionReconciling)
		if c == nil || c.Reason != bpav1.ReasonStoppingWorkflows || !strings.Contains(c.Message, "waiting for Workflow "+wf.Name+" to stop") {
			return fmt.Errorf("Reconciling %+v", c)
		}
		return nil
	})
	consistently(t, "hosts kept and the CR there while the run stops", time.Second, func() error {
		for _, name := range []string{"node-1", "node-3", "node-4"} {
			if consumerOf(t, hosts[name]) == nil {
				return fmt.Errorf("%s released while kubespray may still run on it", name)
			}
		}
		return env.Client.Get(ctx(), clientKey(p), &bpav1.Provisioning{})
	})
	// Argo stops it: the Workflow fails.
	setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
		st.Phase, st.FinishedAt, st.Message = wfv1.WorkflowFailed, metav1.Now(), "Stopped with strategy 'Stop'"
	})
	eventually(t, "the Provisioning gone once its run stopped", func() error {
		if err := env.Client.Get(ctx(), clientKey(p), &bpav1.Provisioning{}); !isNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	for _, name := range []string{"node-1", "node-3", "node-4"} {
		if ref := consumerOf(t, hosts[name]); ref != nil {
			t.Errorf("%s still claimed by %v", name, ref)
		}
	}
}

// taskNames are the names of the tasks of a Workflow's entrypoint DAG.
func taskNames(wf *wfv1.Workflow) []string {
	var names []string
	if t := wf.GetTemplateByName(wf.Spec.Entrypoint); t != nil && t.DAG != nil {
		for _, task := range t.DAG.Tasks {
			names = append(names, task.Name)
		}
	}
	return names
}
