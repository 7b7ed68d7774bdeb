package testkubespray

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testcluster"
)

// Registry is a site registry as the product's upload commands reach it.
type Registry struct {
	// Addr is HOST:PORT[/NAMESPACE].
	Addr, Username, Password, CAFile string
}

// FileSet is the file set UploadDownloads uploads kubespray's files as, NAME:VERSION.
const FileSet = "kubespray:" + testcluster.KubesprayVersion

// UploadDownloads uploads a build of everything kubespray downloads (hack/kubespray-downloads.sh's
// folder) into the site registry with the product's upload commands, as an operator does: its
// files as FileSet, its images from its list. stateDir keeps the file-set upload's state.
func UploadDownloads(t *testing.T, reg Registry, built, stateDir string) {
	t.Helper()
	t.Setenv("BPA_REGISTRY_PASSWORD", reg.Password)
	for _, args := range [][]string{
		{"file-set", FileSet, filepath.Join(built, "files"), "--state-dir", stateDir},
		{"images", "--from", filepath.Join(built, "images.list")},
	} {
		start := time.Now()
		var out, errb bytes.Buffer
		args = append(append([]string{"upload"}, args...), "--registry", reg.Addr, "--username", reg.Username, "--ca-file", reg.CAFile)
		if code := cli.ExecuteContext(context.Background(), args, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", strings.Join(args[:2], " "), code, errb.String())
		}
		t.Logf("kubespray's downloads: %s in %s: %d lines", strings.Join(args[:2], " "), time.Since(start).Round(time.Second), strings.Count(out.String(), "\n"))
	}
}
