// Package testvm boots the site's servers as virtual machines for the tests: QEMU's software
// emulation (TCG; this machine's /dev/kvm is PVM, which Debian's kernels cannot use) running
// Debian's own kernel on the image hack/vm-image.sh builds, each machine on a tap device of a
// bridge in a network namespace the test creates, addressed by a real dnsmasq by MAC, and
// reachable from the test's namespace through a veth, with no route to anything else. Every
// machine and process is stopped when the test ends, by PID, and dies with the test process
// (SIGKILL on its death); the site's namespace has no name: a process holds it, so it and
// everything in it (the bridge, the taps, the veth) go when that process does, even when the
// test is killed.
package testvm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

// AdminUser is the image's admin user, the one metal3's user data would create: the site's SSH
// key logs in as it, and it may sudo without a password.
const AdminUser = "bpa"

// Image is a built server image (hack/vm-image.sh's cache directory).
type Image struct {
	Root, Kernel, Initrd string
}

// ImageIn is the image in dir.
func ImageIn(dir string) Image {
	return Image{Root: filepath.Join(dir, "root.qcow2"), Kernel: filepath.Join(dir, "vmlinuz"), Initrd: filepath.Join(dir, "initrd.img")}
}

// Skip skips the test, saying why, when this machine cannot boot the site's machines: not
// root (network namespaces, tap devices), QEMU missing, or the image not built.
func Skip(t testing.TB, imageDir string) {
	t.Helper()
	why := Missing(imageDir)
	switch {
	case why == "":
	case imageDir != "" && strings.HasPrefix(why, "BPA_VM_IMAGE="):
		t.Fatal(why) // asked for, and broken
	default:
		t.Skip(why)
	}
}

// Missing says what this machine lacks to boot the site's machines from the image in
// imageDir, or "" when nothing is missing.
func Missing(imageDir string) string {
	if os.Getuid() != 0 {
		return "the site's machines need root (network namespaces, tap devices): run as root"
	}
	for _, tool := range []string{"qemu-system-x86_64", "qemu-img", "mkfs.ext4", "dnsmasq", "ip", "unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is missing: run hack/install-test-deps.sh"
		}
	}
	if imageDir == "" {
		return "no server image: set BPA_VM_IMAGE to hack/vm-image.sh's output (make vms and make e2e do)"
	}
	for _, f := range []string{"root.qcow2", "vmlinuz", "initrd.img"} {
		if _, err := os.Stat(filepath.Join(imageDir, f)); err != nil {
			return fmt.Sprintf("BPA_VM_IMAGE=%s holds no %s: run hack/vm-image.sh", imageDir, f)
		}
	}
	return ""
}

// NetNS is a network namespace with no name: a process holds it (`unshare --net sleep
// infinity`, killed with the test), so the namespace and every link in it go when that process
// does, even when the test is killed before its cleanups run. Nothing is left under
// /run/netns to remove by name.
type NetNS struct {
	// Path is the namespace as nsenter and setns take it: /proc/PID/ns/net of its holder.
	Path string
	// PID is its holder's, as `ip link set ... netns PID` takes it.
	PID string
}

// NewNetNS creates a network namespace with its loopback up, removed when the test ends.
func NewNetNS(t testing.TB) *NetNS {
	t.Helper()
	holder := exec.Command("unshare", "--net", "--", "sleep", "infinity")
	holder.SysProcAttr = dieWithTest()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(holder) })
	n := &NetNS{PID: strconv.Itoa(holder.Process.Pid), Path: fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid)}
	waitForNetNS(t, holder.Process.Pid)
	n.Run(t, "ip", "link", "set", "lo", "up")
	return n
}

// Command is a command to start in the namespace (and the machine's mount namespace, unlike
// `ip netns exec`, which gives each command its own).
func (n *NetNS) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + n.Path, "--", name}, args...)...)
}

// Run runs a command in the namespace, failing the test with its output.
func (n *NetNS) Run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := n.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("in %s: %s %s: %v\n%s", n.Path, name, strings.Join(args, " "), err, out)
	}
}

