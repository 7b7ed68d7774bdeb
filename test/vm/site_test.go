//go:build vm

package vm_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	discoverhostspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts/pod"
	pinhostkeyspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys/pod"
	resolveleasespod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveleases/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// vmSite is a site of virtual machines as the steps find it after discover-hosts,
// resolve-leases and pin-host-keys: booted, on the site's package repository only (the
// machines reach nothing else), described by BareMetalHosts in a real API server, placed by a
// Provisioning of one master and one worker, addressed from dnsmasq's leases, their host keys
// pinned.
type vmSite struct {
	env            *testenv.Env
	site           *testvm.Site
	imageDir       string
	master, worker *testvm.Machine
	clients        map[string]*ssh.Client // by machine name
	signer         ssh.Signer
	keyFile        string // the signer's private key, where run-kubespray's pod mounts it
	sshOpts        stepcmd.SSHOptions
	ns             string
	p              *bpav1.Provisioning
	ref            stepcmd.CRRef
	placed         []bpav1.Node
	addressed      []bpav1.Node
	// spares are machines of the site not yet booted nor placed: servers racked later.
	spares []*testvm.Machine
	// repos are the apt sources the site's user data gives every machine.
	repos map[string]string // file under sources.list.d → its line
}

// startVMSite boots a master and a worker (the first two specs) on subnet (SUBNET.0/24) and
// takes them through the first steps; the other specs are spares, powered off (vmSite.rack
// boots one). vars are the Provisioning's extraVars, besides the upstream DNS servers kubespray
// is always given: the site runs no DNS server, and kubespray's preinstall refuses a node
// without nameservers unless it is given upstream ones (a typed list).
func startVMSite(t *testing.T, subnet string, specs []testvm.Spec, vars map[string]bpav1.ExtraVarValue, opts ...testvm.SiteOption) *vmSite {
	t.Helper()
	s := &vmSite{imageDir: os.Getenv("BPA_VM_IMAGE")}
	testvm.Skip(t, s.imageDir)
	env := testenv.ForTest(t, testenv.Start)
	s.env = env
	ctx := context.Background()

	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if s.signer, err = ssh.NewSignerFromKey(key); err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(key, "")
	if err != nil {
		t.Fatal(err)
	}
	s.keyFile = filepath.Join(testinterrupt.TempDir(t), "ssh-privatekey")
	if err := os.WriteFile(s.keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	s.sshOpts = stepcmd.SSHOptions{KeyFile: s.keyFile, Port: 22, Timeout: 20 * time.Second}

	s.site = testvm.NewSite(t, subnet, specs, opts...)
	s.master, s.worker, s.spares = s.site.Machines()[0], s.site.Machines()[1], s.site.Machines()[2:]
	image := testvm.ImageIn(s.imageDir)
	s.site.BootMachine(t, s.master, image, s.signer.PublicKey())
	s.site.BootMachine(t, s.worker, image, s.signer.PublicKey())

	// The site's package repository, served on the site network (the machines have no other).
	repo := s.site.Serve(t, filepath.Join(testutil.NewAptNode(t, testutil.DpkgStatus, sitePackages...).Dir, "repo"))
	s.repos = map[string]string{"site.list": "deb [trusted=yes] " + repo + " ./"}
	s.clients = map[string]*ssh.Client{}
	for _, m := range []*testvm.Machine{s.master, s.worker} {
		s.dial(t, m)
	}

	all := map[string]bpav1.ExtraVarValue{"upstream_dns_servers": bpav1.ExtraVar([]string{s.site.TestSide()})}
	maps.Copy(all, vars)

	s.ns = env.Namespace(t)
	for _, m := range []*testvm.Machine{s.master, s.worker} {
		createHost(t, env, m, s.ns)
	}
	s.p = &bpav1.Provisioning{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "provisioning-vm", Labels: map[string]string{bpav1.ClusterLabel: "cluster-abc"}},
		Spec: bpav1.ProvisioningSpec{
			Masters:      []bpav1.HostEntry{{"master": {MACAddress: s.master.MAC}}},
			Workers:      []bpav1.HostEntry{{"worker": {MACAddress: s.worker.MAC}}},
			HostSelector: &bpav1.HostSelector{Namespaces: []string{s.ns}},
			SSH:          &bpav1.SSHAccess{User: testvm.AdminUser},
			Kubespray:    &bpav1.KubesprayOptions{ExtraVars: all},
		},
	}
	if err := env.Client.Create(ctx, s.p); err != nil {
		t.Fatal(err)
	}
	s.ref = stepcmd.CRRef{Namespace: s.ns, Name: s.p.Name, UID: string(s.p.UID), Generation: s.p.Generation}

	if s.placed, err = discoverhostspod.Run(ctx, env.Client, s.ref, nil); err != nil {
		t.Fatal(err)
	}
	if s.addressed, err = resolveleasespod.Run(ctx, env.Client, s.ref, s.placed, s.site.LeaseFile, leases.FormatDnsmasq); err != nil {
		t.Fatal(err)
	}
	for _, n := range s.addressed {
		if want := map[string]string{"master": s.master.IP, "worker": s.worker.IP}[n.Label]; n.IP != want {
			t.Fatalf("%s at %q, want %s (its lease)", n.Label, n.IP, want)
		}
	}
	if err := pinhostkeyspod.Run(ctx, env.Client, s.ref, s.addressed, nil, 22, 20*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	return s
}

// byLabel is the SSH clients by the Provisioning's labels.
func (s *vmSite) byLabel() map[string]*ssh.Client {
	return map[string]*ssh.Client{"master": s.clients[s.master.Name], "worker": s.clients[s.worker.Name]}
}

// servePackagesKubesprayInstalls serves the site's package mirror of what the real kubespray's
// system_packages role installs (kubespray itself says which: kubesprayPackages) beside the
// site's own repository, and returns their names; nil without kubespray's image.
func (s *vmSite) servePackagesKubesprayInstalls(t *testing.T, inventory, extraVars []byte) []string {
	t.Helper()
	packages := kubesprayPackages(t, s.env, s.ns, s.p, inventory, extraVars, s.keyFile)
	if packages == nil {
		return nil
	}
	mirror := s.site.Serve(t, testkubespray.PackageMirror(t, packages, []byte(testvm.Run(t, s.clients[s.master.Name], "cat /var/lib/dpkg/status"))))
	s.repos[kubesprayMirrorList] = "deb [trusted=yes] " + mirror + " ./"
	for _, c := range s.clients {
		s.setSources(t, c)
	}
	return packages
}

// dial waits for a booted machine's SSH and sets its apt sources, as the site's user data does.
func (s *vmSite) dial(t *testing.T, m *testvm.Machine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bootWait)
	defer cancel()
	c, _, err := m.Dial(ctx, testvm.AdminUser, s.signer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s.clients[m.Name] = c
	s.setSources(t, c)
}

// kubesprayMirrorList is the apt source of the package mirror for kubespray's own packages.
const kubesprayMirrorList = "kubespray-mirror.list"

// setSources gives a machine the site's mirrors as its only apt sources (Debian's own are out
// of reach). With kubespray's package mirror among them, their index is refreshed: the apt
// module kubespray uses refreshes only an index older than a day (install-software refreshes
// its own).
func (s *vmSite) setSources(t *testing.T, c *ssh.Client) {
	t.Helper()
	script := "sudo -n rm -f /etc/apt/sources.list /etc/apt/sources.list.d/debian.sources"
	for _, file := range slices.Sorted(maps.Keys(s.repos)) {
		script += " && echo '" + s.repos[file] + "' | sudo -n tee /etc/apt/sources.list.d/" + file + " >/dev/null"
	}
	if _, ok := s.repos[kubesprayMirrorList]; ok {
		script += " && sudo -n apt-get update -q >/dev/null"
	}
	testvm.Run(t, c, script)
}

// rack boots a spare, as a server racked later, with the site's sources, and describes it with
// a BareMetalHost as metal3 would once it provisioned it.
func (s *vmSite) rack(t *testing.T, m *testvm.Machine) {
	t.Helper()
	s.site.BootMachine(t, m, testvm.ImageIn(s.imageDir), s.signer.PublicKey())
	s.dial(t, m)
	createHost(t, s.env, m, s.ns)
}
