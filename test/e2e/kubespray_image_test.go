//go:build e2e

package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testctr"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubespraydownloads"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checksitemirror"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// TestKubesprayImage runs the real kubespray's image the tests build from ../shared/third_party
// (hack/kubespray-image.sh, one per kubespray release; make e2e sets BPA_KUBESPRAY_IMAGES) in real containers, as the
// run-kubespray step runs an image: as nobody (65534), on a read-only root filesystem, with only
// /tmp writable, in /kubespray. kubespray's own version check (playbooks/ansible_version.yml:
// the ansible-core range it accepts, netaddr, jinja) passes, its cluster.yml, scale.yml and
// remove-node.yml pass ansible-playbook's syntax check with every role and collection they
// use, and its inventory sample parses.
func TestKubesprayImage(t *testing.T) {
	archives := strings.Fields(os.Getenv("BPA_KUBESPRAY_IMAGES"))
	if len(archives) == 0 {
		t.Skip("kubespray's images are not built: ../shared/third_party (kubespray, ansible-core) is absent; hack/kubespray-image.sh builds them when it is there")
	}
	if os.Geteuid() != 0 {
		t.Fatal("containers need root")
	}
	for _, archive := range archives {
		t.Run(filepath.Base(archive), func(t *testing.T) { checkKubesprayImage(t, archive) })
	}
}

func checkKubesprayImage(t *testing.T, archive string) {
	dir := testinterrupt.ScratchDir(t, "bpa-kubespray-")
	ctrd := testctr.Start(t, dir)
	ref := ctrd.Import(t, archive, "/kubespray:")
	scratch := filepath.Join(dir, "tmp")
	must(t, os.MkdirAll(scratch, 0o777))
	must(t, os.Chown(scratch, 65534, 65534))
	kubespray := func(args ...string) string {
		t.Helper()
		// ctr runs as root: setpriv (util-linux, in every Debian) drops to nobody, as the
		// step's securityContext does.
		args = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, args...)
		out, err := ctrd.Run(ref, []string{"--read-only", "--cwd", "/kubespray",
			"--env", "HOME=/tmp", "--env", "ANSIBLE_LOCAL_TEMP=/tmp/.ansible/tmp", "--env", "ANSIBLE_FORCE_COLOR=False",
			"--mount", "type=bind,src=" + scratch + ",dst=/tmp,options=rbind:rw"}, args...)
		if err != nil {
			t.Fatalf("%s in %s: %v\n%s", strings.Join(args, " "), ref, err, tail(out, 40))
		}
		return out
	}
	version := kubespray("ansible-playbook", "--version")
	say(t, "kubespray image %s: %s", ref, strings.SplitN(version, "\n", 2)[0])
	// Its plays run on every host: here on the container itself.
	out := kubespray("ansible-playbook", "--inventory=localhost,", "--connection=local", "playbooks/ansible_version.yml")
	if !strings.Contains(out, "ok=") || !strings.Contains(out, "failed=0") {
		t.Fatalf("kubespray's version check:\n%s", tail(out, 30))
	}
	recap := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "ok=") {
			recap = strings.Join(strings.Fields(line), " ")
		}
	}
	say(t, "kubespray's own version check (ansible-core, netaddr, jinja) passes: %s", recap)
	for _, book := range []string{"cluster.yml", "scale.yml", "remove-node.yml"} {
		if out := kubespray("ansible-playbook", "--inventory=inventory/sample/inventory.ini", "--syntax-check", book); !strings.Contains(out, "playbook: "+book) {
			t.Errorf("ansible-playbook --syntax-check %s:\n%s", book, tail(out, 20))
		}
	}
	say(t, "cluster.yml, scale.yml and remove-node.yml pass ansible-playbook's syntax check")
	// The step's own playbooks, as run-kubespray writes them into the pod's /tmp.
	for file, book := range map[string]string{
		runkubespray.RenewCertificatesPlaybookFile: runkubespray.RenewCertificatesPlaybook,
		runkubespray.ResetFailedJoinsPlaybookFile:  runkubespray.ResetFailedJoinsPlaybook,
	} {
		must(t, os.WriteFile(filepath.Join(scratch, file), []byte(book), 0o644))
		if out := kubespray("ansible-playbook", "--inventory=inventory/sample/inventory.ini", "--syntax-check", "/tmp/"+file); !strings.Contains(out, "playbook: /tmp/"+file) {
			t.Errorf("ansible-playbook --syntax-check of run-kubespray's %s:\n%s", file, tail(out, 20))
		}
	}
	say(t, "run-kubespray's own playbooks (the certificate renewal, the reset of a half-done join) pass ansible-playbook's syntax check")
	checkFailedAttemptsPlugin(t, scratch, kubespray)
	checkOfflineDownloads(t, ctrd, ref, dir)
}

