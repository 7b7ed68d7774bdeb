//go:build vm

package vm_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	checkleavingnodespod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checkleavingnodes/pod"
	fetchkubeconfigpod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	installsoftwarepod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware/pod"
	pinhostkeyspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
	renderinventorypod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory/pod"
	resolveclusterhostspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveclusterhosts/pod"
	resolveleasespod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveleases/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// sitePackages are what the site's repository carries: what the Software installs.
var sitePackages = []testutil.DebPackage{{Name: "htop", Version: "3.2.2-2"}, {Name: "jq", Version: "1.6-2"}, {Name: "tmux", Version: "3.3a-3"}}

// TestStepsOnVirtualMachines runs the steps' own runtimes against the site's machines, as the
// step pods run them, with a real API server: discover-hosts claims the BareMetalHosts that
// describe them, resolve-leases reads dnsmasq's lease file, pin-host-keys pins the keys the
// machines made on first boot, render-inventory's inventory drives the real ansible-playbook
// (the kubespray stand-in's cluster.yml) on them as the admin user with become,
// fetch-kubeconfig reads admin.conf through sudo, and install-software installs with each
// machine's own apt-get and dpkg from a repository the suite serves on the site network.
// Then a machine rebuilt from its image (new host key) is refused until its BareMetalHost
// says it was provisioned again, and then pinned afresh. Each stage is a function below, in
// the order they run; each leaves the site as the next expects it.
func TestStepsOnVirtualMachines(t *testing.T) {
	// The master as kubespray's preinstall wants a control-plane node: 1500 MB at least (one CPU
	// is enough short of kubeadm init; a second one, on 2 cores, slows the others down).
	s := &stepsStory{vmSite: startVMSite(t, "10.253.0", []testvm.Spec{{Name: "vm-master", CPUs: 1, MemoryMiB: 2560}, {Name: "vm-worker", CPUs: 1, MemoryMiB: 1536}}, nil)}
	s.standInCluster(t)
	s.kubesprayPackagesServed(t)
	t.Run("the real cluster.yml through its downloads", s.realClusterThroughDownloads)
	t.Run("the real scale.yml --limit, with and without kept facts", s.realScaleChecks)
	s.kubeconfigStored(t)
	s.softwareInstalled(t)
	s.masterRebootedDuringInstall(t)
	s.leasesWhileDHCPRestarts(t)
	s.poweredOffWorkerNamed(t)
	t.Run("the real remove-node.yml of a powered-off worker", s.realRemoveOfPoweredOffWorker)
	s.rebuiltWorkerRepinned(t)
}

// stepsStory is TestStepsOnVirtualMachines' site and what its stages hand on.
type stepsStory struct {
	*vmSite
	// inventory and extraVars are render-inventory's, for every kubespray run.
	inventory, extraVars []byte
	// kubesprayPackages are the Debian packages kubespray installs, which the site's mirror
	// serves; nil without a kubespray image.
	kubesprayPackages []string
	// swRef is the Software install-software runs for, at its current generation.
	swRef stepcmd.CRRef
}

