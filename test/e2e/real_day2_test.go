//go:build e2e

package e2e_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
)

// The upgrade test's two versions: the 1.33 release the cluster starts at (kubespray v2.30.0
// knows 1.33.0 to 1.33.7; 1.33.4 is the newest whose modules the proxy all serves:
// hack/tools/kubespray-downloads/kubernetes-1.33.4), and kubespray v2.30.0's default.
const (
	upgradeFrom = "1.33.4"
	upgradeTo   = "1.34.3"
)

// The day-2 runs of the control plane on the real cluster. Each is a test of its own, on a
// cluster of its own, because each takes about two hours of this machine under emulation (a
// whole cluster.yml 40–45 minutes, an upgrade-cluster.yml of the control plane about an hour),
// and a session here has three: together in one run they would never be seen to their end.

// TestRealClusterUpgradeUnderArgo: a real cluster upgraded one minor version through the
// product, in two waves with one approval. A master and a worker are installed at 1.33.4 by the
// real cluster.yml; raising spec.kubernetesVersion to 1.34.3 with serial 1 and approval perWave
// compiles the upgrade Workflow: the real upgrade-cluster.yml for the control plane, then the
// worker's wave behind an Argo suspend node. The test checks, through the kubeconfig
// fetch-kubeconfig stored, that the master runs 1.34.3 and the worker 1.33.4 while the wave
// waits (and the Provisioning's status says so), resumes it with `argo resume` as an operator
// does, and ends with every node Ready at 1.34.3 and the version recorded.
// make e2e-cluster E2E_CLUSTER=upgrade runs it (BPA_REAL_DAY2=upgrade and both downloads builds).
func TestRealClusterUpgradeUnderArgo(t *testing.T) {
	archive, built := realClusterBuilds(t, "BPA_REAL_DAY2=upgrade",
		"a real upgrade on emulated machines takes hours: make e2e-cluster E2E_CLUSTER=upgrade runs it (BPA_REAL_DAY2=upgrade)")
	from := os.Getenv("BPA_KUBESPRAY_DOWNLOADS_FROM")
	if from == "" {
		t.Fatalf("the downloads of Kubernetes %s are not built: make e2e-cluster E2E_CLUSTER=upgrade builds them (hack/kubespray-downloads.sh %s) and sets BPA_KUBESPRAY_DOWNLOADS_FROM", upgradeFrom, upgradeFrom)
	}
	// Seconds here rather than 48 minutes into cluster.yml, at kubeadm init.
	requireKubeadmPreflight(t, from)
	s := setUp(t, siteConfig{
		machines:  []testvm.Spec{realMaster("node-1"), realWorker("node-2")},
		options:   []testvm.SiteOption{testvm.WithGateway()},
		kubespray: archive, downloads: built, moreDownloads: []string{from},
	})
	p := s.realProvisioning(s.hosts, built, from)
	p.Spec.KubernetesVersion = upgradeFrom
	kube, _ := s.applyRealCluster(p, "no plugin", "master", "worker")
	if got, want := s.provisioning(p).Status.KubeletVersions, "v"+upgradeFrom+" ×2"; got != want {
		t.Errorf("status.kubeletVersions %q, want %q", got, want)
	}

	say(t, "upgrade: spec.kubernetesVersion %s, serial 1, approval perWave", upgradeTo)
	s.wait = realClusterWait
	defer func() { s.wait = stageWait }()
	upgrade := time.Now()
	patch(t, s.c, p, func(p *bpav1.Provisioning) {
		p.Spec.KubernetesVersion = upgradeTo
		p.Spec.Upgrade = &bpav1.UpgradePolicy{Serial: ptr.To(intstr.FromInt32(1)), Approval: bpav1.UpgradeApprovalPerWave}
	})
	want := map[string]string{"master": upgradeTo, "worker": upgradeFrom}
	wf := s.waitForApproval(p, "upgrade-wave-1", "worker")
	say(t, "upgrade-wave-1 waits for approval after %.0f s; the nodes' kubelets: %s", time.Since(upgrade).Seconds(), checkVersions(t, kube, want))
	s.argo("resume", wf)
	want["worker"] = upgradeTo
	s.waitProvisioningReady(p, 2)
	state := testkubespray.WaitForNodes(t, kube, "after the upgrade,", "master", "worker")
	say(t, "upgraded to %s: apply → every node Ready %.0f s (with the approval); %s", upgradeTo, time.Since(upgrade).Seconds(), state)
	say(t, "the Workflow's steps: %s", stepTimes(s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, 2)))
	say(t, "the nodes' kubelets: %s", checkVersions(t, kube, want))
	got := s.provisioning(p)
	if want := "v" + upgradeTo + " ×2"; got.Status.KubeletVersions != want {
		t.Errorf("status.kubeletVersions %q, want %q", got.Status.KubeletVersions, want)
	}
	if got.Status.Provisioned == nil || got.Status.Provisioned.KubernetesVersion != upgradeTo {
		t.Errorf("status.provisioned %+v, want Kubernetes %s recorded", got.Status.Provisioned, upgradeTo)
	}
}

