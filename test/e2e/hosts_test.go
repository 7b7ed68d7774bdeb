//go:build e2e

package e2e_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testutil"
)

// testHost is a server as the end-to-end suite sees it: a network namespace joined by a veth to
// the site's bridge, an address a real DHCP server (dnsmasq) handed to its MAC, a real OpenSSH
// sshd on port 22, and a private /etc/kubernetes (sshd runs in its own mount namespace), so each
// host has its own admin.conf and join marker.
type testHost struct {
	Name, MAC string
	IP        string // from the DHCP lease
	NetNS     string
	Dir       string // holds its /etc/kubernetes
	// Apt is its package system: its own file: repository, dpkg database and install root,
	// which its sshd hands to every session (the real apt-get and dpkg run on it).
	Apt *testutil.AptNode
}

// testSite is the hosts' network: a bridge namespace with dnsmasq, and a veth from the test's
// own (root) namespace, through which the steps reach the hosts.
type testSite struct {
	prefix    string
	Subnet    string // /24, the first three octets
	LeaseFile string // dnsmasq's, as it wrote it
	RootIP    string
}

// etcKubernetes is created as an empty mount point if missing, and removed at the end.
const etcKubernetes = "/etc/kubernetes"

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// startSite builds the network and starts dnsmasq; every name carries a random prefix, and
// everything is removed when the test ends.
func startSite(t *testing.T, dir string) *testSite {
	t.Helper()
	suffix := make([]byte, 2)
	_, _ = rand.Read(suffix)
	s := &testSite{prefix: "bpae2e" + hex.EncodeToString(suffix), Subnet: "10.250.0", LeaseFile: filepath.Join(dir, "dnsmasq.leases")}
	s.RootIP = s.Subnet + ".1"
	br := s.prefix + "-br"
	run(t, "ip", "netns", "add", br)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", br).Run() })
	run(t, "ip", "-n", br, "link", "add", "br0", "type", "bridge")
	run(t, "ip", "-n", br, "link", "set", "br0", "up")
	run(t, "ip", "-n", br, "addr", "add", s.Subnet+".2/24", "dev", "br0")
	rootLink := s.prefix // at most 15 characters
	run(t, "ip", "link", "add", rootLink, "type", "veth", "peer", "name", "root", "netns", br)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", rootLink).Run() })
	run(t, "ip", "addr", "add", s.RootIP+"/24", "dev", rootLink)
	run(t, "ip", "link", "set", rootLink, "up")
	run(t, "ip", "-n", br, "link", "set", "root", "master", "br0")
	run(t, "ip", "-n", br, "link", "set", "root", "up")
	return s
}

// startDHCP starts dnsmasq on the bridge, handing each host's MAC its address.
func (s *testSite) startDHCP(t *testing.T, dir string, hosts []*testHost) {
	t.Helper()
	args := []string{"netns", "exec", s.prefix + "-br", "dnsmasq", "--keep-in-foreground", "--user=root", "--group=root", "--no-resolv", "--no-hosts", "--port=0",
		"--interface=br0", "--bind-interfaces", "--dhcp-range=" + s.Subnet + ".100," + s.Subnet + ".200,255.255.255.0",
		"--dhcp-leasefile=" + s.LeaseFile, "--pid-file=" + filepath.Join(dir, "dnsmasq.pid"),
		"--log-facility=" + filepath.Join(dir, "dnsmasq.log")}
	for i, h := range hosts {
		args = append(args, fmt.Sprintf("--dhcp-host=%s,%s.%d", h.MAC, s.Subnet, 11+i))
	}
	cmd := exec.Command("ip", args...)
	cmd.SysProcAttr = dieWithTest()
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

// e2ePackages are what the hosts' repositories carry: what the suite's Software CR installs.
// The hosts start with testutil.DpkgStatus: bash, and jq 1.5.
var e2ePackages = []testutil.DebPackage{{Name: "htop", Version: "3.2.2-2"}, {Name: "jq", Version: "1.6-2"}, {Name: "nano", Version: "7.2-1"}, {Name: "tmux", Version: "3.3a-3"}}

// startHosts creates each host's namespace, asks dnsmasq for its address (busybox udhcpc), and
// starts its sshd, accepting clientKey for root.
func (s *testSite) startHosts(t *testing.T, clientKey ssh.PublicKey, hosts []*testHost) {
	t.Helper()
	if _, err := os.Stat(etcKubernetes); os.IsNotExist(err) {
		must(t, os.Mkdir(etcKubernetes, 0o755))
		t.Cleanup(func() { _ = os.Remove(etcKubernetes) })
	}
	must(t, os.MkdirAll("/run/sshd", 0o755))
	script := filepath.Join(t.TempDir(), "udhcpc.script")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\n[ \"$1\" = bound ] && ip addr add \"$ip/24\" dev \"$interface\" && echo \"$ip\"\nexit 0\n"), 0o755))
	br := s.prefix + "-br"
	for i, h := range hosts {
		h.NetNS = fmt.Sprintf("%s-h%d", s.prefix, i+1)
		h.Dir = t.TempDir()
		run(t, "ip", "netns", "add", h.NetNS)
		ns := h.NetNS
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		peer := fmt.Sprintf("h%d", i+1)
		run(t, "ip", "-n", br, "link", "add", peer, "type", "veth", "peer", "name", "eth0", "netns", h.NetNS)
		run(t, "ip", "-n", br, "link", "set", peer, "master", "br0")
		run(t, "ip", "-n", br, "link", "set", peer, "up")
		run(t, "ip", "-n", h.NetNS, "link", "set", "eth0", "address", h.MAC)
		run(t, "ip", "-n", h.NetNS, "link", "set", "eth0", "up")
		run(t, "ip", "-n", h.NetNS, "link", "set", "lo", "up")
		out, err := exec.Command("timeout", "20", "ip", "netns", "exec", h.NetNS, "busybox", "udhcpc",
			"-i", "eth0", "-n", "-q", "-f", "-t", "10", "-T", "1", "-s", script).Output()
		if err != nil {
			t.Fatalf("host %s: no DHCP lease: %v\n%s", h.Name, err, out)
		}
		h.IP = strings.TrimSpace(lastLineOf(string(out)))
		if net.ParseIP(h.IP) == nil {
			t.Fatalf("host %s: udhcpc printed %q", h.Name, out)
		}

		etc := filepath.Join(h.Dir, "etc-kubernetes")
		must(t, os.MkdirAll(etc, 0o755))
		must(t, os.WriteFile(filepath.Join(h.Dir, "host_ed25519"), newPEMKey(t), 0o600))
		must(t, os.WriteFile(filepath.Join(h.Dir, "authorized_keys"), ssh.MarshalAuthorizedKey(clientKey), 0o600))
		h.Apt = testutil.NewAptNode(t, testutil.DpkgStatus, e2ePackages...)
		aptConf, err := os.OpenFile(h.Apt.Env["APT_CONFIG"], os.O_APPEND|os.O_WRONLY, 0)
		must(t, err)
		_, err = aptConf.WriteString(h.aptFailureHooks())
		must(t, errors.Join(err, aptConf.Close()))
		config := testsshd.Config(net.JoinHostPort(h.IP, "22"), filepath.Join(h.Dir, "host_ed25519"), filepath.Join(h.Dir, "authorized_keys")) +
			testsshd.SetEnv(h.Apt.Env)
		must(t, os.WriteFile(filepath.Join(h.Dir, "sshd_config"), []byte(config), 0o600))
		log, err := os.Create(filepath.Join(h.Dir, "sshd.log"))
		must(t, err)
		cmd := exec.Command("ip", "netns", "exec", h.NetNS, "unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
			`mount --bind "$1" /etc/kubernetes && exec /usr/sbin/sshd -D -e -f "$2"`, "sh", etc, filepath.Join(h.Dir, "sshd_config"))
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = dieWithTest()
		must(t, cmd.Start())
		log.Close()
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	for _, h := range hosts {
		if err := testsshd.WaitListening(net.JoinHostPort(h.IP, "22"), 10*time.Second); err != nil {
			log, _ := os.ReadFile(filepath.Join(h.Dir, "sshd.log"))
			t.Fatalf("host %s: %v\n%s", h.Name, err, log)
		}
	}
}

