//go:build e2e

package e2e_test

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/timeline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

// realClusterWait bounds a real generation of the Provisioning, apply to Ready: a whole
// cluster.yml on emulated machines took 34–42 minutes by hand on two of them, 70 minutes under
// Argo on three, and more than 89 with the workers' QEMU niced. It does not cover a first try
// that fails late and Argo's retry: one failed at 59 minutes, and its retry, on the running
// cluster, had not left preinstall an hour later.
const realClusterWait = 2 * time.Hour

// masterState is what the master's control plane was doing, read when a real-cluster test
// fails: the machines' disks go with the test's TempDir, and the API server that stopped
// answering kubespray's remove-node.yml left no other trace. kubespray runs etcd as a systemd
// service, not a static pod, so its journal is read; the kubelet's probe failures and kills
// say why the API server restarted (the last container's log says only how the latest died:
// its fatal one-minute "initial IP and Port allocation check" on a starved master). That search
// reads the kubelet's whole journal, so it comes last: on a starved master it may outlast
// RunWithin's limit, which keeps what came before. It holds no single quote: it runs inside them.
const masterState = `uptime; free -m
top -b -n 1 -o %CPU 2>&1 | sed -n 7,17p
crictl ps -a 2>&1 | head -20
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  id=$(crictl ps -a -q --name "$c" 2>/dev/null | head -1)
  [ -n "$id" ] && { echo "== $c, the last lines of its latest container"; crictl logs --tail 15 "$id" 2>&1; }
done
echo "== etcd"; journalctl -u etcd --no-pager -n 15 2>&1
echo "== kubelet"; journalctl -u kubelet --no-pager -n 30 2>&1
echo "== OOM kills (dmesg)"; dmesg 2>&1 | grep -iE "out of memory|oom-kill" | tail -5
echo "== the kubelet on the control plane: probe failures, kills, back-offs"
journalctl -u kubelet --no-pager 2>&1 | grep -E "Probe failed|Killing container|CrashLoopBackOff" | grep -E "kube-apiserver|kube-controller-manager|kube-scheduler" | tail -15`

// logMasterStateOnFailure logs masterState from host, the master, if the test fails; it runs
// before the machines stop and gives the master two minutes to answer.
func logMasterStateOnFailure(t testing.TB, host *testHost) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		out, err := testvm.RunWithin(host.ssh, "sudo -n sh -c '"+masterState+"'", 2*time.Minute)
		t.Logf("the master's control plane when the test failed (%v):\n%s", err, out)
	})
}

