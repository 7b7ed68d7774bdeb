package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubespraydownloads"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

// TestChecksumTablesAreWhatKubesprayChecks: the checksums of two builds (an upgrade's two
// Kubernetes versions), merged by testcluster.Vars, are the ones kubespray's own download role
// checks each version's kubeadm, kubelet and kubectl against, and etcd's its variable; asked of
// the real kubespray v2.30.0 (from ../shared/third_party), a listing per version (seconds).
func TestChecksumTablesAreWhatKubesprayChecks(t *testing.T) {
	archive := filepath.Join("..", "..", "..", "shared", "third_party", "kubespray-"+testcluster.KubesprayVersion+".tar.gz")
	if _, err := os.Stat(archive); err != nil {
		t.Skipf("kubespray's sources are absent (%s): its download role cannot be asked", archive)
	}
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not installed (make test-deps installs it)")
	}
	tree := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", archive, "-C", tree, "--strip-components=1").CombinedOutput(); err != nil {
		t.Fatalf("extracting %s: %v: %s", archive, err, out)
	}
	sum := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	builds := map[string]map[string]any{
		"1.34.3": {"kubeadm_checksums": testcluster.ChecksumTable{"amd64": {"1.34.3": sum("a")}}, "kubelet_checksums": testcluster.ChecksumTable{"amd64": {"1.34.3": sum("b")}},
			"kubectl_checksums": testcluster.ChecksumTable{"amd64": {"1.34.3": sum("c")}}, "etcd_binary_checksum": sum("e")},
		"1.33.4": {"kubeadm_checksums": testcluster.ChecksumTable{"amd64": {"1.33.4": sum("1")}}, "kubelet_checksums": testcluster.ChecksumTable{"amd64": {"1.33.4": sum("2")}},
			"kubectl_checksums": testcluster.ChecksumTable{"amd64": {"1.33.4": sum("3")}}, "etcd_binary_checksum": sum("e")},
	}
	var dirs []string
	for _, checksums := range builds {
		dir := t.TempDir()
		raw, err := json.Marshal(checksums)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, testcluster.ChecksumsFile), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	vars, err := testcluster.Vars(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	p, hosts := testcluster.Offline(vars)
	mirror := &offline.Mirror{URL: "http://10.0.0.1:8080", KubesprayFiles: artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: testcluster.KubesprayVersion}}
	for version, want := range builds {
		inventory, extraVars, err := renderinventory.Render(p, hosts, renderinventory.Options{Mirror: mirror, KubernetesVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		downloads, err := kubespraydownloads.List(context.Background(), tree, inventory, extraVars)
		if err != nil {
			t.Fatalf("kubespray's download list at %s: %v", version, err)
		}
		checked := 0
		for _, d := range downloads {
			var table string
			switch d.Name {
			case "kubeadm", "kubelet", "kubectl":
				table = d.Name + "_checksums"
			case "etcd":
				if d.Checksum != sum("e") {
					t.Errorf("%s: etcd is checked against %s, want the builds' %s", version, d.Checksum, sum("e"))
				}
				checked++
				continue
			default:
				continue
			}
			checked++
			if w := want[table].(testcluster.ChecksumTable)["amd64"][version]; d.Checksum != w || !strings.Contains(d.URL, "/v"+version+"/") {
				t.Errorf("%s: %s is %s checked against %s, want v%s checked against %s", version, d.Name, d.URL, d.Checksum, version, w)
			}
		}
		if checked != 4 {
			t.Errorf("%s: kubespray lists %d of kubeadm, kubelet, kubectl and etcd, want 4: %v", version, checked, downloads)
		}
	}
}