// The control plane's changes have two tests, each on a cluster of its own, so that each fits
// in a session of 3 hours on a machine with nothing cached: a master added to a master alone,
// and master2 removed from a cluster made with two masters. Added and then removed in one test,
// they do not fit.
//
// On either, two masters and no worker (the masters take the worker role): three masters fit
// in memory (3 GiB each) but not on 2 cores, on which every emulated master runs an API server;
// even a master, a worker and master2 starve the first master while master2 joins, until
// kubectl's TLS handshakes with it time out and kubeadm's join fails. Each master has one
// emulated CPU (oneCPUMaster). etcd stays one member, on the first master, as it keeps an odd
// number. Neither test renews certificates while master2 is there: with two API servers on it,
// the first master's etcd is too slow for a restarted API server's post-start check of the
// Services' IPs and ports, which kube-apiserver gives one minute, hard-coded
// (start-service-ip-repair-controllers). The renewal has its own test on a master and a worker
// (TestRealCertificateRenewalUnderArgo).

// TestRealMasterAddedUnderArgo: a master added to a real cluster through the product. A master
// alone is installed by the real cluster.yml, and the site's second machine is added as master2
// (the real cluster.yml, master2 last in kube_control_plane), etcd's membership checked before
// and after.
// make e2e-cluster E2E_CLUSTER=master-added runs it (BPA_REAL_DAY2=master-added).
func TestRealMasterAddedUnderArgo(t *testing.T) {
	s, built := twoMasterSite(t, "BPA_REAL_DAY2=master-added",
		"a master added on emulated machines takes hours: make e2e-cluster E2E_CLUSTER=master-added runs it (BPA_REAL_DAY2=master-added)")
	p := s.realProvisioning(s.hosts[:1], built)
	oneCPUMasterVars(p)
	kube, _ := s.applyRealCluster(p, "no plugin, no worker (the master takes the worker role)", "master")
	s.addMaster(p, kube, s.hosts[1], 2)
}

// TestRealMasterRemovedUnderArgo: a master removed from a real cluster through the product. The
// real cluster.yml installs two masters, master2 second in kube_control_plane and out of etcd,
// and master2 is removed (the real remove-node.yml), etcd's membership checked before and after.
// make e2e-cluster E2E_CLUSTER=master-removed runs it (BPA_REAL_DAY2=master-removed).
func TestRealMasterRemovedUnderArgo(t *testing.T) {
	s, built := twoMasterSite(t, "BPA_REAL_DAY2=master-removed",
		"a master removed on emulated machines takes hours: make e2e-cluster E2E_CLUSTER=master-removed runs it (BPA_REAL_DAY2=master-removed)")
	p := s.realProvisioning(s.hosts[:1], built)
	p.Spec.Masters = append(p.Spec.Masters, bpav1.HostEntry{"master2": {MACAddress: s.hosts[1].MAC}})
	oneCPUMasterVars(p)
	kube, _ := s.applyRealCluster(p, "no plugin, no worker (the masters take the worker role), etcd on master alone", "master", "master2")
	checkRecord(t, s.provisioning(p), []string{"master", "master2"}, []string{"master"})
	s.checkJoinResets(s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, 1), "master2")
	s.removeMaster(p, kube, s.hosts[1], 2)
}