// checkFailedAttemptsPlugin runs, with the image's Ansible, a task that fails once and then
// succeeds, with run-kubespray's callback plugin on Ansible's callback path as the step's
// template puts it there: the first attempt's error is shown. (The plugin's behaviour in full
// is tested with Debian's Ansible: runkubespray's TestFailedAttemptsPlugin.)
func checkFailedAttemptsPlugin(t *testing.T, scratch string, kubespray func(args ...string) string) {
	t.Helper()
	// Not in callback_plugins beside the playbook, where Ansible would find it without the
	// environment the step sets.
	plugins := filepath.Join(scratch, "step-callbacks")
	must(t, os.MkdirAll(plugins, 0o755))
	must(t, os.WriteFile(filepath.Join(plugins, runkubespray.FailedAttemptsPluginFile), []byte(runkubespray.FailedAttemptsPlugin), 0o644))
	book := `- hosts: all
  gather_facts: false
  tasks:
    - name: Fails once
      ansible.builtin.shell: "[ -e /tmp/failed-once ] || { touch /tmp/failed-once; echo the first attempt failed >&2; exit 1; }"
      register: once
      retries: 2
      delay: 0
      until: once is succeeded
`
	must(t, os.WriteFile(filepath.Join(scratch, "fails-once.yml"), []byte(book), 0o644))
	out := kubespray("env", "ANSIBLE_CALLBACK_PLUGINS=/tmp/step-callbacks", "ANSIBLE_REMOTE_TMP="+runkubespray.RemoteTmp, "ansible-playbook", "--inventory=localhost,", "--connection=local", "/tmp/fails-once.yml")
	if !strings.Contains(out, "bpa: [localhost] attempt 1 of 3 failed:") || !strings.Contains(out, "  | the first attempt failed") {
		t.Errorf("run-kubespray's callback plugin did not show the failed attempt:\n%s", tail(out, 30))
	}
	say(t, "run-kubespray's callback plugin shows a retried task's failed attempt")
}

// listDownloads runs the compiled list-kubespray-downloads step for a two-node offline flannel
// Provisioning in the image ref, and returns what it listed and offline mode's variables.
func listDownloads(t *testing.T, ctrd *testctr.Containerd, ref, dir string) ([]kubespraydownloads.Download, map[string]any) {
	t.Helper()
	p := &bpav1.Provisioning{
		ObjectMeta: metav1.ObjectMeta{Name: "offline", Namespace: "default", Labels: map[string]string{bpav1.ClusterLabel: "offline"}},
		Spec: bpav1.ProvisioningSpec{
			Masters: []bpav1.HostEntry{{"master-1": {MACAddress: "52:54:00:e2:e0:21"}}},
			Workers: []bpav1.HostEntry{{"worker-1": {MACAddress: "52:54:00:e2:e0:22"}}},
			Offline: ptr.To(true),
			// A user with sudo, as the end-to-end flow's: its login is the nodes', never the
			// pod's own, where the list is written.
			SSH: &bpav1.SSHAccess{User: "bpa"},
			Kubespray: &bpav1.KubesprayOptions{ExtraVars: map[string]bpav1.ExtraVarValue{
				"kube_network_plugin":     bpav1.ExtraVar("flannel"),
				"kubeadm_binary_checksum": bpav1.ExtraVar("sha256:" + strings.Repeat("0", 64)), // kubespray's form, as its checksum table has it
			}},
		},
	}
	hosts := []bpav1.Node{
		{Label: "master-1", Role: "master", BareMetalHost: "default/node-1", MAC: "52:54:00:e2:e0:21", IP: "10.250.0.11"},
		{Label: "worker-1", Role: "worker", BareMetalHost: "default/node-2", MAC: "52:54:00:e2:e0:22", IP: "10.250.0.12"},
	}
	mirror := &offline.Mirror{URL: "http://10.250.0.3:8080", KubesprayFiles: artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: "v2.30.0"}}
	all, vars, _ := listDownloadsFor(t, ctrd, ref, dir, p, hosts, mirror)
	return all, vars
}

