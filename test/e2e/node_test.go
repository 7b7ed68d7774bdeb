//go:build e2e

package e2e_test

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testctr"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
)

// testNode is a Kubernetes node as a site has one: a network namespace on the site's bridge in
// which containerd (Debian's, with runc and the CNI bridge plugin) and a kubelet built from the
// Kubernetes module run. kube-scheduler places the pods and kube-controller-manager does what
// a cluster's does (the executor's token Secret, kube-root-ca.crt, the node's not-ready taint,
// garbage collection); both run in the test's namespace. Every Workflow pod runs on the node in
// real containers, from the images of hack/node-images.sh.
//
// What a cluster would add and the suite does without: kube-proxy. The node's loopback holds
// the `kubernetes` Service's address, relayed to the API server.
type testNode struct {
	Name, IP string
	// NetNS is the node's network namespace (its path; a process holds it, see testvm.NetNS).
	NetNS      string
	dir        string
	containerd string // its socket
	images     []string
}

const (
	nodeName = "e2e-node"
	// podSubnet is the node's CNI bridge range; the site's DHCP server routes it through the
	// node (nodeAddress), so the hosts' route to the pods is their network's.
	podSubnet   = "10.251.0.0/24"
	nodeAddress = siteSubnet + ".3"
	// Kubernetes' pause, as hack/node-images.sh names it: containerd's sandbox image.
	pauseImage = "docker.io/library/bpa-pause:3.10.1"
)

// kernelTunables are the sysctls a kubelet sets at start (they are not per network namespace):
// the suite puts back what the machine had.
var kernelTunables = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// podLogs is where the kubelet writes the pods' logs (inside the suite's scratch, kept when the
// test fails, never on the host's /var/log/pods).
func (n *testNode) podLogs() string { return filepath.Join(n.dir, "pod-logs") }

// stepLogs is the end of the main container's log of a Workflow's last two pods, as the kubelet
// wrote them: what a stalled run's failing step said, beyond its one-line message.
func (n *testNode) stepLogs(namespace, workflow string) string {
	logs, _ := filepath.Glob(filepath.Join(n.podLogs(), namespace+"_"+workflow+"-*", "main", "*.log"))
	slices.SortFunc(logs, func(a, b string) int {
		ia, _ := os.Stat(a)
		ib, _ := os.Stat(b)
		if ia == nil || ib == nil {
			return 0
		}
		return ia.ModTime().Compare(ib.ModTime())
	})
	var out strings.Builder
	for _, l := range logs[max(0, len(logs)-2):] {
		raw, _ := os.ReadFile(l)
		fmt.Fprintf(&out, "%s (last 25 lines):\n%s\n", filepath.Base(filepath.Dir(filepath.Dir(l))), tail(string(raw), 25))
	}
	return out.String()
}

// startNode starts the node on the site with the images of archive, registers it with the API
// server and waits until it is Ready. Everything it starts is stopped, every mount it leaves
// unmounted and every namespace removed when the test ends.
func startNode(site *testvm.Site, t *testing.T, env *testenv.Env, certDir, dir string, archives ...string) *testNode {
	t.Helper()
	root := testenv.RepoRoot()
	bin := filepath.Join(root, "bin", "k8s")
	for _, b := range []string{"kubelet", "kube-scheduler", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s is not built: run `make e2e` (hack/control-plane.sh node)", b)
		}
	}
	for _, b := range []string{"containerd", "ctr", "runc", "nsenter"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Fatalf("%s is missing: run `make test-deps` (Debian containerd, runc, containernetworking-plugins)", b)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		t.Fatalf("the CNI bridge plugin is missing: run `make test-deps` (Debian containernetworking-plugins)")
	}
	ns := testvm.NewNetNS(t)
	n := &testNode{Name: nodeName, NetNS: ns.Path, IP: nodeAddress, dir: dir}
	must(t, os.MkdirAll(dir, 0o755))
	saveTunables(t)

	// The node's network: a veth on the bridge, the Service address on its loopback (relayed to
	// the API server), forwarding between the pods' bridge and the site.
	site.Plug(t, "node", ns, n.IP)
	ns.Run(t, "ip", "addr", "add", testenv.ServiceIP+"/32", "dev", "lo")
	ns.Run(t, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	apiURL, err := url.Parse(env.Config.Host)
	must(t, err)
	l, err := listenIn(n.NetNS, net.JoinHostPort(testenv.ServiceIP, "443"))
	must(t, err)
	t.Cleanup(func() { l.Close() })
	go forward(l, func() (net.Conn, error) { return net.Dial("tcp", apiURL.Host) })

	n.startContainerd(t, archives)
	n.startKubelet(t, env)
	startScheduler(t, env, dir)
	startControllerManager(t, env, certDir, dir)

	s := &suite{t: t, c: env.Client, wait: stageWait}
	s.eventually("node "+n.Name+" Ready", func() error {
		node := &corev1.Node{}
		if err := env.Client.Get(ctx(), client.ObjectKey{Name: n.Name}, node); err != nil {
			return err
		}
		// The kubelet registers its node tainted not-ready; the node lifecycle controller lifts
		// the taint once the node is Ready.
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && len(node.Spec.Taints) == 0 {
				return nil
			}
		}
		return fmt.Errorf("not Ready: %v, taints %v", node.Status.Conditions, node.Spec.Taints)
	})
	return n
}