// twoMasterSite skips t unless gate holds (as realClusterBuilds), and starts the
// site of the control plane's tests: two machines of oneCPUMaster's size; it returns the suite
// and the build of what kubespray downloads.
func twoMasterSite(t *testing.T, gate, skip string) (*suite, string) {
	t.Helper()
	archive, built := realClusterBuilds(t, gate, skip)
	s := setUp(t, siteConfig{
		machines:  []testvm.Spec{oneCPUMaster("node-1"), oneCPUMaster("node-2")},
		options:   []testvm.SiteOption{testvm.WithGateway()},
		kubespray: archive, downloads: built,
	})
	return s, built
}

// TestRealCertificateRenewalUnderArgo: a real cluster's control-plane certificates renewed
// through the product. A master and a worker are installed by the real cluster.yml, and
// read-certificates has read the master's certificates; a new spec.certificateRenewal renews
// them (renewCertificates).
// make e2e-cluster E2E_CLUSTER=renewal runs it (BPA_REAL_DAY2=renewal).
func TestRealCertificateRenewalUnderArgo(t *testing.T) {
	archive, built := realClusterBuilds(t, "BPA_REAL_DAY2=renewal",
		"a renewal on emulated machines takes hours: make e2e-cluster E2E_CLUSTER=renewal runs it (BPA_REAL_DAY2=renewal)")
	s := setUp(t, siteConfig{
		machines:  []testvm.Spec{realMaster("node-1"), realWorker("node-2")},
		options:   []testvm.SiteOption{testvm.WithGateway()},
		kubespray: archive, downloads: built,
	})
	p := s.realProvisioning(s.hosts, built)
	s.applyRealCluster(p, "no plugin", "master", "worker")
	s.renewCertificates(p, 2, "master", "worker")
}

// addMaster adds host as a second master of p, a cluster of one master alone, in p's given
// generation: the run checks etcd's membership before and after kubespray,
// and the status records the control plane and etcd as kubespray's inventory then holds them.
func (s *suite) addMaster(p *bpav1.Provisioning, kube kubernetes.Interface, host *testHost, generation int64) {
	t := s.t
	t.Helper()
	s.wait = realClusterWait
	defer func() { s.wait = stageWait }()
	say(t, "add master2 (%s): cluster.yml with master2 last in kube_control_plane; etcd stays one member", host.Name)
	added := time.Now()
	patch(t, s.c, p, func(p *bpav1.Provisioning) {
		p.Spec.Masters = append(p.Spec.Masters, bpav1.HostEntry{"master2": {MACAddress: host.MAC}})
	})
	checkTasks(t, s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, generation), "check-etcd-before", "run-kubespray", "check-run-kubespray", "check-etcd-after")
	s.waitProvisioningReady(p, generation)
	state := testkubespray.WaitForNodes(t, kube, "after master2 joined,", "master", "master2")
	wf := s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, generation)
	say(t, "the Workflow's steps: %s", stepTimes(wf))
	s.checkJoinResets(wf, "master2")
	say(t, "a master added: apply → every node Ready %.0f s; %s", time.Since(added).Seconds(), state)
	n, err := kube.CoreV1().Nodes().Get(ctx(), "master2", metav1.GetOptions{})
	must(t, err)
	if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; !ok {
		t.Errorf("master2 joined without the control-plane role: %v", n.Labels)
	}
	checkRecord(t, s.provisioning(p), []string{"master", "master2"}, []string{"master"})
}

