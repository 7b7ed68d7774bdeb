package runkubespray_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// fakeCrictl plays a master's crictl as a busy one answers the renewal's restart (two
// masters on emulated machines). Its pods are the lines of the file
// "pods". rmp records the pod it was asked to remove and makes the kubelet start a new pod
// ("new-" and the name), as it does from the manifest; a pod with a line in the file "fails"
// fails its removals as that line says: "gone" fails the first (the kubelet was removing the
// pod, and it is gone after), "stuck-once" fails the first and the pod stays until the next,
// "stuck" fails every one and the pod stays. "pods --id" answers as crictl does.
const fakeCrictl = `#!/bin/sh
dir=$(dirname "$0")/..
case "$1" in
pods)
	if [ "$2" = --id ]; then grep -x "$3" "$dir/pods" || true; else cat "$dir/pods"; fi ;;
rmp)
	id=$3
	echo "$id" >> "$dir/rmp.calls"
	grep -qx "$id" "$dir/pods" || { echo "getting sandbox status of pod \"$id\": NotFound" >&2; exit 1; }
	echo "new-$id" >> "$dir/pods"
	if grep -qx "$id gone" "$dir/fails" 2>/dev/null; then
		sed -i "/^$id gone$/d" "$dir/fails"; sed -i "/^$id$/d" "$dir/pods"
		echo "container is already in removing state" >&2; exit 1
	fi
	if grep -qx "$id stuck-once" "$dir/fails" 2>/dev/null; then
		sed -i "/^$id stuck-once$/d" "$dir/fails"
		echo "StopPodSandbox: context deadline exceeded" >&2; exit 1
	fi
	if grep -qx "$id stuck" "$dir/fails" 2>/dev/null; then
		echo "StopPodSandbox: context deadline exceeded" >&2; exit 1
	fi
	sed -i "/^$id$/d" "$dir/pods" ;;
*) exit 2 ;;
esac
`

// TestRenewalRestartsTheOldPodsOnABusyMaster: RenewCertificatesPlaybook run by the real
// ansible-playbook on a "master" that is this machine (a local connection, the paths moved
// into a temporary folder, kubeadm and kubectl recorders, crictl the fake above). A pod whose
// removal failed because the kubelet removed it is taken as removed, a removal that timed out
// is tried again, only the pods listed before the restart are removed (never the new ones the
// kubelet started), and a pod that never goes fails the renewal. The playbook as first built
// removed whatever crictl listed and failed at the first error, which a busy master gives
// both ways.
func TestRenewalRestartsTheOldPodsOnABusyMaster(t *testing.T) {
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatalf("ansible-playbook is missing: run `make test-deps` (Debian ansible-core)")
	}
	python, err := exec.LookPath("python3")
	must(t, err)
	for _, tc := range []struct {
		name, fails string
		passes      bool
		removals    string
	}{
		{"every removal passes", "", true, "apiserver\nscheduler\n"},
		{"the kubelet was removing the pod", "apiserver gone\n", true, "apiserver\nscheduler\n"},
		{"a removal timed out once", "scheduler stuck-once\n", true, "apiserver\nscheduler\nscheduler\n"},
		{"a pod never goes", "scheduler stuck\n", false, "apiserver\n" + strings.Repeat("scheduler\n", 13)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, kubeadmCalls := renewalMaster(t, tc.fails)
			cmd := renewal(t, playbook, dir, "[kube_control_plane]\nmaster\n[all:vars]\nansible_python_interpreter="+python+"\n")
			out, err := cmd.CombinedOutput()
			if (err == nil) != tc.passes {
				t.Fatalf("the renewal's playbook: %v, want it to pass: %v\n%s", err, tc.passes, out)
			}
			if removals, _ := os.ReadFile(filepath.Join(dir, "rmp.calls")); string(removals) != tc.removals {
				t.Errorf("crictl removed\n%s\nwant\n%s\n%s", removals, tc.removals, out)
			}
			wantKubeadm := "certs check-expiration\ncerts renew all\n"
			if tc.passes {
				wantKubeadm += "certs check-expiration\n"
				if config, _ := os.ReadFile(filepath.Join(dir, "root", ".kube", "config")); string(config) != "renewed\n" {
					t.Errorf("root's kubeconfig is %q, want the renewed admin.conf", config)
				}
			}
			if calls, _ := os.ReadFile(kubeadmCalls); string(calls) != wantKubeadm {
				t.Errorf("kubeadm ran\n%s\nwant\n%s", calls, wantKubeadm)
			}
		})
	}
}

