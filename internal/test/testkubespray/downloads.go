package testkubespray

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
)

// Registry is a site registry as the product's upload commands reach it.
type Registry struct {
	// Addr is HOST:PORT[/NAMESPACE].
	Addr, Username, Password, CAFile string
}

// FileSet is the file set UploadDownloads uploads kubespray's files as, NAME:VERSION.
const FileSet = "kubespray:" + testcluster.KubesprayVersion

// UploadDownloads uploads one or more builds of everything kubespray downloads
// (hack/kubespray-downloads.sh's folders: one per Kubernetes version) into the site registry
// with the product's upload commands, as an operator does: their files together as FileSet, a
// site's one set for the release, and the images of each from its list. stateDir keeps the
// file-set upload's state.
func UploadDownloads(t *testing.T, reg Registry, stateDir string, builds ...string) {
	t.Helper()
	t.Setenv("BPA_REGISTRY_PASSWORD", reg.Password)
	files := filepath.Join(builds[0], "files")
	if len(builds) > 1 {
		files = mergeFiles(t, builds)
	}
	uploads := [][]string{{"file-set", FileSet, files, "--state-dir", stateDir}}
	for _, built := range builds {
		uploads = append(uploads, []string{"images", "--from", filepath.Join(built, "images.list")})
	}
	for _, args := range uploads {
		start := time.Now()
		var out, errb bytes.Buffer
		args = append(append([]string{"upload"}, args...), "--registry", reg.Addr, "--username", reg.Username, "--ca-file", reg.CAFile)
		if code := cli.ExecuteContext(context.Background(), args, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", strings.Join(args[:2], " "), code, errb.String())
		}
		t.Logf("kubespray's downloads: %s in %s: %d lines", strings.Join(args[:2], " "), time.Since(start).Round(time.Second), strings.Count(out.String(), "\n"))
	}
}

// mergeFiles links (or, across file systems, copies) the builds' files into one tree (a file two builds both hold, etcd's say,
// must be the same bytes: one release, one file).
func mergeFiles(t *testing.T, builds []string) string {
	t.Helper()
	merged := testinterrupt.TempDir(t)
	for _, built := range builds {
		root := filepath.Join(built, "files")
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			dst := filepath.Join(merged, rel)
			if have, err := os.ReadFile(dst); err == nil {
				want, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if !bytes.Equal(have, want) {
					return fmt.Errorf("%s: two builds hold different files at %s", built, rel)
				}
				return nil
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if os.Link(path, dst) == nil {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, data, 0o644)
		})
		if err != nil {
			t.Fatalf("merging the downloads builds' files: %v", err)
		}
	}
	return merged
}