// TestRealClusterUnderArgo: the product makes a real cluster. An offline Provisioning of a master
// and its workers is applied; the controller compiles it and Argo's workflow-controller runs every
// step as a pod on the node, the real kubespray's whole cluster.yml among them, on the site's
// machines, offline from the site's mirror (everything kubespray downloads built here and
// uploaded with the product's upload commands). Every node becomes Ready, seen through the
// kubeconfig fetch-kubeconfig stored; the KUD plugin's step applies its manifest into the real
// cluster, read back through that kubeconfig; a Software installs with the nodes' own apt; then
// a live worker is removed (the real remove-node.yml), added back (the real scale.yml --limit)
// and a powered-off worker removed, each change a new generation of the Provisioning. The day-2
// runs of the control plane (real_day2_test.go) are tests of their own, each on a cluster of its
// own, so that each fits in the hours a session of this machine has. With BPA_REAL_CLUSTER=ready
// the cluster is a master and one worker, and apply → every node Ready is compared with kubespray
// run by hand on machines of the same sizes (TestRealClusterOnVirtualMachines, which records its
// figure first): the product's overhead; the run ends there. make e2e-cluster runs it
// (BPA_REAL_CLUSTER=1); it takes hours.
// With BPA_PLAYGROUND (make demo CLUSTER=real) it leaves the cluster it made, without the
// changes, running for the operator.
func TestRealClusterUnderArgo(t *testing.T) {
	archive, built := realClusterBuilds(t, "BPA_REAL_CLUSTER",
		"a whole cluster.yml on emulated machines takes the better part of an hour: make e2e-cluster runs it (BPA_REAL_CLUSTER=1)")
	// The run by hand's machines: a master (kubeadm's preflight wants 2 CPUs) and a worker
	// (BPA_REAL_CLUSTER=ready compares the two runs to Ready, on the same machines). When the day
	// goes on past Ready, the cluster starts with a second worker: the live removal needs a worker
	// to leave and one to stay, and adding the removed one back is the scale run, so that one
	// scale run serves both (measured: the third node made cluster.yml 4182 s in its pod against
	// 2511–2558 s for two, where a scale run took 2401–2744 s; the live removal starts 78 minutes
	// after apply). Kubernetes' network plugin finds its interface by the default route.
	machines := []testvm.Spec{realMaster("node-1"), realWorker("node-2")}
	untilReady := os.Getenv("BPA_REAL_CLUSTER") == "ready"
	// The playground (make demo CLUSTER=real) leaves the cluster as it is made, for the operator.
	changes := !untilReady && os.Getenv("BPA_PLAYGROUND") == ""
	nodes := []string{"master", "worker"}
	if changes {
		machines = append(machines, realWorker("node-3"))
		nodes = append(nodes, "worker2")
	}
	s := setUp(t, siteConfig{machines: machines, options: []testvm.SiteOption{testvm.WithGateway()}, kubespray: archive, downloads: built})
	p := s.realProvisioning(s.hosts[:len(nodes)], built)
	p.Spec.KUDPlugins = []string{"multus"}
	kube, applyToReady := s.applyRealCluster(p, "plugin multus", nodes...)
	secret, kubeconfig, _ := s.storedCluster()
	if changes {
		say(t, "three nodes, where the run by hand makes two: no overhead ratio (BPA_REAL_CLUSTER=ready measures it)")
	} else {
		compareWithHandRun(t, applyToReady)
	}
	// The Workflow's exit handler read the nodes through the stored kubeconfig.
	if got, want := s.provisioning(p).Status.KubeletVersions, fmt.Sprintf("v1.34.3 ×%d", len(nodes)); got != want {
		t.Errorf("status.kubeletVersions %q, want %q", got, want)
	}
	// read-certificates read the master's kubeadm certificates with the real kubeadm: a year
	// for the leaves kubespray's kubeadm made minutes ago.
	if c := s.provisioning(p).Status.Certificates; c == nil || c.NextExpiry == nil || time.Until(c.NextExpiry.Time) < 360*24*time.Hour || !strings.HasSuffix(c.NextToExpire, " on master") {
		t.Errorf("status.certificates = %+v, want the master's certificates, the first expiring in about a year", c)
	} else {
		say(t, "status.certificates: %d certificates on the master, the first to expire %s on %s", len(c.Masters[0].Certificates), c.NextToExpire, c.NextExpiry.UTC().Format(time.RFC3339))
	}
	if untilReady {
		say(t, "BPA_REAL_CLUSTER=ready: the run ends with the cluster Ready (the plugin, Software, the added worker and the removals are not run)")
		return
	}

	cm, err := kube.CoreV1().ConfigMaps("default").Get(ctx(), "kud-plugin-stand-in", metav1.GetOptions{})
	if err != nil || cm.Data["applied-by"] != "bpa-plugin template" {
		t.Errorf("through the stored kubeconfig, what the KUD plugin's step applied into the real cluster: %v %v", cm, err)
	} else {
		say(t, "KUD plugin multus: its step applied its manifest from the site's mirror into the real cluster (read back through %s)", secret)
	}

	sw := &bpav1.Software{
		ObjectMeta: metav1.ObjectMeta{Name: "real-software", Namespace: namespace, Labels: map[string]string{bpav1.ClusterLabel: cluster}},
		Spec: bpav1.SoftwareSpec{
			MasterSoftware: []bpav1.SoftwarePackage{{Name: "htop"}},
			WorkerSoftware: []bpav1.SoftwarePackage{{Name: "jq", Version: "1.6-2"}},
			SSH:            &bpav1.SSHAccess{User: testvm.AdminUser},
		},
	}
	say(t, "kubectl apply Software %s: htop on the master, jq 1.6-2 on the workers", sw.Name)
	installed := time.Now()
	must(t, s.c.Create(ctx(), sw))
	s.waitSoftwareReady(sw, 1, len(nodes))
	for i, want := range []string{"htop=3.2.2-2", "jq=1.6-2", "jq=1.6-2"}[:len(nodes)] {
		out, err := s.hosts[i].run("dpkg-query -W -f '${Package}=${Version}' " + strings.Split(want, "=")[0])
		if err != nil || out != want {
			t.Errorf("%s's dpkg says %q (%v), want %s", s.hosts[i].Name, out, err, want)
		}
	}
	say(t, "Software installed with the nodes' own apt in %.0f s", time.Since(installed).Seconds())

	if changes {
		s.removeAndAdd(p, sw, kube, applyToReady, 2)
	}

	if dir := os.Getenv("BPA_PLAYGROUND"); dir != "" {
		s.keep(dir, p.Name, kubeconfig)
	}
}

