package pod_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

func software(t *testing.T, ns string, master []bpav1.SoftwarePackage) stepcmd.CRRef {
	t.Helper()
	return env.Software(t, ns, bpav1.SoftwareSpec{MasterSoftware: master, WorkerSoftware: []bpav1.SoftwarePackage{{Name: "curl"}}})
}

// TestInstallSoftwareOverSSH runs the real apt-get, dpkg and dpkg-query on a test node (its
// own file: repository, dpkg database and install root, which sshd hands to every session as
// the node's configuration): the index refreshed, a fresh install, a pinned upgrade, a version
// the repository lacks, an unknown package, a held dpkg lock, a changed host key.
func TestInstallSoftwareOverSSH(t *testing.T) {
	node := testutil.NewAptNode(t, testutil.DpkgStatus,
		testutil.DebPackage{Name: "jq", Version: "1.5+dfsg-1"}, testutil.DebPackage{Name: "jq", Version: "1.6-2"},
		testutil.DebPackage{Name: "tmux", Version: "3.3a-3"}, testutil.DebPackage{Name: "vim", Version: "2:9.0.1378-2"},
		testutil.DebPackage{Name: "g++", Version: "4:12.2.0-3"})
	sshd := testsshd.StartWithEnv(t, node.Env)
	ns := env.PinnedNamespace(t, sshd)
	opts := pod.InstallOptions{SSH: stepcmd.SSHOptions{KeyFile: sshd.ClientKeyFile, Port: sshd.Port, Timeout: 10 * time.Second}}
	// g++: a name ending with "+" is a package of that name, never an apt operation.
	ref := software(t, ns, []bpav1.SoftwarePackage{{Name: "bash"}, {Name: "g++"}, {Name: "jq", Version: "1.6-2"}, {Name: "tmux"}, {Name: "vim", Version: "2:9.0.1378-2"}})

	report, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := installsoftware.Report{
		Node: "master", Role: "master", PackageManager: "apt",
		Installed: []string{"bash=5.2.15-2+b2", "g++=4:12.2.0-3", "jq=1.6-2", "tmux=3.3a-3", "vim=2:9.0.1378-2"},
		Changed:   []string{"g++=4:12.2.0-3", "jq=1.6-2", "tmux=3.3a-3", "vim=2:9.0.1378-2"},
		Unchanged: []string{"bash=5.2.15-2+b2"},
	}
	if d := cmp.Diff(want, report); d != "" {
		t.Errorf("first run: pinned jq upgraded, tmux installed fresh, vim (config files only) installed, bash left alone (-want +got):\n%s", d)
	}
	for name, version := range map[string]string{"g++": "4:12.2.0-3", "jq": "1.6-2", "tmux": "3.3a-3", "vim": "2:9.0.1378-2"} {
		if got := node.Installed(name); got != version {
			t.Errorf("%s on the node: %q, want %s unpacked by dpkg", name, got, version)
		}
	}
	history, _ := os.ReadFile(filepath.Join(node.Dir, "log", "history.log"))
	if n := strings.Count(string(history), "Commandline:"); n != 1 {
		t.Errorf("apt ran %d transactions, want 1:\n%s", n, history)
	}

	again, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
	if err != nil || len(again.Changed) != 0 || len(again.Unchanged) != 5 {
		t.Errorf("second run changed %v (unchanged %v, err %v); want nothing to do", again.Changed, again.Unchanged, err)
	}
	if h2, _ := os.ReadFile(filepath.Join(node.Dir, "log", "history.log")); string(h2) != string(history) {
		t.Errorf("the second run ran apt again")
	}

	t.Run("a version the repository lacks, and an unknown package: reported with apt's reason, the step fails", func(t *testing.T) {
		ns := env.PinnedNamespace(t, sshd)
		ref := software(t, ns, []bpav1.SoftwarePackage{{Name: "bash"}, {Name: "jq", Version: "9.9-1"}})
		report, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
		if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), "jq") {
			t.Fatalf("%v; want a final error naming jq", err)
		}
		if len(report.Failed) != 1 || report.Failed[0].Package != "jq" || !strings.Contains(report.Failed[0].Reason, "Version '9.9-1' for 'jq' was not found") {
			t.Errorf("failed = %+v", report.Failed)
		}
		ns = env.PinnedNamespace(t, sshd)
		ref = software(t, ns, []bpav1.SoftwarePackage{{Name: "broken-pkg"}})
		report, _ = pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
		if len(report.Failed) != 1 || !strings.Contains(report.Failed[0].Reason, "Unable to locate package broken-pkg") {
			t.Errorf("failed = %+v", report.Failed)
		}
	})

	t.Run("a package the repository lacks stays final beside a binary the registry cannot serve yet", func(t *testing.T) {
		ns := env.PinnedNamespace(t, sshd)
		sw := &bpav1.Software{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sw", Labels: map[string]string{bpav1.ClusterLabel: "cluster-abc"}},
			Spec: bpav1.SoftwareSpec{
				MasterSoftware: []bpav1.SoftwarePackage{{Name: "jq", Version: "9.9-1"}},
				MasterBinaries: []bpav1.BinaryPackage{{Name: "tool", Directory: filepath.Join(t.TempDir(), "bin")}},
			},
		}
		if err := env.Client.Create(ctx(), sw); err != nil {
			t.Fatal(err)
		}
		ref := stepcmd.CRRef{Namespace: ns, Name: sw.Name, UID: string(sw.UID), Generation: sw.Generation}
		// A registry that does not answer (nothing listens there): waiting may cure that.
		down, err := siteregistry.New(siteregistry.Config{Registry: testutil.FreePort(t), PlainHTTP: true})
		if err != nil {
			t.Fatal(err)
		}
		withDown := opts
		withDown.Registry = down
		report, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", withDown)
		if err == nil || steps.IsRetryable(err) || len(report.Failed) != 2 {
			t.Fatalf("%v (failed %+v); want a final error: waiting cannot bring jq 9.9-1", err, report.Failed)
		}
	})

	t.Run("another run holds the dpkg lock: retryable", func(t *testing.T) {
		lock, err := os.OpenFile(filepath.Join(node.AdminDir, "lock-frontend"), os.O_RDWR|os.O_CREATE, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		if err := syscall.FcntlFlock(lock.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK}); err != nil {
			t.Fatal(err)
		}
		ns := env.PinnedNamespace(t, sshd)
		ref := software(t, ns, []bpav1.SoftwarePackage{{Name: "jq", Version: "1.5+dfsg-1"}})
		report, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
		if err == nil || !steps.IsRetryable(err) {
			t.Fatalf("%v; want retryable while the lock is held", err)
		}
		if len(report.Failed) != 1 || !strings.Contains(report.Failed[0].Reason, "lock") {
			t.Errorf("failed = %+v", report.Failed)
		}
	})

	t.Run("the pinned host key is checked", func(t *testing.T) {
		sshd.RestartWithNewHostKey(t)
		_, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
		if err == nil || !strings.Contains(err.Error(), "host key") || steps.IsRetryable(err) {
			t.Fatalf("%v; want a final host-key-changed error", err)
		}
	})
}
