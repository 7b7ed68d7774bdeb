//go:build e2e

package e2e_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/fileserver"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testctr"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	checksitemirrorpod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checksitemirror/pod"
)

// TestKubesprayDownloadsFromTheSiteMirror: everything kubespray downloads for the test cluster,
// built here (hack/kubespray-downloads.sh; make e2e sets BPA_KUBESPRAY_DOWNLOADS), goes into the
// site registry with the product's own upload commands. Then the real kubespray (its image, the
// compiled list-kubespray-downloads step) lists what it fetches for an offline Provisioning with
// the test cluster's options and the build's checksums as typed extra variables; the real
// check-site-mirror finds every one in the mirror; each file the mirror serves has the checksum
// kubespray will check it against; and the control plane's and network's images, pulled from
// the mirror by containerd, run.
func TestKubesprayDownloadsFromTheSiteMirror(t *testing.T) {
	archive, built := testkubespray.TestClusterBuild(t)
	if os.Geteuid() != 0 {
		t.Fatal("containers need root")
	}
	dir := testinterrupt.ScratchDir(t, "bpa-downloads-")
	report, err := os.ReadFile(filepath.Join(built, "built.txt"))
	must(t, err)
	say(t, "downloads: %s", strings.TrimSpace(string(report)))

	reg := testregistry.StartSecure(t)
	client, err := siteregistry.New(siteregistry.Config{Registry: reg.Addr + "/site", Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile})
	must(t, err)
	srv := httptest.NewServer(&fileserver.Handler{Registry: client})
	t.Cleanup(srv.Close)
	testkubespray.UploadDownloads(t, testkubespray.Registry{Addr: reg.Addr + "/site", Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile},
		filepath.Join(dir, "upload-state"), built)

	vars, err := testcluster.Vars(built)
	must(t, err)
	p, hosts := testcluster.Offline(vars)
	mirror := &offline.Mirror{URL: srv.URL, KubesprayFiles: artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: testcluster.KubesprayVersion}}
	ctrd := testctr.Start(t, dir)
	ref := ctrd.Import(t, archive, "/kubespray:")
	all, _, listFile := listDownloadsFor(t, ctrd, ref, dir, p, hosts, mirror)

	var log bytes.Buffer
	if err := checksitemirrorpod.Run(ctx(), http.DefaultClient, listFile, srv.URL, &log); err != nil {
		t.Fatalf("check-site-mirror: %v\n%s", err, log.String())
	}
	say(t, "downloads: check-site-mirror finds all %d of kubespray's downloads in the mirror", len(all))

	// kubespray's get_url checks each file against the checksum it evaluated, which is the
	// build's, given as a typed extra variable.
	files := 0
	for _, d := range all {
		if d.IsImage() {
			continue
		}
		files++
		if got := sha256Of(t, d.URL); "sha256:"+got != d.Checksum {
			t.Errorf("%s: the mirror serves sha256:%s, kubespray checks against %q", d, got, d.Checksum)
		}
	}
	say(t, "downloads: each of the %d files the mirror serves has the checksum kubespray checks it against", files)

	// The images run: pulled from the mirror by containerd, as a node pulls them.
	registry := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct{ image, want string }{
		{"kube-apiserver:v1.34.3", "Kubernetes v1.34.3"},
		{"kube-proxy:v1.34.3", "/usr/sbin/conntrack"}, // its version, iptables, and ipvs mode's ipset
		{"coredns/coredns:v1.12.1", "CoreDNS-1.12.1"},
		{"flannel/flannel:v0.27.4", "v0.27.4"},
	} {
		img := registry + "/" + c.image
		if _, err := ctrd.Ctr("images", "pull", "--plain-http", img); err != nil {
			t.Fatalf("pulling %s from the mirror: %v", img, err)
		}
		cmd := map[string][]string{
			"kube-apiserver:v1.34.3":  {"kube-apiserver", "--version"},
			"kube-proxy:v1.34.3":      {"sh", "-c", "kube-proxy --version && iptables --version && command -v ipset && command -v conntrack"},
			"coredns/coredns:v1.12.1": {"/coredns", "-version"},
			"flannel/flannel:v0.27.4": {"/opt/bin/flanneld", "--version"},
		}[c.image]
		out, err := ctrd.Run(img, nil, cmd...)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("%s in %s: %v\n%s", strings.Join(cmd, " "), img, err, tail(out, 10))
			continue
		}
		say(t, "downloads: %s runs: %s", c.image, strings.Join(strings.Fields(out), " "))
	}
}

func sha256Of(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Get(url) //nolint:noctx // the test's own mirror, bounded by the timeout
	must(t, err)
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	h := sha256.New()
	_, err = io.Copy(h, resp.Body)
	must(t, err)
	return fmt.Sprintf("%x", h.Sum(nil))
}
