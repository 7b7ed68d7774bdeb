//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
)

// testHost is a server of the site: a virtual machine (internal/test/testvm) booted from the
// server image hack/vm-image.sh builds, with its own kernel, systemd, sshd and host keys, apt and
// dpkg, and /etc/kubernetes. The suite reaches it over SSH as the admin user, with the site's
// key, as the steps do.
type testHost struct {
	*testvm.Machine
	ssh    *ssh.Client
	signer ssh.Signer
	// Answered is when it first answered SSH.
	Answered time.Time
	// HostKey is the host key it presented then.
	HostKey ssh.PublicKey
}

// siteSubnet is the site network's /24; the test's side is .1, the node .3, the hosts .11 on.
const siteSubnet = "10.250.0"

// bootWait bounds a host's boot to its first SSH login (36–63 s measured, more with the node's
// containers starting beside them on 2 cores).
const bootWait = 5 * time.Minute

// e2ePackages are what the site's package repository carries: what the suite's Software CR
// installs. jq 1.5 is what every host has before the first Software (prepareHosts installs it).
var e2ePackages = []testutil.DebPackage{{Name: "htop", Version: "3.2.2-2"}, {Name: "jq", Version: "1.5-1"}, {Name: "jq", Version: "1.6-2"}, {Name: "nano", Version: "7.2-1"}, {Name: "tmux", Version: "3.3a-3"}}

// standInCluster is what kubespray's stand-in needs on each host to stand in for a cluster's
// node: the "new cluster's" admin.conf, its API server relayed to the host's address and to
// its loopback on apiPort (from apiRelay, the suite's relay to its API server), and what the
// stand-in's kubelet registers its node with (kubeletFiles: file name → content).
type standInCluster struct {
	adminConf         []byte
	apiPort, apiRelay string
	kubeletFiles      map[string][]byte
}

// standInKubeletFiles are the files the stand-in registers a node with, as a kubelet does:
// the new cluster's CA and an admin's client certificate (from its admin kubeconfig), and
// kubelet.json, the API server's address on the host's loopback (where the certificate's name,
// localhost, holds) and the version the stand-in's kubelets report: the new cluster's own.
func standInKubeletFiles(adminKubeconfig []byte, apiPort, version string) (map[string][]byte, error) {
	cfg, err := clientcmd.Load(adminKubeconfig)
	if err != nil {
		return nil, err
	}
	kc := cfg.Contexts[cfg.CurrentContext]
	if kc == nil || cfg.Clusters[kc.Cluster] == nil || cfg.AuthInfos[kc.AuthInfo] == nil {
		return nil, errors.New("the admin kubeconfig has no current context")
	}
	user := cfg.AuthInfos[kc.AuthInfo]
	if len(user.ClientCertificateData) == 0 || len(user.ClientKeyData) == 0 {
		return nil, errors.New("the admin kubeconfig has no client certificate")
	}
	kubelet, err := json.Marshal(map[string]string{"server": "https://localhost:" + apiPort, "version": version})
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"ca.crt":       cfg.Clusters[kc.Cluster].CertificateAuthorityData,
		"client.crt":   user.ClientCertificateData,
		"client.key":   user.ClientKeyData,
		"kubelet.json": kubelet,
	}, nil
}

// prepareHosts logs in to each host once it has booted and makes it a host of this site, as
// the site's user data would: its apt sources are the site's repository (Debian's are out of
// reach), jq 1.5 is installed, and apt's hooks can be made to fail (failOnce). (Its route to
// the pods comes from the site's DHCP server.) With standIn, each host also stands in for a
// cluster's node for kubespray's stand-in.
func prepareHosts(t *testing.T, site *testvm.Site, signer ssh.Signer, repo string, standIn *standInCluster) []*testHost {
	t.Helper()
	machines := site.Machines()
	hosts := make([]*testHost, len(machines))
	errs := make([]error, len(machines))
	var wg sync.WaitGroup
	for i, m := range machines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), bootWait)
			defer cancel()
			c, key, err := m.Dial(ctx, testvm.AdminUser, signer)
			if err != nil {
				errs[i] = err
				return
			}
			h := &testHost{Machine: m, ssh: c, signer: signer, Answered: time.Now(), HostKey: key}
			hosts[i] = h
			errs[i] = h.prepare(repo, standIn)
		}()
	}
	wg.Wait()
	for _, h := range hosts {
		if h != nil {
			t.Cleanup(func() { _ = h.ssh.Close() })
		}
	}
	must(t, errors.Join(errs...))
	return hosts
}