// listDownloadsFor runs the compiled list-kubespray-downloads step in the image ref (its
// command, arguments, environment and input files, as nobody on a read-only root, contacting
// no node) for an offline Provisioning placed on hosts, and returns what it listed, offline
// mode's variables and the file the step wrote (check-site-mirror's input).
func listDownloadsFor(t *testing.T, ctrd *testctr.Containerd, ref, dir string, p *bpav1.Provisioning, hosts []bpav1.Node, mirror *offline.Mirror) ([]kubespraydownloads.Download, map[string]any, string) {
	t.Helper()
	inventory, extraVars, err := renderinventory.Render(p, hosts, renderinventory.Options{Mirror: mirror})
	must(t, err)
	vars, err := mirror.KubesprayVars()
	must(t, err)

	step := checksitemirror.ListTemplate(ref)
	params := map[string]string{steps.InventoryParam: string(inventory), steps.ExtraVarsParam: string(extraVars)}
	inputs := filepath.Join(dir, "inputs")
	must(t, os.MkdirAll(inputs, 0o755))
	options := []string{"--read-only", "--cwd", step.Container.WorkingDir}
	for i, a := range step.Inputs.Artifacts {
		data := a.Raw.Data // the step's own data, or "{{inputs.parameters.NAME}}", as Argo fills it in
		if name, ok := strings.CutPrefix(data, "{{inputs.parameters."); ok {
			data = params[strings.TrimSuffix(name, "}}")]
		}
		file := filepath.Join(inputs, fmt.Sprint(i))
		must(t, os.WriteFile(file, []byte(data), 0o644))
		options = append(options, "--mount", "type=bind,src="+file+",dst="+a.Path+",options=rbind:ro")
	}
	scratch := filepath.Join(dir, "tmp-downloads") // the pod's /tmp, empty: the outputs folder is the step's to make
	must(t, os.MkdirAll(scratch, 0o755))
	must(t, os.Chown(scratch, 65534, 65534))
	options = append(options, "--mount", "type=bind,src="+scratch+",dst="+steps.TmpDir+",options=rbind:rw")
	for _, e := range step.Container.Env {
		options = append(options, "--env", e.Name+"="+e.Value)
	}
	args := append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, step.Container.Command...)
	output, err := ctrd.Run(ref, options, append(args, step.Container.Args...)...)
	if err != nil {
		t.Fatalf("list-kubespray-downloads in %s: %v\n%s", ref, err, tail(output, 40))
	}
	file := filepath.Join(scratch, strings.TrimPrefix(step.Outputs.Parameters[0].ValueFrom.Path, steps.TmpDir))
	raw, err := os.ReadFile(file)
	must(t, err)
	byNode, err := kubespraydownloads.Parse(raw)
	must(t, err)
	if len(byNode) != len(hosts) {
		t.Errorf("kubespray's download list names %d nodes, want %d", len(byNode), len(hosts))
	}
	return kubespraydownloads.All(byNode), vars, file
}

// checkOfflineDownloads runs the compiled list-kubespray-downloads step in the image (its
// command, arguments, environment and input files, as nobody on a read-only root, contacting
// no node) for an offline Provisioning, and checks that kubespray's own download role then
// fetches every file from the mirror's files_repo and every image from its registry.
func checkOfflineDownloads(t *testing.T, ctrd *testctr.Containerd, ref, dir string) {
	all, vars := listDownloads(t, ctrd, ref, dir)
	names := map[string]bool{}
	var images int
	for _, d := range all {
		names[d.Name] = true
		if d.IsImage() {
			images++
		}
	}
	for _, want := range []string{"kubeadm", "kubelet", "kubectl", "etcd", "containerd", "runc", "nerdctl", "crictl", "cni",
		"pod_infra", "coredns", "flannel", "flannel_init", "kubeadm_kube-apiserver", "kubeadm_kube-proxy"} {
		if !names[want] {
			t.Errorf("kubespray's download list for a flannel cluster lacks %s: %v", want, all)
		}
	}
	if outside := kubespraydownloads.Outside(all, vars["files_repo"].(string), vars["registry_host"].(string)); len(outside) > 0 {
		t.Errorf("offline, kubespray would still fetch from outside the mirror: %v", outside)
	}
	say(t, "offline: kubespray's own download role fetches %d files and %d images, every one from the mirror (%s, %s)",
		len(all)-images, images, vars["files_repo"], vars["registry_host"])
}

// TestStandInListsItsDownloads runs the compiled list-kubespray-downloads step in the
// stand-in's image, as the end-to-end flow's offline runs do: the stand-in's
// roles/kubespray_defaults lists its one download, kubeadm, from the mirror.
func TestStandInListsItsDownloads(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("containers need root")
	}
	images := filepath.Join(testenv.RepoRoot(), "bin", "node-images.tar")
	if _, err := os.Stat(images); err != nil {
		t.Fatalf("the node's images are not built (hack/node-images.sh; make e2e builds them): %v", err)
	}
	dir := testinterrupt.ScratchDir(t, "bpa-standin-")
	ctrd := testctr.Start(t, dir)
	all, vars := listDownloads(t, ctrd, ctrd.Import(t, images, "/"+kubesprayImage), dir)
	if len(all) != 1 || all[0].Name != "kubeadm" || !strings.HasPrefix(all[0].URL, vars["files_repo"].(string)+"/dl.k8s.io/") {
		t.Errorf("the stand-in lists %v, want kubeadm from %s", all, vars["files_repo"])
	}
}
