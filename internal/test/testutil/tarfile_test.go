package testutil

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileInArchive: a file is found under any top folder of a plain or a gzipped archive,
// and a path not under a top folder, or absent, is an error naming it.
func TestFileInArchive(t *testing.T) {
	var plain bytes.Buffer
	tw := tar.NewWriter(&plain)
	for name, body := range map[string]string{"./kubespray/roles/a.yml": "a", "kubespray-v2/playbooks/b.yml": "b", "roles/c.yml": "c", "top.yml": "t"} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	gz := gzip.NewWriter(&zipped)
	_, _ = gz.Write(plain.Bytes())
	_ = gz.Close()
	dir := t.TempDir()
	for name, content := range map[string][]byte{"plain.tar": plain.Bytes(), "zipped.tar.gz": zipped.Bytes()} {
		archive := filepath.Join(dir, name)
		if err := os.WriteFile(archive, content, 0o644); err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]string{"roles/a.yml": "a", "playbooks/b.yml": "b", "c.yml": "c", "top.yml": "", "roles/x.yml": ""} {
			got, err := FileInArchive(archive, path)
			if want == "" {
				if err == nil || !strings.Contains(err.Error(), path) {
					t.Errorf("%s %s: %q, %v; want an error naming it", name, path, got, err)
				}
				continue
			}
			if err != nil || string(got) != want {
				t.Errorf("%s %s: %q, %v; want %q", name, path, got, err, want)
			}
		}
	}
}
