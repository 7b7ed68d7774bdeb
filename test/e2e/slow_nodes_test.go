//go:build e2e

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
)

// TestSlowNodesWidenTheAPIServersProbes: the slow-node settings' kubeadm_patches, written as
// kubespray writes them (roles/kubernetes/kubeadm_common: each patch's YAML in
// <target><index>+<type>.yaml), make the real kubeadm of the test cluster's downloads write an
// API server manifest whose liveness and startup probes give it the windows the settings name.
// The real-cluster runs read these only an hour into cluster.yml; kubeadm's dry run writes the
// same manifest in a second.
func TestSlowNodesWidenTheAPIServersProbes(t *testing.T) {
	_, built := testkubespray.TestClusterBuild(t)
	dir := testinterrupt.TempDir(t)
	kubeadm, version := servedKubeadm(t, built, dir)

	var patches []struct {
		Target string          `json:"target"`
		Type   string          `json:"type"`
		Patch  json.RawMessage `json:"patch"`
	}
	must(t, json.Unmarshal(testkubespray.SlowNodes()["kubeadm_patches"].Raw, &patches))
	patchDir := filepath.Join(dir, "patches")
	must(t, os.Mkdir(patchDir, 0o755))
	for i, p := range patches {
		y, err := yaml.JSONToYAML(p.Patch)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(patchDir, fmt.Sprintf("%s%d+%s.yaml", p.Target, i, p.Type)), y, 0o644))
	}
	config := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.0.0.1
patches:
  directory: %s
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %s
`, patchDir, version)
	must(t, os.WriteFile(filepath.Join(dir, "kubeadm.yaml"), []byte(config), 0o644))

	// The dry run writes its manifests into KUBEADM_INIT_DRYRUN_DIR, nothing under /etc.
	out := filepath.Join(dir, "manifests")
	must(t, os.Mkdir(out, 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubeadm, "init", "phase", "control-plane", "apiserver", "--dry-run", "--config", filepath.Join(dir, "kubeadm.yaml"))
	cmd.Env = append(os.Environ(), "KUBEADM_INIT_DRYRUN_DIR="+out)
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubeadm %s: %v\n%s", version, err, log)
	}
	manifest, err := os.ReadFile(filepath.Join(out, "kube-apiserver.yaml"))
	must(t, err)
	var pod corev1.Pod
	must(t, yaml.Unmarshal(manifest, &pod))
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != "kube-apiserver" {
		t.Fatalf("kubeadm %s's API server manifest has containers %v", version, pod.Spec.Containers)
	}
	c := pod.Spec.Containers[0]
	for _, probe := range []struct {
		name string
		p    *corev1.Probe
		want time.Duration
	}{
		{"liveness", c.LivenessProbe, testkubespray.APIServerLivenessWindow},
		{"startup", c.StartupProbe, testkubespray.APIServerStartupWindow},
	} {
		if probe.p == nil {
			t.Errorf("kubeadm %s's API server has no %s probe", version, probe.name)
			continue
		}
		got := time.Duration(probe.p.PeriodSeconds) * time.Duration(probe.p.FailureThreshold) * time.Second
		if got != probe.want || probe.p.HTTPGet == nil || probe.p.HTTPGet.Path != "/livez" {
			t.Errorf("kubeadm %s's API server %s probe: %d × %d s of %v, want a window of %s on /livez",
				version, probe.name, probe.p.FailureThreshold, probe.p.PeriodSeconds, probe.p.HTTPGet, probe.want)
		}
	}
	if t.Failed() {
		return
	}
	say(t, "kubeadm %s with the slow-node patches: the API server may fail /livez for %s and take %s to start",
		version, testkubespray.APIServerLivenessWindow, testkubespray.APIServerStartupWindow)
}

// TestSlowNodesFeatureGatesAreKubeadms: the slow-node settings' kubeadm_feature_gates, rendered
// into a ClusterConfiguration as kubespray renders them (roles/kubernetes/control-plane's
// kubeadm-config template: "Name=value" becomes "Name: value"), pass the real kubeadm's own
// validation, which refuses a gate it does not know or a value that is not a boolean. A
// misspelled gate would otherwise surface only when kubeadm init runs, half an hour into
// cluster.yml on the emulated master.
func TestSlowNodesFeatureGatesAreKubeadms(t *testing.T) {
	_, built := testkubespray.TestClusterBuild(t)
	dir := testinterrupt.TempDir(t)
	kubeadm, version := servedKubeadm(t, built, dir)

	var gates []string
	must(t, json.Unmarshal(testkubespray.SlowNodes()["kubeadm_feature_gates"].Raw, &gates))
	if len(gates) == 0 {
		t.Fatal("the slow-node settings set no kubeadm feature gate")
	}
	config := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.0.0.1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %s
featureGates:
`, version)
	for _, g := range gates {
		config += "  " + strings.ReplaceAll(g, "=", ": ") + "\n"
	}
	must(t, os.WriteFile(filepath.Join(dir, "kubeadm.yaml"), []byte(config), 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubeadm, "config", "validate", "--config", filepath.Join(dir, "kubeadm.yaml"))
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubeadm %s refuses the slow-node feature gates %v: %v\n%s", version, gates, err, log)
	}
	say(t, "kubeadm %s accepts the slow-node feature gates %v", version, gates)
}