// renewalMaster is a master for RenewCertificatesPlaybook that is this machine: its paths in a
// temporary folder (dir), kubeadm and kubectl recorders, crictl the fake above with fails.
// It returns dir and the file kubeadm's calls go to.
func renewalMaster(t *testing.T, fails string) (dir, kubeadmCalls string) {
	t.Helper()
	dir = t.TempDir()
	bin, conf := filepath.Join(dir, "bin"), filepath.Join(dir, "kubernetes")
	must(t, os.MkdirAll(bin, 0o755))
	must(t, os.MkdirAll(conf, 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "root", ".kube"), 0o755))
	write(t, filepath.Join(dir, "pods"), "apiserver\nscheduler\n")
	write(t, filepath.Join(dir, "fails"), fails)
	write(t, filepath.Join(bin, "crictl"), fakeCrictl)
	kubeadmCalls = filepath.Join(dir, "kubeadm.calls")
	write(t, filepath.Join(bin, "kubeadm"), "#!/bin/sh\necho \"$@\" >> "+kubeadmCalls+"\n")
	write(t, filepath.Join(bin, "kubectl"), "#!/bin/sh\n[ \"$*\" = \"--kubeconfig "+conf+"/admin.conf get --raw /readyz\" ]\n")
	for _, b := range []string{"crictl", "kubeadm", "kubectl"} {
		must(t, os.Chmod(filepath.Join(bin, b), 0o755))
	}
	write(t, filepath.Join(conf, "admin.conf"), "renewed\n")
	return dir, kubeadmCalls
}

// renewal is the command that runs RenewCertificatesPlaybook on the masters of inventory (its
// text), renewalMaster's paths given to every host, within 3 minutes.
func renewal(t *testing.T, playbook, dir, inventory string, extraArgs ...string) *exec.Cmd {
	t.Helper()
	path := filepath.Join(dir, "hosts.ini")
	// ansible_become=false: a connection variable outranks the play's become, and the master
	// is this machine.
	write(t, path, inventory+"[all:vars]\nansible_connection=local\nansible_become=false\n"+
		"bin_dir="+filepath.Join(dir, "bin")+"\nkube_config_dir="+filepath.Join(dir, "kubernetes")+"\n")
	book := filepath.Join(dir, runkubespray.RenewCertificatesPlaybookFile)
	write(t, book, runkubespray.RenewCertificatesPlaybook)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	args := append([]string{"--inventory=" + path, "--extra-vars=removal_delay=0",
		"--extra-vars=root_kubeconfig=" + filepath.Join(dir, "root", ".kube", "config")}, extraArgs...)
	cmd := exec.CommandContext(ctx, playbook, append(args, book)...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"), "ANSIBLE_NOCOLOR=1")
	return cmd
}

// TestRenewalLeavesOutTheMastersThatDidNotAnswer: the masters pin-host-keys went on without
// (its silent-nodes output, as the pod's input file) are named and never connected to; the
// others are renewed. Without the file the same silent master stops the renewal.
func TestRenewalLeavesOutTheMastersThatDidNotAnswer(t *testing.T) {
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatalf("ansible-playbook is missing: run `make test-deps` (Debian ansible-core)")
	}
	python, err := exec.LookPath("python3")
	must(t, err)
	// master-2 is an SSH host that nothing answers for.
	inventory := "[kube_control_plane]\nmaster\nmaster-2 ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=1\n" +
		"[all:vars]\nansible_python_interpreter=" + python + "\n"
	silent := `[{"node":"master-2","address":"10.10.0.12:22","triedAt":"2026-12-06T06:00:00Z"},{"node":"worker-1","address":"10.10.0.21:22","triedAt":"2026-12-06T06:00:01Z"}]`
	for _, tc := range []struct {
		name, silent string
		passes       bool
	}{
		{name: "master-2 named silent", silent: silent, passes: true},
		{name: "no master silent", silent: "[]", passes: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, kubeadmCalls := renewalMaster(t, "")
			file := filepath.Join(dir, runkubespray.SilentNodesFile)
			write(t, file, tc.silent)
			out, err := renewal(t, playbook, dir, inventory, "--extra-vars=bpa_silent_nodes_file="+file).CombinedOutput()
			if (err == nil) != tc.passes {
				t.Fatalf("the renewal's playbook: %v, want it to pass: %v\n%s", err, tc.passes, out)
			}
			if !tc.passes {
				if !strings.Contains(string(out), "master-2") || !strings.Contains(string(out), "UNREACHABLE") {
					t.Errorf("the renewal failed, not on master-2 unreachable:\n%s", out)
				}
				return
			}
			if said := "master-2 did not answer at 10.10.0.12:22 (2026-12-06T06:00:00Z): its certificates are not renewed"; !strings.Contains(string(out), said) {
				t.Errorf("the renewal's output does not say %q:\n%s", said, out)
			}
			if strings.Contains(string(out), "worker-1") {
				t.Errorf("the renewal names worker-1, no master:\n%s", out)
			}
			if calls, _ := os.ReadFile(kubeadmCalls); string(calls) != "certs check-expiration\ncerts renew all\ncerts check-expiration\n" {
				t.Errorf("kubeadm ran\n%s\nwant the master's renewal once\n%s", calls, out)
			}
		})
	}
}
