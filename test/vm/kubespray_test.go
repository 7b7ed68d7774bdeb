//go:build vm

package vm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testctr"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// runRealKubespray runs the real kubespray's playbook (a path in its tree) on the machines, from
// the first of the images hack/kubespray-image.sh built (BPA_KUBESPRAY_IMAGES), exactly as the
// compiled run-kubespray step runs it: its command line (the playbook aside) and environment,
// the rendered inventory and extra variables, the SSH key and the pinned known_hosts at the
// pod's paths (playbookOptions go before the playbook), as nobody on a read-only root filesystem with only /tmp writable; the network
// is the test's, which reaches the site. Without the image it says so and does nothing.
func runRealKubespray(t *testing.T, env *testenv.Env, ns string, p *bpav1.Provisioning, inventory, extraVars []byte, keyFile, playbook string, playbookOptions ...string) string {
	t.Helper()
	archives := strings.Fields(os.Getenv("BPA_KUBESPRAY_IMAGES"))
	if len(archives) == 0 {
		t.Log("the real kubespray is not run: its image is not built (../shared/third_party is absent; make vms builds it when it is there)")
		return ""
	}
	sec := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: p.Labels[bpav1.ClusterLabel] + "-known-hosts"}, sec); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "bpa-kubespray-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	mounts := map[string][]byte{ // file in dir → where the pod has it
		filepath.Join(steps.InputsDir, "hosts.ini"):       inventory,
		filepath.Join(steps.InputsDir, "extra-vars.json"): extraVars,
		steps.KnownHostsPath:                              sec.Data[steps.KnownHostsKey],
		steps.SSHKeyPath:                                  key,
	}
	var ctrOptions []string
	for podPath, data := range mounts {
		file := filepath.Join(dir, "files", filepath.Base(podPath))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(file, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		ctrOptions = append(ctrOptions, "--mount", "type=bind,src="+file+",dst="+podPath+",options=rbind:ro")
	}
	scratch := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(scratch, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ctrOptions = append(ctrOptions, "--mount", "type=bind,src="+scratch+",dst="+steps.TmpDir+",options=rbind:rw",
		"--read-only", "--net-host", "--cwd", "/kubespray")
	compiled := testenv.Compiled(t, p).GetTemplateByName("run-kubespray").Container
	for _, e := range compiled.Env {
		ctrOptions = append(ctrOptions, "--env", e.Name+"="+e.Value)
	}
	args := append([]string{}, compiled.Args[:len(compiled.Args)-1]...)
	args = append(append(args, playbookOptions...), playbook)

	ctrd := testctr.Start(t, dir)
	image := ctrd.Import(t, archives[0], "/kubespray:")
	// ctr runs as root: setpriv drops to nobody, as the step's securityContext does.
	command := append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "ansible-playbook"}, args...)
	start := time.Now()
	out, err := ctrd.Run(image, ctrOptions, command...)
	if err != nil {
		t.Fatalf("the real kubespray (%s) %s on the machines: %v\n%s", image, playbook, err, lastLinesOf(out, 60))
	}
	t.Logf("the real kubespray (%s) ran %s on the machines in %.0f s: %s", image, playbook, time.Since(start).Seconds(), recapOf(out))
	return out
}

func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// recapOf is ansible-playbook's PLAY RECAP, one line per host.
func recapOf(out string) string {
	var hosts []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, " ok=") && strings.Contains(line, "failed=") {
			hosts = append(hosts, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(hosts, "; ")
}