func (n *testNode) startContainerd(t *testing.T, archives []string) {
	t.Helper()
	cni := filepath.Join(n.dir, "cni")
	must(t, os.MkdirAll(cni, 0o755))
	must(t, os.WriteFile(filepath.Join(cni, "10-bpa-e2e.conflist"), []byte(fmt.Sprintf(`{"cniVersion": "0.4.0", "name": "bpa-e2e", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}}]}
`, podSubnet, filepath.Join(n.dir, "ipam"))), 0o644))
	n.containerd = filepath.Join(n.dir, "containerd.sock")
	config := filepath.Join(n.dir, "containerd.toml")
	must(t, os.WriteFile(config, []byte(fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = %[3]q
[ttrpc]
  address = "%[3]s.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  # This machine lets nobody lower an OOM score (the kubelet asks -998 for the sandbox).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[5]q
`, filepath.Join(n.dir, "containerd"), filepath.Join(n.dir, "containerd-state"), n.containerd, pauseImage, cni)), 0o644))
	before := cniNetNS()
	cmd := n.inNode(filepath.Join(n.dir, "containerd.log"), "containerd", "--config", config)
	must(t, cmd.Start())
	testinterrupt.Cleanup(t, func() {
		n.stopContainers(t)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		waitOrKill(cmd, 10*time.Second)
		n.killShims()
		testctr.UnmountUnder(n.dir)
		// The pods' network namespaces containerd made and did not remove.
		for _, ns := range cniNetNS() {
			if !slices.Contains(before, ns) {
				_ = exec.Command("ip", "netns", "del", filepath.Base(ns)).Run()
			}
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for n.ctr("version") != nil {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(n.dir, "containerd.log"))
			t.Fatalf("containerd did not answer on %s:\n%s", n.containerd, tail(string(log), 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	start := time.Now()
	for _, archive := range archives {
		out, err := exec.Command("ctr", "--address", n.containerd, "--namespace", "k8s.io", "images", "import", archive).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr images import %s: %v\n%s", archive, err, out)
		}
	}
	list, err := exec.Command("ctr", "--address", n.containerd, "--namespace", "k8s.io", "images", "list", "--quiet").Output()
	must(t, err)
	for _, name := range strings.Fields(string(list)) {
		if !strings.HasPrefix(name, "sha256:") {
			n.images = append(n.images, name)
		}
	}
	say(t, "node: containerd imported %d images in %.1f s: %s", len(n.images), time.Since(start).Seconds(), strings.Join(n.images, ", "))
}

// image is the name of the node's image whose name holds part.
func (n *testNode) image(t *testing.T, part string) string {
	t.Helper()
	for _, name := range n.images {
		if strings.Contains(name, part) {
			return name
		}
	}
	t.Fatalf("the node has no image named like %q: %v", part, n.images)
	return ""
}

func (n *testNode) startKubelet(t *testing.T, env *testenv.Env) {
	t.Helper()
	// The kubelet's identity: a node's user, and system:masters because the API server runs no
	// Node authorizer.
	user, err := env.AddUser(envtest.User{Name: "system:node:" + n.Name, Groups: []string{"system:nodes", "system:masters"}}, nil)
	must(t, err)
	raw, err := user.KubeConfig()
	must(t, err)
	cfg, err := clientcmd.Load(raw)
	must(t, err)
	for _, c := range cfg.Clusters {
		c.Server = "https://" + net.JoinHostPort(testenv.ServiceIP, "443")
	}
	kubeconfig := filepath.Join(n.dir, "kubelet.kubeconfig")
	must(t, clientcmd.WriteToFile(*cfg, kubeconfig))
	config := filepath.Join(n.dir, "kubelet.yaml")
	// cgroup v1 without systemd: cgroupfs, and no QoS hierarchy to leave behind. Eviction
	// thresholds low: a test machine's disk is not the pods' to guard. Its API (logs) answers
	// anyone: only the test's own namespaces reach it.
	must(t, os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%s
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
resolvConf: /etc/resolv.conf
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
nodeStatusUpdateFrequency: 2s
localStorageCapacityIsolation: false
podLogsDir: %s
`, n.containerd, n.IP, n.podLogs())), 0o644))
	cmd := n.inNode(filepath.Join(n.dir, "kubelet.log"), filepath.Join(testenv.RepoRoot(), "bin", "k8s", "kubelet"),
		"--config="+config, "--kubeconfig="+kubeconfig, "--hostname-override="+n.Name, "--node-ip="+n.IP,
		"--root-dir="+filepath.Join(n.dir, "kubelet"), "--cert-dir="+filepath.Join(n.dir, "kubelet-pki"), "--v=1")
	must(t, cmd.Start())
	testinterrupt.Cleanup(t, func() {
		n.drain(t, env)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		waitOrKill(cmd, 10*time.Second)
		if err := removeLinksInto(containerLogLinks, n.podLogs()); err != nil {
			t.Logf("node: the kubelet's links to its pods' logs: %v", err)
		}
		if t.Failed() {
			// Without the machine's block devices in its view, cAdvisor cannot size the disk:
			// the eviction manager says so every 10 s. Those lines hide the useful ones.
			log, _ := os.ReadFile(filepath.Join(n.dir, "kubelet.log"))
			lines := slices.DeleteFunc(strings.Split(string(log), "\n"), func(l string) bool {
				return strings.Contains(l, "eviction_manager.go") || strings.Contains(l, "cri_stats_provider.go")
			})
			t.Logf("kubelet log (last 30 lines, without the eviction manager's):\n%s", tail(strings.Join(lines, "\n"), 30))
		}
	})
}