// standInCluster runs kubespray's stand-in as run-kubespray runs kubespray: the rendered
// inventory and extra variables, strict host key checking against the pins, the admin user
// with become.
func (s *stepsStory) standInCluster(t *testing.T) {
	var err error
	s.inventory, s.extraVars, err = renderinventorypod.Run(context.Background(), s.env.Client, s.ref, s.addressed, renderinventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	testvm.Run(t, s.clients[s.master.Name], "sudo -n install -d /etc/kubernetes/stand-in && echo '"+testutil.AdminConf("\n    token: vm-token")+"' | sudo -n tee /etc/kubernetes/stand-in/admin.conf >/dev/null")
	runKubespray(t, s.env, s.ns, s.p, s.inventory, s.extraVars, s.keyFile)
	if joined := testvm.Run(t, s.clients[s.worker.Name], "cat /etc/kubernetes/joined"); !strings.HasPrefix(joined, "worker ") {
		t.Errorf("the worker's join mark: %q", joined)
	}
}

// kubesprayPackagesServed: kubespray's system_packages role, which every run's facts.yml
// runs, installs Debian packages. kubespray itself says which (kubesprayPackages); the suite
// builds the site's package mirror of them and serves it beside the site's own repository.
func (s *stepsStory) kubesprayPackagesServed(t *testing.T) {
	s.kubesprayPackages = s.servePackagesKubesprayInstalls(t, s.inventory, s.extraVars)
}

// realClusterThroughDownloads runs the real kubespray as far as it goes without installing
// Kubernetes: the real cluster.yml through its downloads, offline from the site's mirror
// (clusterThroughDownloads): kubespray's version check, its own validation of the rendered
// inventory and extra variables, bootstrap_os (kubespray's packages, installed by each
// machine's apt from the mirror), the facts of every node, preinstall, the container runtime
// and every download, over SSH with become.
//
// It takes about 28 minutes of the emulated machines, more than make test has room for: it
// runs with BPA_VM_DOWNLOADS=1. make e2e-cluster's whole cluster.yml by hand
// (TestRealClusterOnVirtualMachines) runs every one of these downloads offline too.
func (s *stepsStory) realClusterThroughDownloads(t *testing.T) {
	if os.Getenv(vmDownloadsEnv) == "" {
		t.Skip("cluster.yml through its downloads takes about 28 minutes on emulated machines, more than make test has room for: " +
			vmDownloadsEnv + "=1 make vms runs it, and make e2e-cluster's whole cluster.yml fetches every download offline")
	}
	skipWithoutKubesprayImage(t)
	packages := s.kubesprayPackages
	built := os.Getenv("BPA_KUBESPRAY_DOWNLOADS")
	if built == "" {
		t.Fatal("kubespray's image is built, not what it downloads (BPA_KUBESPRAY_DOWNLOADS): make vms builds both")
	}
	clusterThroughDownloads(t, s.vmSite, built)
	for _, c := range s.clients {
		if got := testvm.Run(t, c, "dpkg-query -W -f='${Status}\\n' "+strings.Join(packages, " ")+" | grep -c '^install ok installed$' || true"); strings.TrimSpace(got) != strconv.Itoa(len(packages)) {
			t.Errorf("after bootstrap_os, %s of the %d packages kubespray installs are installed", strings.TrimSpace(got), len(packages))
		}
	}
}

// skipWithoutKubesprayImage skips a stage that runs the real kubespray when no image of it is
// built.
func skipWithoutKubesprayImage(t *testing.T) {
	t.Helper()
	if len(testkubespray.Images()) == 0 {
		t.Skip("BPA_KUBESPRAY_IMAGES is unset: no kubespray image is built (make vms builds them from ../shared/third_party)")
	}
}

// vmDownloadsEnv turns on realClusterThroughDownloads.
const vmDownloadsEnv = "BPA_VM_DOWNLOADS"

// realScaleChecks runs the real scale.yml --limit as a scale run runs it, as far as kubespray's
// validation and preinstall's checks go.
func (s *stepsStory) realScaleChecks(t *testing.T) {
	skipWithoutKubesprayImage(t)
	// scale.yml --limit, as far as kubespray's validation and preinstall's checks go (not the
	// installation: the site's mirror holds no Kubernetes yet). In a pod of its own, whose
	// fact cache is empty as every new pod's is, kubespray refuses the limit...
	checks := []string{"--tags=facts,asserts"}
	out := runRealKubespray(t, s.env, s.ns, s.p, s.inventory, s.extraVars, s.keyFile, testkubespray.Playbook{Path: "scale.yml", Options: append(checks, "--limit=worker"), MayFail: true})
	if !strings.Contains(out, "Kubespray does not support '--limit' without a populated facts cache") {
		t.Errorf("the real scale.yml --limit without the others' facts did not refuse to run:\n%s", testkubespray.LastLines(out, 30))
	}
	// ...and a scale run, which runs facts.yml over every node first in the same pod, passes.
	scale := runkubespray.Plan{Mode: runkubespray.ModeScale, Nodes: []string{"worker"}}
	var kept []byte
	out = runRealKubespray(t, s.env, s.ns, s.p, s.inventory, s.extraVars, s.keyFile, testkubespray.Playbook{Plan: &scale, Options: checks,
		Outputs: map[string]*[]byte{path.Join(steps.OutputsDir, runkubespray.FactsFile): &kept}})
	passedFactsCheck := func(out string) bool {
		return regexp.MustCompile(`does not have a fact cache\] \**\n(.*\n){0,2}ok: \[worker\]`).MatchString(out) &&
			regexp.MustCompile(`(?m)^worker\s+: ok=[1-9]\d* .*unreachable=0\s+failed=0`).MatchString(out)
	}
	if !passedFactsCheck(out) || !strings.Contains(out, "playbooks/facts.yml for master first") {
		t.Errorf("the real scale.yml --limit=worker in a scale run, with no facts kept, did not gather the master's and pass kubespray's fact cache check:\n%s", testkubespray.LastLines(out, 40))
	}
	// ...and the next scale run, its pod given the facts the controller keeps of that run,
	// gathers none again and passes.
	facts, err := runkubespray.ParseKeptFacts(string(kept))
	if err != nil || len(facts) != 2 {
		t.Fatalf("the scale run kept the facts of %d nodes, want the master's and the worker's: %v\n%s", len(facts), err, kept)
	}
	data, _, _ := runkubespray.Merge(nil, nil, facts)
	mounted := map[string][]byte{}
	for node, entry := range data {
		mounted[path.Join(runkubespray.FactsCacheDir, node)] = entry
		t.Logf("kept facts of %s: %d bytes gzip'd (%d bytes of the step's output)", node, len(entry), len(kept))
	}
	out = runRealKubespray(t, s.env, s.ns, s.p, s.inventory, s.extraVars, s.keyFile, testkubespray.Playbook{Plan: &scale, Options: checks, Files: mounted})
	if !passedFactsCheck(out) || strings.Contains(out, "playbooks/facts.yml for") {
		t.Errorf("the real scale.yml --limit=worker with the master's facts kept gathered them again or did not pass kubespray's fact cache check:\n%s", testkubespray.LastLines(out, 40))
	}
}

// kubeconfigStored: fetch-kubeconfig reads admin.conf through sudo and stores it.
func (s *stepsStory) kubeconfigStored(t *testing.T) {
	run := fetchkubeconfigpod.KubeconfigRun{Master: "master", User: testvm.AdminUser}
	if err := fetchkubeconfigpod.Run(context.Background(), s.env.Client, s.ref, run, s.addressed, fetchkubeconfigpod.DefaultAdminConf, s.sshOpts); err != nil {
		t.Fatal(err)
	}
	kubeconfig := &corev1.Secret{}
	if err := s.env.Client.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "cluster-abc-kubeconfig"}, kubeconfig); err != nil {
		t.Fatal(err)
	}
	if v := string(kubeconfig.Data[bpav1.KubeconfigSecretKey]); !strings.Contains(v, "https://"+s.master.IP+":") || !strings.Contains(v, "vm-token") {
		t.Errorf("the stored kubeconfig does not reach the master at %s with its token", s.master.IP)
	}
}

