package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/golden"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = cli.Execute(args, &out, &errb)
	return code, out.String(), errb.String()
}

// expected is the placement table of the shared fixtures' README.
var expected = map[string][][3]string{
	"provisioning-cluster-abc.yaml": {
		{"master", "metal3/node-1", "172.22.0.11"}, {"worker-1", "metal3/node-3", "172.22.0.13"}, {"worker-2", "metal3/node-4", "172.22.0.14"},
	},
	"provisioning-cluster-efg-kud-plugins.yaml": {{"master-1", "metal3/node-5", "172.22.0.15"}},
	"provisioning-cluster-xyz-resources.yaml": {
		{"master-1", "metal3/node-1", "172.22.0.11"}, {"master-2", "metal3/node-2", "172.22.0.12"}, {"worker", "metal3/node-3", "172.22.0.13"},
	},
	"provisioning-cluster-rst-by-resources.yaml": {{"master-1", "metal3/node-2", "172.22.0.12"}, {"worker-1", "metal3/node-4", "172.22.0.14"}},
}

// TestPlanReproducesTheFixtureTable: every sample Provisioning, with each of the three IP
// sources, places as the fixtures' README says.
func TestPlanReproducesTheFixtureTable(t *testing.T) {
	hosts := testutil.Fixture(t, "sample-site-baremetalhosts.yaml")
	sources := map[string][]string{
		"bmh-nics": nil,
		"isc":      {"--leases", testutil.Fixture(t, "sample-site-dhcpd.leases")},
		"dnsmasq":  {"--leases", testutil.Fixture(t, "sample-site-dnsmasq.leases")},
	}
	for _, cr := range testutil.ProvisioningFixtures {
		for source, flags := range sources {
			t.Run(cr+"/"+source, func(t *testing.T) {
				code, stdout, stderr := run(append([]string{"plan", "-f", testutil.Fixture(t, cr), "--hosts", hosts, "-o", "json"}, flags...)...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				var plan cli.Plan
				if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
					t.Fatal(err)
				}
				var got [][3]string
				for _, h := range plan.Hosts {
					got = append(got, [3]string{h.Label, h.BareMetalHost, h.IP})
				}
				if diff := cmp.Diff(expected[cr], got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				if !strings.Contains(plan.Inventory, "[kube_control_plane]") {
					t.Errorf("no inventory in the plan")
				}
			})
		}
	}
}

func TestPlanText(t *testing.T) {
	code, stdout, stderr := run("plan", "-f", testutil.Fixture(t, "provisioning-cluster-xyz-resources.yaml"),
		"--hosts", testutil.Fixture(t, "sample-site-baremetalhosts.yaml"), "-o", "text")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden.Check(t, "plan-cluster-xyz.txt", []byte(stdout))
}

func TestCompileEveryFixture(t *testing.T) {
	for _, name := range append(testutil.ProvisioningFixtures, "software-cluster-xyz.yaml") {
		code, stdout, stderr := run("compile", "-f", testutil.Fixture(t, name), "-o", "json")
		if code != 0 || !strings.Contains(stdout, `"kind":"Workflow"`) || stderr != "" {
			t.Errorf("%s: exit %d, stderr %q", name, code, stderr)
		}
	}
}

// TestBadInput: a non-zero exit, one line on stderr naming the field or entry and why, and
// nothing on stdout.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good, err := os.ReadFile(testutil.Fixture(t, "provisioning-cluster-abc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	hosts := testutil.Fixture(t, "sample-site-baremetalhosts.yaml")
	variant := func(name, old, new string) string {
		return write(name, strings.Replace(string(good), old, new, 1))
	}
	cases := []struct {
		name, want string
		args       []string
	}{
		{"unknown-field", `unknown field "spec.wrkers"`,
			[]string{"compile", "-f", variant("unknown.yaml", "workers:", "wrkers:")}},
		{"malformed-mac", `spec.workers[1][worker-2].mac-address: Invalid value: "00:c2:12:03:62"`,
			[]string{"compile", "-f", variant("mac.yaml", "00:c2:12:03:62:b2", "00:c2:12:03:62")}},
		{"smuggled-label", `spec.workers[0][worker-1 ansible_host=10.0.0.1]: Invalid value`,
			[]string{"plan", "-f", variant("label.yaml", "- worker-1:", "- 'worker-1 ansible_host=10.0.0.1':"), "--hosts", hosts}},
		{"missing-cluster-label", `metadata.labels[cluster]: Required value`,
			[]string{"compile", "-f", variant("nolabel.yaml", "cluster: cluster-abc", "site: abc")}},
		{"unplaceable-host", `entry "worker-2": no BareMetalHost has a NIC with MAC 00:c2:12:03:62:b3`,
			[]string{"plan", "-f", variant("unplaceable.yaml", "00:c2:12:03:62:b2", "00:c2:12:03:62:b3"), "--hosts", hosts}},
		{"every-unplaceable-entry-named", `entry "worker-1": no BareMetalHost has a NIC with MAC 00:c6:14:04:61:b3; entry "worker-2": no BareMetalHost has a NIC with MAC 00:c2:12:03:62:b3`,
			[]string{"plan", "-f", write("two-unplaceable.yaml", strings.NewReplacer("00:c2:12:03:62:b2", "00:c2:12:03:62:b3", "00:c6:14:04:61:b2", "00:c6:14:04:61:b3").Replace(string(good))), "--hosts", hosts}},
		{"host-still-provisioning", `entry "worker-2": BareMetalHost metal3/node-6 (MAC 00:e1:ba:ce:df:be) is "provisioning", not provisioned yet`,
			[]string{"plan", "-f", variant("provisioning.yaml", "00:c2:12:03:62:b2", "00:e1:ba:ce:df:be"), "--hosts", hosts}},
		{"missing-lease", `entry "worker-1" (BareMetalHost metal3/node-3): no active lease for MAC 00:c6:14:04:61:b2`,
			[]string{"plan", "-f", testutil.Fixture(t, "provisioning-cluster-abc.yaml"), "--hosts", hosts, "--leases",
				write("leases", "0 00:c5:16:05:61:b2 172.22.0.11 node-1 *\n0 00:c2:12:03:62:b2 172.22.0.14 node-4 *\n")}},
		{"broken-lease-file", `(isc format): lease 172.22.0.11 (line 1): line 2: file ends where '}' was expected`,
			[]string{"plan", "-f", testutil.Fixture(t, "provisioning-cluster-abc.yaml"), "--hosts", hosts, "--leases", write("broken.leases", "lease 172.22.0.11 {\n")}},
		{"package-smuggling", `spec.masterSoftware[0]: Invalid value: "curl$(reboot)"`,
			[]string{"compile", "-f", write("sw.yaml", "apiVersion: bpa.akraino.org/v1alpha1\nkind: Software\nmetadata: {name: s, labels: {cluster: c}}\nspec:\n  masterSoftware: ['curl$(reboot)']\n")}},
		{"package-map-two-keys", `a package map has exactly one key`,
			[]string{"compile", "-f", write("sw2.yaml", "apiVersion: bpa.akraino.org/v1alpha1\nkind: Software\nmetadata: {name: s, labels: {cluster: c}}\nspec:\n  masterSoftware: [{jq: {version: '1'}, curl: {version: '2'}}]\n")}},
		{"not-a-cr", `unsupported apiVersion "v1" kind "ConfigMap"`,
			[]string{"compile", "-f", write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")}},
		{"bad-output", `--output "xml": want yaml, json, mermaid or dot`,
			[]string{"compile", "-f", testutil.Fixture(t, "provisioning-cluster-abc.yaml"), "-o", "xml"}},
		{"missing-file", `no such file or directory`,
			[]string{"compile", "-f", filepath.Join(dir, "absent.yaml")}},
		{"second-document-bad", `document 2: Provisioning default/p2 is invalid`,
			[]string{"compile", "-f", write("two.yaml", string(good)+"---\n"+strings.Replace(strings.Replace(string(good), "provisioning-sample", "p2", 1), "00:c5:16:05:61:b2", "zz", 1))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(tc.args...)
			if code == 0 {
				t.Fatalf("exit 0; stdout %q", stdout)
			}
			if stdout != "" {
				t.Errorf("stdout must stay empty on failure, got %d bytes", len(stdout))
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("stderr must be one line, got %q", stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not say %q", stderr, tc.want)
			}
		})
	}
}

// TestStepsOnFiles chains the three offline steps as the Workflow does, through files.
func TestStepsOnFiles(t *testing.T) {
	dir := t.TempDir()
	cr := testutil.Fixture(t, "provisioning-cluster-abc.yaml")
	placed, addressed := filepath.Join(dir, "placed.json"), filepath.Join(dir, "addressed.json")
	for _, args := range [][]string{
		{"step", "discover-hosts", "--cr", cr, "--hosts", testutil.Fixture(t, "sample-site-baremetalhosts.yaml"), "--output", placed},
		{"step", "resolve-leases", "--hosts", placed, "--leases", testutil.Fixture(t, "sample-site-dnsmasq.leases"), "--output", addressed},
		{"step", "render-inventory", "--cr", cr, "--hosts", addressed, "--output-dir", dir},
	} {
		if code, _, stderr := run(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args[:2], code, stderr)
		}
	}
	inv, err := os.ReadFile(filepath.Join(dir, "hosts.ini"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(inv), "worker-2 ansible_host=172.22.0.14") {
		t.Errorf("inventory:\n%s", inv)
	}
	vars, err := os.ReadFile(filepath.Join(dir, "extra-vars.json"))
	if err != nil || strings.TrimSpace(string(vars)) != "{}" {
		t.Errorf("extra vars of a CR without PodSubnet or extraVars: %q %v", vars, err)
	}
}

// TestInClusterStepsNameTheirCR: a step without the flags naming its CR fails saying which.
func TestInClusterStepsNameTheirCR(t *testing.T) {
	for _, args := range [][]string{
		{"step", "discover-hosts", "--output=/tmp/x"},
		{"step", "fetch-kubeconfig", "--namespace=default", "--hosts=/tmp/x", "--master=m"},
		{"step", "resolve-cluster-hosts", "--name=s"},
		{"step", "install-software", "--node=n"},
	} {
		code, stdout, stderr := run(args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "--namespace, --name, --uid and --generation name the CR") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

// TestLeaseFileBeingRewritten: a lease file read while the DHCP server rewrites it (half a
// file) is a retryable failure that says so, not a final one.
func TestLeaseFileBeingRewritten(t *testing.T) {
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts.json")
	if err := os.WriteFile(hosts, []byte(`[{"label":"master","role":"master","bareMetalHost":"metal3/node-1","mac":"00:c5:16:05:61:b2"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(testutil.Fixture(t, "sample-site-dhcpd.leases"))
	if err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(dir, "dhcpd.leases")
	cut := strings.Index(string(full), "starts ") + len("starts 5 20") // inside the first lease
	if err := os.WriteFile(half, full[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run("step", "resolve-leases", "--hosts="+hosts, "--leases="+half, "--lease-format=isc")
	if code != steps.ExitRetryable || stdout != "" || !strings.Contains(stderr, "perhaps read while the DHCP server rewrote it") {
		t.Errorf("half a lease file: exit %d, stdout %q, stderr %q; want %d saying it is read again", code, stdout, stderr, steps.ExitRetryable)
	}
}

// TestRetryableExit: a failure waiting can cure exits 75, which the compiled retryStrategy
// retries; others exit 1 and are final.
func TestRetryableExit(t *testing.T) {
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts.json")
	if err := os.WriteFile(hosts, []byte(`[{"label":"worker-9","role":"worker","bareMetalHost":"metal3/node-9","mac":"00:00:00:00:00:99"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := cli.TerminationMessagePath
	t.Cleanup(func() { cli.TerminationMessagePath = saved })
	cli.TerminationMessagePath = filepath.Join(dir, "termination-log")
	if err := os.WriteFile(cli.TerminationMessagePath, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run("step", "resolve-leases", "--hosts="+hosts, "--leases="+testutil.Fixture(t, "sample-site-dhcpd.leases"))
	if code != steps.ExitRetryable || !strings.Contains(stderr, "worker-9") || !strings.Contains(stderr, "retried by Argo") {
		t.Errorf("a host without a lease: exit %d, stderr %q; want %d naming it, saying it is retried", code, stderr, steps.ExitRetryable)
	}
	// The message Argo shows, and the CR mirrors, is the failure alone: the exit code, not a
	// prefix, says it is retried.
	raw, err := os.ReadFile(cli.TerminationMessagePath)
	if err != nil {
		t.Fatal(err)
	}
	if msg := string(raw); !strings.Contains(msg, "worker-9") || strings.Contains(msg, "retr") {
		t.Errorf("termination message %q: want the failure without a retry marker", msg)
	}
}

// TestFailureReachesTheTerminationMessage: a failing command leaves its one-line error in the
// termination message file the kubelet made (Argo shows it as the step's message); where no
// such file exists (outside a pod), none is created.
func TestFailureReachesTheTerminationMessage(t *testing.T) {
	saved := cli.TerminationMessagePath
	t.Cleanup(func() { cli.TerminationMessagePath = saved })
	dir := t.TempDir()
	cli.TerminationMessagePath = filepath.Join(dir, "termination-log")
	if code, _, _ := run("step", "render-inventory", "--hosts", filepath.Join(dir, "missing.json")); code == 0 {
		t.Fatal("render-inventory of a missing hosts file succeeded")
	}
	if _, err := os.Stat(cli.TerminationMessagePath); !os.IsNotExist(err) {
		t.Fatalf("a termination message file was created outside a pod: %v", err)
	}

	if err := os.WriteFile(cli.TerminationMessagePath, []byte("stale message from an earlier run"), 0o666); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run("step", "render-inventory", "--hosts", filepath.Join(dir, "missing.json"))
	raw, err := os.ReadFile(cli.TerminationMessagePath)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimPrefix(strings.TrimSpace(stderr), "bpa-workflow-controller: ")
	if code == 0 || string(raw) != want || !strings.Contains(want, "missing.json") {
		t.Errorf("termination message %q, want the error line %q (exit %d)", raw, want, code)
	}
}

// TestHostsFilesAreReadStrictly: a hosts file handed from step to step is a list of nodes
// (bpav1.Node); a field it does not have, a node without a label or a role it cannot have is
// refused, naming the file and the reason, rather than read as an empty node.
func TestHostsFilesAreReadStrictly(t *testing.T) {
	for name, tc := range map[string]struct{ content, want string }{
		"an unknown field": {`[{"name":"m","role":"master","bareMetalHost":"metal3/node-1","mac":"00:c5:16:05:61:b2"}]`, `unknown field "name"`},
		"no label":         {`[{"role":"master","bareMetalHost":"metal3/node-1","mac":"00:c5:16:05:61:b2"}]`, "node 0: no label"},
		"a bad role":       {`[{"label":"m","role":"etcd","bareMetalHost":"metal3/node-1","mac":"00:c5:16:05:61:b2"}]`, `node "m": role "etcd"`},
		"no hosts":         {`[]`, "no hosts"},
	} {
		t.Run(name, func(t *testing.T) {
			hosts := filepath.Join(t.TempDir(), "hosts.json")
			if err := os.WriteFile(hosts, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := run("step", "resolve-leases", "--hosts="+hosts, "--leases="+testutil.Fixture(t, "sample-site-dhcpd.leases"))
			if code != 1 || stdout != "" || !strings.Contains(stderr, hosts) || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 naming %s and %q", code, stdout, stderr, hosts, tc.want)
			}
		})
	}
}

// TestPlanListsKubesprayDownloads runs plan with the real kubespray (v2.30.0's tree from
// ../shared/third_party) and this machine's ansible-playbook, offline: every file and image
// kubespray's download role will fetch for the sample cluster, each from the mirror.
func TestPlanListsKubesprayDownloads(t *testing.T) {
	tarball := filepath.Join(testutil.RepoRoot(t), "..", "shared", "third_party", "kubespray-v2.30.0.tar.gz")
	if _, err := os.Stat(tarball); err != nil {
		t.Skipf("kubespray's tree is not here: ../shared/third_party is absent (%v)", err)
	}
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not installed (make test-deps installs Debian's ansible-core)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", tarball, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	kubespray := filepath.Join(dir, "kubespray-v2.30.0")
	args := []string{"plan", "-f", testutil.Fixture(t, "provisioning-cluster-abc.yaml"), "--hosts", testutil.Fixture(t, "sample-site-baremetalhosts.yaml"),
		"--kubespray", kubespray, "--offline-mirror", "http://10.10.0.2:30580", "--offline-kubespray-files", "kubespray:v2.30.0"}
	code, stdout, stderr := run(append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var plan cli.Plan
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, d := range plan.Downloads {
		names[d.Name] = true
		if !strings.HasPrefix(d.URL+d.Image, "http://10.10.0.2:30580/files/kubespray/v2.30.0/") && !strings.HasPrefix(d.Image, "10.10.0.2:30580/") {
			t.Errorf("offline, kubespray fetches %s from outside the mirror", d)
		}
	}
	for _, want := range []string{"kubeadm", "kubelet", "containerd", "runc", "etcd", "pod_infra", "coredns", "kubeadm_kube-apiserver"} {
		if !names[want] {
			t.Errorf("the plan's downloads lack %s: %v", want, plan.Downloads)
		}
	}
	if code, stdout, _ := run(append(args, "-o", "text")...); code != 0 || !strings.Contains(stdout, fmt.Sprintf("kubespray fetches %d files and images:", len(plan.Downloads))) {
		t.Errorf("plan -o text: exit %d:\n%s", code, stdout)
	}
	if code, _, stderr := run(append(args[:5:5], "--kubespray", dir)...); code == 0 || !strings.Contains(stderr, "not a kubespray tree") {
		t.Errorf("plan --kubespray with no kubespray there: exit %d, %s", code, stderr)
	}
}