// containerLogLinks is where every kubelet links its containers' logs, whatever its
// podLogsDir: the kubelet's own constant, not a setting.
const containerLogLinks = "/var/log/containers"

// removeLinksInto removes the symbolic links in dir that point into target. The kubelet removes
// a container's link when it collects the container; the suite stops it first, so the links
// would outlive their targets, which go with the suite's scratch folder.
func removeLinksInto(dir, target string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		link := filepath.Join(dir, e.Name())
		to, err := os.Readlink(link)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if rel, err := filepath.Rel(target, to); err == nil && filepath.IsLocal(rel) {
			errs = append(errs, os.Remove(link))
		}
	}
	return errors.Join(errs...)
}

// drain deletes the pods left on the node and gives the kubelet time to stop their containers
// and sandboxes, so that CNI tears their network down.
func (n *testNode) drain(t *testing.T, env *testenv.Env) {
	var pods corev1.PodList
	if err := env.Client.List(ctx(), &pods); err != nil {
		return
	}
	for i := range pods.Items {
		_ = env.Client.Delete(ctx(), &pods.Items[i])
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, err := exec.Command("ctr", "--address", n.containerd, "--namespace", "k8s.io", "tasks", "list", "--quiet").Output()
		if err == nil && strings.TrimSpace(string(out)) == "" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("node: containers still running 30 s after their pods were deleted; killing them")
}

func startScheduler(t *testing.T, env *testenv.Env, dir string) {
	t.Helper()
	kubeconfig := componentKubeconfig(t, env, dir, "system:kube-scheduler")
	startComponent(t, dir, "kube-scheduler", "--kubeconfig="+kubeconfig, "--leader-elect=false", "--secure-port=0", "--v=1")
}

// startControllerManager runs kube-controller-manager with the API server's service account
// signing key (the token controller fills the executor's token Secret with it) and its CA
// (published as each namespace's kube-root-ca.crt).
func startControllerManager(t *testing.T, env *testenv.Env, certDir, dir string) {
	t.Helper()
	kubeconfig := componentKubeconfig(t, env, dir, "system:kube-controller-manager")
	ca := filepath.Join(dir, "ca.crt")
	must(t, os.WriteFile(ca, env.Config.CAData, 0o644))
	startComponent(t, dir, "kube-controller-manager", "--kubeconfig="+kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--service-account-private-key-file="+filepath.Join(certDir, "sa-signer.key"), "--root-ca-file="+ca,
		"--use-service-account-credentials=false", "--v=1",
		// kubespray's stand-in registers the new cluster's nodes (register-nodes.yml) with no
		// kubelet behind them: the node lifecycle would mark them NotReady once its grace
		// period without a heartbeat ends (50 s), and check-nodes would fail on the stand-in.
		// It still runs: it lifts the not-ready taint off the suite's own node once Ready.
		"--node-monitor-grace-period=24h")
}

// componentKubeconfig writes a kubeconfig of a system:masters user for a control plane part.
func componentKubeconfig(t *testing.T, env *testenv.Env, dir, name string) string {
	t.Helper()
	user, err := env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	must(t, err)
	raw, err := user.KubeConfig()
	must(t, err)
	kubeconfig := filepath.Join(dir, strings.TrimPrefix(name, "system:")+".kubeconfig")
	must(t, os.WriteFile(kubeconfig, raw, 0o600))
	return kubeconfig
}

// startComponent runs a control plane binary of bin/k8s in the test's namespace until the test
// ends, its log in dir.
func startComponent(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	logFile := filepath.Join(dir, name+".log")
	log, err := os.Create(logFile)
	must(t, err)
	cmd := exec.Command(filepath.Join(testenv.RepoRoot(), "bin", "k8s", name), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = dieWithTest()
	must(t, cmd.Start())
	log.Close()
	testinterrupt.Cleanup(t, func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			raw, _ := os.ReadFile(logFile)
			t.Logf("%s log (last 15 lines):\n%s", name, tail(string(raw), 15))
		}
	})
}

