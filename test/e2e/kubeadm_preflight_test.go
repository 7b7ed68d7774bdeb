//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
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
// downloads build built, and fails naming any proxy check that did not pass.
func requireKubeadmPreflight(t *testing.T, built string) {
	t.Helper()
	kubeadm, version := preflightKubeadm(t, built)
	// Every failure is ignored so that all of them report.
	log := kubeadmPreflight(t, kubeadm, version, []string{"all"})
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "HTTPProxy") {
			t.Errorf("kubeadm %s of %s fails its proxy preflight, as kubeadm init on the machines would: %s", version, built, strings.TrimSpace(line))
		}
	}
}

// TestSlowNodesLetKubesprayRetryKubeadmInit: when kubeadm init's first try on the emulated
// master ends before the control plane is healthy, its components keep running and hold their
// ports. kubespray's own retry of kubeadm init (its errors from the first try, read from the
// image's kubespray, with the slow-node settings' kubeadm_ignore_preflight_errors) passes the
// real kubeadm's port checks with those ports held, where kubespray's list alone fails them as
// the renewal's run failed (Port-10257, Port-10259).
func TestSlowNodesLetKubesprayRetryKubeadmInit(t *testing.T) {
	archive, built := testkubespray.TestClusterBuild(t)
	kubeadm, version := preflightKubeadm(t, built)
	firstTry := kubesprayRetryIgnores(t, archive)
	// The first try's API server, controller manager, scheduler, and the kubelet, which
	// kubespray starts before kubeadm init.
	held := []int{6443, 10257, 10259, 10250}

	retry := kubeadmPreflight(t, kubeadm, version, slices.Concat(testkubespray.KubeadmIgnoredPreflightErrors, firstTry), held...)
	for _, port := range held {
		if !strings.Contains(retry, fmt.Sprintf("[WARNING Port-%d]", port)) {
			t.Errorf("kubeadm %s's retry as kubespray runs it with the slow-node settings did not check port %d (held), or refused it:\n%s", version, port, retry)
		}
	}
	if strings.Contains(retry, "[ERROR Port-") {
		t.Errorf("kubeadm %s's retry as kubespray runs it with the slow-node settings refuses a port the first try holds:\n%s", version, retry)
	}

	// Without the settings, the retry is refused: what the settings are for.
	alone := kubeadmPreflight(t, kubeadm, version, firstTry, held...)
	if !strings.Contains(alone, "[ERROR Port-10257]") {
		t.Errorf("kubeadm %s's retry with kubespray's own ignores passed the controller manager's held port; the slow-node settings' Port-* entries may be needless:\n%s", version, alone)
	}
}

// kubesprayRetryIgnores are the preflight errors kubespray's retry of kubeadm init ignores on
// top of kubeadm_ignore_preflight_errors, from the image's roles/kubernetes/control-plane.
func kubesprayRetryIgnores(t *testing.T, archive string) []string {
	t.Helper()
	const tasksFile = "roles/kubernetes/control-plane/tasks/kubeadm-setup.yml"
	var tasks []struct {
		Name   string `json:"name"`
		Rescue []struct {
			Vars struct {
				ErrorsFromFirstTry []string `json:"_errors_from_first_try"`
			} `json:"vars"`
		} `json:"rescue"`
	}
	must(t, yaml.Unmarshal(testkubespray.KubesprayFile(t, archive, tasksFile), &tasks))
	for _, task := range tasks {
		for _, r := range task.Rescue {
			if len(r.Vars.ErrorsFromFirstTry) > 0 {
				return r.Vars.ErrorsFromFirstTry
			}
		}
	}
	t.Fatalf("kubespray's %s has no retry of kubeadm init with _errors_from_first_try", tasksFile)
	return nil
}

// preflightKubeadm is a copy of the kubeadm of the downloads build built and its version.
func preflightKubeadm(t *testing.T, built string) (kubeadm, version string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("kubeadm's preflight checks run as root, in a network namespace of their own")
	}
	return servedKubeadm(t, built, testinterrupt.TempDir(t))
}

// kubeadmPreflight runs kubeadm init's preflight checks and gives what kubeadm said. ignore
// are the checks whose failures are warnings (--ignore-preflight-errors). The checks run in a
// network namespace of their own (no route, no runtime to pull images from) in which held
// ports are in use; nothing is written outside a scratch folder.
func kubeadmPreflight(t *testing.T, kubeadm, version string, ignore []string, held ...int) string {
	t.Helper()
	dir := filepath.Dir(kubeadm)
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
	cmd := exec.CommandContext(ctx, kubeadm, "init", "phase", "preflight", "--ignore-preflight-errors="+strings.Join(ignore, ","), "--config", filepath.Join(dir, "kubeadm.yaml"))
	// The machines have no proxy: one in this environment would fail the checks for its own
	// reason.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasSuffix(strings.ToLower(name), "_proxy") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// It fails in the end on the missing runtime, which no --ignore-preflight-errors covers;
	// what matters is what the checks before it said.
	out, err := inNewNetworkNamespace(cmd, held)
	if err != nil {
		t.Fatal(err)
	}
	log := string(out)
	if !strings.Contains(log, "[preflight] Running pre-flight checks") {
		t.Fatalf("kubeadm %s did not run its preflight checks:\n%s", version, log)
	}
	return log
}

// inNewNetworkNamespace runs cmd in a network namespace of its own in which held ports are in
// use, and gives its output; err is only for what kept it from running. The namespace is made
// on a thread of this process that nothing else uses: the listeners are opened and cmd
// started from it, so both are in the namespace, and the thread ends with the goroutine (it is
// never unlocked), so nothing else of the process ever runs in it.
func inNewNetworkNamespace(cmd *exec.Cmd, held []int) ([]byte, error) {
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("a network namespace for kubeadm's preflight: %w", err)}
			return
		}
		for _, port := range held {
			l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
			if err != nil {
				done <- result{err: fmt.Errorf("holding port %d for kubeadm's preflight: %w", port, err)}
				return
			}
			defer l.Close()
		}
		out, _ := cmd.CombinedOutput()
		done <- result{out: out}
	}()
	r := <-done
	return r.out, r.err
}

// servedKubeadm is servedRelease's kubeadm.
func servedKubeadm(t *testing.T, built, dir string) (kubeadm, version string) {
	t.Helper()
	return servedRelease(t, built, dir, "kubeadm")
}

// servedRelease copies the Kubernetes binary name (kubeadm, kubectl) that the downloads build
// built serves into dir, runnable, and gives its path and the release's version ("v1.34.3").
// The build lays the binary out as the mirror serves it, a plain file (kubespray's download
// role makes its own copy executable): a test runs a copy of its own and leaves the shared
// build as it is.
func servedRelease(t *testing.T, built, dir, name string) (binary, version string) {
	t.Helper()
	release := filepath.Join(built, "files/dl.k8s.io/release")
	binaries, err := filepath.Glob(filepath.Join(release, "v*/bin/linux/amd64", name))
	must(t, err)
	if len(binaries) != 1 {
		t.Fatalf("the downloads build %s holds %s %q, want one", built, name, binaries)
	}
	version, _, _ = strings.Cut(strings.TrimPrefix(binaries[0], release+"/"), "/")
	served, err := os.ReadFile(binaries[0])
	must(t, err)
	binary = filepath.Join(dir, name)
	must(t, os.WriteFile(binary, served, 0o755))
	return binary, version
}
