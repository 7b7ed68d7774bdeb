// Package config_test checks that the install manifests under config/ are accepted by a real
// API server, as rendered by kustomize.
package config_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
)

// TestInstallManifestsAreAccepted renders config/default (CRDs, policy, the manager's RBAC and
// Deployment) with kubectl's kustomize and applies it to a real API
// server in server-side dry-run mode: every object must be valid as the server sees it.
func TestInstallManifestsAreAccepted(t *testing.T) {
	root := testenv.RepoRoot()
	kubectl := filepath.Join(root, "bin", "k8s", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl is not built: run `make test-deps` (hack/control-plane.sh)")
	}
	env := testenv.ForTest(t, testenv.Start)
	kubeconfig := env.AdminKubeconfig(t)
	// A dry run cannot create the namespace the other objects then land in.
	ns := exec.Command(kubectl, "create", "namespace", "bpa-system")
	ns.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	if out, err := ns.CombinedOutput(); err != nil {
		t.Fatalf("creating bpa-system: %v\n%s", err, out)
	}
	for dir, want := range map[string][]string{
		"config/default": {"deployment.apps/bpa-workflow-controller", "clusterrole.rbac.authorization.k8s.io/bpa-workflow-controller", "validatingadmissionpolicy.admissionregistration.k8s.io/bpa-cluster-label"},
	} {
		rendered, err := exec.Command(kubectl, "kustomize", filepath.Join(root, dir)).Output()
		if err != nil {
			t.Fatalf("kustomize %s: %v", dir, err)
		}
		// The CRDs and the policy are already there (testenv installed them): take them over.
		args := []string{"apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-"}
		apply := exec.Command(kubectl, args...)
		apply.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		apply.Stdin = bytes.NewReader(rendered)
		out, err := apply.CombinedOutput()
		if err != nil {
			t.Fatalf("%s refused by the API server: %v\n%s", dir, err, out)
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: %s not applied:\n%s", dir, w, out)
			}
		}
	}
}
