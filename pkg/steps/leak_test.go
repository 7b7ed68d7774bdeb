package steps_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

// adminConf is what kubespray leaves on a master, its credentials the secret the steps must
// never show.
var adminConf = testutil.AdminConf(`
    token: ` + secretToken)

const secretToken = "s3cr3t-t0ken-never-printed"

// TestStepsRunWithTheirRoleAndLeakNothing runs every in-cluster step as the step pods do — the
// binary, as a user holding only the generated step role — with a known SSH key and a
// known kubeconfig token, on success and failure paths, and looks for them in everything the
// steps print or write, and in the compiled Workflow's parameters.
func TestStepsRunWithTheirRoleAndLeakNothing(t *testing.T) {
	node := testutil.NewAptNode(t, testutil.DpkgStatus, testutil.DebPackage{Name: "jq", Version: "1.6-2"})
	sshd := testsshd.StartWithEnv(t, node.Env)
	ns := env.Namespace(t)
	env.LoadSite(t, ns)
	p, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	swRef := env.Software(t, ns, bpav1.SoftwareSpec{MasterSoftware: []bpav1.SoftwarePackage{{Name: "bash"}, {Name: "jq", Version: "1.6-2"}}, WorkerSoftware: []bpav1.SoftwarePackage{{Name: "curl"}}})
	kubeconfig, stepClient := env.StepIdentity(t, p)
	t.Setenv("KUBECONFIG", kubeconfig)

	dir := t.TempDir()
	conf := filepath.Join(dir, "admin.conf")
	write := func(path, content string, mode os.FileMode) {
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(conf, adminConf, 0o600)
	hostsWithMaster := filepath.Join(dir, "hosts-local.json")
	write(hostsWithMaster, `[{"label":"master","role":"master","bareMetalHost":"`+ns+`/node-1","mac":"00:c5:16:05:61:b2","ip":"127.0.0.1"},`+
		`{"label":"worker-1","role":"worker","bareMetalHost":"`+ns+`/node-3","mac":"00:c6:14:04:61:b2","ip":"172.22.0.13"},`+
		`{"label":"worker-2","role":"worker","bareMetalHost":"`+ns+`/node-4","mac":"00:c2:12:03:62:b2","ip":"172.22.0.14"}]`, 0o644)

	masterOnly := filepath.Join(dir, "hosts-master.json")
	write(masterOnly, `[{"label":"master","role":"master","bareMetalHost":"`+ns+`/node-1","mac":"00:c5:16:05:61:b2","ip":"127.0.0.1"}]`, 0o644)
	cr := []string{"--namespace=" + ns, "--name=abc", "--uid=" + ref.UID, "--generation=" + strconv.FormatInt(ref.Generation, 10)}
	swCR := []string{"--namespace=" + ns, "--name=sw", "--uid=" + swRef.UID, "--generation=" + strconv.FormatInt(swRef.Generation, 10)}
	ssh := []string{"--ssh-key=" + sshd.ClientKeyFile, "--ssh-port=" + strconv.Itoa(sshd.Port), "--ssh-timeout=10s"}
	install := append(append(append([]string{"step", "install-software"}, swCR...), ssh...),
		"--node=master", "--role=master", "--address=127.0.0.1")

	var printed bytes.Buffer
	runs := []struct {
		name   string
		args   []string
		wantOK bool
	}{
		{"discover-hosts", append(append([]string{"step", "discover-hosts"}, cr...), "--output="+filepath.Join(dir, "placed.json")), true},
		{"resolve-leases from the NICs", append(append([]string{"step", "resolve-leases"}, cr...), "--hosts="+filepath.Join(dir, "placed.json"), "--output="+filepath.Join(dir, "addressed.json")), true},
		{"render-inventory", append(append([]string{"step", "render-inventory"}, cr...), "--hosts="+filepath.Join(dir, "addressed.json"), "--output-dir="+dir), true},
		{"pin-host-keys", append(append([]string{"step", "pin-host-keys"}, cr...), "--cluster=cluster-abc", "--hosts="+masterOnly, "--ssh-port="+strconv.Itoa(sshd.Port)), true},
		{"fetch-kubeconfig", append(append(append([]string{"step", "fetch-kubeconfig"}, cr...), ssh...), "--cluster=cluster-abc", "--hosts="+hostsWithMaster, "--master=master", "--admin-conf="+conf), true},
		{"fetch-kubeconfig, missing admin.conf", append(append(append([]string{"step", "fetch-kubeconfig"}, cr...), ssh...), "--hosts="+hostsWithMaster, "--master=master", "--admin-conf="+conf+".missing"), false},
		{"resolve-cluster-hosts", append(append([]string{"step", "resolve-cluster-hosts"}, swCR...), "--output="+filepath.Join(dir, "nodes.json")), true},
		{"install-software", append(install, "--output="+filepath.Join(dir, "report.json")), true},
	}
	// The real binary, as a pod runs it: everything the process prints (its own lines,
	// libraries' logs) is what a pod's log would show.
	binary := filepath.Join(t.TempDir(), "bpa-workflow-controller")
	build := exec.Command("go", "build", "-o", binary, "./cmd/bpa-workflow-controller")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, r := range runs {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(binary, r.args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if (err == nil) != r.wantOK {
			t.Errorf("%s: %v, stderr %q", r.name, err, stderr.String())
		}
		printed.Write(stdout.Bytes())
		printed.Write(stderr.Bytes())
	}

	// The steps did their work as the step role.
	var hosts metal3v1alpha1.BareMetalHostList
	if err := stepClient.List(ctx(), &hosts, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for _, h := range hosts.Items {
		if h.Spec.ConsumerRef != nil {
			claimed++
		}
	}
	if claimed != 3 {
		t.Errorf("%d hosts claimed as the step role, want 3", claimed)
	}
	if err := stepClient.Delete(ctx(), &hosts.Items[0]); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("the step role may delete a BareMetalHost (%v); it must not", err)
	}
	// The cluster's own Secret, yes; another cluster's, or its namespace's others, or any in
	// another namespace, no.
	other := env.Namespace(t)
	for _, sec := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-xyz-kubeconfig"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site-bmc-credentials"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "cluster-abc-kubeconfig"}},
	} {
		sec.StringData = map[string]string{"value": "not for the steps"}
		if err := env.Client.Create(ctx(), sec); err != nil {
			t.Fatal(err)
		}
		if err := stepClient.Get(ctx(), client.ObjectKeyFromObject(sec), &corev1.Secret{}); err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("the step identity of cluster-abc reads Secret %s/%s (%v); it must not", sec.Namespace, sec.Name, err)
		}
	}
	var list corev1.SecretList
	if err := stepClient.List(ctx(), &list, client.InNamespace(ns)); err == nil {
		t.Errorf("the step identity lists the namespace's Secrets; it must not")
	}
	if err := stepClient.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cluster-abc-kubeconfig"}, &corev1.Secret{}); err != nil {
		t.Errorf("the step identity cannot read its own cluster's kubeconfig: %v", err)
	}
	if err := stepClient.List(ctx(), &hosts, client.InNamespace(other)); err == nil {
		t.Errorf("the step identity lists BareMetalHosts in a namespace its CR takes none from")
	}

	// Nothing secret anywhere.
	secrets := map[string]string{"the kubeconfig token": secretToken}
	keyBody := strings.Split(strings.TrimSpace(string(sshd.ClientKeyPEM)), "\n")
	for i, line := range keyBody[1 : len(keyBody)-1] {
		secrets[fmt.Sprintf("line %d of the SSH key", i+1)] = line
	}
	secrets["the SSH key, base64"] = base64.StdEncoding.EncodeToString(sshd.ClientKeyPEM)[:40]
	places := map[string][]byte{"stdout and stderr": printed.Bytes()}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); name != "admin.conf" && !e.IsDir() {
			raw, _ := os.ReadFile(filepath.Join(dir, name))
			places["output "+name] = raw
		}
	}
	wfYAML, _ := yaml.Marshal(testenv.Compiled(t, p))
	places["the compiled Workflow"] = wfYAML
	for what, secret := range secrets {
		for where, content := range places {
			if bytes.Contains(content, []byte(secret)) {
				t.Errorf("%s appears in %s", what, where)
			}
		}
	}
	if !strings.Contains(printed.String(), "missing") {
		t.Errorf("the failing run did not say what failed: %q", printed.String())
	}
}