// softwareInstalled: install-software with each machine's own apt-get and dpkg, through sudo;
// a second run changes nothing.
func (s *stepsStory) softwareInstalled(t *testing.T) {
	ctx := context.Background()
	s.swRef = s.env.Software(t, s.ns, bpav1.SoftwareSpec{
		MasterSoftware: []bpav1.SoftwarePackage{{Name: "jq", Version: "1.6-2"}, {Name: "htop"}},
		WorkerSoftware: []bpav1.SoftwarePackage{{Name: "tmux"}},
		SSH:            &bpav1.SSHAccess{User: testvm.AdminUser},
	})
	nodes, err := resolveclusterhostspod.Run(ctx, s.env.Client, s.swRef, nil)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("the cluster's nodes: %v %v", nodes, err)
	}
	for _, n := range nodes {
		start := time.Now()
		report, err := installsoftwarepod.Run(ctx, s.env.Client, s.swRef, n.Label, n.Role, n.IP, installsoftwarepod.InstallOptions{SSH: s.sshOpts})
		if err != nil {
			t.Fatalf("install-software on %s: %v (report %+v)", n.Label, err, report)
		}
		t.Logf("install-software on %s (%s): %s changed %v in %.0f s", n.Label, n.IP, report.PackageManager, report.Changed, time.Since(start).Seconds())
		again, err := installsoftwarepod.Run(ctx, s.env.Client, s.swRef, n.Label, n.Role, n.IP, installsoftwarepod.InstallOptions{SSH: s.sshOpts})
		if err != nil || len(again.Changed) != 0 {
			t.Errorf("a second run on %s changed %v (%v); want nothing", n.Label, again.Changed, err)
		}
	}
	if got := testvm.Run(t, s.clients[s.master.Name], "dpkg-query -W -f '${Package}=${Version} ' jq htop"); got != "htop=3.2.2-2 jq=1.6-2 " {
		t.Errorf("the master's dpkg says %q", got)
	}
	if got := testvm.Run(t, s.clients[s.worker.Name], "dpkg-query -W -f '${Package}=${Version}' tmux"); got != "tmux=3.3a-3" {
		t.Errorf("the worker's dpkg says %q", got)
	}
}