// removeAndAdd goes on with the real cluster's day, on a cluster of a master and two workers:
// worker2 removed while it runs (the real remove-node.yml, drained and reset), added back as a
// site adds a returned server (the real scale.yml --limit, in the pod that runs facts.yml first),
// then the first worker powered off and removed without a reset (the last worker cannot leave:
// the masters would become workers, a cluster.yml run after remove-node.yml, not built). After
// each, the cluster through the stored kubeconfig has exactly the nodes the Provisioning names,
// every one Ready. whole is the first run's apply → every node Ready, the added worker's figure
// is compared with; the changes are the Provisioning's generations from first on.
func (s *suite) removeAndAdd(p *bpav1.Provisioning, sw *bpav1.Software, kube kubernetes.Interface, whole time.Duration, first int64) {
	t := s.t
	t.Helper()
	s.wait = realClusterWait
	defer func() { s.wait = stageWait }()

	say(t, "remove worker2 (%s) while it runs: remove-node.yml drains it, resets it and deletes it", s.hosts[2].Name)
	removed := time.Now()
	patch(t, s.c, p, func(p *bpav1.Provisioning) {
		p.Spec.Workers = slices.DeleteFunc(p.Spec.Workers, func(e bpav1.HostEntry) bool { _, ok := e["worker2"]; return ok })
	})
	s.waitProvisioningReady(p, first)
	if got := s.removalVars(p, first); got != gracefulRemovalVars {
		t.Errorf("worker2 answering, check-leaving-nodes chose %s", got)
	}
	state := testkubespray.WaitForNodes(t, kube, "after worker2's removal,", "master", "worker")
	say(t, "the Workflow's steps: %s", stepTimes(s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, first)))
	say(t, "a live worker removed: apply → gone from the cluster %.0f s; %s", time.Since(removed).Seconds(), state)
	if out, _ := s.hosts[2].run("systemctl is-active kubelet"); strings.TrimSpace(out) == "active" {
		t.Errorf("after remove-node.yml, worker2 (%s) still runs a kubelet", s.hosts[2].Name)
	}
	s.eventually("worker2's host released", func() error { return s.claims(p, 2) })
	s.waitSoftwareReady(sw, 1, 2)

	say(t, "add worker2 (%s) back after its reset: a scale run of the real scale.yml --limit=worker2, after facts.yml over every node", s.hosts[2].Name)
	added := time.Now()
	patch(t, s.c, p, func(p *bpav1.Provisioning) {
		p.Spec.Workers = append(p.Spec.Workers, bpav1.HostEntry{"worker2": {MACAddress: s.hosts[2].MAC}})
	})
	wf := s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, first+1)
	if c := wf.GetTemplateByName("run-kubespray").Container; len(c.Args) < 2 || c.Args[1] != "worker2" ||
		!strings.Contains(strings.Join(c.Command, " "), `--limit="$limit" scale.yml`) {
		t.Errorf("generation %d runs %q %q, want a scale run for worker2", first+1, c.Command, c.Args)
	}
	s.waitProvisioningReady(p, first+1)
	state = testkubespray.WaitForNodes(t, kube, "after the scale run,", "master", "worker", "worker2")
	scaled := time.Since(added)
	say(t, "the Workflow's steps: %s", stepTimes(s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, first+1)))
	say(t, "a reset worker added back through the controller and Argo: apply → every node Ready %.0f s, against %.0f s for the whole cluster.yml (%.2f); %s",
		scaled.Seconds(), whole.Seconds(), scaled.Seconds()/whole.Seconds(), state)
	s.waitSoftwareReady(sw, 1, 3)

	say(t, "power off worker (%s), then remove it: check-leaving-nodes finds it down, remove-node.yml removes it without a reset", s.hosts[1].Name)
	s.hosts[1].PowerOff()
	removed = time.Now()
	patch(t, s.c, p, func(p *bpav1.Provisioning) {
		p.Spec.Workers = slices.DeleteFunc(p.Spec.Workers, func(e bpav1.HostEntry) bool { _, ok := e["worker"]; return ok })
	})
	s.waitProvisioningReady(p, first+2)
	if got := s.removalVars(p, first+2); got != `{"reset_nodes":false,"allow_ungraceful_removal":true}` {
		t.Errorf("worker powered off, check-leaving-nodes chose %s", got)
	}
	s.checkUngracefulEvent(p, "worker")
	state = testkubespray.WaitForNodes(t, kube, "after the powered-off worker's removal,", "master", "worker2")
	say(t, "the Workflow's steps: %s", stepTimes(s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, first+2)))
	say(t, "a powered-off worker removed: apply → gone from the cluster %.0f s; %s", time.Since(removed).Seconds(), state)
	s.eventually("worker's host released", func() error { return s.claims(p, 2) })
	s.waitSoftwareReady(sw, 1, 2)
}

