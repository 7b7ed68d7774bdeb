//go:build vm

package vm_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// simulatedHostKey is the host key every simulated node's sshd presents: this machine's own,
// which is also what kubespray's facts read on each of them (they share its filesystem), so
// that the kept facts hold the pinned key as they do on a real node.
const simulatedHostKey = "/etc/ssh/ssh_host_ed25519_key"

// BenchmarkScaleRunFacts is the cost of a scale run that adds one worker to a cluster of 3, 20
// and 60 nodes, as far as kubespray's facts and validation go (scale.yml --tags=facts,asserts,
// the real kubespray run as run-kubespray's scale script runs it), with no facts kept (a new
// pod's empty cache: facts.yml gathers every node's first) and with the facts the controller
// keeps of that run. The nodes are simulated: sshd and this machine's Python in a network
// namespace each, on one bridge, which is all kubespray's facts and asserts need. Its metrics:
// the seconds ansible-playbook's container ran, and the nodes it logged in to (sshd's
// log). make bench-scale runs it once per case.
func BenchmarkScaleRunFacts(b *testing.B) {
	if len(testkubespray.Images()) == 0 {
		b.Skip("kubespray's image is not built: ../shared/third_party is absent (make bench-scale builds it when it is there)")
	}
	if _, err := os.Stat(simulatedHostKey); err != nil {
		b.Skip("this machine has no " + simulatedHostKey + " for the simulated nodes' sshd (openssh-server: hack/install-test-deps.sh)")
	}
	for _, existing := range []int{3, 20, 60} {
		// A site of its own each: the sites live until the benchmark ends.
		cluster := newSimulatedCluster(b, fmt.Sprintf("10.252.%d", existing), existing)
		scale := runkubespray.Plan{Mode: runkubespray.ModeScale, Nodes: []string{cluster.added}}
		checks := []string{"--tags=facts,asserts"}
		var kept []byte
		b.Run(fmt.Sprintf("existing=%d/facts=none", existing), func(b *testing.B) {
			for range b.N {
				contacted, took := cluster.run(b, testkubespray.Playbook{Plan: &scale, Options: checks,
					Outputs: map[string]*[]byte{path.Join(steps.OutputsDir, runkubespray.FactsFile): &kept}})
				if len(contacted) != existing+1 {
					b.Errorf("with no facts kept, the run logged in to %d nodes, want all %d: %v", len(contacted), existing+1, contacted)
				}
				cluster.report(b, contacted, took)
			}
		})
		if kept == nil {
			// facts=none did not run (-bench chose otherwise): facts=kept has no facts to run with.
			continue
		}
		facts, err := runkubespray.ParseKeptFacts(string(kept))
		if err != nil || len(facts) != existing+1 {
			b.Fatalf("the run kept the facts of %d nodes, want %d: %v", len(facts), existing+1, err)
		}
		data, _, _ := runkubespray.Merge(nil, nil, facts)
		mounted, size := map[string][]byte{}, 0
		for node, entry := range data {
			mounted[path.Join(runkubespray.FactsCacheDir, node)] = entry
			size += len(entry)
		}
		if len(data) != existing+1 {
			b.Fatalf("the kept facts hold %d entries, want every node's and the index: the bound (%d bytes) dropped some", len(data), runkubespray.MaxKeptFactsBytes)
		}
		b.Run(fmt.Sprintf("existing=%d/facts=kept", existing), func(b *testing.B) {
			for range b.N {
				b.Logf("the facts kept of %d nodes: %d bytes gzip'd (the bound: %d)", existing+1, size, runkubespray.MaxKeptFactsBytes)
				contacted, took := cluster.run(b, testkubespray.Playbook{Plan: &scale, Options: checks, Files: mounted})
				if extra := slices.DeleteFunc(slices.Clone(contacted), func(n string) bool { return n == cluster.added || n == "master" }); len(extra) > 0 {
					b.Errorf("with the facts kept, the run logged in to %v besides the new node and the master", extra)
				}
				cluster.report(b, contacted, took)
			}
		})
	}
}

