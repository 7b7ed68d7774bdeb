package ociimage_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/akraino-edge-stack/bpa-workflow-controller/hack/internal/ociimage"
)

func TestContainerdName(t *testing.T) {
	for _, tc := range []struct{ ref, want string }{
		{"bpa-kubectl:v1.33.13", "docker.io/library/bpa-kubectl:v1.33.13"},
		{"kubespray/kubespray:v2.28.0", "docker.io/kubespray/kubespray:v2.28.0"},
		{"registry.site.example:5000/bpa/argoexec:v3.7.18", "registry.site.example:5000/bpa/argoexec:v3.7.18"},
		{"127.0.0.1:5000/pause:3.10.1", "127.0.0.1:5000/pause:3.10.1"},
	} {
		got, err := ociimage.ContainerdName(tc.ref)
		if err != nil || got != tc.want {
			t.Errorf("ContainerdName(%q) = %q, %v; want %q", tc.ref, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "UPPER:case", "a b:c", "name:tag with space"} {
		if got, err := ociimage.ContainerdName(bad); err == nil {
			t.Errorf("ContainerdName(%q) = %q, want an error", bad, got)
		}
	}
}

// TestArchiveIsALayoutContainerdNames: the archive, unpacked, is an OCI image layout that reads
// back every image with its digest, each named in full for `ctr images import`; a layer two
// images share is written once.
func TestArchiveIsALayoutContainerdNames(t *testing.T) {
	base := ociimage.Base([]byte("test CA\n"))
	images := map[string]v1.Image{}
	for ref, data := range map[string]string{"one:v1": "1", "two/image:v2": "2"} {
		img, err := ociimage.Build(ociimage.Spec{Ref: ref, Files: []ociimage.File{{Path: "/usr/local/bin/x", Mode: 0o755, Data: []byte(data)}}}, base)
		if err != nil {
			t.Fatal(err)
		}
		images[ref] = img
	}
	var buf bytes.Buffer
	if err := ociimage.WriteArchive(&buf, images); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	names := map[string]int{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names[h.Name]++
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, n := range names {
		if n != 1 {
			t.Errorf("%s is written %d times", name, n)
		}
	}
	// Two images: two manifests, two configs, two app layers and one shared base layer.
	if blobs := len(names) - 2; blobs != 7 {
		t.Errorf("%d blobs, want 7 (the base layer once): %v", blobs, names)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index v1.IndexManifest
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"docker.io/library/one:v1": "one:v1", "docker.io/two/image:v2": "two/image:v2"}
	if len(index.Manifests) != len(want) {
		t.Fatalf("%d manifests in the index, want %d", len(index.Manifests), len(want))
	}
	for _, desc := range index.Manifests {
		full := desc.Annotations[ociimage.ContainerdNameAnnotation]
		ref, ok := want[full]
		if !ok {
			t.Errorf("manifest %s is named %q", desc.Digest, full)
			continue
		}
		img, err := p.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		got, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		orig, _ := images[ref].Digest()
		if got != orig {
			t.Errorf("%s reads back as %s, built as %s", ref, got, orig)
		}
		if _, err := img.RawConfigFile(); err != nil {
			t.Errorf("%s: config: %v", ref, err)
		}
		layers, _ := img.Layers()
		for _, l := range layers {
			if _, err := l.Compressed(); err != nil {
				t.Errorf("%s: layer: %v", ref, err)
			}
		}
	}
}
