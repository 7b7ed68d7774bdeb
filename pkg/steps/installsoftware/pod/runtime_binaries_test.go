package pod_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

type site struct {
	t   *testing.T
	reg *testregistry.Secure
	c   *siteregistry.Client
}

// upload pushes random bytes as binaries/NAME:VERSION and returns them.
func (s *site) upload(name, version string, size int) []byte {
	s.t.Helper()
	data := make([]byte, size)
	_, _ = rand.Read(data)
	path := filepath.Join(s.t.TempDir(), name+"-linux-amd64")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.c.PushFile(ctx, artifacts.Ref{Kind: artifacts.Binary, Name: name, Version: version}, path, siteregistry.PushOptions{}); err != nil {
		s.t.Fatal(err)
	}
	return data
}

func binarySoftware(t *testing.T, ns string, bins []bpav1.BinaryPackage) stepcmd.CRRef {
	t.Helper()
	return env.Software(t, ns, bpav1.SoftwareSpec{MasterBinaries: bins})
}

func binariesOf(r installsoftware.Report) map[string]installsoftware.Binary {
	out := map[string]installsoftware.Binary{}
	for _, b := range r.Binaries {
		out[b.Name] = b
	}
	return out
}

// TestInstallBinariesOverSFTP installs binaries from the real registry (TLS, authentication)
// onto a test node through the real sshd's SFTP subsystem: the newest version and a pinned one,
// then nothing on a second run, then only the binary a new upload changed, a file changed on
// the node put back, and failures that leave the node's file as it was.
func TestInstallBinariesOverSFTP(t *testing.T) {
	reg := testregistry.StartSecure(t)
	client, err := siteregistry.New(siteregistry.Config{Registry: reg.Addr, Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	s := &site{t: t, reg: reg, c: client}
	s.upload("tool", "1.9", 1000)
	tool110 := s.upload("tool", "1.10", 300<<10) // newer than 1.9, as sort -V says
	helper := s.upload("helper", "2.0", 2000)
	s.upload("helper", "3.0", 10)

	sshd := testsshd.Start(t)
	dir := filepath.Join(t.TempDir(), "opt", "bin") // not there yet: the step makes it
	opts := pod.InstallOptions{Registry: client, SSH: stepcmd.SSHOptions{KeyFile: sshd.ClientKeyFile, Port: sshd.Port, Timeout: 10 * time.Second}}
	ns := env.PinnedNamespace(t, sshd)
	ref := binarySoftware(t, ns, []bpav1.BinaryPackage{{Name: "tool", Directory: dir}, {Name: "helper", Version: "2.0", Directory: dir}})

	report, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
	if err != nil {
		t.Fatal(err)
	}
	got := binariesOf(report)
	if got["tool"].Version != "1.10" || !got["tool"].Changed || got["helper"].Version != "2.0" || !got["helper"].Changed ||
		got["tool"].Path != filepath.Join(dir, "tool") || !strings.HasPrefix(got["tool"].Digest, "sha256:") {
		t.Fatalf("first run: %+v", report.Binaries)
	}
	for name, want := range map[string][]byte{"tool": tool110, "helper": helper} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(data, want) {
			t.Fatalf("%s on the node: %d bytes, %v; want the uploaded %d", name, len(data), err, len(want))
		}
		fi, _ := os.Stat(filepath.Join(dir, name))
		if fi.Mode().Perm() != 0o755 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("%s: mode %v uid %d, want 0755 root", name, fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the directory holds %d entries, want the 2 binaries and nothing staged", len(entries))
	}
	before, _ := os.Stat(filepath.Join(dir, "tool"))

	again, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
	if err != nil || binariesOf(again)["tool"].Changed || binariesOf(again)["helper"].Changed || binariesOf(again)["tool"].Digest != got["tool"].Digest {
		t.Fatalf("second run: %+v, %v; want nothing copied", again.Binaries, err)
	}
	if after, _ := os.Stat(filepath.Join(dir, "tool")); !after.ModTime().Equal(before.ModTime()) {
		t.Error("the second run rewrote tool")
	}

	// A run named for tool 1.10's file, started when 1.11 had been uploaded meanwhile: it
	// installs nothing else than what it was named for.
	named := opts
	named.Digests = map[string]string{"master:tool": got["tool"].Digest, "master:helper": got["helper"].Digest}
	tool111 := s.upload("tool", "1.11", 5000)
	stale, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", named)
	if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), "this run was named for "+got["tool"].Digest) || binariesOf(stale)["helper"].Digest != got["helper"].Digest {
		t.Fatalf("a run named for tool 1.10 after 1.11 was uploaded: %+v, %v; want a final refusal for tool only", stale.Binaries, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "tool")); !bytes.Equal(data, tool110) {
		t.Fatal("a run named for tool 1.10 installed another file")
	}

	// A new upload: the unpinned binary follows it, the pinned one stays.
	third, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
	if err != nil || !binariesOf(third)["tool"].Changed || binariesOf(third)["tool"].Version != "1.11" || binariesOf(third)["helper"].Changed {
		t.Fatalf("after uploading tool 1.11: %+v, %v", third.Binaries, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "tool")); !bytes.Equal(data, tool111) {
		t.Fatal("tool on the node is not 1.11")
	}

	// A file changed on the node is put back.
	if err := os.WriteFile(filepath.Join(dir, "helper"), []byte("tampered"), 0o755); err != nil {
		t.Fatal(err)
	}
	fourth, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
	if data, _ := os.ReadFile(filepath.Join(dir, "helper")); err != nil || !binariesOf(fourth)["helper"].Changed || !bytes.Equal(data, helper) {
		t.Fatalf("a changed helper was not put back: %+v, %v", fourth.Binaries, err)
	}

	t.Run("a binary the registry lacks fails the step for good and is reported", func(t *testing.T) {
		ref := binarySoftware(t, env.PinnedNamespace(t, sshd), []bpav1.BinaryPackage{{Name: "missing", Directory: dir}, {Name: "tool", Version: "9.9", Directory: dir}})
		report, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
		if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), "2 of 2 packages not as asked: binary missing, binary tool") {
			t.Fatalf("%v", err)
		}
		if len(report.Failed) != 2 || !strings.Contains(report.Failed[0].Reason, "not in the site registry") {
			t.Fatalf("failed = %+v", report.Failed)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "tool")); !bytes.Equal(data, tool111) {
			t.Fatal("a failed run changed tool")
		}
	})

	t.Run("a corrupt blob is never installed", func(t *testing.T) {
		data := s.upload("corrupt", "1", 100<<10)
		a, err := client.Resolve(ctx(), artifacts.Ref{Kind: artifacts.Binary, Name: "corrupt", Version: "1"})
		if err != nil {
			t.Fatal(err)
		}
		hex := a.File.Digest.Encoded()
		blob := filepath.Join(reg.Storage, "docker/registry/v2/blobs/sha256", hex[:2], hex, "data")
		data[len(data)-1] ^= 0xff
		if err := os.WriteFile(blob, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ref := binarySoftware(t, env.PinnedNamespace(t, sshd), []bpav1.BinaryPackage{{Name: "corrupt", Directory: dir}})
		report, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
		if err == nil || len(report.Failed) != 1 || !strings.Contains(report.Failed[0].Reason, "mismatched digest") {
			t.Fatalf("%v; failed = %+v", err, report.Failed)
		}
		if _, err := os.Stat(filepath.Join(dir, "corrupt")); !os.IsNotExist(err) {
			t.Fatalf("the corrupt binary is on the node: %v", err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 2 {
			t.Fatalf("the directory holds %d entries after the failure", len(entries))
		}
	})

	t.Run("a node whose sshd serves no sftp fails for good, saying so", func(t *testing.T) {
		bare := testsshd.StartWithoutSFTP(t)
		ns := env.Namespace(t)
		env.PinNode(t, ns, bare.Port, bare.HostKey)
		bareOpts := opts
		bareOpts.SSH = stepcmd.SSHOptions{KeyFile: bare.ClientKeyFile, Port: bare.Port, Timeout: 10 * time.Second}
		ref := binarySoftware(t, ns, []bpav1.BinaryPackage{{Name: "tool", Directory: filepath.Join(t.TempDir(), "bin")}})
		_, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", bareOpts)
		if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), "serves no sftp subsystem") {
			t.Fatalf("%v; want a final error saying the node has no sftp subsystem", err)
		}
	})

	t.Run("without a site registry the step says so", func(t *testing.T) {
		noRegistry := opts
		noRegistry.Registry = nil
		_, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", noRegistry)
		if err == nil || !strings.Contains(err.Error(), "no site registry (--registry)") {
			t.Fatalf("%v", err)
		}
	})
}

