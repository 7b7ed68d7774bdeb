package fileserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

func (s *site) uploadSet(t *testing.T, ref artifacts.Ref, files map[string]string) {
	t.Helper()
	dir := testutil.WriteTree(t, t.TempDir(), files)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.client.PushFileSet(ctx, ref, dir, siteregistry.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestFileSetIsServedByPath is kubespray's files_repo: a download URL is the set's URL plus the
// file's path in the set, with its checksum beside it.
func TestFileSetIsServedByPath(t *testing.T) {
	s := startSite(t)
	kubeadm := strings.Repeat("kubeadm", 100000)
	s.uploadSet(t, artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: "v2.28.0"}, map[string]string{
		"dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm": kubeadm,
		"notes/release.sha256sum":                           "a file of the set with that name",
	})
	base := s.url + "/files/kubespray/v2.28.0/"
	sum := sha256.Sum256([]byte(kubeadm))
	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm", 200, kubeadm},
		{"dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm.sha256sum", 200, hex.EncodeToString(sum[:]) + "  kubeadm\n"},
		{"notes/release.sha256sum", 200, "a file of the set with that name"},
		{"dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubectl", 404, "files/kubespray:v2.28.0 holds no dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubectl"},
		{"dl.k8s.io/release", 404, "holds no dl.k8s.io/release"},
		{"dl.k8s.io/../../etc/passwd", 404, `path "dl.k8s.io/../../etc/passwd" in a file set`},
		{"dl.k8s.io//kubeadm", 404, "in a file set"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, body, err := get(t, http.MethodGet, base+tc.path)
			if err != nil || resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) {
				t.Fatalf("GET %s: %s %.80q, %v; want %d %.80q", tc.path, resp.Status, body, err, tc.status, tc.body)
			}
		})
	}
	if resp, body, _ := get(t, http.MethodGet, s.url+"/files/kubespray/v2.27.0/x"); resp.StatusCode != 404 || !strings.Contains(string(body), "files/kubespray:v2.27.0 is not in the site registry") {
		t.Fatalf("GET a missing version: %s %q", resp.Status, body)
	}
}
