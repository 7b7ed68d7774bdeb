//go:build e2e

// Package e2e_test runs the whole product for real on this machine: a Provisioning and a
// Software CR applied to a real kube-apiserver, compiled by the controller, run by Argo's own
// workflow-controller, every step a pod in real containers on a real node (kubelet, containerd,
// runc; see testNode) from the images `make image` builds, reaching the site's servers (virtual
// machines, see testHost) over real SSH,
// and kubespray's playbooks run by a real ansible-playbook in a kubespray-like image (only the
// playbooks themselves are stood in for: test/e2e/kubespray).
//
// Run it with `make e2e` (root: network namespaces, containers, virtual machines).
package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/fileserver"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manager"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/timeline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

const (
	namespace = "bpa-e2e"
	cluster   = "cluster-e2e"
	// The images hack/node-images.sh builds and the node imports.
	stepImage      = compile.DefaultStepImage
	kubesprayImage = "kubespray-standin:v2.28.0"
	kubectlImage   = compile.DefaultKubectlImage
	// stageWait bounds each stage. It only ends a hang: a Stalled CR or an exited
	// workflow-controller fails the stage at once. The stand-in's cluster.yml alone takes about
	// two minutes on the emulated machines when both cores are shared with other suites.
	stageWait = 10 * time.Minute
)

// executorImage is Argo's executor as hack/node-images.sh tags it: the Argo the product is built
// against (its go.mod), as the workflow-controller the suite runs.
var executorImage = "argoexec:" + argoVersion()