// workerEntries are the Provisioning's workers on hosts: "worker", then "worker2".
func workerEntries(hosts []*testHost) []bpav1.HostEntry {
	var entries []bpav1.HostEntry
	for i, h := range hosts {
		label := "worker"
		if i > 0 {
			label = fmt.Sprintf("worker%d", i+1)
		}
		entries = append(entries, bpav1.HostEntry{label: {MACAddress: h.MAC}})
	}
	return entries
}

// realClusterBuilds skips t unless gate holds (skip says why, and how to run it), and returns
// the real kubespray's image archive and the build of what it downloads; the suite needs root.
// gate is a variable that must be set ("BPA_REAL_CLUSTER") or a variable and the value it must
// have ("BPA_REAL_DAY2=upgrade": make e2e-cluster runs one day-2 run at a time).
func realClusterBuilds(t *testing.T, gate, skip string) (archive, built string) {
	t.Helper()
	name, want, exact := strings.Cut(gate, "=")
	if got := os.Getenv(name); got == "" || (exact && got != want) {
		t.Skip(skip)
	}
	archive, built = testkubespray.TestClusterBuild(t)
	if os.Geteuid() != 0 {
		t.Fatal("the end-to-end suite needs root (network namespaces, containers)")
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	return archive, built
}

// realMaster and realWorker are the real cluster's machines: a master gets 2 CPUs, which
// kubeadm's control-plane preflight wants, and kubespray asserts at least 1 GiB on every node.
func realMaster(name string) testvm.Spec { return testvm.Spec{Name: name, CPUs: 2, MemoryMiB: 3072} }

func realWorker(name string) testvm.Spec { return testvm.Spec{Name: name, CPUs: 1, MemoryMiB: 2048} }

// realProvisioning is the real cluster's offline Provisioning: hosts[0] its master, the others
// its workers ("worker", "worker2", …), with the test cluster's kubespray options and the
// checksums of the downloads builds (one per Kubernetes version); the site's package mirror
// serves what kubespray installs on them.
func (s *suite) realProvisioning(hosts []*testHost, builds ...string) *bpav1.Provisioning {
	s.t.Helper()
	p := &bpav1.Provisioning{
		ObjectMeta: metav1.ObjectMeta{Name: "real", Namespace: namespace, Labels: map[string]string{bpav1.ClusterLabel: cluster}},
		Spec: bpav1.ProvisioningSpec{
			Masters:      []bpav1.HostEntry{{"master": {MACAddress: hosts[0].MAC}}},
			Workers:      workerEntries(hosts[1:]),
			HostSelector: &bpav1.HostSelector{Namespaces: []string{namespace}},
			SSH:          &bpav1.SSHAccess{User: testvm.AdminUser},
			Offline:      ptr.To(true),
			Kubespray:    &bpav1.KubesprayOptions{ExtraVars: s.realClusterVars(builds...)},
		},
	}
	s.servePackagesKubesprayInstalls(p)
	logMasterStateOnFailure(s.t, hosts[0])
	return p
}

// applyRealCluster applies p, the real cluster's first generation (what sets it apart from
// others said in about), waits until the Provisioning is Ready and, through the kubeconfig
// fetch-kubeconfig stored, the cluster's nodes are exactly nodes, every one Ready; it returns
// a client through that kubeconfig and the time from apply to every node Ready.
func (s *suite) applyRealCluster(p *bpav1.Provisioning, about string, nodes ...string) (kubernetes.Interface, time.Duration) {
	t := s.t
	t.Helper()
	version := p.Spec.KubernetesVersion
	if version == "" {
		version = "kubespray's default Kubernetes"
	}
	say(t, "kubectl apply Provisioning %s: %s, %s, %s, offline, the test cluster's options (flannel), the build's checksums, the slow-node settings",
		p.Name, strings.Join(nodes, ", "), version, about)
	apply := time.Now()
	must(t, s.c.Create(ctx(), p))
	s.wait = realClusterWait
	s.waitProvisioningReady(p, 1)
	s.wait = stageWait
	ready := time.Since(apply)
	say(t, "where the time went, from the Workflow's own node times:\n%s", timeline.Of(s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, 1), apply))
	_, _, kube := s.storedCluster()
	state := testkubespray.WaitForNodes(t, kube, "through the stored kubeconfig, once the Provisioning is Ready,", nodes...)
	applyToReady := time.Since(apply)
	say(t, "the real cluster through the controller and Argo: apply → Provisioning Ready %.0f s, → every node Ready %.0f s; %s",
		ready.Seconds(), applyToReady.Seconds(), state)
	return kube, applyToReady
}