// simulatedCluster is a master, existing-1 workers and the worker a scale run adds, each a
// simulated node (simulatedNode).
type simulatedCluster struct {
	p                    *bpav1.Provisioning
	nodes                map[string]*simulatedNode
	added                string
	inputs               testkubespray.Inputs
	inventory, extraVars []byte
}

// simulatedNode is sshd in network, PID and mount namespaces of its own, at ip on the site's
// bridge, logging each login to log.
type simulatedNode struct {
	ip, log string
}

// newSimulatedCluster makes the site's bridge (subnet.0/24, the test's side at .1) and a
// simulated node for the master, each worker and the added worker, with the inputs a
// run-kubespray pod of that cluster gets.
func newSimulatedCluster(b *testing.B, subnet string, existing int) *simulatedCluster {
	b.Helper()
	site := testvm.NewSite(b, subnet, nil)
	dir := testinterrupt.TempDir(b)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	must(b, err)
	signer, err := ssh.NewSignerFromKey(key)
	must(b, err)
	block, err := ssh.MarshalPrivateKey(key, "")
	must(b, err)
	authorized := filepath.Join(dir, "authorized_keys")
	must(b, os.WriteFile(authorized, ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600))
	hostKeyPEM, err := os.ReadFile(simulatedHostKey)
	must(b, err)
	hostKey, err := ssh.ParsePrivateKey(hostKeyPEM)
	must(b, err)

	// sshd refuses to start without its privilege separation directory.
	must(b, os.MkdirAll("/run/sshd", 0o755))
	c := &simulatedCluster{nodes: map[string]*simulatedNode{}, added: fmt.Sprintf("worker-%d", existing)}
	var hosts []bpav1.Node
	var masters, workers []bpav1.HostEntry
	var known bytes.Buffer
	for i := range existing + 1 {
		label, role := fmt.Sprintf("worker-%d", i), bpav1.RoleWorker
		if i == 0 {
			label, role = "master", bpav1.RoleMaster
		}
		ip := fmt.Sprintf("%s.%d", subnet, 11+i)
		mac := fmt.Sprintf("52:54:00:fc:%02x:%02x", i/256, i%256)
		c.nodes[label] = startSimulatedNode(b, site, i, ip, authorized, dir)
		hosts = append(hosts, bpav1.Node{Label: label, Role: bpav1.NodeRoles(role), BareMetalHost: "site/" + label, MAC: mac, IP: ip})
		entry := bpav1.HostEntry{label: {MACAddress: mac}}
		if i == 0 {
			masters = append(masters, entry)
		} else {
			workers = append(workers, entry)
		}
		known.WriteString(knownhosts.Line([]string{ip}, hostKey.PublicKey()) + "\n")
	}
	c.p = &bpav1.Provisioning{
		ObjectMeta: metav1.ObjectMeta{Namespace: "site", Name: "provisioning-sim", Labels: map[string]string{bpav1.ClusterLabel: "cluster-sim"}},
		Spec: bpav1.ProvisioningSpec{
			Masters: masters, Workers: workers,
			SSH: &bpav1.SSHAccess{User: "root"},
			Kubespray: &bpav1.KubesprayOptions{ExtraVars: map[string]bpav1.ExtraVarValue{
				"upstream_dns_servers": bpav1.ExtraVar([]string{site.TestSide()}),
			}},
		},
	}
	c.inventory, c.extraVars, err = renderinventory.Render(c.p, hosts, renderinventory.Options{})
	must(b, err)
	// The simulated nodes share this machine's root's login shell, whose PATH may name another
	// Python before Debian's (pyenv's): Ansible's discovery would pick it. A real node's is
	// discovered as the step leaves it.
	c.inventory = append(c.inventory, "\n[all:vars]\nansible_python_interpreter=/usr/bin/python3\n"...)
	c.inputs = testkubespray.Inputs{Inventory: c.inventory, ExtraVars: c.extraVars, KnownHosts: known.Bytes(), Key: pem.EncodeToMemory(block)}
	return c
}