func (h *testHost) prepare(repo string, standIn *standInCluster) error {
	type step struct {
		what, command string
		stdin         []byte
	}
	steps := []step{
		{"the site's apt repository", "sudo -n rm -f /etc/apt/sources.list /etc/apt/sources.list.d/debian.sources && " +
			"sudo -n install -m 0644 /dev/stdin /etc/apt/sources.list.d/site.list", []byte("deb [trusted=yes] " + repo + " ./\n")},
		{"apt's failure hooks", "sudo -n install -d " + failureDir + " && sudo -n install -m 0644 /dev/stdin /etc/apt/apt.conf.d/99bpa-e2e-failures", []byte(aptFailureHooks())},
		{"jq 1.5", "sudo -n apt-get update -qq && sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -qq -y jq=1.5-1 >/dev/null", nil},
	}
	if standIn != nil {
		steps = append(steps,
			// The "new cluster" is the suite's API server: systemd's own socket proxy relays the
			// host's address to it, as if it ran there.
			step{"the new cluster's API server", "sudo -n systemd-run --quiet --unit=bpa-e2e-new-cluster --socket-property=ListenStream=" + net.JoinHostPort(h.IP, standIn.apiPort) +
				" --socket-property=ListenStream=" + net.JoinHostPort("127.0.0.1", standIn.apiPort) +
				" /usr/lib/systemd/systemd-socket-proxyd " + standIn.apiRelay, nil},
			step{"kubespray's stand-in", "sudo -n install -d -m 0755 /etc/kubernetes/stand-in && sudo -n touch /etc/kubernetes/stand-in/offline && " +
				"sudo -n install -m 0600 /dev/stdin /etc/kubernetes/stand-in/admin.conf", standIn.adminConf})
		for _, name := range slices.Sorted(maps.Keys(standIn.kubeletFiles)) {
			steps = append(steps, step{"the stand-in kubelet's " + name, "sudo -n install -m 0600 /dev/stdin /etc/kubernetes/stand-in/" + name, standIn.kubeletFiles[name]})
		}
	}
	for _, s := range steps {
		if _, err := h.runInput(s.command, s.stdin); err != nil {
			return fmt.Errorf("host %s (%s): %s: %w", h.Name, h.IP, s.what, err)
		}
	}
	return nil
}

// addSource adds an apt source (its sources.list line) to the host's, under name, and refreshes
// its index.
func (h *testHost) addSource(name, line string) error {
	_, err := h.runInput("sudo -n install -m 0644 /dev/stdin /etc/apt/sources.list.d/"+name+".list && sudo -n apt-get update -qq", []byte(line+"\n"))
	return err
}

// run runs command on the host and returns its stdout; an error carries its stderr.
func (h *testHost) run(command string) (string, error) { return h.runInput(command, nil) }

// thaw lets a frozen host run again and logs in to it again: the suite's own connection may
// have died while the host was frozen (Go's TCP keepalives give up after about 150 s without an
// answer).
func (h *testHost) thaw(t *testing.T) {
	t.Helper()
	h.Thaw()
	ctx, cancel := context.WithTimeout(context.Background(), bootWait)
	defer cancel()
	c, _, err := h.Dial(ctx, testvm.AdminUser, h.signer)
	must(t, err)
	_ = h.ssh.Close()
	h.ssh = c
}

