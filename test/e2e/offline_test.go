//go:build e2e

package e2e_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	digest "github.com/opencontainers/go-digest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/fileserver"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testctr"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

// TestOfflineSite: a node without internet access gets kubespray's files and every image from
// the site's mirror, with the variables render-inventory writes in offline mode. The stand-in
// playbook (kubespray/offline.yml) runs for real under ansible-playbook and fails without those
// variables; containerd's own client (ctr) pulls through the configuration it wrote, both an
// image by the mirror's name and one named after a registry the site cannot reach.
func TestOfflineSite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the offline site test needs root (containerd)")
	}
	scratch := testinterrupt.ScratchDirKeptOnFailure(t, "bpa-offline-")

	say(t, "offline: the site registry (TLS, authentication) and its mirror (serve-files' handler) on 127.0.0.1")
	reg := testregistry.StartSecure(t)
	client, err := siteregistry.New(siteregistry.Config{Registry: reg.Addr + "/site", Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile})
	must(t, err)
	srv := httptest.NewServer(&fileserver.Handler{Registry: client})
	t.Cleanup(srv.Close)
	mirrorURL, _ := url.Parse(srv.URL)

	// kubespray's files, laid out as its manage-offline-files.sh downloads them.
	kubeadm := bytes.Repeat([]byte("kubeadm "), 64<<10)
	files := filepath.Join(scratch, "offline-files")
	kubeadmPath := filepath.Join(files, "dl.k8s.io", "release", "v1.33.1", "bin", "linux", "amd64", "kubeadm")
	must(t, os.MkdirAll(filepath.Dir(kubeadmPath), 0o755))
	must(t, os.WriteFile(kubeadmPath, kubeadm, 0o644))
	t.Setenv("BPA_REGISTRY_PASSWORD", reg.Password)
	var out, errb bytes.Buffer
	if code := cli.ExecuteContext(ctx(), []string{"upload", "file-set", "kubespray:v2.28.0", files,
		"--registry", reg.Addr + "/site", "--username", reg.Username, "--ca-file", reg.CAFile,
		"--state-dir", filepath.Join(scratch, "upload-state")}, &out, &errb); code != 0 {
		t.Fatalf("upload file-set: exit %d: %s", code, errb.String())
	}
	say(t, "offline: uploaded %s", strings.TrimSpace(out.String()))
	pushed := pushTarImage(t, client, "library/pause", "3.10")
	say(t, "offline: pushed library/pause:3.10 %s", pushed)

	mirror := &offline.Mirror{URL: srv.URL, KubesprayFiles: artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: "v2.28.0"}}
	p := &bpav1.Provisioning{
		ObjectMeta: metav1.ObjectMeta{Name: "offline", Namespace: "default", Labels: map[string]string{bpav1.ClusterLabel: "offline"}},
		Spec: bpav1.ProvisioningSpec{
			Masters: []bpav1.HostEntry{{"master-1": {MACAddress: "52:54:00:e2:e0:21"}}},
			Offline: ptr.To(true),
			// kubespray checks each file against its own checksum table; a site that built its
			// files gives their checksums as typed extra variables.
			Kubespray: &bpav1.KubesprayOptions{ExtraVars: map[string]bpav1.ExtraVarValue{
				"kubeadm_binary_checksum": bpav1.ExtraVar(fmt.Sprintf("sha256:%x", sha256.Sum256(kubeadm))),
			}},
		},
	}
	hosts := []bpav1.Node{{Label: "master-1", Role: "master,worker", BareMetalHost: "default/node-1", MAC: "52:54:00:e2:e0:21", IP: "127.0.0.1"}}
	standin := filepath.Join(scratch, "stand-in")
	must(t, os.MkdirAll(standin, 0o755))
	must(t, os.WriteFile(filepath.Join(standin, "offline"), nil, 0o644))

	say(t, "offline: the stand-in fails on an offline node when render-inventory ran online")
	if out, err := runStandIn(t, scratch, standin, p, hosts, nil); err == nil || !strings.Contains(out, "the offline mirror variables are not set") {
		t.Fatalf("the stand-in passed, or failed for another reason, without the mirror variables: %v\n%s", err, out)
	}

	say(t, "offline: the stand-in downloads kubeadm through files_repo and writes containerd's hosts with the offline variables")
	if out, err := runStandIn(t, scratch, standin, p, hosts, mirror); err != nil {
		t.Fatalf("the stand-in failed with the mirror variables: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(standin, "kubeadm"))
	must(t, err)
	if !bytes.Equal(got, kubeadm) {
		t.Fatalf("the node downloaded %d bytes of kubeadm, the site uploaded %d", len(got), len(kubeadm))
	}
	for _, prefix := range []string{mirrorURL.Host, "_default"} {
		hostsToml, err := os.ReadFile(filepath.Join(standin, "certs.d", prefix, "hosts.toml"))
		must(t, err)
		say(t, "offline: containerd's %s/hosts.toml:\n%s", prefix, hostsToml)
	}

	say(t, "offline: containerd's client pulls through that configuration, anonymously")
	socket := testctr.Start(t, scratch).Socket
	for _, ref := range []string{
		mirrorURL.Host + "/library/pause:3.10",              // kubespray's own images: {{ kube_image_repo }}/...
		"registry.site-upstream.invalid/library/pause:3.10", // any registry: containerd's _default hosts
	} {
		out, err := exec.Command("ctr", "--address", socket, "--namespace", "bpa-offline", "images", "pull",
			"--hosts-dir", filepath.Join(standin, "certs.d"), "--snapshotter", "native", ref).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr images pull %s: %v\n%s", ref, err, out)
		}
		list, err := exec.Command("ctr", "--address", socket, "--namespace", "bpa-offline", "images", "list").Output()
		must(t, err)
		if !strings.Contains(string(list), ref) || !strings.Contains(string(list), pushed.String()) {
			t.Fatalf("after pulling %s, containerd lists:\n%s", ref, list)
		}
		say(t, "offline: ctr pulled %s as %s", ref, pushed)
	}
}