// removeMaster removes master2, on host, from p, a cluster of master and master2, in p's given
// generation: the real remove-node.yml, with master2 answering (drained, reset, deleted), etcd's
// membership checked before and after, the record and the host's claim following.
func (s *suite) removeMaster(p *bpav1.Provisioning, kube kubernetes.Interface, host *testHost, generation int64) {
	t := s.t
	t.Helper()
	s.wait = realClusterWait
	defer func() { s.wait = stageWait }()
	say(t, "remove master2 (%s): remove-node.yml drains it, resets it and deletes it; etcd keeps its one member", host.Name)
	removed := time.Now()
	patch(t, s.c, p, func(p *bpav1.Provisioning) {
		p.Spec.Masters = slices.DeleteFunc(p.Spec.Masters, func(e bpav1.HostEntry) bool { _, ok := e["master2"]; return ok })
	})
	checkTasks(t, s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, generation), "check-leaving-nodes", "check-etcd-before", "run-kubespray", "check-run-kubespray", "check-etcd-after")
	s.waitProvisioningReady(p, generation)
	if got := s.removalVars(p, generation); got != gracefulRemovalVars {
		t.Errorf("master2 answering, check-leaving-nodes chose %s", got)
	}
	state := testkubespray.WaitForNodes(t, kube, "after master2's removal,", "master")
	say(t, "the Workflow's steps: %s", stepTimes(s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, generation)))
	say(t, "a master removed: apply → gone from the cluster %.0f s; %s", time.Since(removed).Seconds(), state)
	// systemctl is-active exits non-zero for a stopped unit; the if ends the command with 0
	// either way, so an error is the SSH session's.
	out, err := host.run("systemctl is-active kubelet; if sudo -n test -e /etc/kubernetes/manifests/kube-apiserver.yaml; then echo manifest; fi")
	if err != nil {
		t.Errorf("reading master2 (%s) after remove-node.yml: %v", host.Name, err)
	} else if strings.Contains(out, "manifest") || strings.HasPrefix(strings.TrimSpace(out), "active") {
		t.Errorf("after remove-node.yml, master2 (%s) still has its kubelet or its API server's manifest: %q", host.Name, out)
	}
	checkRecord(t, s.provisioning(p), []string{"master"}, []string{"master"})
	s.eventually("master2's host released", func() error { return s.claims(p, 1) })
}

// checkTasks fails t for each of tasks that wf's DAG lacks.
func checkTasks(t *testing.T, wf *wfv1.Workflow, tasks ...string) {
	t.Helper()
	for _, task := range tasks {
		if !slices.ContainsFunc(wf.Spec.Templates, func(tpl wfv1.Template) bool {
			return tpl.DAG != nil && slices.ContainsFunc(tpl.DAG.Tasks, func(d wfv1.DAGTask) bool { return d.Name == task })
		}) {
			t.Errorf("the Workflow %s has no task %s", wf.Name, task)
		}
	}
}

// renewCertificates renews the real control plane's certificates through a new
// spec.certificateRenewal: kubespray's renewal (runkubespray.RenewCertificatesPlaybook) on
// every master, after which read-certificates reads later expiries on every master (each
// certificate but the authorities, master by master, and so the first to expire) and
// fetch-kubeconfig has stored the renewed admin kubeconfig, which still reaches every node
// (nodes) of the cluster. generation is the renewal's generation of the Provisioning.
func (s *suite) renewCertificates(p *bpav1.Provisioning, generation int64, nodes ...string) {
	t := s.t
	t.Helper()
	s.wait = realClusterWait
	defer func() { s.wait = stageWait }()
	before := s.provisioning(p).Status.Certificates
	_, oldKubeconfig, _ := s.storedCluster()
	if before == nil || before.NextExpiry == nil {
		t.Fatalf("status.certificates before the renewal: %+v", before)
	}
	say(t, "renew the control plane's certificates: spec.certificateRenewal, kubespray's renewal on every master")
	renewed := time.Now()
	// kubeadm's notAfter is to the second: a renewal in the same second would not show.
	time.Sleep(time.Second)
	patch(t, s.c, p, func(p *bpav1.Provisioning) { p.Spec.CertificateRenewal = "e2e" })
	s.waitProvisioningReady(p, generation)
	wf := s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, generation)
	say(t, "the Workflow's steps: %s", stepTimes(wf))
	after := s.provisioning(p).Status.Certificates
	if after == nil || after.NextExpiry == nil || !after.NextExpiry.After(before.NextExpiry.Time) {
		t.Errorf("status.certificates after the renewal: %+v, want a later first expiry than %s", after, before.NextExpiry)
	} else {
		say(t, "certificates renewed in %.0f s: the first to expire now %s on %s (was %s on %s)", time.Since(renewed).Seconds(),
			after.NextToExpire, after.NextExpiry.UTC().Format(time.RFC3339), before.NextToExpire, before.NextExpiry.UTC().Format(time.RFC3339))
	}
	if left := unrenewed(before, after); len(left) > 0 {
		t.Errorf("certificates not renewed (the same expiry or none after the renewal): %s", strings.Join(left, ", "))
	}
	_, newKubeconfig, renewedKube := s.storedCluster()
	if string(newKubeconfig) == string(oldKubeconfig) {
		t.Errorf("the kubeconfig Secret was not refreshed with the renewed admin.conf")
	}
	testkubespray.WaitForNodes(t, renewedKube, "through the renewed kubeconfig,", nodes...)
}

