package runkubespray_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// TestResetFailedJoinsAsksTheRealCluster: ResetFailedJoinsPlaybook run by the real
// ansible-playbook, its question put by the real kubectl to a real API server, on "machines"
// that are this one (local connections, the paths moved into a temporary folder, kubeadm a
// recorder). Only a joining master with the control plane's manifests that the cluster does not
// count as a control-plane node is reset; the first master is never asked about, and a master
// without Python (a new cluster's, before kubespray's bootstrap) is asked without it, and one
// whose sudo warns (over a real sshd, in raw's terminal) is read past the warning. The recording
// tests of the script cannot see what kubectl accepts: a question kubectl refused (a node's name
// together with a selector) failed the reset on the machines, and with it Argo's retry of the
// join; nor what raw's terminal adds: sudo's warning hid a real half-done join from the reset.
func TestResetFailedJoinsAsksTheRealCluster(t *testing.T) {
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatalf("ansible-playbook is missing: run `make test-deps` (Debian ansible-core)")
	}
	env := testenv.ForTest(t, testenv.StartWithoutArgo)
	kubectl := filepath.Join(testenv.RepoRoot(), "bin", "k8s", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl is not built: run `make test-deps` (%v)", err)
	}
	admin, err := os.ReadFile(env.AdminKubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	node := func(t *testing.T, name string, controlPlane bool) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
		if controlPlane {
			n.Labels["node-role.kubernetes.io/control-plane"] = ""
		}
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	}
	// The first master, whom the playbook asks, is a control-plane node in every case, and
	// master2's answer must not be the first master's.
	node(t, "master", true)

	for _, tc := range []struct {
		name string
		// manifests: master2 has the control plane's manifests; node: master2 is in the
		// cluster, perhaps as a control-plane node.
		manifests, node, controlPlane bool
		// limit: the hosts the playbook is limited to (master2 unless set); noPython: the
		// hosts have no Python interpreter.
		limit    string
		noPython bool
		// overSSH: master2 is reached over a real sshd, with become through a sudo that warns
		// on stderr as the machines' sudo does (their hostname did not resolve); raw's
		// terminal writes the warning into the output the playbook reads.
		overSSH bool
		reset   bool
	}{
		{name: "nothing on master2: a first join", reset: false},
		{name: "manifests, not in the cluster: the join failed before the kubelet registered", manifests: true, reset: true},
		{name: "manifests, in the cluster without the role: the join failed at mark-control-plane", manifests: true, node: true, reset: true},
		{name: "manifests, a control-plane node: joined, never touched", manifests: true, node: true, controlPlane: true, reset: false},
		{name: "a new cluster's first attempt: no Python yet, nothing on master2", noPython: true, reset: false},
		{name: "a new cluster's masters: the first one is left alone", limit: "master,master2", manifests: true, reset: true},
		{name: "manifests on a node whose sudo warns: the warning shares raw's output", manifests: true, overSSH: true, reset: true},
		{name: "nothing on a node whose sudo warns", overSSH: true, reset: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin, conf, certs := filepath.Join(dir, "bin"), filepath.Join(dir, "kubernetes"), filepath.Join(dir, "ssl")
			for _, d := range []string{bin, filepath.Join(conf, "manifests"), certs} {
				must(t, os.MkdirAll(d, 0o755))
			}
			must(t, os.Symlink(kubectl, filepath.Join(bin, "kubectl")))
			record := filepath.Join(dir, "kubeadm.calls")
			write(t, filepath.Join(bin, "kubeadm"), "#!/bin/sh\necho \"$@\" >> "+record+"\n")
			must(t, os.Chmod(filepath.Join(bin, "kubeadm"), 0o755))
			write(t, filepath.Join(conf, "admin.conf"), string(admin))
			if tc.manifests {
				write(t, filepath.Join(conf, "manifests", "kube-apiserver.yaml"), "kind: Pod\n")
			}
			if tc.node {
				node(t, "master2", tc.controlPlane)
			}
			python, err := exec.LookPath("python3")
			must(t, err)
			if tc.noPython {
				python = filepath.Join(dir, "no-python")
			}
			master2 := "master2"
			if tc.overSSH {
				master2 += overSSH(t, dir)
			}
			inventory := filepath.Join(dir, "hosts.ini")
			// ansible_become=false: a connection variable outranks the play's become, and
			// these machines are this one.
			write(t, inventory, "[kube_control_plane]\nmaster\n"+master2+"\n[all:vars]\nansible_connection=local\nansible_become=false\n"+
				"ansible_python_interpreter="+python+"\nbin_dir="+bin+"\nkube_config_dir="+conf+"\nkube_cert_dir="+certs+"\n")
			book := filepath.Join(dir, runkubespray.ResetFailedJoinsPlaybookFile)
			write(t, book, runkubespray.ResetFailedJoinsPlaybook)
			limit := cmp.Or(tc.limit, "master2")
			cmd := exec.CommandContext(ctx, playbook, "--inventory="+inventory, "--limit="+limit, book)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"), "ANSIBLE_NOCOLOR=1",
				// No shared connection left behind, and no socket under the long temporary path.
				"ANSIBLE_SSH_ARGS=-o ControlMaster=no",
				// The test logs in as root: become to root is skipped unless allowed.
				"ANSIBLE_BECOME_ALLOW_SAME_USER=true")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the reset's playbook failed: %v\n%s", err, out)
			}
			calls, _ := os.ReadFile(record)
			want := ""
			if tc.reset {
				want = "reset --force --cert-dir " + certs + "\n"
			}
			if string(calls) != want {
				t.Errorf("kubeadm ran %q, want %q\n%s", calls, want, out)
			}
			// The end-to-end tests read which masters each attempt reset from this output.
			if reset := testkubespray.ParseJoinAttempt(string(out)).Reset; slices.Equal(reset, []string{"master2"}) != tc.reset || len(reset) > 1 {
				t.Errorf("the output read as resetting %v, want master2 reset %v\n%s", reset, tc.reset, out)
			}
			if !regexp.MustCompile(`(?m)^master2 +: ok=`).Match(out) {
				t.Errorf("the playbook did not run on master2:\n%s", out)
			}
			if regexp.MustCompile(`(?m)^master +:`).Match(out) {
				t.Errorf("the playbook ran on the first master:\n%s", out)
			}
		})
	}
}

// overSSH is master2's host variables for a connection over a real sshd on 127.0.0.1, with
// become through a sudo that writes sudo's warning about an unresolvable hostname on stderr
// and then runs the command as it is (the test runs as root).
func overSSH(t *testing.T, dir string) string {
	sshd := testsshd.Start(t)
	knownHosts := filepath.Join(dir, "known_hosts")
	write(t, knownHosts, sshd.KnownHostsLine())
	sudo := filepath.Join(dir, "sudo")
	write(t, sudo, "#!/bin/sh\necho 'sudo: unable to resolve host master2: Temporary failure in name resolution' >&2\n"+
		"while [ $# -gt 0 ] && [ \"$1\" != /bin/sh ]; do shift; done\nexec \"$@\"\n")
	must(t, os.Chmod(sudo, 0o755))
	return fmt.Sprintf(" ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=%d ansible_user=%s ansible_become=true ansible_become_exe=%s"+
		" ansible_ssh_private_key_file=%s ansible_ssh_common_args='-o UserKnownHostsFile=%s'",
		sshd.Port, testsshd.User(t), sudo, sshd.ClientKeyFile, knownHosts)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