// startSimulatedNode starts a node's sshd in a namespace of its own, plugged into the site's
// bridge by a veth, with a default route through the bridge (kubespray's facts read the
// default interface's address).
func startSimulatedNode(b *testing.B, site *testvm.Site, i int, ip, authorized, dir string) *simulatedNode {
	b.Helper()
	ns := testvm.NewNetNS(b)
	veth := fmt.Sprintf("sim%d", i)
	site.Run(b, "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns.PID)
	site.Run(b, "ip", "link", "set", veth, "master", "br0", "up")
	ns.Run(b, "ip", "addr", "add", ip+"/24", "dev", "eth0")
	ns.Run(b, "ip", "link", "set", "eth0", "up")
	ns.Run(b, "ip", "route", "add", "default", "via", site.Subnet+".2")

	config := filepath.Join(dir, veth+".sshd_config")
	must(b, os.WriteFile(config, []byte(strings.Join([]string{
		"ListenAddress " + ip + ":22",
		"HostKey " + simulatedHostKey,
		"AuthorizedKeysFile " + authorized,
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"UsePAM no",
		"StrictModes no",
		"PidFile none",
		"LogLevel VERBOSE",
		"MaxStartups 100",
		"Subsystem sftp internal-sftp",
	}, "\n")+"\n"), 0o600))
	n := &simulatedNode{ip: ip, log: filepath.Join(dir, veth+".log")}
	// kubespray's preinstall asserts that a node's service manager is systemd, which Ansible
	// reads from PID 1, then from systemd's runtime folder. The node's sshd runs under a shell
	// as PID 1 of a PID namespace of its own (Ansible does not trust a shell there), with a
	// /run of its own holding that folder, as a node booted by systemd has; nothing of this
	// machine's /run is touched.
	script := `mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p /run/sshd /run/systemd/system && "$0" "$@" & wait`
	sshd := ns.Command("unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--propagation=private",
		"/bin/sh", "-c", script, testsshd.Binary, "-D", "-f", config, "-E", n.log)
	sshd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	must(b, sshd.Start())
	b.Cleanup(func() { _ = sshd.Process.Kill(); _ = sshd.Wait() })
	if err := testsshd.WaitListening(ip+":22", 10*time.Second); err != nil {
		b.Fatalf("the simulated node at %s: %v", ip, err)
	}
	return n
}

// run runs the real kubespray as a run-kubespray pod of the cluster, and returns the nodes it
// logged in to, sorted, and how long its container ran.
func (c *simulatedCluster) run(b *testing.B, pb testkubespray.Playbook) ([]string, time.Duration) {
	b.Helper()
	before := c.logins(b)
	var took time.Duration
	pb.Took = &took
	testkubespray.Run(b, c.p, c.inputs, pb)
	var contacted []string
	for label, n := range c.logins(b) {
		if n > before[label] {
			contacted = append(contacted, label)
		}
	}
	slices.Sort(contacted)
	return contacted, took
}

// logins are the logins each node's sshd has logged so far.
func (c *simulatedCluster) logins(b *testing.B) map[string]int {
	out := map[string]int{}
	for label, n := range c.nodes {
		raw, err := os.ReadFile(n.log)
		if err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
		out[label] = bytes.Count(raw, []byte("Accepted publickey"))
	}
	return out
}

func (c *simulatedCluster) report(b *testing.B, contacted []string, took time.Duration) {
	b.ReportMetric(took.Seconds(), "run-s")
	b.ReportMetric(float64(len(contacted)), "nodes-contacted")
	shown := contacted
	if len(shown) > 4 {
		shown = append(slices.Clone(shown[:4]), fmt.Sprintf("… %d in all", len(contacted)))
	}
	b.Logf("%d nodes in the cluster: the run took %.1f s and logged in to %s", len(c.nodes), took.Seconds(), strings.Join(shown, ", "))
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
