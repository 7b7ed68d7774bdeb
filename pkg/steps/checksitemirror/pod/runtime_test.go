package pod

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/fileserver"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubespraydownloads"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checksitemirror"
)

// TestTheMirrorIsAskedForEverything runs the check against a real site registry behind the
// real file server: kubeadm uploaded in kubespray's file set and the pause image pushed are
// found; kubelet and coredns, never uploaded, are named missing, with a file from elsewhere;
// once they are there the check passes; a mirror that does not answer is waited for.
func TestTheMirrorIsAskedForEverything(t *testing.T) {
	reg := testregistry.StartSecure(t)
	client, err := siteregistry.New(siteregistry.Config{Registry: reg.Addr + "/site", Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&fileserver.Handler{Registry: client})
	t.Cleanup(srv.Close)
	base, registry := srv.URL, strings.TrimPrefix(srv.URL, "http://")
	files := base + "/files/kubespray/v2.30.0"

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	set := t.TempDir()
	write := func(rel string) {
		p := filepath.Join(set, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(rel), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("dl.k8s.io/release/v1.34.3/bin/linux/amd64/kubeadm")
	upload := func() {
		if _, err := client.PushFileSet(ctx, artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: "v2.30.0"}, set, siteregistry.PushOptions{Replace: true}); err != nil {
			t.Fatal(err)
		}
	}
	upload()
	push := func(name, tag string) {
		repo, err := client.Repository(name)
		if err != nil {
			t.Fatal(err)
		}
		testregistry.PushImage(t, repo, tag, []byte("layer of "+name))
	}
	push("pause", "3.10.1")

	list := map[string][]kubespraydownloads.Download{
		"master-1": {
			{Name: "kubeadm", URL: files + "/dl.k8s.io/release/v1.34.3/bin/linux/amd64/kubeadm"},
			{Name: "kubelet", URL: files + "/dl.k8s.io/release/v1.34.3/bin/linux/amd64/kubelet"},
			{Name: "pod_infra", Image: registry + "/pause:3.10.1"},
			{Name: "coredns", Image: registry + "/coredns/coredns:v1.12.1"},
		},
		"worker-1": {
			{Name: "kubelet", URL: files + "/dl.k8s.io/release/v1.34.3/bin/linux/amd64/kubelet"},
			{Name: "runc", URL: "https://github.com/opencontainers/runc/releases/download/v1.3.4/runc.amd64"},
		},
	}
	check := func(list map[string][]kubespraydownloads.Download, mirror string) (string, error) {
		raw, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), kubespraydownloads.File)
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		err = Run(ctx, &http.Client{Timeout: 5 * time.Second}, file, mirror, &log)
		return log.String(), err
	}

	log, err := check(list, base)
	want := "the site's mirror lacks 3 of the 5 files and images kubespray fetches for this run; missing: coredns (image " + registry + "/coredns/coredns:v1.12.1), kubelet (" + files +
		"/dl.k8s.io/release/v1.34.3/bin/linux/amd64/kubelet); not from the mirror"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "runc (https://github.com/") || steps.IsRetryable(err) {
		t.Errorf("with kubelet, coredns and runc not on the mirror: %v\nwant a final failure starting %q", err, want)
	}
	for _, line := range []string{"ok      kubeadm", "ok      pod_infra", "MISSING kubelet", "MISSING coredns", "NOT FROM THE MIRROR runc"} {
		if !strings.Contains(log, line) {
			t.Errorf("the log lacks %q:\n%s", line, log)
		}
	}

	write("dl.k8s.io/release/v1.34.3/bin/linux/amd64/kubelet")
	upload()
	push("coredns/coredns", "v1.12.1")
	list["worker-1"] = list["worker-1"][:1]
	if log, err := check(list, base); err != nil || !strings.Contains(log, "holds all 4 files and images") {
		t.Errorf("with everything uploaded: %v\n%s", err, log)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	_ = l.Close()
	list = map[string][]kubespraydownloads.Download{"master-1": {{Name: "kubeadm", URL: down + "/files/kubespray/v2.30.0/kubeadm"}}}
	if _, err := check(list, down); err == nil || !steps.IsRetryable(err) || !strings.Contains(err.Error(), "the site's mirror "+down+" does not answer") {
		t.Errorf("a mirror that does not answer: %v, want a retryable failure saying so", err)
	}
}

func TestWhere(t *testing.T) {
	for _, tc := range []struct {
		d    kubespraydownloads.Download
		want string
		ok   bool
	}{
		{kubespraydownloads.Download{Name: "a", URL: "http://m:8080/files/k/v/x"}, "http://m:8080/files/k/v/x", true},
		{kubespraydownloads.Download{Name: "a", URL: "http://m:80800/files/k/v/x"}, "http://m:80800/files/k/v/x", false},
		{kubespraydownloads.Download{Name: "a", Image: "m:8080/pause:3.10"}, "http://m:8080/v2/pause/manifests/3.10", true},
		{kubespraydownloads.Download{Name: "a", Image: "m:8080/coredns/coredns:v1.12.1"}, "http://m:8080/v2/coredns/coredns/manifests/v1.12.1", true},
		{kubespraydownloads.Download{Name: "a", Image: "registry.k8s.io/pause:3.10"}, "", false},
		{kubespraydownloads.Download{Name: "a", Image: "m:8080/pause"}, "", false},
	} {
		got, ok := checksitemirror.Where(tc.d, "http://m:8080", "m:8080")
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("Where(%v) = %q %v, want %q %v", tc.d, got, ok, tc.want, tc.ok)
		}
	}
}
