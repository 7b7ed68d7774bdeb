//go:build vm

package vm_test

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// runRealKubespray runs the real kubespray's playbook on the machines as the compiled
// run-kubespray step runs it (testkubespray.Run), with the cluster's pinned host keys and the
// site's key from the machines' suite.
func runRealKubespray(t *testing.T, env *testenv.Env, ns string, p *bpav1.Provisioning, inventory, extraVars []byte, keyFile string, run testkubespray.Playbook) string {
	t.Helper()
	return testkubespray.Run(t, p, kubesprayInputs(t, env, ns, p, inventory, extraVars, keyFile), run)
}

// kubesprayInputs are a run-kubespray pod's inputs: the cluster's pinned host keys, as
// pin-host-keys stored them, and the site's key from keyFile.
func kubesprayInputs(t *testing.T, env *testenv.Env, ns string, p *bpav1.Provisioning, inventory, extraVars []byte, keyFile string) testkubespray.Inputs {
	t.Helper()
	sec := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: p.Labels[bpav1.ClusterLabel] + "-known-hosts"}, sec); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return testkubespray.Inputs{Inventory: inventory, ExtraVars: extraVars, KnownHosts: sec.Data[steps.KnownHostsKey], Key: key}
}

// kubesprayPackages asks the real kubespray which packages its system_packages role installs
// on the machines (testkubespray.Packages). Without kubespray's image (../shared/third_party
// absent) it says so and returns nil.
func kubesprayPackages(t *testing.T, env *testenv.Env, ns string, p *bpav1.Provisioning, inventory, extraVars []byte, keyFile string) []string {
	t.Helper()
	if len(testkubespray.Images()) == 0 {
		t.Log("the real kubespray is not run: its image is not built (../shared/third_party is absent; make vms builds it when it is there)")
		return nil
	}
	return testkubespray.Packages(t, p, kubesprayInputs(t, env, ns, p, inventory, extraVars, keyFile))
}
