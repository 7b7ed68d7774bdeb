//go:build vm

package vm_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/fileserver"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testvm"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

// downloadFilesPlaybook runs kubespray's own download role on every node, as cluster.yml
// does after facts.yml (whose network facts it computes the same way; bootstrap_os ran
// before), for its files only: pulling its images needs the container runtime, which only a
// whole cluster.yml installs.
const downloadFilesPlaybook = `- name: The facts kubespray's download role uses, computed as its facts.yml computes them
  hosts: k8s_cluster
  gather_facts: false
  tasks:
    - name: kubespray's network facts (main_access_ip, which etcd_access_addresses needs)
      ansible.builtin.import_role:
        name: network_facts
    - name: The node's facts
      ansible.builtin.setup:

- name: kubespray's download role, its files, from the site's mirror
  hosts: k8s_cluster
  gather_facts: false
  vars:
    download_container: false
  roles:
    - kubespray_defaults
    - download
`

// kubesprayDownloadsFromTheMirror: the build of everything kubespray downloads
// (hack/kubespray-downloads.sh), uploaded into a site registry with the product's upload
// command and served by the product's file server on the site network; then kubespray's own
// download role, in an offline run with the build's checksums as typed extra variables,
// fetches each of its files onto the machines and checks it (get_url's checksum), and the
// master runs the kubeadm it fetched (kubespray asks it for the control plane's images).
func kubesprayDownloadsFromTheMirror(t *testing.T, env *testenv.Env, ns string, p *bpav1.Provisioning, addressed []bpav1.Node,
	keyFile string, site *testvm.Site, clients map[string]*ssh.Client, built string) {
	t.Helper()
	reg := testregistry.StartSecure(t)
	client, err := siteregistry.New(siteregistry.Config{Registry: reg.Addr + "/site", Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("BPA_REGISTRY_PASSWORD", reg.Password)
	var out, errb bytes.Buffer
	if code := cli.ExecuteContext(context.Background(), []string{"upload", "file-set", "kubespray:" + testcluster.KubesprayVersion, filepath.Join(built, "files"),
		"--registry", reg.Addr + "/site", "--username", reg.Username, "--ca-file", reg.CAFile, "--state-dir", t.TempDir()}, &out, &errb); code != 0 {
		t.Fatalf("upload file-set: exit %d: %s", code, errb.String())
	}
	l, err := net.Listen("tcp", net.JoinHostPort(site.TestSide(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: &fileserver.Handler{Registry: client}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	vars, err := testcluster.Vars(built)
	if err != nil {
		t.Fatal(err)
	}
	op := p.DeepCopy()
	op.Spec.Offline = ptr.To(true)
	for name, v := range p.Spec.Kubespray.ExtraVars {
		vars[name] = v
	}
	op.Spec.Kubespray.ExtraVars = vars
	mirror := &offline.Mirror{URL: "http://" + l.Addr().String(), KubesprayFiles: artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: testcluster.KubesprayVersion}}
	inventory, extraVars, err := renderinventory.Render(op, addressed, mirror)
	if err != nil {
		t.Fatal(err)
	}
	run := runRealKubespray(t, env, ns, p, inventory, extraVars, keyFile, kubesprayRun{
		Playbook: "bpa-download-files.yml",
		Files:    map[string][]byte{"/kubespray/bpa-download-files.yml": []byte(downloadFilesPlaybook)},
		MayFail:  true,
	})
	for _, host := range []string{"master", "worker"} {
		if !regexp.MustCompile(`(?m)^\s*` + host + `\s+: ok=[1-9]\d* .*unreachable=0\s+failed=0`).MatchString(run) {
			t.Fatalf("kubespray's download role on %s:\n%s\n%s", host, failuresOf(run), lastLinesOf(run, 20))
		}
	}
	// What each machine now holds, as kubespray's download role left it in local_release_dir.
	for name, c := range clients {
		got := " " + strings.Join(strings.Fields(testvm.Run(t, c, "ls /tmp/releases")), " ") + " "
		t.Logf("%s fetched from the site's mirror into /tmp/releases:%s", name, got)
		want := []string{"kubeadm-1.34.3-amd64", "kubelet-1.34.3-amd64", "containerd-2.2.1-linux-amd64.tar.gz",
			"runc-1.3.4.amd64", "cni-plugins-linux-amd64-1.8.0.tgz", "crictl-1.34.0-linux-amd64.tar.gz", "nerdctl-1.7.7-linux-amd64.tar.gz"}
		if name == "master" { // kubectl is the control plane's, etcd the etcd group's
			want = append(want, "kubectl-1.34.3-amd64", "etcd-3.5.21-linux-amd64.tar.gz")
		}
		for _, w := range want {
			if !strings.Contains(got, " "+w+" ") {
				t.Errorf("%s: kubespray's download role left no %s in /tmp/releases", name, w)
			}
		}
	}
	// The master ran the kubeadm it fetched: kubespray installed it, had it validate its images
	// configuration and list the control plane's images.
	if v := strings.TrimSpace(testvm.Run(t, clients["master"], "/usr/local/bin/kubeadm version -o short && test -s /etc/kubernetes/kubeadm-images.yaml && echo config")); v != "v1.34.3\nconfig" {
		t.Errorf("the master's kubeadm, from the mirror: %q", v)
	}
}

// failuresOf is each failed task of ansible-playbook's output, with its task line.
func failuresOf(out string) string {
	var failed []string
	task := ""
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "TASK ["):
			task = line
		case strings.HasPrefix(line, "fatal: ") || strings.HasPrefix(line, "failed: "):
			failed = append(failed, task+"\n"+line)
		}
	}
	return strings.Join(failed, "\n")
}
