//go:build vm

package vm_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	checkleavingnodespod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checkleavingnodes/pod"
	discoverhostspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts/pod"
	fetchkubeconfigpod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig/pod"
	installsoftwarepod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/kudplugin"
	pinhostkeyspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
	renderinventorypod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory/pod"
	resolveclusterhostspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveclusterhosts/pod"
	resolveleasespod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveleases/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

// TestRealClusterOnVirtualMachines: the real kubespray's whole cluster.yml installs Kubernetes
// on the site's machines, offline from the site's mirror (everything it downloads built here,
// uploaded with the product's upload commands, served by its file server), run as
// run-kubespray runs it; fetch-kubeconfig stores the real admin kubeconfig, and through it
// every node is Ready and CoreDNS answers. Under TCG this takes the better part of an hour:
// make e2e-cluster runs it (BPA_REAL_CLUSTER=1; "ready" ends it there, once it has recorded
// its figure), make test does not.
func TestRealClusterOnVirtualMachines(t *testing.T) {
	if os.Getenv("BPA_REAL_CLUSTER") == "" {
		t.Skip("a whole cluster.yml on emulated machines takes the better part of an hour: make e2e-cluster runs it (BPA_REAL_CLUSTER=1)")
	}
	_, built := testkubespray.TestClusterBuild(t)
	start := time.Now()
	// A master (kubeadm's preflight wants 2 CPUs), a worker, and a spare racked later: the
	// worker the Provisioning adds.
	s := startVMSite(t, "10.254.0", []testvm.Spec{
		{Name: "vm-master", CPUs: 2, MemoryMiB: 3072}, {Name: "vm-worker", CPUs: 1, MemoryMiB: 2048}, {Name: "vm-worker2", CPUs: 1, MemoryMiB: 2048},
	}, testkubespray.SlowNodes(),
		// Kubernetes' network plugin finds its interface by the default route.
		testvm.WithGateway())
	ctx := context.Background()
	online, onlineVars, err := renderinventorypod.Run(ctx, s.env.Client, s.ref, s.addressed, renderinventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.servePackagesKubesprayInstalls(t, online, onlineVars)
	mirror := serveKubesprayDownloads(t, s.site, built)
	inventory, extraVars := renderOffline(t, s.p, s.addressed, mirror, built)
	t.Logf("the site is ready for kubespray in %.0f s: the machines booted, placed, addressed, their keys pinned; its mirror serves kubespray's packages, files and images", time.Since(start).Seconds())

	byHand := time.Now()
	out := runRealKubespray(t, s.env, s.ns, s.p, inventory, extraVars, s.keyFile, testkubespray.Playbook{Path: "cluster.yml", MayFail: true})
	for _, host := range []string{"master", "worker"} {
		if !testkubespray.OKRecap(out, host) {
			t.Fatalf("the real cluster.yml on %s:\n%s\n%s", host, testkubespray.Failures(out), testkubespray.LastLines(out, 30))
		}
	}

	// fetch-kubeconfig: the real admin.conf kubeadm wrote on the master, through sudo.
	run := fetchkubeconfigpod.KubeconfigRun{Master: "master", User: testvm.AdminUser}
	if err := fetchkubeconfigpod.Run(ctx, s.env.Client, s.ref, run, s.addressed, fetchkubeconfigpod.DefaultAdminConf, s.sshOpts); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{}
	if err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "cluster-abc-kubeconfig"}, sec); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data[bpav1.KubeconfigSecretKey])
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://" + s.master.IP + ":6443"; cfg.Host != want {
		t.Errorf("the stored kubeconfig reaches %s, want %s", cfg.Host, want)
	}
	cfg.Timeout = 30 * time.Second
	cluster, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ready := testkubespray.WaitForNodes(t, cluster, "through the stored kubeconfig, after cluster.yml", "master", "worker")
	// The figure the run through the controller and Argo is compared with: kubespray by hand,
	// from the start of cluster.yml until every node is Ready.
	hand := testkubespray.HandRun{Seconds: time.Since(byHand).Seconds(), Kubespray: testcluster.KubesprayVersion, Measured: time.Now()}
	if err := testkubespray.RecordHandRun(hand); err != nil {
		t.Fatal(err)
	}
	t.Logf("the real cluster: cluster.yml to Ready %.0f s, %.0f s in all; through the stored kubeconfig: %s",
		hand.Seconds, time.Since(start).Seconds(), ready)
	if os.Getenv("BPA_REAL_CLUSTER") == "ready" {
		t.Log("BPA_REAL_CLUSTER=ready: the run ends with the cluster Ready (the plugin, Software, the added worker and the removals are not run)")
		return
	}

	kudPluginIntoTheCluster(t, s, sec.Data[bpav1.KubeconfigSecretKey], cluster)
	softwareOnTheNodes(t, s)

	// A worker added: the spare racked, the Provisioning's next generation through the steps,
	// and the real scale.yml --limit as a scale run runs it (facts.yml over every node first).
	added := time.Now()
	worker2 := s.spares[0]
	s.rack(t, worker2)
	s.p.Spec.Workers = append(s.p.Spec.Workers, bpav1.HostEntry{"worker2": {MACAddress: worker2.MAC}})
	s.nextGeneration(t, nil)
	inventory, extraVars = renderOffline(t, s.p, s.addressed, mirror, built)
	scale := runkubespray.Plan{Mode: runkubespray.ModeScale, Nodes: []string{"worker2"}}
	out = runRealKubespray(t, s.env, s.ns, s.p, inventory, extraVars, s.keyFile, testkubespray.Playbook{Plan: &scale, MayFail: true})
	if !testkubespray.OKRecap(out, "worker2") {
		t.Fatalf("the real scale.yml --limit=worker2:\n%s\n%s", testkubespray.Failures(out), testkubespray.LastLines(out, 30))
	}
	t.Logf("a worker added, rack to Ready: %.0f s; %s", time.Since(added).Seconds(),
		testkubespray.WaitForNodes(t, cluster, "after scale.yml", "master", "worker", "worker2"))

	// The added worker removed while it runs: reset, drained and deleted by the real
	// remove-node.yml, with what check-leaving-nodes chose for a node that answers.
	removed := time.Now()
	s.removeWorker(t, "worker2", mirror, built, false)
	t.Logf("a live worker removed: %.0f s; %s", time.Since(removed).Seconds(),
		testkubespray.WaitForNodes(t, cluster, "after remove-node.yml", "master", "worker"))
	if got := testvm.Run(t, s.clients[worker2.Name], "systemctl is-active kubelet || true"); strings.TrimSpace(got) == "active" {
		t.Errorf("after remove-node.yml the removed worker still runs a kubelet: %q", got)
	}

	// The first worker powered off, then removed: ungracefully, without a reset, as
	// check-leaving-nodes chooses for a node that does not answer.
	s.worker.PowerOff()
	removed = time.Now()
	s.removeWorker(t, "worker", mirror, built, true)
	t.Logf("a powered-off worker removed: %.0f s; %s", time.Since(removed).Seconds(),
		testkubespray.WaitForNodes(t, cluster, "after remove-node.yml of the powered-off worker", "master"))
}

