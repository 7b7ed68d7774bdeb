//go:build vm

package vm_test

import (
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/fileserver"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

// clusterThroughDownloads: the build of everything kubespray downloads
// (hack/kubespray-downloads.sh), uploaded into a site registry with the product's upload
// commands and served by the product's file server on the site network; then the real
// cluster.yml, cut after the play that prepares the nodes for etcd, in an offline run with the
// build's checksums as typed extra variables: its validation, bootstrap and facts, preinstall,
// the container runtime (containerd, runc, nerdctl, crictl, the CNI plugins), and its download
// role, which fetches each file onto the machines and checks it (get_url's checksum), has the
// master's kubeadm list the control plane's images, and pulls every image from the mirror's
// registry view with the container runtime it installed.
func clusterThroughDownloads(t *testing.T, s *vmSite, built string) {
	t.Helper()
	mirror := serveKubesprayDownloads(t, s.site, built)
	inventory, extraVars := renderOffline(t, s.p, s.addressed, mirror, built)
	clients := s.byLabel()
	run := runRealKubespray(t, s.env, s.ns, s.p, inventory, extraVars, s.keyFile, testkubespray.Playbook{
		Path:    strings.TrimPrefix(clusterPlaybookPath, "/kubespray/"),
		Files:   map[string][]byte{clusterPlaybookPath: clusterPlaybook(t, "download")},
		MayFail: true,
	})
	for _, host := range []string{"master", "worker"} {
		if !testkubespray.OKRecap(run, host) {
			t.Fatalf("cluster.yml through its downloads on %s:\n%s\n%s", host, testkubespray.Failures(run), testkubespray.LastLines(run, 20))
		}
	}
	// What each machine now holds, as kubespray's download role left it in local_release_dir.
	for name, c := range clients {
		got := " " + strings.Join(strings.Fields(testvm.Run(t, c, "ls /tmp/releases")), " ") + " "
		t.Logf("%s fetched from the site's mirror into /tmp/releases:%s", name, got)
		want := []string{"kubeadm-1.34.3-amd64", "kubelet-1.34.3-amd64", "containerd-2.2.1-linux-amd64.tar.gz",
			"runc-1.3.4.amd64", "cni-plugins-linux-amd64-1.8.0.tgz", "crictl-1.34.0-linux-amd64.tar.gz", "nerdctl-1.7.7-linux-amd64.tar.gz"}
		if name == "master" { // kubectl is the control plane's, etcd the etcd group's
			want = append(want, "kubectl-1.34.3-amd64", "etcd-3.5.24-linux-amd64.tar.gz")
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
	// The container runtime kubespray installed runs, and holds the images it pulled from the
	// mirror's registry view (plain HTTP, through the hosts.toml kubespray wrote for it).
	_, registry, err := offline.Endpoints(mirror.URL)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range clients {
		if v := strings.TrimSpace(testvm.Run(t, c, "systemctl is-active containerd && sudo -n /usr/local/bin/crictl version | sed -n 's/^RuntimeVersion: *//p'")); v != "active\nv2.2.1" {
			t.Errorf("%s: containerd from the mirror: %q, want active, v2.2.1", name, v)
		}
		got := " " + strings.Join(strings.Fields(testvm.Run(t, c, "sudo -n /usr/local/bin/nerdctl -n k8s.io images --format '{{.Repository}}:{{.Tag}}' | grep -v '<none>' | sort -u")), " ") + " "
		t.Logf("%s pulled from the site's mirror:%s", name, strings.ReplaceAll(got, registry+"/", ""))
		want := []string{"pause:3.10.1", "kube-proxy:v1.34.3", "flannel/flannel:v0.27.4", "flannel/flannel-cni-plugin:v1.7.1-flannel1"}
		if name == "master" {
			want = append(want, "kube-apiserver:v1.34.3", "kube-controller-manager:v1.34.3", "kube-scheduler:v1.34.3", "coredns/coredns:v1.12.1")
		}
		for _, w := range want {
			if !strings.Contains(got, " "+registry+"/"+w+" ") {
				t.Errorf("%s: containerd holds no %s from the mirror", name, w)
			}
		}
	}
}

// serveKubesprayDownloads uploads the build of everything kubespray downloads
// (hack/kubespray-downloads.sh's folder) into a site registry with the product's upload
// commands, and serves it on the site network with the product's file server: the site's
// mirror, as an offline Provisioning names it.
func serveKubesprayDownloads(t *testing.T, site *testvm.Site, built string) *offline.Mirror {
	t.Helper()
	reg := testregistry.StartSecure(t)
	client, err := siteregistry.New(siteregistry.Config{Registry: reg.Addr + "/site", Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	testkubespray.UploadDownloads(t, testkubespray.Registry{Addr: reg.Addr + "/site", Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile}, testinterrupt.TempDir(t), built)
	l, err := net.Listen("tcp", net.JoinHostPort(site.TestSide(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: &fileserver.Handler{Registry: client}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &offline.Mirror{URL: "http://" + l.Addr().String(), KubesprayFiles: artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: testcluster.KubesprayVersion}}
}

// renderOffline is render-inventory's inventory and extra variables for p in offline mode from
// mirror, with the test cluster's options and the build's checksums under p's own extraVars.
func renderOffline(t *testing.T, p *bpav1.Provisioning, addressed []bpav1.Node, mirror *offline.Mirror, built string) (inventory, extraVars []byte) {
	t.Helper()
	vars, err := testcluster.Vars(built)
	if err != nil {
		t.Fatal(err)
	}
	op := p.DeepCopy()
	op.Spec.Offline = ptr.To(true)
	maps.Copy(vars, p.Spec.Kubespray.ExtraVars)
	op.Spec.Kubespray.ExtraVars = vars
	inventory, extraVars, err = renderinventory.Render(op, addressed, renderinventory.Options{Mirror: mirror})
	if err != nil {
		t.Fatal(err)
	}
	return inventory, extraVars
}