// Site is the site's network: a namespace holding the bridge, dnsmasq and the machines' tap
// devices, joined to the test's namespace by a veth.
type Site struct {
	*NetNS
	// Subnet is the /24's first three octets; the test's side of the veth is .1, the bridge .2,
	// machines get .11 onwards by MAC; .3 to .10 are free for what the test plugs in.
	Subnet string
	// LeaseFile is dnsmasq's lease file, as it writes it.
	LeaseFile string
	dir       string
	prefix    string
	machines  []*Machine
	gateway   bool
	routes    []string   // dst,via pairs the DHCP server hands out
	mu        sync.Mutex // guards dnsmasq, which a fault test restarts beside the test
	dnsmasq   *exec.Cmd
}

// CPUModel is the CPU QEMU emulates for every machine: BPA_VM_CPU, for a benchmark that
// compares models (BenchmarkGuestWork), else max. No other model (qemu64, Westmere,
// Haswell-noTSX, max without AVX) runs Go's TLS handshakes or JSON clearly faster on the
// project's machines, and they lose SHA-256's instructions.
func CPUModel() string {
	if m := os.Getenv("BPA_VM_CPU"); m != "" {
		return m
	}
	return "max"
}

// Spec is a machine to boot: what metal3's inspection would report of it.
type Spec struct {
	Name      string
	CPUs      int
	MemoryMiB int
}