// masterRebootedDuringInstall: the master rebooted in the middle of install-software (of the
// Software's next generation, which adds a package): the step fails, waiting (exit 75), and
// Argo's retries (here: the same loop, bounded) converge once the machine is back.
func (s *stepsStory) masterRebootedDuringInstall(t *testing.T) {
	ctx := context.Background()
	sw := &bpav1.Software{}
	if err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: s.swRef.Name}, sw); err != nil {
		t.Fatal(err)
	}
	sw.Spec.MasterSoftware = append(sw.Spec.MasterSoftware, bpav1.SoftwarePackage{Name: "tmux"})
	if err := s.env.Client.Update(ctx, sw); err != nil {
		t.Fatal(err)
	}
	s.swRef.Generation = sw.Generation // the stages after this one run for the new generation
	rebooted := make(chan string, 1)
	go func() { rebooted <- rebootWhileApt(s.clients[s.master.Name]) }()
	attempts, report := s.installUntilConverged(t, rebooted)
	t.Logf("the master rebooted during install-software (%s); %d attempts failed, waiting, first %q; then it converged: changed %v", <-rebooted, len(attempts), first(attempts), report.Changed)
	if len(attempts) == 0 {
		t.Errorf("install-software never saw the reboot")
	}
	redialCtx, cancel := context.WithTimeout(ctx, bootWait)
	defer cancel()
	var err error
	s.clients[s.master.Name], _, err = s.master.Dial(redialCtx, testvm.AdminUser, s.signer)
	if err != nil {
		t.Fatal(err)
	}
	if got := testvm.Run(t, s.clients[s.master.Name], "dpkg-query -W -f '${Package}=${Version} ' jq htop tmux"); got != "htop=3.2.2-2 jq=1.6-2 tmux=3.3a-3 " {
		t.Errorf("after the reboot, the master's dpkg says %q", got)
	}
}

// installUntilConverged runs install-software on the master as Argo retries it, within
// bootWait, and returns the failed attempts' errors and the converged run's report.
func (s *stepsStory) installUntilConverged(t *testing.T, rebooted <-chan string) ([]string, installsoftware.Report) {
	t.Helper()
	retryCtx, cancel := context.WithTimeout(context.Background(), bootWait)
	defer cancel()
	var attempts []string
	for {
		report, err := installsoftwarepod.Run(context.Background(), s.env.Client, s.swRef, "master", bpav1.RoleMaster, s.master.IP, installsoftwarepod.InstallOptions{SSH: s.sshOpts})
		if err == nil {
			return attempts, report
		}
		attempts = append(attempts, err.Error())
		if !steps.IsRetryable(err) {
			t.Fatalf("install-software on a master that rebooted: a final failure after %d attempts: %v\n(the reboot: %s)", len(attempts), err, <-rebooted)
		}
		select {
		case <-retryCtx.Done():
			t.Fatalf("install-software never converged after the reboot: %v", attempts)
		case <-time.After(5 * time.Second):
		}
	}
}

// leasesWhileDHCPRestarts: dnsmasq restarted while resolve-leases reads its lease file, again
// and again: each read gives every machine its own address, or waits (retryable); never
// another address, never a final failure.
func (s *stepsStory) leasesWhileDHCPRestarts(t *testing.T) {
	stopRestarts := make(chan struct{})
	restarted := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stopRestarts:
				restarted <- n
				return
			default:
			}
			if err := s.site.RestartDHCP(); err != nil {
				restarted <- -1
				return
			}
			n++
			time.Sleep(100 * time.Millisecond)
		}
	}()
	var reads, waits int
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); reads++ {
		got, err := resolveleasespod.Run(context.Background(), s.env.Client, s.ref, s.placed, s.site.LeaseFile, leases.FormatDnsmasq)
		switch {
		case err != nil && steps.IsRetryable(err):
			waits++
		case err != nil:
			close(stopRestarts)
			<-restarted
			t.Fatalf("resolve-leases while dnsmasq restarts: a final failure: %v", err)
		default:
			for _, n := range got {
				if want := map[string]string{"master": s.master.IP, "worker": s.worker.IP}[n.Label]; n.IP != want {
					close(stopRestarts)
					<-restarted
					t.Fatalf("resolve-leases while dnsmasq restarts gave %s %q, want %s", n.Label, n.IP, want)
				}
			}
		}
	}
	close(stopRestarts)
	if n := <-restarted; n < 1 {
		t.Fatalf("dnsmasq could not be restarted (%d)", n)
	} else {
		t.Logf("resolve-leases read the lease file %d times while dnsmasq restarted %d times: %d reads waited, the others addressed every machine right", reads, n, waits)
	}
}