// unrenewed names each certificate before lists, on every master, that after does not list with
// a later expiry ("master2 apiserver"): kubeadm renews all but the authorities, so a master the
// renewal skipped shows here even when another master's renewed certificates expire first.
func unrenewed(before, after *bpav1.CertificatesStatus) []string {
	expiries := map[string]time.Time{}
	if after != nil {
		for _, m := range after.Masters {
			for _, c := range m.Certificates {
				expiries[m.Node+" "+c.Name] = c.Expires.Time
			}
		}
	}
	var left []string
	for _, m := range before.Masters {
		if m.Unreadable != "" {
			left = append(left, m.Node+" (unreadable before: "+m.Unreadable+")")
		}
		for _, c := range m.Certificates {
			if c.Authority {
				continue
			}
			if e, ok := expiries[m.Node+" "+c.Name]; !ok || !e.After(c.Expires.Time) {
				left = append(left, m.Node+" "+c.Name)
			}
		}
	}
	return left
}

// checkRecord checks the control plane and etcd p's status records.
func checkRecord(t *testing.T, p *bpav1.Provisioning, controlPlane, etcd []string) {
	t.Helper()
	r := p.Status.Provisioned
	if r == nil || !slices.Equal(r.ControlPlane, controlPlane) || !slices.Equal(r.Etcd, etcd) {
		t.Errorf("status.provisioned %+v, want controlPlane %v and etcd %v", r, controlPlane, etcd)
	}
}

// waitForApproval waits until p's upgrade Workflow waits before wave, on node, as its status
// and its Reconciling condition say, and returns the Workflow's name.
func (s *suite) waitForApproval(p *bpav1.Provisioning, wave, node string) string {
	s.t.Helper()
	var name string
	s.eventually(wave+" waiting for approval", func() error {
		got := s.provisioning(p)
		u := got.Status.Upgrade
		if u == nil || u.Waiting != wave {
			return fmt.Errorf("status.upgrade %+v", u)
		}
		if !slices.Equal(u.Nodes, []string{node}) {
			return fmt.Errorf("status.upgrade.nodes %v, want %s", u.Nodes, node)
		}
		c := meta.FindStatusCondition(got.Status.Conditions, bpav1.ConditionReconciling)
		if c == nil || c.Reason != bpav1.ReasonWaitingForApproval || !strings.Contains(c.Message, "argo resume ") {
			return fmt.Errorf("Reconciling %+v", c)
		}
		name = got.Status.WorkflowName
		return nil
	})
	return name
}

