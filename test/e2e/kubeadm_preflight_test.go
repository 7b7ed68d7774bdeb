//go:build e2e

package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testkubespray"
)

// TestDownloadsKubeadmPassesItsProxyPreflight: the kubeadm the site's mirror serves passes its
// own proxy preflight checks for kubespray's service and pod ranges. kubeadm 1.33.4 built with
// a Go newer than its release's failed them ("invalid IP-literal"), and a real run finds that
// only at kubeadm init, 48 minutes into cluster.yml. With BPA_KUBESPRAY_DOWNLOADS_FROM (the
// upgrade's first version) that build is checked too.
func TestDownloadsKubeadmPassesItsProxyPreflight(t *testing.T) {
	_, built := testkubespray.TestClusterBuild(t)
	requireKubeadmPreflight(t, built)
	if from := os.Getenv("BPA_KUBESPRAY_DOWNLOADS_FROM"); from != "" {
		requireKubeadmPreflight(t, from)
	}
}

// requireKubeadmPreflight runs the preflight checks of kubeadm init with the kubeadm of the
// downloads build built, and fails naming any proxy check that did not pass. The checks run
// in a network namespace of their own (no route, no runtime to pull images from), every
// failure ignored so that all of them report; nothing is written outside a scratch folder.
func requireKubeadmPreflight(t *testing.T, built string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("kubeadm's preflight checks run as root, in a network namespace of their own")
	}
	dir := testinterrupt.TempDir(t)
	kubeadm, version := servedKubeadm(t, built, dir)
	// kubespray's default ranges, which the real runs keep; the CRI socket is one that is
	// not there, so no check reaches a runtime of this machine.
	config := `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.250.0.11
nodeRegistration:
  criSocket: unix://` + filepath.Join(dir, "no-runtime.sock") + `
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ` + version + `
networking:
  serviceSubnet: 10.233.0.0/18
  podSubnet: 10.233.64.0/18
`
	must(t, os.WriteFile(filepath.Join(dir, "kubeadm.yaml"), []byte(config), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubeadm, "init", "phase", "preflight", "--ignore-preflight-errors=all", "--config", filepath.Join(dir, "kubeadm.yaml"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	// The machines have no proxy: one in this environment would fail the checks for its own
	// reason.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasSuffix(strings.ToLower(name), "_proxy") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// It fails in the end on the missing runtime, which no --ignore-preflight-errors covers;
	// what matters is what the checks before it said.
	out, _ := cmd.CombinedOutput()
	log := string(out)
	if !strings.Contains(log, "[preflight] Running pre-flight checks") {
		t.Fatalf("kubeadm %s did not run its preflight checks:\n%s", version, log)
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "HTTPProxy") {
			t.Errorf("kubeadm %s of %s fails its proxy preflight, as kubeadm init on the machines would: %s", version, built, strings.TrimSpace(line))
		}
	}
}

// servedKubeadm copies the kubeadm that the downloads build built serves into dir, runnable, and
// gives its path and version ("v1.34.3"). The build lays kubeadm out as the mirror serves it, a
// plain file (kubespray's download role makes its own copy executable): a test runs a copy of
// its own and leaves the shared build as it is.
func servedKubeadm(t *testing.T, built, dir string) (kubeadm, version string) {
	t.Helper()
	release := filepath.Join(built, "files/dl.k8s.io/release")
	kubeadms, err := filepath.Glob(filepath.Join(release, "v*/bin/linux/amd64/kubeadm"))
	must(t, err)
	if len(kubeadms) != 1 {
		t.Fatalf("the downloads build %s holds kubeadm %q, want one", built, kubeadms)
	}
	version, _, _ = strings.Cut(strings.TrimPrefix(kubeadms[0], release+"/"), "/")
	served, err := os.ReadFile(kubeadms[0])
	must(t, err)
	kubeadm = filepath.Join(dir, "kubeadm")
	must(t, os.WriteFile(kubeadm, served, 0o755))
	return kubeadm, version
}