// poweredOffWorkerNamed: a server that never answers. install-software waits (retryable) and
// says which node, its address and when it was tried, which a retried step's last failure
// must say to be read an hour later.
func (s *stepsStory) poweredOffWorkerNamed(t *testing.T) {
	s.worker.PowerOff()
	_, err := installsoftwarepod.Run(context.Background(), s.env.Client, s.swRef, "worker", bpav1.RoleWorker, s.worker.IP, installsoftwarepod.InstallOptions{SSH: stepcmd.SSHOptions{KeyFile: s.keyFile, Port: 22, Timeout: 5 * time.Second}})
	if err == nil || !steps.IsRetryable(err) || !sshexec.NotAnswering(err) || !strings.Contains(err.Error(), `node "worker"`) ||
		!strings.Contains(err.Error(), s.worker.IP+":22 did not answer within 5s (tried at ") {
		t.Errorf("install-software on a machine powered off: %v; want a retryable failure naming the node, its address and when it was tried", err)
	}
}

// realRemoveOfPoweredOffWorker runs the real remove-node.yml for the powered-off worker, as a
// remove run runs it: with the variables check-leaving-nodes chooses for a node that does not
// answer (no reset, removal allowed ungracefully), it never contacts the node. Its pre-remove
// and post-remove roles (the drain and the deletion, through the first master's kubectl) are
// skipped: there is no Kubernetes on these machines.
func (s *stepsStory) realRemoveOfPoweredOffWorker(t *testing.T) {
	skipWithoutKubesprayImage(t)
	removalVars := filepath.Join(testinterrupt.TempDir(t), runkubespray.RemovalVarsFile)
	if err := checkleavingnodespod.Run(context.Background(), s.env.Client, s.ref, s.addressed, []string{"worker"}, 22, 5*time.Second, removalVars, io.Discard); err != nil {
		t.Fatal(err)
	}
	chosen, err := os.ReadFile(removalVars)
	if err != nil {
		t.Fatal(err)
	}
	remove := runkubespray.Plan{Mode: runkubespray.ModeRemove, Nodes: []string{"worker"}}
	out := runRealKubespray(t, s.env, s.ns, s.p, s.inventory, s.extraVars, s.keyFile, testkubespray.Playbook{
		Plan: &remove, Options: []string{"--skip-tags=pre-remove,post-remove"},
		Files: map[string][]byte{filepath.Join(steps.InputsDir, runkubespray.RemovalVarsFile): chosen},
	})
	if !strings.Contains(string(chosen), `"reset_nodes":false`) ||
		!regexp.MustCompile(`(?m)^worker\s+: ok=\d+ .*unreachable=0\s+failed=0`).MatchString(out) {
		t.Errorf("the real remove-node.yml with %s for the powered-off worker:\n%s", chosen, testkubespray.LastLines(out, 30))
	}
}