// TestSlowNodesKubectlWaitsForTheOpenAPI: the slow-node settings' kubectl is kubespray's own
// command (the image's default, its bin_dir and kube_config_dir written out) with a longer
// limit on each request, and the real kubectl of the test cluster's downloads, run with it as
// kubespray's apps play runs it (a manifest applied from stdin), asks the API server for the
// OpenAPI document it validates with under that limit. kubespray's own command asks under
// client-go's 32 s, which the saturated first master of the control-plane run missed.
func TestSlowNodesKubectlWaitsForTheOpenAPI(t *testing.T) {
	archive, built := testkubespray.TestClusterBuild(t)
	dir := testinterrupt.TempDir(t)
	kubectl, version := servedRelease(t, built, dir, "kubectl")

	var defaults map[string]any
	must(t, yaml.Unmarshal(testkubespray.KubesprayFile(t, archive, "roles/kubespray_defaults/defaults/main/main.yml"), &defaults))
	own := strings.NewReplacer(
		"{{ bin_dir }}", fmt.Sprint(defaults["bin_dir"]),
		"{{ kube_config_dir }}", fmt.Sprint(defaults["kube_config_dir"]),
	).Replace(fmt.Sprint(defaults["kubectl"]))
	if own != testkubespray.KubesprayKubectl {
		t.Fatalf("kubespray's kubectl is %q, the slow-node settings build on %q", own, testkubespray.KubesprayKubectl)
	}
	var set string
	must(t, json.Unmarshal(testkubespray.SlowNodes()["kubectl"].Raw, &set))
	extra, ok := strings.CutPrefix(set, own+" ")
	if !ok {
		t.Fatalf("the slow-node settings' kubectl %q is not kubespray's %q with flags added", set, own)
	}

	want := testkubespray.KubectlRequestTimeout.String()
	got := openAPITimeouts(t, kubectl, dir, strings.Fields(extra))
	if slices.ContainsFunc(got, func(timeout string) bool { return timeout != want }) {
		t.Errorf("kubectl %s with the slow-node settings asked for the OpenAPI document within %v, want %s", version, got, want)
	}
	alone := openAPITimeouts(t, kubectl, dir, nil)
	if slices.Contains(alone, want) {
		t.Errorf("kubectl %s without the slow-node settings asked for the OpenAPI document within %v too: the setting may be needless", version, alone)
	}
	if !t.Failed() {
		say(t, "kubectl %s asks for the OpenAPI document within %v with the slow-node settings, %v without", version, got, alone)
	}
}

// openAPITimeouts runs kubectl, with flags, as kubespray's apps play runs it (apply -f - -n
// kube-system --server-side=false, from roles/kubernetes-apps/utils) against an API server on
// loopback that has no OpenAPI document, and gives the timeout each of kubectl's requests for
// one carried, in order.
func openAPITimeouts(t *testing.T, kubectl, dir string, flags []string) []string {
	t.Helper()
	var mu sync.Mutex
	var timeouts []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/openapi/") {
			mu.Lock()
			timeouts = append(timeouts, r.URL.Query().Get("timeout"))
			mu.Unlock()
		}
		http.NotFound(w, r)
	}))
	defer server.Close()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	must(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: site, cluster: {server: "`+server.URL+`"}}]
users: [{name: admin, user: {}}]
contexts: [{name: admin, context: {cluster: site, user: admin}}]
current-context: admin
`), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"--kubeconfig", kubeconfig}, flags...)
	cmd := exec.CommandContext(ctx, kubectl, append(args, "apply", "-f", "-", "-n", "kube-system", "--server-side=false")...)
	cmd.Stdin = strings.NewReader(`{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "coredns"}}`)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "failed to download openapi") {
		t.Fatalf("kubectl %v did not fail for want of an OpenAPI document: %v\n%s", flags, err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(timeouts) == 0 {
		t.Fatalf("kubectl %v never asked for an OpenAPI document:\n%s", flags, out)
	}
	return slices.Clone(timeouts)
}

// TestSlowNodesSkipOnlyTheJoinsWait: the phases the slow-node settings skip in kubeadm's join
// (kubeadm_join_phases_skip) are phases of the real kubeadm of the test cluster's downloads,
// and the last of its join: the wait for the joining master's control plane, after every
// change the join makes. A misspelled phase would surface only at master2's join, an hour into
// the addition's run; skipping a phase before the wait would leave a join half done.
func TestSlowNodesSkipOnlyTheJoinsWait(t *testing.T) {
	_, built := testkubespray.TestClusterBuild(t)
	dir := testinterrupt.TempDir(t)
	kubeadm, version := servedKubeadm(t, built, dir)

	var skipped []string
	must(t, json.Unmarshal(testkubespray.SlowNodes()["kubeadm_join_phases_skip"].Raw, &skipped))
	if len(skipped) == 0 {
		t.Fatal("the slow-node settings skip no phase of kubeadm's join")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	help, err := exec.CommandContext(ctx, kubeadm, "join", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("kubeadm %s join --help: %v\n%s", version, err, help)
	}
	phases := joinPhases(string(help))
	if len(phases) < len(skipped) {
		t.Fatalf("kubeadm %s join --help lists the phases %v", version, phases)
	}
	if last := phases[len(phases)-len(skipped):]; !slices.Equal(last, skipped) {
		t.Fatalf("the slow-node settings skip %v of kubeadm %s's join, whose last phases are %v (of %v)", skipped, version, last, phases)
	}
	say(t, "kubeadm %s's join ends with the phases the slow-node settings skip, %v (its phases: %v)", version, skipped, phases)
}

// joinPhases are the top-level phases kubeadm join --help lists, in their order: the lines of
// the fenced block after "executes the following phases" that are not indented (sub-phases are).
func joinPhases(help string) []string {
	_, after, found := strings.Cut(help, "executes the following phases")
	if !found {
		return nil
	}
	blocks := strings.Split(after, "```")
	if len(blocks) < 3 {
		return nil
	}
	var phases []string
	for _, line := range strings.Split(blocks[1], "\n") {
		if line != "" && !strings.HasPrefix(line, " ") {
			phases = append(phases, strings.Fields(line)[0])
		}
	}
	return phases
}
