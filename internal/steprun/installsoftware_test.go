package steprun_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/steprun"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
)

func software(t *testing.T, ns string, master []bpav1.SoftwarePackage) steprun.CRRef {
	t.Helper()
	sw := &bpav1.Software{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sw", Labels: map[string]string{bpav1.ClusterLabel: "cluster-abc"}},
		Spec:       bpav1.SoftwareSpec{MasterSoftware: master, WorkerSoftware: []bpav1.SoftwarePackage{{Name: "curl"}}},
	}
	if err := env.Client.Create(ctx(), sw); err != nil {
		t.Fatal(err)
	}
	return steprun.CRRef{Namespace: ns, Name: sw.Name, UID: string(sw.UID), Generation: sw.Generation}
}

func TestInstallSoftwareOverSSH(t *testing.T) {
	sshd := testsshd.Start(t)
	ns := newNamespace(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte(testutil.DpkgStatus), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(dir, "installed.log")
	installer := filepath.Join(dir, "install")
	if err := os.WriteFile(installer, []byte(testutil.FakeInstaller(filepath.Join(dir, "status"), calls)), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := steprun.InstallOptions{
		SSH:          steprun.SSHOptions{KeyFile: sshd.ClientKeyFile, Port: sshd.Port, Timeout: 10 * time.Second},
		DpkgAdminDir: dir, InstallCommand: installer,
	}
	ref := software(t, ns, []bpav1.SoftwarePackage{{Name: "bash"}, {Name: "jq", Version: "1.6-2"}, {Name: "tmux"}, {Name: "vim", Version: "2:9.0.1378-2"}})

	report, err := steprun.InstallSoftware(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := installsoftware.Report{
		Node: "master", Role: "master", PackageManager: "apt",
		Installed: []string{"bash=5.2.15-2+b2", "jq=1.6-2", "tmux=1.0-1", "vim=2:9.0.1378-2"},
		Changed:   []string{"jq=1.6-2", "tmux=1.0-1", "vim=2:9.0.1378-2"},
		Unchanged: []string{"bash=5.2.15-2+b2"},
	}
	if d := cmp.Diff(want, report); d != "" {
		t.Errorf("first run: pinned jq upgraded, tmux installed, vim (config files only) installed, bash left alone (-want +got):\n%s", d)
	}
	log, _ := os.ReadFile(calls)
	if got := strings.Fields(string(log)); !cmp.Equal(got, []string{"jq=1.6-2", "tmux", "vim=2:9.0.1378-2"}) {
		t.Errorf("the installer got %v: only what differs, once", got)
	}

	again, err := steprun.InstallSoftware(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
	if err != nil || len(again.Changed) != 0 || len(again.Unchanged) != 4 {
		t.Errorf("second run changed %v (unchanged %v, err %v); want nothing to do", again.Changed, again.Unchanged, err)
	}
	if log2, _ := os.ReadFile(calls); string(log2) != string(log) {
		t.Errorf("the second run called the installer")
	}

	t.Run("a package the node cannot install: reported with the reason, the step fails", func(t *testing.T) {
		ns := newNamespace(t)
		ref := software(t, ns, []bpav1.SoftwarePackage{{Name: "bash"}, {Name: "broken-pkg"}})
		// The known-hosts Secret of this namespace is new: the key is pinned again.
		report, err := steprun.InstallSoftware(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
		if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), "broken-pkg") {
			t.Fatalf("%v; want a final error naming broken-pkg", err)
		}
		if len(report.Failed) != 1 || report.Failed[0].Package != "broken-pkg" || !strings.Contains(report.Failed[0].Reason, "Unable to locate package broken-pkg") {
			t.Errorf("failed = %+v", report.Failed)
		}
	})

	t.Run("the pinned host key is checked", func(t *testing.T) {
		sshd.RestartWithNewHostKey(t)
		_, err := steprun.InstallSoftware(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
		if err == nil || !strings.Contains(err.Error(), "host key") || steps.IsRetryable(err) {
			t.Fatalf("%v; want a final host-key-changed error", err)
		}
	})
}

func TestResolveClusterHosts(t *testing.T) {
	ns := newNamespace(t)
	ref := software(t, ns, []bpav1.SoftwarePackage{{Name: "curl"}})
	if _, err := steprun.ResolveClusterHosts(ctx(), env.Client, ref, nil); err == nil || !steps.IsRetryable(err) {
		t.Fatalf("%v; want a retryable error while the cluster's hosts are unknown", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-abc-hosts"}, Data: map[string]string{
		"worker-1": `{"ip":"192.0.2.13","role":"worker"}`,
		"master":   `{"ip":"192.0.2.11","role":"master"}`,
	}}
	if err := env.Client.Create(ctx(), cm); err != nil {
		t.Fatal(err)
	}
	nodes, err := steprun.ResolveClusterHosts(ctx(), env.Client, ref, nil)
	want := []steprun.Node{{Name: "master", Role: "master", IP: "192.0.2.11"}, {Name: "worker-1", Role: "worker", IP: "192.0.2.13"}}
	if err != nil || !cmp.Equal(want, nodes) {
		t.Errorf("nodes = %+v (%v), want %+v", nodes, err, want)
	}
	if nodes, err := steprun.ResolveClusterHosts(ctx(), env.Client, ref, []string{"worker-1"}); err != nil || len(nodes) != 1 || nodes[0].Name != "worker-1" {
		t.Errorf("--only worker-1: %+v (%v)", nodes, err)
	}
	if _, err := steprun.ResolveClusterHosts(ctx(), env.Client, ref, []string{"worker-9"}); err == nil || !strings.Contains(err.Error(), `"worker-9" is not in cluster cluster-abc`) {
		t.Errorf("--only worker-9: %v", err)
	}
}