// rebuiltWorkerRepinned: the worker rebuilt from its image has a new host key. pin-host-keys
// refuses it while its BareMetalHost says nothing changed, and pins it afresh, with an Event,
// once metal3 records a new provisioning.
func (s *stepsStory) rebuiltWorkerRepinned(t *testing.T) {
	ctx := context.Background()
	_ = s.clients[s.worker.Name].Close()
	s.site.Rebuild(t, s.worker, testvm.ImageIn(s.imageDir), s.signer.PublicKey())
	bootCtx, cancel := context.WithTimeout(ctx, bootWait)
	defer cancel()
	c, newKey, err := s.worker.Dial(bootCtx, testvm.AdminUser, s.signer)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	err = pinhostkeyspod.Run(ctx, s.env.Client, s.ref, s.addressed, nil, 22, 20*time.Second, "")
	var changed *sshexec.HostKeyChangedError
	if !errors.As(err, &changed) || steps.IsRetryable(err) || !strings.Contains(err.Error(), ssh.FingerprintSHA256(newKey)) {
		t.Fatalf("pinning the rebuilt worker's new key: %v; want a final HostKeyChanged naming it", err)
	}
	bmh := s.worker.BareMetalHost(s.ns)
	if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(&bmh), &bmh); err != nil {
		t.Fatal(err)
	}
	bmh.Status.OperationHistory.Provision.Start = metav1.NewTime(s.worker.Booted.UTC().Truncate(time.Second))
	if err := s.env.Client.Status().Update(ctx, &bmh); err != nil {
		t.Fatal(err)
	}
	if err := pinhostkeyspod.Run(ctx, s.env.Client, s.ref, s.addressed, nil, 22, 20*time.Second, ""); err != nil {
		t.Fatalf("pinning the worker metal3 provisioned again: %v", err)
	}
	events := &corev1.EventList{}
	if err := s.env.Client.List(ctx, events, client.InNamespace(s.ns)); err != nil {
		t.Fatal(err)
	}
	repinned := false
	for _, e := range events.Items {
		repinned = repinned || (e.Reason == bpav1.EventHostKeyRepinned && strings.Contains(e.Message, ssh.FingerprintSHA256(newKey)))
	}
	if !repinned {
		t.Errorf("no %s Event naming the new key", bpav1.EventHostKeyRepinned)
	}
}

// createHost creates the BareMetalHost describing m in ns, with its status.
func createHost(t *testing.T, env *testenv.Env, m *testvm.Machine, ns string) {
	t.Helper()
	bmh := m.BareMetalHost(ns)
	status := bmh.Status
	if err := env.Client.Create(context.Background(), &bmh); err != nil {
		t.Fatal(err)
	}
	bmh.Status = status
	if err := env.Client.Status().Update(context.Background(), &bmh); err != nil {
		t.Fatal(err)
	}
}

// runKubespray runs the kubespray stand-in's cluster.yml on the machines with ansible-playbook,
// in run-kubespray's compiled environment and with its --become, the pinned known_hosts where
// the pod mounts it.
func runKubespray(t *testing.T, env *testenv.Env, ns string, p *bpav1.Provisioning, inventory, extraVars []byte, keyFile string) {
	t.Helper()
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Skip("ansible-playbook is missing: run hack/install-test-deps.sh")
	}
	sec := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cluster-abc-known-hosts"}, sec); err != nil {
		t.Fatal(err)
	}
	dir := testinterrupt.TempDir(t)
	files := map[string][]byte{"known_hosts": sec.Data[steps.KnownHostsKey], "hosts.ini": inventory, "extra-vars.json": extraVars}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	environ := testenv.KubesprayEnv(t, p, filepath.Join(dir, "known_hosts"), dir)
	start := time.Now()
	// --become as run-kubespray passes it (runkubespray.Plan.Command): the inventory gives no
	// privilege, the stand-in's node plays take root from it as kubespray's do.
	cmd := exec.Command(playbook, "--inventory="+filepath.Join(dir, "hosts.ini"), "--extra-vars=@"+filepath.Join(dir, "extra-vars.json"),
		"--private-key="+keyFile, "--become", filepath.Join(testutil.RepoRoot(t), "test", "e2e", "kubespray", "cluster.yml"))
	cmd.Env, cmd.Dir = environ, dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ansible-playbook cluster.yml (stand-in) on the machines: %v\n%s", err, out)
	}
	t.Logf("the kubespray stand-in's cluster.yml ran on the machines in %.0f s", time.Since(start).Seconds())
}

// rebootWhileApt waits until apt-get or dpkg runs on the machine, then reboots it at once, as a
// power cycle would (no clean shutdown), and says what it interrupted.
func rebootWhileApt(c *ssh.Client) string {
	for range 600 {
		sess, err := c.NewSession()
		if err != nil {
			return "no session: " + err.Error()
		}
		out, _ := sess.Output("pgrep -a -x 'apt-get|dpkg' | head -1")
		_ = sess.Close()
		if len(out) > 0 {
			sess, err := c.NewSession()
			if err != nil {
				return "no session: " + err.Error()
			}
			// The session ends with the machine: wait for it, a bounded time.
			done := make(chan error, 1)
			go func() { done <- sess.Run("sudo -n systemctl reboot --force --force") }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
			}
			_ = sess.Close()
			return "interrupted " + strings.TrimSpace(string(out))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "apt-get never ran"
}

func first(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[0]
}