// runInput runs command on the host with stdin.
func (h *testHost) runInput(command string, stdin []byte) (string, error) {
	sess, err := h.ssh.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	var stdout, stderr strings.Builder
	sess.Stdin = bytes.NewReader(stdin)
	sess.Stdout, sess.Stderr = &stdout, &stderr
	if err := sess.Run(command); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w: %s", command, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// file reads a file of the host's /etc/kubernetes ("" when it has none).
func (h *testHost) file(name string) string {
	out, _ := h.run("sudo -n cat /etc/kubernetes/" + name + " 2>/dev/null")
	return strings.TrimSpace(out)
}

// serveRepository serves the site's package repository over HTTP on the test's side of the
// site network, and returns its URL.
func serveRepository(t *testing.T, site *testvm.Site) string {
	t.Helper()
	return site.Serve(t, filepath.Join(testutil.NewAptNode(t, testutil.DpkgStatus, e2ePackages...).Dir, "repo"))
}

// relay forwards TCP from the test's side of the site network to addr (the API server, which
// listens on the test's loopback), and returns the address it listens on.
func relay(t *testing.T, site *testvm.Site, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(site.TestSide(), "0"))
	must(t, err)
	t.Cleanup(func() { l.Close() })
	go forward(l, func() (net.Conn, error) { return net.Dial("tcp", addr) })
	return l.Addr().String()
}

// listenIn opens a listener inside a network namespace (its path).
func listenIn(netns, addr string) (l net.Listener, err error) {
	err = inNetNS(netns, func() error {
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// dialIn connects to addr inside a network namespace (its path).
func dialIn(netns, addr string) (c net.Conn, err error) {
	err = inNetNS(netns, func() error {
		c, err = net.Dial("tcp", addr)
		return err
	})
	return c, err
}

// inNetNS runs fn in a goroutine whose thread enters the network namespace and comes back:
// sockets fn opens stay in the namespace. A thread that cannot come back is not unlocked, so
// the runtime discards it.
func inNetNS(netns string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer self.Close()
		target, err := os.Open(netns)
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		err = fn()
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

func newPEMKey(t *testing.T) []byte {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	must(t, err)
	return pem.EncodeToMemory(block)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A host's package system can be made to fail once, as a real one does: its mirror not
// answering (apt-get update fails: the step retries, exit 75), or its disk full (dpkg fails:
// the step fails for good). apt's own hooks, in the host's apt configuration, fail while a
// marker file exists, and remove it.
type hostFailure string

const (
	refreshFailure hostFailure = "refresh"
	installFailure hostFailure = "install"
	// failureDir holds the markers on each host.
	failureDir = "/var/lib/bpa-e2e"
)

// aptFailureHooks are apt configuration lines that make apt-get fail once per marker.
func aptFailureHooks() string {
	hook := func(f hostFailure, message string) string {
		m := failureMarker(f)
		return fmt.Sprintf(`"if [ -e %[1]s ]; then rm -f %[1]s; echo injected failure: %[2]s >&2; exit 1; fi";`, m, message)
	}
	return "APT::Update::Pre-Invoke { " + hook(refreshFailure, "the mirror does not answer") + " };\n" +
		"DPkg::Pre-Invoke { " + hook(installFailure, "disk full") + " };\n"
}

func failureMarker(f hostFailure) string { return failureDir + "/fail-" + string(f) }

// failOnce makes the host's next apt-get update or dpkg run fail.
func (h *testHost) failOnce(t *testing.T, f hostFailure) {
	t.Helper()
	_, err := h.run("sudo -n touch " + failureMarker(f))
	must(t, err)
}

// failurePending reports whether a failure asked for has not happened yet.
func (h *testHost) failurePending(t *testing.T, f hostFailure) bool {
	t.Helper()
	out, err := h.run("if sudo -n test -e " + failureMarker(f) + "; then echo pending; fi")
	must(t, err)
	return strings.TrimSpace(out) == "pending"
}