// servePackagesKubesprayInstalls serves the site's package mirror of what the real kubespray's
// system_packages role installs (kubespray itself says which, asked on the machines with p's
// inventory) and adds it to every host's apt sources.
func (s *suite) servePackagesKubesprayInstalls(p *bpav1.Provisioning) {
	s.t.Helper()
	var nodes []bpav1.Node
	var knownHosts strings.Builder
	for i, e := range append(slices.Clone(p.Spec.Masters), p.Spec.Workers...) {
		for label, entry := range e {
			role := "worker"
			if i < len(p.Spec.Masters) {
				role = "master"
			}
			at := slices.IndexFunc(s.hosts, func(h *testHost) bool { return h.MAC == entry.MACAddress })
			if at < 0 {
				s.t.Fatalf("no server of the site has %s's MAC %s", label, entry.MACAddress)
			}
			h := s.hosts[at]
			nodes = append(nodes, bpav1.Node{Label: label, Role: bpav1.RolesOf(role), BareMetalHost: namespace + "/" + h.Name, MAC: h.MAC, IP: h.IP})
			knownHosts.WriteString(xknownhosts.Line([]string{h.IP}, h.HostKey) + "\n")
		}
	}
	// What kubespray installs does not depend on where it downloads from: the question is asked
	// online, before the controller runs (whose options hold the site's mirror).
	online := p.DeepCopy()
	online.Spec.Offline = ptr.To(false)
	inventory, extraVars, err := renderinventory.Render(online, nodes, renderinventory.Options{})
	must(s.t, err)
	in := testkubespray.Inputs{Inventory: inventory, ExtraVars: extraVars, KnownHosts: []byte(knownHosts.String()), Key: s.clusterKey}
	packages := testkubespray.Packages(s.t, online, in)
	status, err := s.hosts[0].run("cat /var/lib/dpkg/status")
	must(s.t, err)
	mirror := s.site.Serve(s.t, testkubespray.PackageMirror(s.t, packages, []byte(status)))
	for _, h := range s.hosts {
		must(s.t, h.addSource("kubespray-mirror", "deb [trusted=yes] "+mirror+" ./"))
	}
	say(s.t, "the site's package mirror serves what kubespray's system_packages installs: %s", strings.Join(packages, " "))
}

