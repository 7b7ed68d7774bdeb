//go:build vm

// Package vm_test boots the site's servers as virtual machines (internal/test/testvm) and checks
// that they are what a freshly provisioned metal3 host is: their own kernel, systemd and apt,
// an address from the site's DHCP server by MAC, host keys and a machine id of their own, the
// site's key for the admin user, python3 for Ansible; and that BareMetalHosts describing them
// place a Provisioning by MAC and by resources. Run by `make vms` (root).
package vm_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"golang.org/x/crypto/ssh"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
)

// bootWait bounds one machine's boot to an SSH login: 36–41 s alone were measured here, about a
// minute for three booting together on 2 cores.
const bootWait = 4 * time.Minute

func TestSiteOfVirtualMachines(t *testing.T) {
	imageDir := os.Getenv("BPA_VM_IMAGE")
	testvm.Skip(t, imageDir)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	specs := []testvm.Spec{
		{Name: "vm-1", CPUs: 2, MemoryMiB: 1536},
		{Name: "vm-2", CPUs: 1, MemoryMiB: 1024},
		{Name: "vm-3", CPUs: 1, MemoryMiB: 1024},
	}
	// A route the site's DHCP server hands out, to nothing in particular: the machines keep it
	// through a restart of their network, as kubespray's reset does one.
	const routed, via = "10.253.0.0/24", "10.251.0.3"
	site := testvm.NewSite(t, "10.251.0", specs, testvm.WithRoute(routed, via))
	site.Boot(t, testvm.ImageIn(imageDir), signer.PublicKey())

	ctx, cancel := context.WithTimeout(context.Background(), bootWait)
	defer cancel()
	type answer struct {
		client  *ssh.Client
		hostKey ssh.PublicKey
		after   time.Duration
	}
	answers := make([]answer, len(specs))
	var wg sync.WaitGroup
	errs := make([]error, len(specs))
	for i, m := range site.Machines() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, hostKey, err := m.Dial(ctx, testvm.AdminUser, signer)
			answers[i], errs[i] = answer{c, hostKey, time.Since(m.Booted)}, err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = answers[i].client.Close() })
	}

	var hostKeys, machineIDs []string
	for i, m := range site.Machines() {
		c := answers[i].client
		rss, _ := m.RSS()
		t.Logf("%s (%s, %d CPUs, %d MiB): SSH login %.0f s after QEMU started, QEMU RSS %d MiB", m.Name, m.IP, m.CPUs, m.MemoryMiB, answers[i].after.Seconds(), rss>>20)

		// Its own kernel, and Debian's.
		if uname := testvm.Run(t, c, "uname -r"); !strings.Contains(uname, "amd64") {
			t.Errorf("%s runs kernel %q, want Debian's amd64 kernel", m.Name, uname)
		}
		if host := strings.TrimSpace(testvm.Run(t, c, "hostname")); host != m.Name {
			t.Errorf("%s calls itself %q: the seed disk's hostname did not apply", m.Name, host)
		}
		// Its own identity, made on first boot.
		hostKeys = append(hostKeys, string(answers[i].hostKey.Marshal()))
		machineIDs = append(machineIDs, strings.TrimSpace(testvm.Run(t, c, "cat /etc/machine-id")))
		// What the steps and Ansible need: sudo without a password, python3 with apt, dpkg.
		// sudo resolves the machine's own name (/etc/hosts, as cloud-init writes it): otherwise
		// every sudo of every step warns on stderr.
		if who := strings.TrimSpace(testvm.Run(t, c, "sudo -n id -un 2>&1")); who != "root" {
			t.Errorf("%s: sudo -n id -un = %q", m.Name, who)
		}
		testvm.Run(t, c, "python3 -c 'import apt, json' && dpkg-query -W openssh-server systemd python3-apt")
		if state := strings.TrimSpace(testvm.Run(t, c, "systemctl is-system-running --wait || true")); state != "running" {
			t.Errorf("%s: systemd is %q; failed units:\n%s", m.Name, state, testvm.Run(t, c, "systemctl --failed --no-legend || true"))
		}
		// The NIC metal3 would report, by MAC, with the address dnsmasq gave it.
		links := testvm.Run(t, c, "ip -o link show")
		nic := m.BareMetalHost("metal3").Status.HardwareDetails.NIC[0]
		if !strings.Contains(links, nic.Name+": ") || !strings.Contains(links, m.MAC) {
			t.Errorf("%s: no NIC %s with MAC %s:\n%s", m.Name, nic.Name, m.MAC, links)
		}
		if addrs := testvm.Run(t, c, "ip -o -4 addr show"); !strings.Contains(addrs, " "+m.IP+"/24 ") {
			t.Errorf("%s: not at %s:\n%s", m.Name, m.IP, addrs)
		}
		// Nothing outside the site: no default route.
		if routes := testvm.Run(t, c, "ip route show default"); strings.TrimSpace(routes) != "" {
			t.Errorf("%s has a default route: %s", m.Name, routes)
		}
		if route := testvm.Run(t, c, "ip route show "+routed); !strings.Contains(route, "via "+via+" ") {
			t.Errorf("%s: no route to %s via %s from the site's DHCP server: %q", m.Name, routed, via, route)
		}
	}
	// kubespray's reset restarts the node's network services (systemd-networkd here), which
	// drops every route it did not configure; the DHCP server's comes back with the lease.
	c := answers[0].client
	testvm.Run(t, c, "sudo -n systemctl restart systemd-networkd")
	route := testvm.Run(t, c, "for i in $(seq 60); do r=$(ip route show "+routed+"); [ -n \"$r\" ] && break; sleep 1; done; echo \"$r\"")
	if !strings.Contains(route, "via "+via+" ") {
		t.Errorf("%s after systemd-networkd restarted: no route to %s via %s: %q", site.Machines()[0].Name, routed, via, route)
	}
	if slices.Sort(hostKeys); len(slices.Compact(hostKeys)) != len(specs) {
		t.Errorf("the machines share host keys: each must make its own on first boot")
	}
	if slices.Sort(machineIDs); len(slices.Compact(machineIDs)) != len(specs) || slices.Contains(machineIDs, "") {
		t.Errorf("machine ids %v: each machine must make its own", machineIDs)
	}

	// The DHCP server's own lease file addresses every machine by MAC, as resolve-leases reads it.
	raw, err := os.ReadFile(site.LeaseFile)
	if err != nil {
		t.Fatal(err)
	}
	table, err := leases.Parse(leases.FormatDnsmasq, strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}

	// BareMetalHosts describing the machines place a Provisioning: the master by MAC, the workers
	// by resources (the smallest sufficient host first).
	var hosts []metal3v1alpha1.BareMetalHost
	for _, m := range site.Machines() {
		hosts = append(hosts, m.BareMetalHost("metal3"))
	}
	crFile := filepath.Join(testinterrupt.TempDir(t), "provisioning.yaml")
	cr := `apiVersion: bpa.akraino.org/v1alpha1
kind: Provisioning
metadata:
  name: provisioning-vm
  namespace: default
  labels:
    cluster: cluster-vm
spec:
  masters:
    - master:
        mac-address: ` + site.Machines()[0].MAC + `
  workers:
    - worker-1:
        cpu: 1
        memory: 900Mi
    - worker-2:
        cpu: 1
        memory: 900Mi
`
	if err := os.WriteFile(crFile, []byte(cr), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := manifest.Provisioning(crFile)
	if err != nil {
		t.Fatal(err)
	}
	placed, err := discoverhosts.Place(p, hosts)
	if err != nil {
		t.Fatal(err)
	}
	addressed, err := leases.Resolve(placed, leases.FileSource{Table: table, Name: site.LeaseFile, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"master": "metal3/vm-1", "worker-1": "metal3/vm-2", "worker-2": "metal3/vm-3"}
	for _, n := range addressed {
		m := site.Machines()[slices.IndexFunc(site.Machines(), func(m *testvm.Machine) bool { return "metal3/"+m.Name == n.BareMetalHost })]
		if want[n.Label] != n.BareMetalHost || n.IP != m.IP || (n.Label == "master") != n.Role.Has(bpav1.RoleMaster) {
			t.Errorf("%s placed on %s at %s (%s); want %s at its lease", n.Label, n.BareMetalHost, n.IP, n.Role, want[n.Label])
		}
	}
}

// TestNothingOutlivesAKilledTest boots a site in a child test process, kills that process
// with SIGKILL (no cleanup can run), and checks that every machine, dnsmasq, the namespace and
// the veth went with it. The child's folders are under this test's own, which it removes.
func TestNothingOutlivesAKilledTest(t *testing.T) {
	if os.Getenv("BPA_VM_CHILD") != "" {
		imageDir := os.Getenv("BPA_VM_IMAGE")
		site := testvm.NewSite(t, "10.252.0", []testvm.Spec{{Name: "vm-a", CPUs: 1, MemoryMiB: 512}, {Name: "vm-b", CPUs: 1, MemoryMiB: 512}})
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		signer, _ := ssh.NewSignerFromKey(key)
		site.Boot(t, testvm.ImageIn(imageDir), signer.PublicKey())
		fmt.Printf("site: link=%s pids=%v\n", site.Link(), site.PIDs())
		select {} // until killed
	}
	testvm.Skip(t, os.Getenv("BPA_VM_IMAGE"))
	child := exec.Command(os.Args[0], "-test.run=^TestNothingOutlivesAKilledTest$", "-test.v")
	// The child's temporary folders (its machines' disks, dnsmasq's files) are under this
	// test's own, which this test removes: the killed child removes nothing.
	child.Env = append(os.Environ(), "BPA_VM_CHILD=1", "TMPDIR="+testinterrupt.TempDir(t))
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var link string
	var pids []int
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "site: link="); ok {
			var list string
			link, list, _ = strings.Cut(rest, " pids=[")
			for _, f := range strings.Fields(strings.TrimSuffix(list, "]")) {
				n, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, n)
			}
			break
		}
	}
	if link == "" || len(pids) != 4 {
		_ = child.Process.Kill()
		t.Fatalf("the child never said what it started (link %q, pids %v)", link, pids)
	}
	time.Sleep(5 * time.Second) // the machines are booting
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		for _, pid := range pids {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
				left = append(left, fmt.Sprintf("process %d", pid))
			}
		}
		if err := exec.Command("ip", "link", "show", link).Run(); err == nil {
			left = append(left, "link "+link)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still there 10 s after the test process was killed: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
