package steprun_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/steprun"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// TestHostKeysPinnedBeforeKubespray: pin-host-keys records the node's key before kubespray
// runs; the real ansible-playbook, with the environment and ssh options the compiled
// run-kubespray step gives it and the known_hosts file from the cluster's Secret, logs in; a key
// swapped between pinning and kubespray is refused by ansible-playbook itself, and pinning again
// fails naming the node and both fingerprints.
func TestHostKeysPinnedBeforeKubespray(t *testing.T) {
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatalf("ansible-playbook is missing: run `make test-deps` (Debian ansible-core)")
	}
	sshd := testsshd.Start(t)
	ns := newNamespace(t)
	p, ref := provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	hosts := []placement.Placement{{Label: "master", Role: "master", BareMetalHost: ns + "/node-1", MAC: "00:c5:16:05:61:b2", IP: "127.0.0.1"}}

	if err := steprun.PinHostKeys(ctx(), env.Client, ref, hosts, sshd.Port, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{}
	if err := env.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cluster-abc-known-hosts"}, sec); err != nil {
		t.Fatal(err)
	}
	wantLine := fmt.Sprintf("[127.0.0.1]:%d %s", sshd.Port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshd.HostKey))))
	if got := strings.TrimSpace(string(sec.Data[steps.KnownHostsKey])); got != wantLine {
		t.Fatalf("known_hosts = %q, want %q", got, wantLine)
	}

	// run-kubespray as compiled: its environment, with the Secret's known_hosts where the pod
	// mounts it.
	dir := t.TempDir()
	knownHosts := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownHosts, sec.Data[steps.KnownHostsKey], 0o444); err != nil {
		t.Fatal(err)
	}
	wf := compiled(t, p)
	// Each run in a fresh scratch directory, as each pod has its own /tmp.
	environ := func() []string {
		scratch := t.TempDir()
		out := []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
		for _, e := range wf.GetTemplateByName("run-kubespray").Container.Env {
			value := strings.ReplaceAll(e.Value, steps.KnownHostsPath, knownHosts)
			if e.Name == "HOME" || e.Name == "ANSIBLE_LOCAL_TEMP" {
				value = strings.Replace(value, steps.TmpDir, scratch, 1)
			}
			out = append(out, e.Name+"="+value)
		}
		return out
	}
	inventory := filepath.Join(dir, "hosts.ini")
	book := filepath.Join(dir, "check.yml")
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(inventory, fmt.Sprintf("master ansible_host=127.0.0.1 ansible_port=%d ansible_user=root\n", sshd.Port))
	write(book, "- hosts: all\n  gather_facts: false\n  tasks:\n    - raw: \"true\"\n")
	kubespray := func() (string, error) {
		cmd := exec.Command(playbook, "--inventory="+inventory, "--private-key="+sshd.ClientKeyFile, book)
		cmd.Env, cmd.Dir = environ(), dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := kubespray(); err != nil {
		t.Fatalf("ansible-playbook with the pinned key: %v\n%s", err, out)
	}

	pinned := sshd.HostKey
	sshd.RestartWithNewHostKey(t)
	out, err := kubespray()
	refused := strings.Contains(out, "REMOTE HOST IDENTIFICATION HAS CHANGED") || strings.Contains(out, "Host key verification failed")
	if err == nil || !refused {
		t.Fatalf("ansible-playbook against a swapped host key: %v; want it refused\n%s", err, out)
	}

	err = steprun.PinHostKeys(ctx(), env.Client, ref, hosts, sshd.Port, 10*time.Second)
	if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), `node "master"`) ||
		!strings.Contains(err.Error(), ssh.FingerprintSHA256(pinned)) || !strings.Contains(err.Error(), ssh.FingerprintSHA256(sshd.HostKey)) {
		t.Errorf("pinning a swapped key: %v; want a final error naming the node and both fingerprints", err)
	}

	t.Run("every failing node named; a changed key final beside a node still waited for", func(t *testing.T) {
		nodes := append(slices.Clone(hosts),
			placement.Placement{Label: "worker-1", Role: "worker", BareMetalHost: ns + "/node-3", IP: "127.0.0.2"},
			placement.Placement{Label: "worker-2", Role: "worker", BareMetalHost: ns + "/node-4", IP: "127.0.0.3"})
		err := steprun.PinHostKeys(ctx(), env.Client, ref, nodes, sshd.Port, time.Second)
		if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), `node "master"`) ||
			!strings.Contains(err.Error(), `node "worker-1"`) || !strings.Contains(err.Error(), `node "worker-2"`) {
			t.Errorf("a changed key and two nodes not answering: %v; want a final error naming all three", err)
		}
	})

	t.Run("a node that does not answer: waited for, unless its key is pinned", func(t *testing.T) {
		down := []placement.Placement{
			{Label: "worker-1", Role: "worker", BareMetalHost: ns + "/node-3", IP: "127.0.0.1"},
			{Label: "worker-2", Role: "worker", BareMetalHost: ns + "/node-4", IP: "127.0.0.2"},
		}
		if err := steprun.PinHostKeys(ctx(), env.Client, ref, down, 1, time.Second); err == nil || !steps.IsRetryable(err) ||
			!strings.Contains(err.Error(), "worker-1") || !strings.Contains(err.Error(), "worker-2") {
			t.Errorf("two unpinned nodes that do not answer: %v; want retryable, naming both", err)
		}
		sshd.Stop() // the pinned master is down
		if err := steprun.PinHostKeys(ctx(), env.Client, ref, hosts, sshd.Port, time.Second); err != nil {
			t.Errorf("a pinned node that does not answer (a node being removed may be down): %v", err)
		}
	})
}