// realClusterVars are a real cluster's kubespray options: the test cluster's, with the
// checksums of the downloads builds (one per Kubernetes version) and the slow-node settings;
// kubespray asserts each node has a nameserver, and the site's network has none of its own, so
// the nodes are given the test's side of it, as the run by hand gives them.
func (s *suite) realClusterVars(builds ...string) map[string]bpav1.ExtraVarValue {
	s.t.Helper()
	vars, err := testcluster.Vars(builds...)
	must(s.t, err)
	maps.Copy(vars, testkubespray.SlowNodes())
	vars["upstream_dns_servers"] = bpav1.ExtraVar([]string{s.site.TestSide()})
	return vars
}

// storedCluster is the kubeconfig fetch-kubeconfig stored, with its Secret's name and a client
// of the cluster through it.
func (s *suite) storedCluster() (string, []byte, kubernetes.Interface) {
	s.t.Helper()
	sec := &corev1.Secret{}
	name := cluster + bpav1.KubeconfigSecretSuffix
	must(s.t, s.c.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: name}, sec))
	cfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data[bpav1.KubeconfigSecretKey])
	must(s.t, err)
	if want := "https://" + s.hosts[0].IP + ":6443"; cfg.Host != want {
		s.t.Errorf("the stored kubeconfig reaches %s, want the master's %s", cfg.Host, want)
	}
	cfg.Timeout = 30 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	must(s.t, err)
	return "Secret " + name, sec.Data[bpav1.KubeconfigSecretKey], c
}

// stepTimes is each of wf's pods, in the order they started, with how long it ran.
func stepTimes(wf *wfv1.Workflow) string {
	var pods []wfv1.NodeStatus
	for _, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod {
			pods = append(pods, n)
		}
	}
	slices.SortFunc(pods, func(a, b wfv1.NodeStatus) int { return a.StartedAt.Compare(b.StartedAt.Time) })
	var out []string
	for _, n := range pods {
		out = append(out, fmt.Sprintf("%s %.0f s", n.DisplayName, n.FinishedAt.Sub(n.StartedAt.Time).Seconds()))
	}
	return strings.Join(out, ", ")
}

// compareWithHandRun logs the product's overhead: apply → every node Ready against the run by
// hand's cluster.yml → every node Ready, when that run recorded its figure. It is a measurement,
// recorded in docs/performance.md, not an assertion: speed targets are not timed tests.
func compareWithHandRun(t *testing.T, applyToReady time.Duration) {
	t.Helper()
	hand, err := testkubespray.RecordedHandRun()
	must(t, err)
	if hand == nil {
		say(t, "no figure of kubespray run by hand is recorded (make e2e-cluster runs TestRealClusterOnVirtualMachines first): no overhead ratio")
		return
	}
	say(t, "the product's overhead: %.0f s through the controller and Argo against %.0f s by hand (kubespray %s, measured %s): ratio %.3f (docs/performance.md records it)",
		applyToReady.Seconds(), hand.Seconds, hand.Kubespray, hand.Measured.Format(time.RFC3339), applyToReady.Seconds()/hand.Seconds)
}
