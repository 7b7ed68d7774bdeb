package steprun_test

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

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/scheme"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

// stepUser is an API user holding only the generated step ClusterRole, as the step pods'
// ServiceAccount does.
func stepUser(t *testing.T) (kubeconfig string, c client.Client) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "rbac", "step", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx(), role); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	name := "step-" + strings.ToLower(t.Name()[:min(len(t.Name()), 20)])
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: name}},
	}
	if err := env.Client.Create(ctx(), binding); err != nil {
		t.Fatal(err)
	}
	user, err := env.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = client.New(user.Config(), client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return path, c
}

// TestStepsRunWithTheirRoleAndLeakNothing runs every in-cluster step as the step pods do — the
// binary, as a user holding only the generated step role — with a known SSH key and a
// known kubeconfig token, on success and failure paths, and looks for them in everything the
// steps print or write, and in the compiled Workflow's parameters.
func TestStepsRunWithTheirRoleAndLeakNothing(t *testing.T) {
	sshd := testsshd.Start(t)
	ns := newNamespace(t)
	loadSite(t, ns)
	p, ref := provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	swRef := software(t, ns, []bpav1.SoftwarePackage{{Name: "bash"}, {Name: "jq", Version: "1.6-2"}})
	kubeconfig, stepClient := stepUser(t)
	t.Setenv("KUBECONFIG", kubeconfig)

	dir := t.TempDir()
	conf := filepath.Join(dir, "admin.conf")
	write := func(path, content string, mode os.FileMode) {
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(conf, adminConf, 0o600)
	write(filepath.Join(dir, "status"), testutil.DpkgStatus, 0o644)
	installer := filepath.Join(dir, "install")
	write(installer, testutil.FakeInstaller(filepath.Join(dir, "status"), filepath.Join(dir, "calls")), 0o755)
	hostsWithMaster := filepath.Join(dir, "hosts-local.json")
	write(hostsWithMaster, `[{"name":"master","role":"master","bareMetalHost":"`+ns+`/node-1","mac":"00:c5:16:05:61:b2","ip":"127.0.0.1"},`+
		`{"name":"worker-1","role":"worker","bareMetalHost":"`+ns+`/node-3","mac":"00:c6:14:04:61:b2","ip":"172.22.0.13"},`+
		`{"name":"worker-2","role":"worker","bareMetalHost":"`+ns+`/node-4","mac":"00:c2:12:03:62:b2","ip":"172.22.0.14"}]`, 0o644)

	cr := []string{"--namespace=" + ns, "--name=abc", "--uid=" + ref.UID, "--generation=" + strconv.FormatInt(ref.Generation, 10)}
	swCR := []string{"--namespace=" + ns, "--name=sw", "--uid=" + swRef.UID, "--generation=" + strconv.FormatInt(swRef.Generation, 10)}
	ssh := []string{"--ssh-key=" + sshd.ClientKeyFile, "--ssh-port=" + strconv.Itoa(sshd.Port), "--ssh-timeout=10s"}
	install := append(append(append([]string{"step", "install-software"}, swCR...), ssh...),
		"--node=master", "--role=master", "--address=127.0.0.1", "--dpkg-admindir="+dir, "--install-command="+installer)

	var printed bytes.Buffer
	runs := []struct {
		name   string
		args   []string
		wantOK bool
	}{
		{"discover-hosts", append(append([]string{"step", "discover-hosts"}, cr...), "--output="+filepath.Join(dir, "placed.json")), true},
		{"resolve-leases from the NICs", []string{"step", "resolve-leases", "--hosts=" + filepath.Join(dir, "placed.json"), "--output=" + filepath.Join(dir, "addressed.json")}, true},
		{"render-inventory", append(append([]string{"step", "render-inventory"}, cr...), "--hosts="+filepath.Join(dir, "addressed.json"), "--output-dir="+dir), true},
		{"fetch-kubeconfig", append(append(append([]string{"step", "fetch-kubeconfig"}, cr...), ssh...), "--cluster=cluster-abc", "--hosts="+hostsWithMaster, "--master=master", "--admin-conf="+conf), true},
		{"fetch-kubeconfig, missing admin.conf", append(append(append([]string{"step", "fetch-kubeconfig"}, cr...), ssh...), "--hosts="+hostsWithMaster, "--master=master", "--admin-conf="+conf+".missing"), false},
		{"resolve-cluster-hosts", append(append([]string{"step", "resolve-cluster-hosts"}, swCR...), "--cluster=cluster-abc", "--output="+filepath.Join(dir, "nodes.json")), true},
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
	plugins, err := workflows.Plugins()
	if err != nil {
		t.Fatal(err)
	}
	wf, err := compile.Provisioning(p, compile.DefaultOptions(plugins))
	if err != nil {
		t.Fatal(err)
	}
	wfYAML, _ := yaml.Marshal(wf)
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