// forwardFrom relays TCP arriving at port in a host's network namespace to an address of the
// test's namespace (the API server): the listening socket is made inside the host's namespace,
// the connections out are made from the test's.
func forwardFrom(t *testing.T, h *testHost, port, to string) {
	t.Helper()
	l, err := listenIn(h.NetNS, net.JoinHostPort(h.IP, port))
	if err != nil {
		t.Fatalf("host %s: listening on %s: %v", h.Name, port, err)
	}
	t.Cleanup(func() { l.Close() })
	go forward(l, func() (net.Conn, error) { return net.Dial("tcp", to) })
}

// listenIn opens a listener inside a named network namespace.
func listenIn(netns, addr string) (l net.Listener, err error) {
	err = inNetNS(netns, func() error {
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// dialIn connects to addr inside a named network namespace.
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
		target, err := os.Open("/run/netns/" + netns)
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

// file reads a file of the host's private /etc/kubernetes.
func (h *testHost) file(name string) string {
	raw, err := os.ReadFile(filepath.Join(h.Dir, "etc-kubernetes", name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}

func lastLineOf(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
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

// writeFile writes a file into the host's private /etc/kubernetes.
func (h *testHost) writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	p := filepath.Join(h.Dir, "etc-kubernetes", name)
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, data, 0o600))
}

// A host's package system can be made to fail once, as a real one does: its mirror not
// answering (apt-get update fails: the step retries, exit 75), or its disk full (dpkg fails:
// the step fails for good). apt's own hooks fail while a marker file exists, and remove it.
type hostFailure string

const (
	refreshFailure hostFailure = "refresh"
	installFailure hostFailure = "install"
)

// aptFailureHooks are apt configuration lines that make the host's apt-get fail once per marker.
func (h *testHost) aptFailureHooks() string {
	hook := func(f hostFailure, message string) string {
		m := h.failureMarker(f)
		return fmt.Sprintf(`"if [ -e %[1]s ]; then rm -f %[1]s; echo 'injected failure: %[2]s' >&2; exit 1; fi";`, m, message)
	}
	return "APT::Update::Pre-Invoke { " + hook(refreshFailure, "the mirror does not answer") + " };\n" +
		"DPkg::Pre-Invoke { " + hook(installFailure, "disk full") + " };\n"
}

func (h *testHost) failureMarker(f hostFailure) string {
	return filepath.Join(h.Dir, "fail-"+string(f))
}

// failOnce makes the host's next apt-get update or dpkg run fail.
func (h *testHost) failOnce(f hostFailure) {
	_ = os.WriteFile(h.failureMarker(f), nil, 0o644)
}

// failurePending reports whether a failure asked for has not happened yet.
func (h *testHost) failurePending(f hostFailure) bool {
	_, err := os.Stat(h.failureMarker(f))
	return err == nil
}