// nextGeneration takes the Provisioning's changed spec through the steps before kubespray, as
// its next Workflow does: discover-hosts (keeping leaving, a remove run's nodes), resolve-leases,
// pin-host-keys.
func (s *vmSite) nextGeneration(t *testing.T, leaving []string) {
	t.Helper()
	ctx := context.Background()
	// The steps wrote the Provisioning's status since: the spec changed on what is there now.
	spec := s.p.Spec
	if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(s.p), s.p); err != nil {
		t.Fatal(err)
	}
	// The controller mirrors a finished run's hosts into the status, where the next remove run
	// finds which host each leaving node is.
	s.p.Status.Hosts = s.addressed
	if err := s.env.Client.Status().Update(ctx, s.p); err != nil {
		t.Fatal(err)
	}
	s.p.Spec = spec
	if err := s.env.Client.Update(ctx, s.p); err != nil {
		t.Fatal(err)
	}
	s.ref.Generation = s.p.Generation
	var err error
	if s.placed, err = discoverhostspod.Run(ctx, s.env.Client, s.ref, leaving); err != nil {
		t.Fatal(err)
	}
	if s.addressed, err = resolveleasespod.Run(ctx, s.env.Client, s.ref, s.placed, s.site.LeaseFile, leases.FormatDnsmasq); err != nil {
		t.Fatal(err)
	}
	if err := pinhostkeyspod.Run(ctx, s.env.Client, s.ref, s.addressed, nil, 22, 20*time.Second, ""); err != nil {
		t.Fatal(err)
	}
}

// removeWorker takes a worker out of the Provisioning and runs the real remove-node.yml as a
// remove run runs it, with the variables the real check-leaving-nodes wrote; down says whether
// the worker is expected not to answer.
func (s *vmSite) removeWorker(t *testing.T, label string, mirror *offline.Mirror, built string, down bool) {
	t.Helper()
	s.p.Spec.Workers = slices.DeleteFunc(s.p.Spec.Workers, func(e bpav1.HostEntry) bool { _, ok := e[label]; return ok })
	s.nextGeneration(t, []string{label})
	removalVars := filepath.Join(testinterrupt.TempDir(t), runkubespray.RemovalVarsFile)
	if err := checkleavingnodespod.Run(context.Background(), s.env.Client, s.ref, s.addressed, []string{label}, 22, 10*time.Second, removalVars, io.Discard); err != nil {
		t.Fatal(err)
	}
	chosen, err := os.ReadFile(removalVars)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Contains(string(chosen), `"reset_nodes":false`); got != down {
		t.Fatalf("check-leaving-nodes for %s (down: %v) chose %s", label, down, chosen)
	}
	inventory, extraVars := renderOffline(t, s.p, s.addressed, mirror, built)
	remove := runkubespray.Plan{Mode: runkubespray.ModeRemove, Nodes: []string{label}}
	out := runRealKubespray(t, s.env, s.ns, s.p, inventory, extraVars, s.keyFile, testkubespray.Playbook{
		Plan: &remove, MayFail: true,
		Files: map[string][]byte{filepath.Join(steps.InputsDir, runkubespray.RemovalVarsFile): chosen},
	})
	if !testkubespray.OKRecap(out, "master") || (!down && !testkubespray.OKRecap(out, label)) {
		t.Fatalf("the real remove-node.yml of %s with %s:\n%s\n%s", label, chosen, testkubespray.Failures(out), testkubespray.LastLines(out, 30))
	}
}

