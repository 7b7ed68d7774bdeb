package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubespraydownloads"
)

const repo = "http://10.0.0.1:8080/files/kubespray/v2.30.0"

func file(name, rel string) kubespraydownloads.Download {
	return kubespraydownloads.Download{Name: name, URL: repo + "/" + rel}
}

func image(name, ref string) kubespraydownloads.Download {
	return kubespraydownloads.Download{Name: name, Image: ref}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		d       kubespraydownloads.Download
		version string
		want    bool
	}{
		{file("kubeadm", "dl.k8s.io/release/v1.34.3/bin/linux/amd64/kubeadm"), "v1.34.3", true},
		{file("kubeadm", "dl.k8s.io/release/v1.34.3/bin/linux/amd64/kubeadm"), "v1.34.2", false},
		{file("etcd", "github.com/etcd-io/etcd/releases/download/v3.5.21/etcd-v3.5.21-linux-amd64.tar.gz"), "v3.5.21", true},
		{file("containerd", "github.com/containerd/containerd/releases/download/v2.2.1/containerd-2.2.1-linux-amd64.tar.gz"), "v2.2.1", true},
		{file("runc", "github.com/opencontainers/runc/releases/download/v1.3.4/runc.amd64"), "v1.3.4", true},
		{file("cni", "github.com/containernetworking/plugins/releases/download/v1.8.0/cni-plugins-linux-amd64-v1.8.0.tgz"), "v1.8.0", true},
		// files_repo's own path names kubespray's version, never a tool's.
		{file("runc", "github.com/opencontainers/runc/releases/download/v1.3.4/runc.amd64"), "v2.30.0", false},
		{image("coredns", "10.0.0.1:8080/coredns/coredns:v1.12.1"), "v1.12.1", true},
		{image("pod_infra", "10.0.0.1:8080/pause:3.10.1"), "3.10.1", true},
		{image("flannel_init", "10.0.0.1:8080/flannel/flannel-cni-plugin:v1.7.1-flannel1"), "v1.7.1-flannel1", true},
		{image("flannel", "10.0.0.1:8080/flannel/flannel:v0.27.4"), "v0.27.3", false},
	} {
		if got := matches(tc.d, repo, tc.version); got != tc.want {
			t.Errorf("matches(%s, %s) = %v, want %v", tc.d, tc.version, got, tc.want)
		}
	}
}

func TestPlanForRefusesWhatHasNoRecipe(t *testing.T) {
	_, err := planFor([]kubespraydownloads.Download{
		file("kubeadm", "dl.k8s.io/release/v1.34.3/bin/linux/amd64/kubeadm"),
		image("nginx", "10.0.0.1:8080/library/nginx:1.28.0-alpine"),
		image("kubeadm", "10.0.0.1:8080/kubeadm:v1"), // a file's recipe for an image
	})
	if err == nil || !strings.Contains(err.Error(), "nginx (image") || !strings.Contains(err.Error(), "kubeadm (image") {
		t.Fatalf("planFor: %v, want both named", err)
	}
}

// Every recipe names a tool, and every binary it uses is one its tool builds.
func TestRecipesUseTheirToolsBinaries(t *testing.T) {
	for name, r := range recipes {
		tl, ok := tools[r.Tool]
		if !ok {
			t.Errorf("%s: tool %q is not in tools", name, r.Tool)
			continue
		}
		if r.isImage() == (r.ChecksumVar != "") {
			t.Errorf("%s: an image has no checksum variable, a file has one", name)
		}
		for _, b := range r.binaries() {
			if _, ok := tl.Binaries[b]; !ok && r.Tool != "pause" {
				t.Errorf("%s: %s is not a binary of %s", name, b, r.Tool)
			}
		}
	}
}

func TestCandidateTags(t *testing.T) {
	got := candidateTags(file("crictl", "github.com/kubernetes-sigs/cri-tools/releases/download/v1.34.0/crictl-v1.34.0-linux-amd64.tar.gz"))
	if strings.Join(got, " ") != "v2.30.0 v1.34.0" {
		t.Errorf("candidateTags = %v", got)
	}
	if got := candidateTags(image("flannel_init", "h:1/flannel/flannel-cni-plugin:v1.7.1-flannel1")); len(got) != 1 || got[0] != "v1.7.1-flannel1" {
		t.Errorf("candidateTags = %v", got)
	}
}

// TestToolsPinTheTestClustersVersions: where the test cluster sets a version (etcd, flannel,
// nerdctl: internal/test/testcluster), the tool's module pins that version, so a build never fails
// late on a mismatch the two files could have shown.
func TestToolsPinTheTestClustersVersions(t *testing.T) {
	vars := testcluster.KubesprayVars()
	for variable, tool := range map[string]string{"etcd_version": "etcd", "flannel_version": "flannel", "nerdctl_version": "nerdctl"} {
		var want string
		if err := json.Unmarshal(vars[variable].Raw, &want); err != nil {
			t.Fatalf("%s: %v", variable, err)
		}
		gomod, err := os.ReadFile(filepath.Join("..", "tools", "kubespray-downloads", tools[tool].Dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(tools[tool].Module) + ` (v\S+)`).FindSubmatch(gomod)
		if m == nil || string(m[1]) != "v"+want {
			t.Errorf("hack/tools/kubespray-downloads/%s pins %s at %q; the test cluster's %s is %s", tools[tool].Dir, tools[tool].Module, m, variable, want)
		}
	}
}