// argoVersion is the version of Argo the product's go.mod requires (test binaries carry no
// module information to read it from).
func argoVersion() string {
	raw, err := os.ReadFile("../../go.mod")
	if err != nil {
		panic(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/argoproj/argo-workflows/v3 (v\S+)`).FindSubmatch(raw)
	if m == nil {
		panic("go.mod requires no github.com/argoproj/argo-workflows/v3")
	}
	return string(m[1])
}

var envClient client.Client

// say narrates the run (go test -v shows it; `make demo` prints it).
// Each line says how long the suite has run, so a run's log is also its timings.
func say(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("==> [%4.0f s] "+format, append([]any{time.Since(suiteStart).Seconds()}, args...)...)
}

// suiteStart is when the test binary started.
var suiteStart = time.Now()

type suite struct {
	t          *testing.T
	env        *testenv.Env
	c          client.Client
	hosts      []*testHost
	scratch    string
	kubeconfig string // the admin's
	node       *testNode
	// argoDone is closed when Argo's workflow-controller exits (it must not, during the run).
	argoDone chan struct{}
	// argoCLI is Argo's CLI, argoKubeconfig its kubeconfig (the admin's, in the namespace).
	argoCLI, argoKubeconfig string
	// registry is the site registry (CNCF Distribution, TLS and authentication) on loopback;
	// the node's pods reach it at registryAddr, a relay on the node's address.
	registry     *testregistry.Secure
	registryAddr string
	// kubeadm is what the site uploaded as kubespray's kubeadm, which offline hosts download.
	kubeadm string
	// clusterKey is the site's SSH private key (PEM): the hosts' admin user accepts it.
	clusterKey []byte
	// site is the site's network, its servers on it.
	site *testvm.Site
	// wait bounds each stage (eventually): stageWait unless a test says.
	wait time.Duration
	// runKubesprayLogs keeps every attempt's log of run-kubespray.
	runKubesprayLogs *stepLogs
	// kubesprayProgress is each status.kubespray.summary a wait for Ready saw, in order.
	kubesprayProgress []string
}

// siteConfig is the site a test runs on: its servers (virtual machines), and the kubespray
// the node runs. Without a real kubespray image the node runs the stand-in (test/e2e/kubespray),
// and each server stands in for a cluster's node: the suite's API server is "the new
// cluster", relayed to each server's address.
type siteConfig struct {
	machines []testvm.Spec
	options  []testvm.SiteOption
	// kubespray is the archive of the real kubespray's image (hack/kubespray-image.sh), and
	// downloads the build of everything it downloads (hack/kubespray-downloads.sh), which the
	// site's mirror serves, with moreDownloads: builds for other Kubernetes versions.
	kubespray, downloads string
	moreDownloads        []string
}

// real says whether the site runs the real kubespray.
func (c siteConfig) real() bool { return c.kubespray != "" }

// standInSite is TestEndToEnd's site: three small servers and kubespray's stand-in.
func standInSite() siteConfig {
	var specs []testvm.Spec
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		specs = append(specs, testvm.Spec{Name: n, CPUs: 1, MemoryMiB: 1024})
	}
	return siteConfig{machines: specs}
}

// TestEndToEnd is a site's life with one cluster, stage by stage, each from where the one before
// left it: the cluster made offline, its Software, a worker added, steps failing and retried by
// Argo, its CLI and its UI, the worker removed, binaries from the site registry, a dead server.
func TestEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the end-to-end suite needs root (network namespaces, containers)")
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	s := setUp(t, standInSite())
	p := s.makeTheCluster()
	sw := s.installTheSoftware()
	s.addAWorker(p, sw)
	s.retryFailedSteps(p, sw)
	s.removeTheWorker(p, sw)
	s.installSiteBinaries(sw)
	s.removeADeadServer(p, sw)

	if dir := os.Getenv("BPA_PLAYGROUND"); dir != "" {
		s.keep(dir, p.Name, nil)
	}
}

// makeTheCluster applies the Provisioning of master-1 and worker-1 with a KUD plugin, offline
// from the site's mirror, and checks what the cluster and its run left.
func (s *suite) makeTheCluster() *bpav1.Provisioning {
	t := s.t
	// The cluster: master-1 and worker-1, with a KUD plugin.
	p := &bpav1.Provisioning{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e", Namespace: namespace, Labels: map[string]string{bpav1.ClusterLabel: cluster}},
		Spec: bpav1.ProvisioningSpec{
			Masters:      []bpav1.HostEntry{{"master-1": {MACAddress: s.hosts[0].MAC}}},
			Workers:      []bpav1.HostEntry{{"worker-1": {MACAddress: s.hosts[1].MAC}}},
			KUDPlugins:   []string{"multus"},
			PodSubnet:    "10.244.64.0/18",
			HostSelector: &bpav1.HostSelector{Namespaces: []string{namespace}},
			SSH:          &bpav1.SSHAccess{User: testvm.AdminUser},
			// The checksum of the kubeadm the site uploaded: kubespray takes its files' checksums
			// from its own table, or from these typed extra variables.
			Kubespray: &bpav1.KubesprayOptions{ExtraVars: map[string]bpav1.ExtraVarValue{
				"kubeadm_binary_checksum": bpav1.ExtraVar(fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(s.kubeadm)))),
			}},
		},
	}
	say(t, "kubectl apply Provisioning %s (master-1, worker-1, plugin multus; SSH as %s with sudo)", p.Name, testvm.AdminUser)
	must(t, s.c.Create(ctx(), p))
	s.waitProvisioningReady(p, 1)
	cur := s.provisioning(p)
	if len(cur.Status.Hosts) != 2 || cur.Status.Hosts[0].IP != s.hosts[0].IP {
		t.Errorf("hosts in status: %+v", cur.Status.Hosts)
	}
	s.checkClaims(p, 2)
	s.checkKubeconfig()
	s.checkKubesprayProgress(s.provisioning(p).Status.WorkflowName)
	// The stand-in's "new cluster" is the suite's API server, whose nodes are the suite's
	// kubelet's and those the stand-in registered at its version (register-nodes.yml), which
	// check-run-kubespray found Ready: the exit handler read them through the stored kubeconfig.
	if got := s.provisioning(p).Status.Kubelets; len(got) != 1 || len(got[0].Nodes) != 3 || !slices.Contains(got[0].Nodes, "master-1") ||
		!slices.Contains(got[0].Nodes, "worker-1") || len(got[0].NotReady) > 0 || !strings.HasPrefix(got[0].Version, "v1.") {
		t.Errorf("status.kubelets %+v, want the suite's node, master-1 and worker-1, all Ready", got)
	} else {
		say(t, "report-nodes (the exit handler) read the new cluster's nodes: %s", s.provisioning(p).Status.KubeletVersions)
	}
	if got := s.hosts[0].file("admin.conf"); got == "" {
		t.Errorf("ansible-playbook wrote no admin.conf on master-1")
	}
	for _, h := range s.hosts[:2] {
		if got := h.file("joined"); !strings.Contains(got, "10.244.64.0/18") {
			t.Errorf("%s joined with %q; want the pod subnet passed as an extra var", h.Name, got)
		}
		if got := h.file("stand-in/kubeadm"); got != s.kubeadm {
			t.Errorf("%s, offline, downloaded %d bytes of kubeadm from the mirror; the site uploaded %d", h.Name, len(got), len(s.kubeadm))
		}
	}
	say(t, "offline: both nodes downloaded kubeadm through the mirror's files_repo; the plugin's manifest came from it")
	// Before any host was touched, kubespray's download list was checked against the mirror.
	first := s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, 1)
	say(t, "where the time went, from the Workflow's own node times:\n%s", timeline.Of(first, cur.CreationTimestamp.Time))
	for _, step := range []string{"list-kubespray-downloads", "check-site-mirror"} {
		if n := first.Status.Nodes.FindByDisplayName(step); n == nil || n.Phase != wfv1.NodeSucceeded {
			t.Errorf("offline, the first run's %s: %+v, want Succeeded", step, n)
		}
	}
	say(t, "offline: kubespray's download list was checked against the site's mirror before any host was touched")
	// run-kubespray's pod is gone (podGC); its log was kept as it ran.
	if logs := s.runKubesprayLogs.attempts(first.Name); len(logs) == 0 || !regexp.MustCompile(`(?m)^master-1 +: ok=`).MatchString(logs[len(logs)-1]) {
		t.Errorf("run-kubespray's kept logs of %s (%d): the last has no ansible-playbook recap of master-1:\n%s", first.Name, len(logs), strings.Join(logs, "\n---\n"))
	}
	s.checkPluginApplied()
	say(t, "the steps run locked down: uid 65532, a read-only root, only the mounts they declare")
	s.checkStepsLockedDown(s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, 1))
	return p
}

// installTheSoftware applies the cluster's Software and waits for it on both nodes.
func (s *suite) installTheSoftware() *bpav1.Software {
	t := s.t
	sw := &bpav1.Software{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-software", Namespace: namespace, Labels: map[string]string{bpav1.ClusterLabel: cluster}},
		Spec: bpav1.SoftwareSpec{
			MasterSoftware: []bpav1.SoftwarePackage{{Name: "bash"}, {Name: "htop"}},
			WorkerSoftware: []bpav1.SoftwarePackage{{Name: "bash"}, {Name: "jq", Version: "1.6-2"}},
			SSH:            &bpav1.SSHAccess{User: testvm.AdminUser},
		},
	}
	say(t, "kubectl apply Software %s", sw.Name)
	must(t, s.c.Create(ctx(), sw))
	s.waitSoftwareReady(sw, 1, 2)
	return sw
}

// addAWorker adds worker-2 while worker-1 hangs: a scale run for it alone, which goes on
// without worker-1 (its kept facts stand for it), then the Software for it alone.
func (s *suite) addAWorker(p *bpav1.Provisioning, sw *bpav1.Software) {
	t := s.t
	say(t, "add worker-2 while worker-1 hangs: a scale Workflow for it alone, then software for it alone")
	s.factsKept(p, "master-1", "worker-1")
	s.hosts[1].Freeze(t)
	patch(t, s.c, p, func(p *bpav1.Provisioning) {
		p.Spec.Workers = append(p.Spec.Workers, bpav1.HostEntry{"worker-2": {MACAddress: s.hosts[2].MAC}})
	})
	wf := s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, 2)
	// A scale run: the facts cluster.yml gathered, which the controller kept, restored; none
	// gathered again (all are fresh); then scale.yml limited to worker-2, which the stand-in
	// refuses without the others' facts cached, as kubespray does.
	if c := wf.GetTemplateByName("run-kubespray").Container; len(c.Args) < 3 || c.Args[1] != "worker-2" || c.Args[2] != "scale.yml" ||
		!strings.Contains(strings.Join(c.Command, " "), runkubespray.LimitedScript) {
		t.Errorf("generation 2 runs %q %q, want a scale run for worker-2", c.Command, c.Args)
	}
	s.waitProvisioningReady(p, 2)
	attempts := s.runKubesprayLogs.attempts(wf.Name)
	if len(attempts) == 0 {
		t.Fatalf("no log of the scale run's run-kubespray")
	}
	if log := attempts[len(attempts)-1]; strings.Contains(log, "playbooks/facts.yml for") ||
		!strings.Contains(log, "the facts of 1 nodes kept for the next run: worker-2") {
		t.Errorf("the scale run gathered other nodes' facts again, or kept other facts than worker-2's:\n%s", log)
	}
	s.factsKept(p, "master-1", "worker-1", "worker-2")
	s.checkNotAnswering(p, "worker-1", s.hosts[1].IP)
	s.hosts[1].thaw(t)
	if got := s.hosts[2].file("joined"); got != "worker-2 scaled" {
		t.Errorf("worker-2 joined with %q, want the scale stand-in's mark", got)
	}
	if got := s.hosts[1].file("joined"); !strings.Contains(got, "10.244.64.0/18") {
		t.Errorf("worker-1 was touched by the scale run: %q", got)
	}
	s.waitSoftwareReady(sw, 1, 3)
}

// factsKept: the controller keeps the facts of nodes in the cluster's ConfigMap, owned by p,
// under the controller's own ClusterRole.
func (s *suite) factsKept(p *bpav1.Provisioning, nodes ...string) {
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: p.Namespace, Name: p.Labels[bpav1.ClusterLabel] + bpav1.KubesprayFactsConfigMapSuffix}
	s.eventually("the facts of "+strings.Join(nodes, ", ")+" kept", func() error {
		if err := s.c.Get(ctx(), key, cm); err != nil {
			return err
		}
		var index map[string]string
		if err := json.Unmarshal([]byte(cm.Data[runkubespray.FactsIndexKey]), &index); err != nil {
			return err
		}
		if got := slices.Sorted(maps.Keys(index)); !slices.Equal(got, nodes) || len(cm.BinaryData) != len(nodes) {
			return fmt.Errorf("kept the facts of %v (%d entries), want %v", got, len(cm.BinaryData), nodes)
		}
		if len(cm.OwnerReferences) == 0 || cm.OwnerReferences[0].UID != p.UID {
			return fmt.Errorf("owned by %v, want the Provisioning", cm.OwnerReferences)
		}
		return nil
	})
}

// retryFailedSteps: a step failing once is retried by Argo; failing for good, the Software
// stalls until `argo retry`, `argo resubmit` or the Argo UI's retry runs it again.
func (s *suite) retryFailedSteps(p *bpav1.Provisioning, sw *bpav1.Software) {
	t := s.t
	say(t, "a step fails once: Argo's retry recovers")
	s.hosts[1].failOnce(t, refreshFailure)
	patch(t, s.c, sw, func(sw *bpav1.Software) {
		sw.Spec.WorkerSoftware = append(sw.Spec.WorkerSoftware, bpav1.SoftwarePackage{Name: "tmux"})
	})
	s.waitSoftwareReady(sw, 2, 3)
	if s.hosts[1].failurePending(t, refreshFailure) {
		t.Errorf("the injected failure never happened")
	}
	retried := false
	for _, w := range s.workflows(bpav1.WorkflowKindSoftware, sw.Name) {
		for _, n := range w.Status.Nodes {
			if n.Type == wfv1.NodeTypePod && n.Phase == wfv1.NodeFailed && strings.Contains(n.Message, "exit code 75") {
				retried = true
			}
		}
	}
	if !retried {
		t.Errorf("no failed attempt with exit code 75 in the Software Workflows")
	}

	say(t, "a step fails for good: the Software stalls; `argo retry` (Argo's CLI) restarts the Workflow, and the CR follows")
	failed := s.stallSoftware(sw, 3, func(sw *bpav1.Software) {
		sw.Spec.MasterSoftware = append(sw.Spec.MasterSoftware, bpav1.SoftwarePackage{Name: "tmux"})
	})
	s.argo("retry", failed.Name)
	s.waitUnstalled(sw)
	s.waitSoftwareReady(sw, 3, 3)
	if n := len(s.workflows(bpav1.WorkflowKindSoftware, sw.Name)); n != 4 {
		t.Errorf("%d Software Workflows, want 4: the retried one restarted in place", n)
	}
	listed := s.argo("list", "--selector", bpav1.WorkflowClusterLabel+"="+cluster, "--output", "name")
	for _, w := range append(s.workflows(bpav1.WorkflowKindSoftware, sw.Name), s.workflows(bpav1.WorkflowKindProvisioning, p.Name)...) {
		if !strings.Contains(listed, w.Name) {
			t.Errorf("argo list does not show %s", w.Name)
		}
	}
	var got wfv1.Workflow
	must(t, json.Unmarshal([]byte(s.argo("get", failed.Name, "--output", "json")), &got))
	if got.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("argo get %s: %s after the retry", failed.Name, got.Status.Phase)
	}

	say(t, "it fails for good again: `argo resubmit` makes a new Workflow of the run, and the CR mirrors it")
	// The master's packages change: one node runs, one fails. (When one of several nodes fails
	// for good, the controller starts a second run for the rest by itself: see the README.)
	failed = s.stallSoftware(sw, 4, func(sw *bpav1.Software) {
		sw.Spec.MasterSoftware = append(sw.Spec.MasterSoftware, bpav1.SoftwarePackage{Name: "nano"})
	})
	resubmitted := strings.TrimSpace(s.argo("resubmit", failed.Name, "--output", "name"))
	if resubmitted == "" || resubmitted == failed.Name {
		t.Fatalf("argo resubmit printed %q", resubmitted)
	}
	s.waitUnstalled(sw)
	s.waitSoftwareReady(sw, 4, 3)
	mirrored := &bpav1.Software{}
	must(t, s.c.Get(ctx(), client.ObjectKeyFromObject(sw), mirrored))
	if mirrored.Status.WorkflowName != resubmitted {
		t.Errorf("the Software mirrors %s, not the resubmitted %s", mirrored.Status.WorkflowName, resubmitted)
	}

	say(t, "and once more: the operator retries the failed step in Argo's UI, in a browser")
	server := s.startArgoServer()
	provisioned := &wfv1.Workflow{}
	must(t, s.c.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: s.provisioning(p).Status.WorkflowName}, provisioned))
	t.Run("ArgoUI/graph", func(t *testing.T) { s.browseTheCluster(s.openArgoUI(t, server), provisioned) })
	failed = s.stallSoftware(sw, 5, func(sw *bpav1.Software) {
		// The hosts start with jq 1.5: this upgrades it.
		sw.Spec.MasterSoftware = append(sw.Spec.MasterSoftware, bpav1.SoftwarePackage{Name: "jq", Version: "1.6-2"})
	})
	retriedInUI := false
	t.Run("ArgoUI/retry", func(t *testing.T) {
		s.retryInTheUI(s.openArgoUI(t, server), failed)
		retriedInUI = true
	})
	if !retriedInUI {
		// Without the UI here, its REST API, as the UI calls it.
		s.retryFromTheUI(server, failed.Name)
	}
	s.waitUnstalled(sw)
	s.waitSoftwareReady(sw, 5, 3)
}

// removeTheWorker removes worker-2 while worker-1 hangs: remove-node.yml limited to it, its
// host released.
func (s *suite) removeTheWorker(p *bpav1.Provisioning, sw *bpav1.Software) {
	t := s.t
	say(t, "remove worker-2 while worker-1 hangs: remove-node.yml for it, its host released, the Software forgets it")
	s.hosts[1].Freeze(t)
	patch(t, s.c, p, func(p *bpav1.Provisioning) { p.Spec.Workers = p.Spec.Workers[:1] })
	wf := s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, 3)
	if args := strings.Join(wf.GetTemplateByName("run-kubespray").Container.Args, " "); !strings.Contains(args, "--extra-vars=node=worker-2") || !strings.HasPrefix(args, "run-kubespray worker-2 remove-node.yml ") {
		t.Errorf("generation 3 runs %q", args)
	}
	s.waitProvisioningReady(p, 3)
	s.checkNotAnswering(p, "worker-1", s.hosts[1].IP)
	s.hosts[1].thaw(t)
	if got := s.removalVars(p, 3); got != gracefulRemovalVars {
		t.Errorf("worker-2 answering, check-leaving-nodes chose %s", got)
	}
	if got := s.hosts[0].file("removed-nodes"); got != "worker-2" {
		t.Errorf("the first master deleted %q from the cluster, want worker-2", got)
	}
	if got := s.hosts[2].file("joined"); got != "" {
		t.Errorf("worker-2 is still marked joined (%q): remove-node.yml did not reach it through the inventory", got)
	}
	if got := s.hosts[1].file("joined"); got == "" {
		t.Errorf("worker-1 was removed too")
	}
	s.eventually("worker-2's host released", func() error { return s.claims(p, 2) })
	if hosts := s.provisioning(p).Status.Hosts; len(hosts) != 2 {
		t.Errorf("hosts in status after the removal: %+v", hosts)
	}
	s.waitSoftwareReady(sw, 5, 2)
}

// installSiteBinaries uploads a binary to the site registry and installs it on the masters,
// then a new upload of it.
func (s *suite) installSiteBinaries(sw *bpav1.Software) {
	t := s.t
	say(t, "binaries from the site registry: `upload binary`, copied to the masters over SFTP; a new upload updates them")
	const bindir = "/opt/bpa-e2e/bin"
	v1 := s.uploadBinary("tool", "1.0")
	patch(t, s.c, sw, func(sw *bpav1.Software) {
		sw.Spec.MasterBinaries = []bpav1.BinaryPackage{{Name: "tool", Directory: bindir}}
	})
	wf := s.waitWorkflow(bpav1.WorkflowKindSoftware, sw.Name, 6)
	if wf.Labels[bpav1.WorkflowScopeLabel] != compile.Scope([]string{"master-1"}) {
		t.Errorf("the binaries' run has scope %s, want master-1 alone", wf.Labels[bpav1.WorkflowScopeLabel])
	}
	s.waitSoftwareReady(sw, 6, 2)
	s.checkBinary(sw, bindir+"/tool", "1.0", v1)
	runs := len(s.workflows(bpav1.WorkflowKindSoftware, sw.Name))
	v2 := s.uploadBinary("tool", "1.1")
	s.eventually("a run for the new upload, on master-1 alone", func() error {
		all := s.workflows(bpav1.WorkflowKindSoftware, sw.Name)
		if len(all) != runs+1 {
			return fmt.Errorf("%d Software Workflows, want %d", len(all), runs+1)
		}
		for _, w := range all {
			if w.Name != wf.Name && w.Labels[bpav1.WorkflowGenerationLabel] == "6" && w.Labels[bpav1.WorkflowScopeLabel] != compile.Scope([]string{"master-1"}) {
				return fmt.Errorf("the new run %s has scope %s, want master-1 alone", w.Name, w.Labels[bpav1.WorkflowScopeLabel])
			}
		}
		return nil
	})
	s.waitSoftwareReady(sw, 6, 2)
	s.checkBinary(sw, bindir+"/tool", "1.1", v2)
}

// removeADeadServer: worker-2 joins again and is powered off as its removal starts.
func (s *suite) removeADeadServer(p *bpav1.Provisioning, sw *bpav1.Software) {
	t := s.t
	say(t, "a server dies: worker-2 joins again, then is powered off as its removal starts; it is removed without a reset")
	patch(t, s.c, p, func(p *bpav1.Provisioning) {
		p.Spec.Workers = append(p.Spec.Workers, bpav1.HostEntry{"worker-2": {MACAddress: s.hosts[2].MAC}})
	})
	s.waitProvisioningReady(p, 4)
	s.waitSoftwareReady(sw, 6, 3)
	patch(t, s.c, p, func(p *bpav1.Provisioning) { p.Spec.Workers = p.Spec.Workers[:1] })
	s.hosts[2].PowerOff()
	s.waitProvisioningReady(p, 5)
	if got := s.removalVars(p, 5); got != `{"reset_nodes":false,"allow_ungraceful_removal":true}` {
		t.Errorf("worker-2 powered off, check-leaving-nodes chose %s", got)
	}
	s.checkUngracefulEvent(p, "worker-2")
	s.checkNotAnswering(p, "worker-2", s.hosts[2].IP)
	s.eventually("worker-2's host released", func() error { return s.claims(p, 2) })
	s.waitSoftwareReady(sw, 6, 2)
}

// keep leaves everything running for `make demo KEEP=1` (and `make demo CLUSTER=real`): it
// writes the admin kubeconfig and the commands to explore into dir, with the real cluster's
// kubeconfig when kubespray made one (realKubeconfig), says it is ready, and waits until
// `make demo-down` creates dir/stop. The test's cleanups then stop every process and remove
// every namespace and mount.
func (s *suite) keep(dir, provisioning string, realKubeconfig []byte) {
	s.t.Helper()
	must(s.t, os.MkdirAll(dir, 0o755))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	raw, err := os.ReadFile(s.argoKubeconfig)
	must(s.t, err)
	must(s.t, os.WriteFile(kubeconfig, raw, 0o600))
	key := filepath.Join(dir, "ssh-key")
	must(s.t, os.WriteFile(key, s.clusterKey, 0o600))
	var logins strings.Builder
	for _, h := range s.hosts {
		if !h.Running() {
			fmt.Fprintf(&logins, "  (%s, %s, was powered off by the flow)\n", h.Name, h.IP)
			continue
		}
		fmt.Fprintf(&logins, "  ssh -i %s -o UserKnownHostsFile=%s -o StrictHostKeyChecking=accept-new %s@%s   # %s\n",
			key, filepath.Join(dir, "known_hosts"), testvm.AdminUser, h.IP, h.Name)
	}
	var real string
	if realKubeconfig != nil {
		file := filepath.Join(dir, "cluster-kubeconfig")
		must(s.t, os.WriteFile(file, realKubeconfig, 0o600))
		real = fmt.Sprintf(`
The cluster kubespray made on the servers, through the kubeconfig fetch-kubeconfig stored
(Secret %[2]s%[3]s, written to %[1]s):
  bin/k8s/kubectl --kubeconfig %[1]s get nodes -o wide
  bin/k8s/kubectl --kubeconfig %[1]s get pods -A
`, file, cluster, bpav1.KubeconfigSecretSuffix)
	}
	help := fmt.Sprintf(`The playground is up: a local kube-apiserver, Argo's workflow-controller, the controller,
and the site's %[8]d servers, virtual machines; cluster %[2]s is provisioned.
%[9]s
Log in to a server (the site's key; its admin user may sudo):
%[6]s
  export KUBECONFIG=%[1]s
  bin/k8s/kubectl get provisionings,softwares,clusters -n %[3]s
  bin/k8s/kubectl get provisioning %[7]s -n %[3]s -o yaml
  bin/k8s/kubectl get baremetalhosts -n %[3]s
  bin/k8s/argo list -n %[3]s -l %[4]s=%[2]s
  bin/k8s/argo get -n %[3]s @latest
  bin/k8s/kubectl annotate provisioning %[7]s -n %[3]s %[5]s=$(date +%%s)   # run it again

Stop it all with: make demo-down
`, kubeconfig, cluster, namespace, bpav1.WorkflowClusterLabel, bpav1.RerunAnnotation, logins.String(), provisioning, len(s.hosts), real)
	must(s.t, os.WriteFile(filepath.Join(dir, "README"), []byte(help), 0o644))
	must(s.t, os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644))
	say(s.t, "playground ready; waiting for %s/stop", dir)
	for {
		if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
			say(s.t, "playground: stopping")
			_ = os.Remove(filepath.Join(dir, "ready"))
			return
		}
		select {
		case <-s.argoDone:
			s.t.Fatalf("playground: Argo's workflow-controller exited")
		case <-time.After(time.Second):
		}
	}
}

func setUp(t *testing.T, cfg siteConfig) *suite {
	t.Helper()
	root := testenv.RepoRoot()
	argoController := filepath.Join(root, "bin", "k8s", "workflow-controller")
	argoCLI := filepath.Join(root, "bin", "k8s", "argo")
	for _, b := range []string{argoController, argoCLI} {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("Argo's %s is not built: run `make e2e` (hack/control-plane.sh argo)", filepath.Base(b))
		}
	}
	images := filepath.Join(root, "bin", "node-images.tar")
	if _, err := os.Stat(images); err != nil {
		t.Fatalf("the node's images are not built: run `make e2e` (hack/node-images.sh)")
	}
	// Scratch space outside /tmp, with short paths: containerd's sockets live in it.
	scratch := testinterrupt.ScratchDirKeptOnFailure(t, "bpa-e2e-")
	s := &suite{t: t, scratch: scratch, argoCLI: argoCLI, wait: stageWait}

	say(t, "starting kube-apiserver and etcd")
	certDir := testinterrupt.TempDir(t)
	env, err := testenv.StartForPods(certDir)
	must(t, err)
	testinterrupt.Cleanup(t, func() { _ = env.Stop() })
	s.env, s.c = env, env.Client
	envClient = env.Client
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	must(t, err)
	adminKubeconfig, err := admin.KubeConfig()
	must(t, err)
	kubeconfig := filepath.Join(s.scratch, "kubeconfig")
	must(t, os.WriteFile(kubeconfig, adminKubeconfig, 0o600))
	s.kubeconfig = kubeconfig

	must(t, s.c.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	// Argo's metrics and telemetry servers are off: nothing of the suite listens beyond what it
	// needs, and two runs on one machine do not fight over Argo's fixed ports.
	must(t, s.c.Create(ctx(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "workflow-controller-configmap", Namespace: namespace},
		Data: map[string]string{
			"metricsConfig":   "enabled: false\n",
			"telemetryConfig": "enabled: false\n",
		},
	}))
	// The site: its servers are virtual machines on a bridge, addressed by dnsmasq by MAC; they
	// boot while the node starts.
	imageDir := os.Getenv("BPA_VM_IMAGE")
	if why := testvm.Missing(imageDir); why != "" {
		t.Fatalf("the site's servers cannot boot: %s (make e2e builds the image and sets BPA_VM_IMAGE)", why)
	}
	clusterKey := newPEMKey(t)
	signer, err := ssh.ParsePrivateKey(clusterKey)
	must(t, err)
	s.clusterKey = clusterKey
	var sizes []string
	for _, m := range cfg.machines {
		sizes = append(sizes, fmt.Sprintf("%s %d CPU %d MiB", m.Name, m.CPUs, m.MemoryMiB))
	}
	say(t, "booting the site's servers: %d virtual machines (QEMU, Debian 12; %s) on a bridge, dnsmasq handing out addresses by MAC",
		len(cfg.machines), strings.Join(sizes, ", "))
	site := testvm.NewSite(t, siteSubnet, cfg.machines, append(cfg.options, testvm.WithRoute(podSubnet, nodeAddress))...)
	site.Boot(t, testvm.ImageIn(imageDir), signer.PublicKey())
	s.site = site
	must(t, s.c.Create(ctx(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: cluster + "-ssh-key", Namespace: namespace},
		Type:       corev1.SecretTypeSSHAuth,
		Data:       map[string][]byte{corev1.SSHAuthPrivateKey: clusterKey},
	}))
	for _, m := range site.Machines() {
		s.bareMetalHost(m)
	}

	say(t, "starting the node: containerd, runc and a kubelet in a network namespace on the site; kube-scheduler")
	archives := []string{images}
	if cfg.real() {
		archives = append(archives, cfg.kubespray)
	}
	s.node = startNode(site, t, env, certDir, filepath.Join(s.scratch, "node"), archives...)

	repo := serveRepository(t, site)
	var standIn *standInCluster
	if !cfg.real() {
		// The "new cluster" is the local API server: kubeadm's admin.conf on each master (where
		// kubespray's stand-in finds it) is its admin's. Each host's address relays to the API
		// server (systemd's socket proxy to the suite's relay), whose certificate is for localhost.
		apiURL, err := url.Parse(env.Config.Host)
		must(t, err)
		newCluster, err := clientcmd.Load(adminKubeconfig)
		must(t, err)
		for _, c := range newCluster.Clusters {
			c.TLSServerName = "localhost"
		}
		newClusterRaw, err := clientcmd.Write(*newCluster)
		must(t, err)
		kube, err := kubernetes.NewForConfig(env.Config)
		must(t, err)
		version, err := kube.Discovery().ServerVersion()
		must(t, err)
		kubeletFiles, err := standInKubeletFiles(adminKubeconfig, apiURL.Port(), version.GitVersion)
		must(t, err)
		standIn = &standInCluster{adminConf: newClusterRaw, apiPort: apiURL.Port(), apiRelay: relay(t, site, apiURL.Host), kubeletFiles: kubeletFiles}
	}
	s.hosts = prepareHosts(t, site, signer, repo, standIn)
	var answered []string
	for _, h := range s.hosts {
		answered = append(answered, fmt.Sprintf("%s %.0f s", h.Name, h.Answered.Sub(h.Booted).Seconds()))
	}
	leaseText, _ := os.ReadFile(site.LeaseFile)
	say(t, "the servers answer SSH with their own host keys (after boot: %s); dnsmasq leased: %s", strings.Join(answered, ", "),
		strings.Join(strings.Split(strings.TrimSpace(string(leaseText)), "\n"), "; "))
	say(t, "each server: apt from the site's repository (%s), jq 1.5 installed, the pods routed through the node by the site's DHCP server", repo)

	templates, err := workflows.PluginTemplates()
	must(t, err)
	for _, wt := range templates {
		wt.Namespace = namespace
		must(t, s.c.Create(ctx(), wt))
	}

	say(t, "starting Argo's workflow-controller (namespaced, requeue 1 s, executor %s)", executorImage)
	argoLog, err := os.Create(filepath.Join(s.scratch, "workflow-controller.log"))
	must(t, err)
	// Argo finds its config map in its own namespace: the kubeconfig context's.
	argoConfig, err := clientcmd.Load(adminKubeconfig)
	must(t, err)
	for _, c := range argoConfig.Contexts {
		c.Namespace = namespace
	}
	argoKubeconfig := filepath.Join(s.scratch, "argo-kubeconfig")
	must(t, clientcmd.WriteToFile(*argoConfig, argoKubeconfig))
	s.argoKubeconfig = argoKubeconfig
	argo := exec.Command(argoController, "--namespaced", "--managed-namespace", namespace,
		"--configmap", "workflow-controller-configmap", "--executor-image", executorImage, "--loglevel", "info")
	// A step's self-reported progress reaches the Workflow every 5 s, not Argo's default
	// minute: the stand-in's run-kubespray lasts about one.
	argo.Env = append(os.Environ(), "KUBECONFIG="+argoKubeconfig, "LEADER_ELECTION_DISABLE=true", "DEFAULT_REQUEUE_TIME=1s",
		"ARGO_PROGRESS_PATCH_TICK_DURATION=5s")
	argo.Stdout, argo.Stderr = argoLog, argoLog
	argo.SysProcAttr = dieWithTest()
	must(t, argo.Start())
	s.argoDone = make(chan struct{})
	go func() { _ = argo.Wait(); close(s.argoDone) }()
	testinterrupt.Cleanup(t, func() {
		_ = argo.Process.Kill()
		<-s.argoDone
		if t.Failed() {
			raw, _ := os.ReadFile(argoLog.Name())
			t.Logf("workflow-controller log (last 40 lines):\n%s", tail(string(raw), 40))
		}
	})

	s.runKubesprayLogs = s.keepStepLogs("run-kubespray")

	say(t, "starting the site registry: CNCF Distribution with TLS and authentication, at %s for the pods", net.JoinHostPort(s.node.IP, "5000"))
	s.registry = testregistry.StartSecureFor(t, s.node.IP)
	s.registryAddr = net.JoinHostPort(s.node.IP, "5000")
	relay, err := listenIn(s.node.NetNS, s.registryAddr)
	must(t, err)
	t.Cleanup(func() { relay.Close() })
	go forward(relay, func() (net.Conn, error) { return net.Dial("tcp", s.registry.Addr) })
	caPEM, err := os.ReadFile(s.registry.CAFile)
	must(t, err)
	must(t, s.c.Create(ctx(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: compile.DefaultSiteRegistrySecret, Namespace: namespace},
		Data:       map[string][]byte{"username": []byte(s.registry.Username), "password": []byte(s.registry.Password), "ca.crt": caPEM},
	}))
	registry, err := siteregistry.New(siteregistry.Config{Registry: s.registry.Addr, Username: s.registry.Username, Password: s.registry.Password, CAFile: s.registry.CAFile})
	must(t, err)

	// The site has no internet access: the hosts are offline nodes (the stand-in fails unless
	// kubespray's mirror variables are set), and the KUD plugin's manifest and kubespray's files
	// come from the site's mirror, serve-files' handler on the node's address.
	mirror := s.node.serveHandler(t, "8080", &fileserver.Handler{Registry: registry})
	if cfg.real() {
		// Everything the real kubespray downloads, built here, uploaded as an operator does.
		testkubespray.UploadDownloads(t, testkubespray.Registry{Addr: s.registry.Addr, Username: s.registry.Username, Password: s.registry.Password, CAFile: s.registry.CAFile},
			filepath.Join(s.scratch, "upload-state"), append([]string{cfg.downloads}, cfg.moreDownloads...)...)
	} else {
		s.kubeadm = strings.Repeat("kubeadm-", 32<<10)
		s.uploadFileSet("kubespray:v2.28.0", map[string]string{"dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm": s.kubeadm})
	}
	s.uploadFileSet("kud-plugins:e2e", map[string]string{"multus.yaml": pluginManifest})

	say(t, "starting bpa-workflow-controller")
	plugins, err := workflows.Plugins()
	must(t, err)
	opts := compile.DefaultOptions(plugins)
	opts.StepImage, opts.KubesprayImage, opts.KubectlImage = stepImage, kubesprayImage, kubectlImage
	if cfg.real() {
		// Its files as UploadDownloads uploaded them (the set the image's tag would name).
		opts.KubesprayImage = s.node.image(t, "/kubespray:"+testcluster.KubesprayVersion)
		opts.OfflineKubesprayFiles = testkubespray.FileSet
	}
	// resolve-leases reads the lease file dnsmasq wrote (the BareMetalHosts carry no IPs),
	// mounted from the node.
	opts.LeaseFile, opts.LeaseFormat = site.LeaseFile, leases.FormatDnsmasq
	opts.SiteRegistry = s.registryAddr
	opts.Offline, opts.OfflineMirror, opts.OfflineKUDManifests = true, mirror, "kud-plugins:e2e"
	// The controller as a site installs it: a user holding its generated ClusterRole and
	// nothing else, so every write it makes (the step identities' Roles and RoleBindings
	// among them) passes the API server's RBAC checks.
	must(t, testenv.GrantControllerRole(ctx(), s.c, "bpa-workflow-controller"))
	controllerUser, err := env.AddUser(envtest.User{Name: "bpa-workflow-controller"}, nil)
	must(t, err)
	mgr, err := manager.New(controllerUser.Config(), manager.Options{MetricsBindAddress: "0", HealthProbeBindAddress: "0", Compile: opts,
		Registry: registry, RegistryPollInterval: time.Second})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// pluginManifest stands in for a KUD plugin's manifest: kubectl applies it for real, into the
// "new cluster", through the fetched kubeconfig.
const pluginManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kud-plugin-stand-in
  namespace: default
data:
  applied-by: bpa-plugin template
`

// bareMetalHost describes a server as metal3 does once it has inspected and provisioned it
// (testvm's BareMetalHost), without the NIC's address: resolve-leases reads it from dnsmasq's
// lease file, as at a site whose inspection ran before the servers had their addresses.
func (s *suite) bareMetalHost(m *testvm.Machine) {
	bmh := m.BareMetalHost(namespace)
	status := bmh.Status
	for i := range status.HardwareDetails.NIC {
		status.HardwareDetails.NIC[i].IP = ""
	}
	must(s.t, s.c.Create(ctx(), &bmh))
	bmh.Status = status
	must(s.t, s.c.Status().Update(ctx(), &bmh))
}

func (s *suite) provisioning(p *bpav1.Provisioning) *bpav1.Provisioning {
	cur := &bpav1.Provisioning{}
	must(s.t, s.c.Get(ctx(), client.ObjectKeyFromObject(p), cur))
	return cur
}

func (s *suite) workflows(kind, name string) []wfv1.Workflow {
	var list wfv1.WorkflowList
	must(s.t, s.c.List(ctx(), &list, client.InNamespace(namespace), client.MatchingLabels{bpav1.WorkflowKindLabel: kind, bpav1.WorkflowNameLabel: name}))
	return list.Items
}

func (s *suite) waitWorkflow(kind, name string, generation int64) *wfv1.Workflow {
	s.t.Helper()
	var found *wfv1.Workflow
	s.eventually(fmt.Sprintf("a %s Workflow of generation %d", kind, generation), func() error {
		for _, w := range s.workflows(kind, name) {
			if w.Labels[bpav1.WorkflowGenerationLabel] == fmt.Sprint(generation) {
				found = w.DeepCopy()
				return nil
			}
		}
		return fmt.Errorf("none")
	})
	return found
}

func (s *suite) waitProvisioningReady(p *bpav1.Provisioning, generation int64) {
	s.t.Helper()
	last := ""
	s.eventually(fmt.Sprintf("Provisioning %s Ready at generation %d", p.Name, generation), func() error {
		// A request the API server does not answer in time is asked again: a run of an hour
		// on a loaded machine must not end on one slow answer.
		cur := &bpav1.Provisioning{}
		if err := s.c.Get(ctx(), client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		line := strings.TrimSpace(fmt.Sprintf("provisioning/%s %s %s %s %s", cur.Name, cur.Status.Phase, cur.Status.Progress, cur.Status.WorkflowName, cur.Status.Message))
		if k := cur.Status.Kubespray; k != nil {
			line += " | " + k.Summary
			if n := len(s.kubesprayProgress); n == 0 || s.kubesprayProgress[n-1] != k.Summary {
				s.kubesprayProgress = append(s.kubesprayProgress, k.Summary)
			}
		}
		if line != last {
			say(s.t, "%s", line)
			last = line
		}
		if stalled := condition(cur.Status.Conditions, bpav1.ConditionStalled); stalled != nil && stalled.Status == metav1.ConditionTrue {
			s.t.Fatalf("Provisioning stalled: %s\n%s", stalled.Message, s.node.stepLogs(namespace, cur.Status.WorkflowName))
		}
		if c := condition(cur.Status.Conditions, bpav1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != generation {
			return fmt.Errorf("not Ready: %+v", cur.Status.WorkflowStatus)
		}
		return nil
	})
}

func (s *suite) waitSoftwareReady(sw *bpav1.Software, generation int64, nodes int) {
	s.t.Helper()
	last := ""
	s.eventually(fmt.Sprintf("Software %s Ready at generation %d on %d nodes", sw.Name, generation, nodes), func() error {
		cur := &bpav1.Software{}
		if err := s.c.Get(ctx(), client.ObjectKeyFromObject(sw), cur); err != nil {
			return err
		}
		line := strings.TrimSpace(fmt.Sprintf("software/%s %s %s %s %s", cur.Name, cur.Status.Phase, cur.Status.Progress, cur.Status.WorkflowName, cur.Status.Message))
		if line != last {
			say(s.t, "%s", line)
			last = line
		}
		if stalled := condition(cur.Status.Conditions, bpav1.ConditionStalled); stalled != nil && stalled.Status == metav1.ConditionTrue {
			s.t.Fatalf("Software stalled: %s\n%s", stalled.Message, s.node.stepLogs(namespace, cur.Status.WorkflowName))
		}
		if c := condition(cur.Status.Conditions, bpav1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != generation {
			return fmt.Errorf("not Ready")
		}
		if len(cur.Status.Nodes) != nodes {
			return fmt.Errorf("%d node reports", len(cur.Status.Nodes))
		}
		for _, n := range cur.Status.Nodes {
			say(s.t, "  node %s (%s): changed %v, unchanged %d", n.Node, n.Role, n.Changed, n.Unchanged)
		}
		return nil
	})
}

// gracefulRemovalVars is what check-leaving-nodes chooses for nodes that all answer: drain
// and reset them, no ungraceful removal.
const gracefulRemovalVars = `{"reset_nodes":true,"allow_ungraceful_removal":false}`

// removalVars are what check-leaving-nodes chose in the Provisioning's Workflow of generation.
func (s *suite) removalVars(p *bpav1.Provisioning, generation int64) string {
	s.t.Helper()
	wf := s.waitWorkflow(bpav1.WorkflowKindProvisioning, p.Name, generation)
	for _, n := range wf.Status.Nodes {
		if n.TemplateName == "check-leaving-nodes" && n.Type == wfv1.NodeTypePod && n.Phase == wfv1.NodeSucceeded && n.Outputs != nil {
			for _, o := range n.Outputs.Parameters {
				if o.Name == "removal-vars" && o.Value != nil {
					return o.Value.String()
				}
			}
		}
	}
	s.t.Errorf("generation %d's Workflow %s has no succeeded check-leaving-nodes with removal-vars", generation, wf.Name)
	return ""
}

// checkUngracefulEvent checks the Provisioning's Warning Event naming node.
func (s *suite) checkUngracefulEvent(p *bpav1.Provisioning, node string) {
	s.t.Helper()
	var events corev1.EventList
	must(s.t, s.c.List(ctx(), &events, client.InNamespace(namespace)))
	for _, e := range events.Items {
		if e.Reason == bpav1.EventUngracefulRemoval && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == p.Name && strings.Contains(e.Message, node) {
			say(s.t, "Event %s %s: %s", e.Type, e.Reason, e.Message)
			return
		}
	}
	s.t.Errorf("no Warning %s Event on %s naming %s", bpav1.EventUngracefulRemoval, p.Name, node)
}

// checkNotAnswering: the run went on without node, silent at ip: the status lists it with its
// address, and a Warning Event says so.
func (s *suite) checkNotAnswering(p *bpav1.Provisioning, node, ip string) {
	s.t.Helper()
	cur := &bpav1.Provisioning{}
	must(s.t, s.c.Get(ctx(), client.ObjectKeyFromObject(p), cur))
	i := slices.IndexFunc(cur.Status.NotAnswering, func(n bpav1.SilentNode) bool {
		return n.Node == node && n.Address == net.JoinHostPort(ip, "22") && !n.TriedAt.IsZero()
	})
	if i < 0 {
		s.t.Errorf("status.notAnswering %+v, want %s at %s", cur.Status.NotAnswering, node, ip)
		return
	}
	// The Event of this run: it says when the node was tried, as the status does.
	tried := "tried at " + cur.Status.NotAnswering[i].TriedAt.UTC().Format(time.RFC3339)
	var events corev1.EventList
	must(s.t, s.c.List(ctx(), &events, client.InNamespace(namespace)))
	for _, e := range events.Items {
		if e.Reason == bpav1.EventNodeNotAnswering && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == p.Name &&
			strings.Contains(e.Message, `node "`+node+`"`) && strings.Contains(e.Message, tried) && strings.HasSuffix(e.Message, "the run goes on without it") {
			say(s.t, "Event %s %s: %s", e.Type, e.Reason, e.Message)
			return
		}
	}
	s.t.Errorf("no Warning %s Event on %s saying the run goes on without %s, %s", bpav1.EventNodeNotAnswering, p.Name, node, tried)
}

func (s *suite) checkClaims(p *bpav1.Provisioning, want int) {
	if err := s.claims(p, want); err != nil {
		s.t.Error(err)
	}
}

func (s *suite) claims(p *bpav1.Provisioning, want int) error {
	var hosts metal3v1alpha1.BareMetalHostList
	must(s.t, s.c.List(ctx(), &hosts, client.InNamespace(namespace)))
	claimed := 0
	for _, h := range hosts.Items {
		if ref := h.Spec.ConsumerRef; ref != nil && ref.Name == p.Name {
			claimed++
		}
	}
	if claimed != want {
		return fmt.Errorf("%d BareMetalHosts claimed by %s, want %d", claimed, p.Name, want)
	}
	return nil
}

func (s *suite) checkKubeconfig() {
	sec := &corev1.Secret{}
	must(s.t, s.c.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: cluster + "-kubeconfig"}, sec))
	cfg, err := clientcmd.Load(sec.Data["value"])
	must(s.t, err)
	for _, c := range cfg.Clusters {
		if !strings.HasPrefix(c.Server, "https://"+s.hosts[0].IP+":") {
			s.t.Errorf("the fetched kubeconfig points at %s, want master-1 (%s)", c.Server, s.hosts[0].IP)
		}
	}
	known := &corev1.Secret{}
	must(s.t, s.c.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: cluster + "-known-hosts"}, known))
	if len(known.Data) == 0 {
		s.t.Errorf("no host key pinned")
	}
	say(s.t, "Secret %s-kubeconfig points at %s; %d host keys pinned", cluster, s.hosts[0].IP, len(known.Data))
}

func (s *suite) checkPluginApplied() {
	cm := &corev1.ConfigMap{}
	if err := s.c.Get(ctx(), client.ObjectKey{Namespace: "default", Name: "kud-plugin-stand-in"}, cm); err != nil {
		s.t.Errorf("the multus plugin template applied nothing into the new cluster: %v", err)
		return
	}
	say(s.t, "KUD plugin multus applied into the new cluster through the fetched kubeconfig")
}

func (s *suite) eventually(what string, cond func() error) {
	s.t.Helper()
	deadline := time.Now().Add(s.wait)
	for {
		select {
		case <-s.argoDone:
			s.t.Fatalf("%s: Argo's workflow-controller exited", what)
		default:
		}
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not within %s: %v", what, s.wait, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func condition(conds []metav1.Condition, typ string) *metav1.Condition {
	i := slices.IndexFunc(conds, func(c metav1.Condition) bool { return c.Type == typ })
	if i < 0 {
		return nil
	}
	return &conds[i]
}

func patch[T client.Object](t *testing.T, c client.Client, obj T, mutate func(T)) {
	t.Helper()
	for range 10 {
		must(t, c.Get(ctx(), client.ObjectKeyFromObject(obj), obj))
		mutate(obj)
		if err := c.Update(ctx(), obj); err == nil {
			return
		}
	}
	t.Fatalf("updating %s: conflicts", obj.GetName())
}

func ctx() context.Context { return context.Background() }

// dieWithTest makes a child process die with the test process, even when the test is killed
// before its cleanups run.
func dieWithTest() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// checkKubesprayProgress: while run-kubespray ran, the controller read its progress from the
// pod's log (as its own identity, pods/log) into status.kubespray, and Argo took the plays done
// from the step's progress file: the step's node ends at plays/plays, not Argo's 1/1.
func (s *suite) checkKubesprayProgress(workflow string) {
	t := s.t
	seen := slices.ContainsFunc(s.kubesprayProgress, func(summary string) bool {
		return strings.HasPrefix(summary, "run-kubespray: cluster.yml ") && strings.Contains(summary, " plays")
	})
	if !seen {
		t.Errorf("status.kubespray never showed cluster.yml's plays while run-kubespray ran; seen: %q", s.kubesprayProgress)
	} else {
		say(t, "status.kubespray while run-kubespray ran: %s", strings.Join(s.kubesprayProgress, " → "))
	}
	wf := &wfv1.Workflow{}
	must(t, s.c.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: workflow}, wf))
	for _, n := range wf.Status.Nodes {
		if n.Type != wfv1.NodeTypePod || n.TemplateName != runkubespray.Name || n.Phase != wfv1.NodeSucceeded {
			continue
		}
		done, total, ok := strings.Cut(string(n.Progress), "/")
		if !ok || done != total || total == "1" {
			t.Errorf("Argo's progress of %s is %q, want the playbook's plays done of plays (more than one)", n.DisplayName, n.Progress)
		} else {
			say(t, "Argo's progress of %s: %s plays; the Workflow's: %s", n.DisplayName, n.Progress, wf.Status.Progress)
		}
	}
}