// Machine is a booted machine.
type Machine struct {
	Spec
	// MAC of its one NIC, and the address dnsmasq hands it.
	MAC, IP string
	// Console is the file its serial console writes to.
	Console string
	// Booted is when QEMU started.
	Booted time.Time
	cmd    *exec.Cmd
	disk   string
	tap    string
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// waitForNetNS waits until process pid has left the test's network namespace.
func waitForNetNS(t testing.TB, pid int) {
	t.Helper()
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil && ns != self {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d never entered a network namespace of its own", pid)
}

// dieWithTest makes a child process get SIGKILL when the test process dies, even by SIGKILL.
func dieWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// SiteOption changes what NewSite makes.
type SiteOption func(*Site)

// WithGateway has the site's DHCP server name a router: the bridge's own address in the site's
// namespace, which has no way out. The machines get a default route, as a real site's servers
// do (Kubernetes' network plugins find their interface by it), and still reach nothing outside
// the site.
func WithGateway() SiteOption { return func(s *Site) { s.gateway = true } }

// WithRoute has the site's DHCP server hand the machines a route to dst (a CIDR) through via
// (an address on the site), as classless static routes (RFC 3442). The route is the network's,
// as a real site's routes are, so it survives whatever restarts a machine's network: kubespray's
// reset restarts systemd-networkd, which drops a route added by hand, and the machine's replies
// to anything behind via stop (remove-node.yml then waited forever on its own SSH connection).
func WithRoute(dst, via string) SiteOption {
	return func(s *Site) { s.routes = append(s.routes, dst+","+via) }
}

// NewSite creates the site's network for machines with specs, with MACs and addresses given out
// in order, and starts dnsmasq on it. Nothing is booted yet.
func NewSite(t testing.TB, subnet string, specs []Spec, opts ...SiteOption) *Site {
	t.Helper()
	suffix := make([]byte, 2)
	_, _ = rand.Read(suffix)
	s := &Site{Subnet: subnet, dir: testinterrupt.TempDir(t), prefix: "bpavm" + hex.EncodeToString(suffix)}
	for _, o := range opts {
		o(s)
	}
	s.NetNS = NewNetNS(t)
	s.LeaseFile = filepath.Join(s.dir, "dnsmasq.leases")
	s.Run(t, "ip", "link", "add", "br0", "type", "bridge")
	s.Run(t, "ip", "addr", "add", subnet+".2/24", "dev", "br0")
	s.Run(t, "ip", "link", "set", "br0", "up")
	// The test's side: the steps reach the machines through it. It goes with its peer.
	run(t, "ip", "link", "add", s.prefix, "type", "veth", "peer", "name", "test", "netns", s.PID)
	run(t, "ip", "addr", "add", subnet+".1/24", "dev", s.prefix)
	run(t, "ip", "link", "set", s.prefix, "up")
	s.Run(t, "ip", "link", "set", "test", "master", "br0")
	s.Run(t, "ip", "link", "set", "test", "up")

	for i, spec := range specs {
		m := &Machine{Spec: spec, MAC: fmt.Sprintf("52:54:00:%s:%02x:%02x", hex.EncodeToString(suffix[:1]), suffix[1], i+1),
			IP: fmt.Sprintf("%s.%d", subnet, 11+i), tap: fmt.Sprintf("tap%d", i)}
		s.machines = append(s.machines, m)
	}
	s.StartDHCP(t)
	return s
}

// StartDHCP starts dnsmasq on the bridge: each machine's MAC gets its address, with no DNS
// server and no router (but the one WithGateway names), so nothing outside the site is
// reachable.
func (s *Site) StartDHCP(t testing.TB) {
	t.Helper()
	if err := s.startDHCP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.StopDHCP)
}

// RestartDHCP stops dnsmasq and starts it again, as a site's DHCP server restarts (one of the
// faults a real site has); it may run beside the test.
func (s *Site) RestartDHCP() error {
	s.StopDHCP()
	return s.startDHCP()
}

func (s *Site) startDHCP() error {
	// --user=root --group=root: dnsmasq would otherwise switch to its own user and group, and a
	// process whose user or group changes loses the signal that kills it with the test.
	args := []string{"--keep-in-foreground", "--user=root", "--group=root", "--no-resolv", "--no-hosts", "--port=0",
		"--interface=br0", "--bind-interfaces", "--dhcp-range=" + s.Subnet + ".100," + s.Subnet + ".200,255.255.255.0,1h",
		"--dhcp-option=option:dns-server",
		"--dhcp-leasefile=" + s.LeaseFile, "--log-facility=" + filepath.Join(s.dir, "dnsmasq.log")}
	args = append(args, routeOptions(s.Subnet, s.gateway, s.routes)...)
	for _, m := range s.machines {
		args = append(args, "--dhcp-host="+m.MAC+","+m.IP+","+m.Name)
	}
	cmd := s.Command("dnsmasq", args...)
	cmd.SysProcAttr = dieWithTest()
	if err := cmd.Start(); err != nil {
		return err
	}
	s.mu.Lock()
	s.dnsmasq = cmd
	s.mu.Unlock()
	return nil
}

// routeOptions are dnsmasq's options for the routes a site's machines get: a router (the
// bridge's address when the site has a gateway, none otherwise) and routes' dst,via pairs as
// classless static routes.
func routeOptions(subnet string, gateway bool, routes []string) []string {
	router := "--dhcp-option=option:router"
	if gateway {
		router += "," + subnet + ".2"
		// A client given classless static routes ignores the router option (RFC 3442): the
		// default route goes in the list too.
		if len(routes) > 0 {
			routes = append(slices.Clone(routes), "0.0.0.0/0,"+subnet+".2")
		}
	}
	opts := []string{router}
	if len(routes) > 0 {
		opts = append(opts, "--dhcp-option=option:classless-static-route,"+strings.Join(routes, ","))
	}
	return opts
}

// StopDHCP stops dnsmasq, by its PID.
func (s *Site) StopDHCP() {
	s.mu.Lock()
	cmd := s.dnsmasq
	s.mu.Unlock()
	stop(cmd)
}

func stop(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil || cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// Machines are the site's machines, in the order of their specs.
func (s *Site) Machines() []*Machine { return s.machines }

// Boot starts every machine from image: a copy-on-write overlay of its root filesystem, and a
// seed disk (label BPA-SEED, as metal3's config drive carries user data) with its hostname and
// authorizedKey for the admin user.
func (s *Site) Boot(t testing.TB, image Image, authorizedKey ssh.PublicKey) {
	t.Helper()
	for _, m := range s.machines {
		s.boot(t, image, authorizedKey, m)
	}
}

// BootMachine starts one machine, as Boot does: a site can keep a spare powered off until the
// test adds it (a server racked later), so that it takes nothing from the others meanwhile.
func (s *Site) BootMachine(t testing.TB, m *Machine, image Image, authorizedKey ssh.PublicKey) {
	t.Helper()
	s.boot(t, image, authorizedKey, m)
}

func (s *Site) boot(t testing.TB, image Image, authorizedKey ssh.PublicKey, m *Machine) {
	t.Helper()
	dir := filepath.Join(s.dir, m.Name)
	seed := filepath.Join(dir, "seed")
	if err := os.MkdirAll(seed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(seed, "hostname"), []byte(m.Name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(seed, "authorized_keys"), ssh.MarshalAuthorizedKey(authorizedKey), 0o644); err != nil {
		t.Fatal(err)
	}
	seedImage := filepath.Join(dir, "seed.img")
	_ = os.Remove(seedImage)
	run(t, "truncate", "-s", "8M", seedImage)
	run(t, "mkfs.ext4", "-q", "-L", "BPA-SEED", "-d", seed, seedImage)
	m.disk = filepath.Join(dir, "root.qcow2")
	_ = os.Remove(m.disk)
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", image.Root, m.disk)
	if m.cmd == nil { // a machine rebuilt keeps its tap
		s.Run(t, "ip", "tuntap", "add", "dev", m.tap, "mode", "tap")
		s.Run(t, "ip", "link", "set", m.tap, "master", "br0")
		s.Run(t, "ip", "link", "set", m.tap, "up")
	}
	m.Console = filepath.Join(dir, "console.log")
	m.cmd = s.Command("qemu-system-x86_64",
		"-name", m.Name, "-accel", "tcg,thread=multi", "-cpu", CPUModel(),
		"-smp", strconv.Itoa(m.CPUs), "-m", strconv.Itoa(m.MemoryMiB),
		"-kernel", image.Kernel, "-initrd", image.Initrd, "-append", "root=/dev/vda rw console=ttyS0 panic=-1",
		"-drive", "file="+m.disk+",if=virtio,format=qcow2",
		"-drive", "file="+seedImage+",if=virtio,format=raw,readonly=on",
		"-netdev", "tap,id=n0,ifname="+m.tap+",script=no,downscript=no",
		"-device", "virtio-net-pci,netdev=n0,mac="+m.MAC,
		"-display", "none", "-monitor", "none", "-serial", "file:"+m.Console)
	m.cmd.SysProcAttr = dieWithTest()
	out, err := os.Create(filepath.Join(dir, "qemu.log"))
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stdout, m.cmd.Stderr = out, out
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = out.Close()
	m.Booted = time.Now()
	cmd := m.cmd
	t.Cleanup(func() { stop(cmd) })
}

// Rebuild powers the machine off and boots it again from a fresh copy of image, as metal3
// provisioning it again would: same MAC and address, new host keys and machine id.
func (s *Site) Rebuild(t testing.TB, m *Machine, image Image, authorizedKey ssh.PublicKey) {
	t.Helper()
	m.PowerOff()
	s.boot(t, image, authorizedKey, m)
}

// PowerOff stops the machine at once, as pulling its power would.
func (m *Machine) PowerOff() { stop(m.cmd) }

// Freeze stops the machine's QEMU where it is (SIGSTOP): the machine answers nothing, as a
// hung server, until Thaw, or the test's end.
func (m *Machine) Freeze(t testing.TB) {
	t.Helper()
	if !m.Running() {
		t.Fatalf("machine %s is not running", m.Name)
	}
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("freezing machine %s: %v", m.Name, err)
	}
	t.Cleanup(m.Thaw)
}

// Thaw lets a frozen machine run again.
func (m *Machine) Thaw() {
	if m.Running() {
		_ = m.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Running reports whether the machine's QEMU runs (it was booted and not powered off).
func (m *Machine) Running() bool { return m.cmd != nil && m.cmd.ProcessState == nil }

// RSS is the resident memory of the machine's QEMU, in bytes.
func (m *Machine) RSS() (int64, error) {
	if m.cmd == nil || m.cmd.Process == nil {
		return 0, errors.New("not running")
	}
	// nsenter executes QEMU in its own process: the PID is QEMU's.
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// Dial logs in to the machine over SSH as user with signer, waiting until it answers or ctx
// ends; it returns the client and the host key the machine presented. The tests compare host
// keys themselves: the machines make theirs on first boot.
func (m *Machine) Dial(ctx context.Context, user string, signer ssh.Signer) (*ssh.Client, ssh.PublicKey, error) {
	var hostKey ssh.PublicKey
	cfg := &ssh.ClientConfig{
		User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, Timeout: 10 * time.Second,
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error { hostKey = key; return nil },
	}
	addr := net.JoinHostPort(m.IP, "22")
	var last error
	for {
		c, err := ssh.Dial("tcp", addr, cfg)
		if err == nil {
			return c, hostKey, nil
		}
		last = err
		select {
		case <-ctx.Done():
			tail, _ := os.ReadFile(m.Console)
			return nil, nil, fmt.Errorf("machine %s (%s) did not answer SSH: %w; its console ends:\n%s", m.Name, addr, last, lastLines(string(tail), 15))
		case <-time.After(2 * time.Second):
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Run runs command on c and returns its stdout, failing the test with its stderr.
func Run(t testing.TB, c *ssh.Client, command string) string {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var stdout, stderr strings.Builder
	sess.Stdout, sess.Stderr = &stdout, &stderr
	if err := sess.Run(command); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, stderr.String())
	}
	return stdout.String()
}

// RunWithin runs command on c and returns its stdout and stderr together, giving up after
// limit: for what a test reads of a machine that may no longer answer, as after a failure.
func RunWithin(c *ssh.Client, command string, limit time.Duration) (string, error) {
	sess, err := c.NewSession()
	if err != nil {
		return "", err
	}
	var out testutil.SyncBuffer
	sess.Stdout, sess.Stderr = &out, &out
	done := make(chan error, 1)
	go func() { done <- sess.Run(command) }()
	select {
	case err = <-done:
		_ = sess.Close()
		return out.String(), err
	case <-time.After(limit):
		// Closing the session does not end Run, which waits for an exit status that may never
		// come: it returns when the client closes, into the buffered channel.
		_ = sess.Close()
		return out.String(), fmt.Errorf("no answer within %s", limit)
	}
}

// PIDs are the site's processes: the namespace's holder, dnsmasq and every machine's QEMU.
func (s *Site) PIDs() []int {
	var pids []int
	if n, err := strconv.Atoi(s.PID); err == nil {
		pids = append(pids, n)
	}
	s.mu.Lock()
	dnsmasq := s.dnsmasq
	s.mu.Unlock()
	for _, cmd := range append([]*exec.Cmd{dnsmasq}, s.machineCommands()...) {
		if cmd != nil && cmd.Process != nil {
			pids = append(pids, cmd.Process.Pid)
		}
	}
	return pids
}

func (s *Site) machineCommands() []*exec.Cmd {
	var cmds []*exec.Cmd
	for _, m := range s.machines {
		cmds = append(cmds, m.cmd)
	}
	return cmds
}

// Link is the test's end of the veth into the site.
func (s *Site) Link() string { return s.prefix }

// Plug joins another network namespace to the site, as a cable from a switch port: a veth
// whose end link is on the site's bridge and whose other end is eth0 in ns, with address
// ip/24 and up. It goes with either namespace.
func (s *Site) Plug(t testing.TB, link string, ns *NetNS, ip string) {
	t.Helper()
	s.Run(t, "ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns.PID)
	s.Run(t, "ip", "link", "set", link, "master", "br0")
	s.Run(t, "ip", "link", "set", link, "up")
	ns.Run(t, "ip", "addr", "add", ip+"/24", "dev", "eth0")
	ns.Run(t, "ip", "link", "set", "eth0", "up")
}

// TestSide is the test's address on the site: where the machines reach the suite's servers.
func (s *Site) TestSide() string { return s.Subnet + ".1" }

// Serve serves dir over HTTP on the test's side of the site (a package repository, a mirror)
// until the test ends, and returns its URL, http://ADDRESS/.
func (s *Site) Serve(t testing.TB, dir string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(s.TestSide(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String() + "/"
}