// kudPluginIntoTheCluster runs a KUD plugin's step as its pod runs it: the command and
// arguments of the shipped WorkflowTemplate's container (kubectl apply --server-side through the
// stored kubeconfig), the manifest from the site's file mirror, as offline mode points it.
// The kubectl is the control plane's, the binary the project's kubectl image holds. The test
// reads what it applied back through the stored kubeconfig.
func kudPluginIntoTheCluster(t *testing.T, s *vmSite, kubeconfig []byte, cluster kubernetes.Interface) {
	t.Helper()
	templates, err := workflows.PluginTemplates()
	if err != nil {
		t.Fatal(err)
	}
	var container *corev1.Container
	for _, wt := range templates {
		if wt.Name == kudplugin.WorkflowTemplateName("multus") {
			container = wt.GetTemplateByName(kudplugin.EntryTemplate).Container
		}
	}
	if container == nil {
		t.Fatal("no shipped WorkflowTemplate for the KUD plugin multus")
	}
	dir := testinterrupt.TempDir(t)
	if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(realPluginManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := s.site.Serve(t, dir) + "plugin.yaml"
	kubeconfigFile := filepath.Join(testinterrupt.TempDir(t), "kubeconfig")
	if err := os.WriteFile(kubeconfigFile, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range container.Args {
		a = strings.ReplaceAll(a, "{{inputs.parameters."+kudplugin.ManifestParam+"}}", manifest)
		if strings.HasPrefix(a, "--kubeconfig=") {
			a = "--kubeconfig=" + kubeconfigFile
		}
		args = append(args, a)
	}
	kubectl := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), container.Command[0]), args...)
	kubectl.Env = []string{"HOME=" + testinterrupt.TempDir(t)}
	out, err := kubectl.CombinedOutput()
	if err != nil {
		t.Fatalf("the KUD plugin's kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	cm, err := cluster.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "kud-plugin-real", metav1.GetOptions{})
	if err != nil || cm.Data["applied-by"] != "bpa-plugin-multus" || !slices.ContainsFunc(cm.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == "bpa-plugin-multus" }) {
		t.Fatalf("through the stored kubeconfig, what the KUD plugin applied: %v %v", cm, err)
	}
	t.Logf("the KUD plugin's kubectl applied its manifest from the site's mirror into the real cluster: %s", strings.TrimSpace(string(out)))
}

// realPluginManifest stands in for a plugin's manifest (the real ones' images are not built
// here): what matters is that the step's own kubectl applies it into the real cluster.
const realPluginManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kud-plugin-real
  namespace: kube-system
data:
  applied-by: bpa-plugin-multus
`

// softwareOnTheNodes installs a Software on the real cluster's nodes with each node's own apt,
// from the site's repository.
func softwareOnTheNodes(t *testing.T, s *vmSite) {
	t.Helper()
	ctx := context.Background()
	swRef := s.env.Software(t, s.ns, bpav1.SoftwareSpec{
		MasterSoftware: []bpav1.SoftwarePackage{{Name: "jq", Version: "1.6-2"}},
		WorkerSoftware: []bpav1.SoftwarePackage{{Name: "tmux"}},
		SSH:            &bpav1.SSHAccess{User: testvm.AdminUser},
	})
	nodes, err := resolveclusterhostspod.Run(ctx, s.env.Client, swRef, nil)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("the cluster's nodes: %v %v", nodes, err)
	}
	start := time.Now()
	for _, n := range nodes {
		if _, err := installsoftwarepod.Run(ctx, s.env.Client, swRef, n.Label, n.Role, n.IP, installsoftwarepod.InstallOptions{SSH: s.sshOpts}); err != nil {
			t.Fatalf("install-software on %s: %v", n.Label, err)
		}
	}
	t.Logf("install-software on the real cluster's nodes with their own apt: %.0f s", time.Since(start).Seconds())
	want := map[string]string{"master": "jq=1.6-2 ", "worker": "tmux=3.3a-3 "}
	for label, c := range s.byLabel() {
		if got := testvm.Run(t, c, "dpkg-query -W -f '${Package}=${Version} ' jq tmux 2>/dev/null || true"); !strings.Contains(got, want[label]) {
			t.Errorf("after install-software, %s's dpkg says %q, want %s", label, got, want[label])
		}
	}
}