// checkVersions checks each node's kubelet version through kube against want (node →
// version) and returns them as "node vX, ...".
func checkVersions(t *testing.T, kube kubernetes.Interface, want map[string]string) string {
	t.Helper()
	nodes, err := kube.CoreV1().Nodes().List(ctx(), metav1.ListOptions{})
	must(t, err)
	var out []string
	for _, n := range nodes.Items {
		v := n.Status.NodeInfo.KubeletVersion
		out = append(out, n.Name+" "+v)
		if w, ok := want[n.Name]; !ok || v != "v"+w {
			t.Errorf("node %s runs kubelet %s, want v%s", n.Name, v, w)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// TestUnrenewedCertificates: the renewal's check names what a renewal left, master by master,
// without machines.
func TestUnrenewedCertificates(t *testing.T) {
	at := func(minutes int) metav1.Time {
		return metav1.NewTime(time.Date(2027, 11, 29, 0, minutes, 0, 0, time.UTC))
	}
	master := func(node string, minutes int) bpav1.MasterCertificates {
		return bpav1.MasterCertificates{Node: node, Certificates: []bpav1.CertificateExpiry{
			{Name: "apiserver", Expires: at(minutes)}, {Name: "ca", Expires: at(0), Authority: true},
		}}
	}
	status := func(masters ...bpav1.MasterCertificates) *bpav1.CertificatesStatus {
		return &bpav1.CertificatesStatus{Masters: masters}
	}
	for _, tc := range []struct {
		name          string
		before, after *bpav1.CertificatesStatus
		want          []string
	}{
		{"every master renewed", status(master("master", 0), master("master2", 10)), status(master("master", 20), master("master2", 20)), nil},
		// master2 joined after master's certificates were made: the first expiry moves later
		// even when the renewal stopped at master.
		{"the second master skipped", status(master("master", 0), master("master2", 10)), status(master("master", 20), master("master2", 10)), []string{"master2 apiserver"}},
		{"a master gone after", status(master("master", 0), master("master2", 10)), status(master("master", 20)), []string{"master2 apiserver"}},
		{"nothing read after", status(master("master", 0)), nil, []string{"master apiserver"}},
		{"unreadable before", status(bpav1.MasterCertificates{Node: "master", Unreadable: "ssh: refused"}), status(master("master", 20)), []string{"master (unreadable before: ssh: refused)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unrenewed(tc.before, tc.after); !slices.Equal(got, tc.want) {
				t.Errorf("unrenewed %v, want %v", got, tc.want)
			}
		})
	}
}

// oneCPUMaster is a master of one emulated CPU, for the run of two masters. QEMU's software
// emulation runs each emulated CPU on a thread of its own and knows nothing of the guest's
// locks: two masters of two CPUs each are four threads on the host's 2 cores, and a guest CPU
// spinning on a lock whose holder's thread the host has set aside can spin until the host runs
// that thread again. With two masters of 2 CPUs, the first master's API server, starved, fails
// its probes and is killed while master2 joins; with one CPU each, one thread each, it is not.
// Its one CPU is still saturated, which the slow-node settings' longer kubectl requests allow
// for (testkubespray.SlowNodes).
func oneCPUMaster(name string) testvm.Spec {
	m := realMaster(name)
	m.CPUs = 1
	return m
}

// oneCPUMasterVars fits p's cluster to oneCPUMaster's machines.
//   - kubeadm's preflight wants 2 CPUs on a control-plane node, at init and at a master's join:
//     NumCPU joins the ignored preflight errors.
//   - kubespray reserves 100m of CPU for Kubernetes and 500m for the system in every kubelet's
//     configuration (kube_cpu_reserved, system_cpu_reserved; its kube_reserved and
//     system_reserved say only whether those get cgroups of their own). Of one CPU that left
//     400m for pods, and the control plane's static Pods request 550m: the kubelet refused to
//     admit the controller manager ("no set of running pods found to reclaim resources: cpu"),
//     and kubeadm init waited for it in vain. With
//     no reservation, the CPU holds the control plane, flannel and CoreDNS's two Pods (870m).
func oneCPUMasterVars(p *bpav1.Provisioning) {
	vars := p.Spec.Kubespray.ExtraVars
	vars["kubeadm_ignore_preflight_errors"] = bpav1.ExtraVar(append(slices.Clone(testkubespray.KubeadmIgnoredPreflightErrors), "NumCPU"))
	vars["kube_cpu_reserved"] = bpav1.ExtraVar("0m")
	vars["system_cpu_reserved"] = bpav1.ExtraVar("0m")
}