// runStandIn renders the inventory and extra variables as render-inventory does, then runs the
// stand-in's offline.yml on them with a local connection, the host's files under standin.
func runStandIn(t *testing.T, scratch, standin string, p *bpav1.Provisioning, hosts []bpav1.Node, mirror *offline.Mirror) (string, error) {
	t.Helper()
	inventory, extraVars, err := renderinventory.Render(p, hosts, renderinventory.Options{Mirror: mirror})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(scratch, "hosts.ini"), inventory, 0o644))
	must(t, os.WriteFile(filepath.Join(scratch, "extra-vars.json"), extraVars, 0o644))
	cmd := exec.Command("ansible-playbook", "-i", filepath.Join(scratch, "hosts.ini"), "--connection=local",
		"--extra-vars=@"+filepath.Join(scratch, "extra-vars.json"),
		"--extra-vars="+mustJSON(t, map[string]string{"standin_dir": standin}),
		filepath.Join(testenv.RepoRoot(), "test", "e2e", "kubespray", "offline.yml"))
	cmd.Env = append(os.Environ(), "ANSIBLE_LOCAL_TEMP="+filepath.Join(scratch, "ansible-tmp"), "ANSIBLE_NOCOLOR=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	must(t, err)
	return string(raw)
}

// pushTarImage pushes an image of one tar layer holding one file, as containerd can unpack it.
func pushTarImage(t *testing.T, client *siteregistry.Client, name, tag string) digest.Digest {
	t.Helper()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	content := []byte("stand-in for pause\n")
	must(t, tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}))
	_, err := tw.Write(content)
	must(t, err)
	must(t, tw.Close())
	repo, err := client.Repository(name)
	must(t, err)
	return testregistry.PushImage(t, repo, tag, layer.Bytes()).Digest
}