// inNode makes a command that runs in the node's network namespace but the machine's mount
// namespace: the kubelet's volume mounts must be where containerd's runc sees them (`ip netns
// exec` would give each its own).
func (n *testNode) inNode(logFile, name string, args ...string) *exec.Cmd {
	cmd := exec.Command("nsenter", append([]string{"--net=" + n.NetNS, "--", name}, args...)...)
	if log, err := os.Create(logFile); err == nil {
		cmd.Stdout, cmd.Stderr = log, log
	}
	cmd.SysProcAttr = dieWithTest()
	return cmd
}

func (n *testNode) ctr(args ...string) error {
	return exec.Command("ctr", append([]string{"--address", n.containerd, "--namespace", "k8s.io"}, args...)...).Run()
}

// stopContainers kills what runs still, as a last resort after drain.
func (n *testNode) stopContainers(t *testing.T) {
	out, err := exec.Command("ctr", "--address", n.containerd, "--namespace", "k8s.io", "tasks", "list", "--quiet").Output()
	if err != nil {
		return
	}
	for _, id := range strings.Fields(string(out)) {
		_ = n.ctr("tasks", "kill", "--signal", "SIGKILL", id)
		_ = n.ctr("tasks", "delete", "--force", id)
	}
}

// killShims kills the containerd shims of this node's containerd (they outlive it by design).
func (n *testNode) killShims() {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(raw), "containerd-shim") || !strings.Contains(string(raw), n.containerd) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(p, "/proc/%d/cmdline", &pid); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func cniNetNS() []string {
	names, _ := filepath.Glob("/run/netns/cni-*")
	return names
}

func saveTunables(t *testing.T) {
	saved := map[string][]byte{}
	for _, k := range kernelTunables {
		if v, err := os.ReadFile("/proc/sys/" + k); err == nil {
			saved[k] = v
		}
	}
	testinterrupt.Cleanup(t, func() {
		for k, v := range saved {
			_ = os.WriteFile("/proc/sys/"+k, v, 0o644)
		}
	})
}

func waitOrKill(cmd *exec.Cmd, d time.Duration) {
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// serveHandler serves h over HTTP on the node's address, as a site's mirror would, and returns
// its URL.
func (n *testNode) serveHandler(t *testing.T, port string, h http.Handler) string {
	t.Helper()
	l, err := listenIn(n.NetNS, net.JoinHostPort(n.IP, port))
	must(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + net.JoinHostPort(n.IP, port)
}