// TestBinaryPathsAreRefused: names and directories that could leave their directory or reach
// a shell are refused by the API server (the CRD) and by the step's own checks.
func TestBinaryPathsAreRefused(t *testing.T) {
	ns := env.Namespace(t)
	for _, b := range []bpav1.BinaryPackage{
		{Name: "../etc/passwd"}, {Name: "tool;reboot"}, {Name: "Tool"},
		{Name: "tool", Directory: "/usr/../etc"}, {Name: "tool", Directory: "relative/bin"}, {Name: "tool", Directory: "/opt/./bin"},
		{Name: "tool", Directory: "/opt/$(id)"}, {Name: "tool", Version: "-rf"},
	} {
		sw := &bpav1.Software{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "sw-", Labels: map[string]string{bpav1.ClusterLabel: "cluster-abc"}},
			Spec:       bpav1.SoftwareSpec{WorkerBinaries: []bpav1.BinaryPackage{b}},
		}
		if err := env.Client.Create(ctx(), sw); err == nil {
			t.Errorf("the API server accepted %+v", b)
		}
		if _, err := installsoftware.BinariesFor(&sw.Spec, "worker"); err == nil {
			t.Errorf("the step accepted %+v", b)
		}
		if errs := sw.Validate(); len(errs) == 0 {
			t.Errorf("Validate accepted %+v", b)
		}
	}
}
