package ociimage_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/akraino-edge-stack/bpa-workflow-controller/hack/internal/ociimage"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
)

var (
	buildOnce sync.Once
	layouts   [2]string
	buildErr  error
)

// builtTwice runs `make image`'s script twice from this commit into two new layouts.
func builtTwice(t *testing.T) [2]string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ociimage-test-")
		if err != nil {
			buildErr = err
			return
		}
		for i := range layouts {
			layouts[i] = filepath.Join(dir, []string{"first", "second"}[i])
			cmd := exec.Command(filepath.Join(testenv.RepoRoot(), "hack", "image.sh"), layouts[i])
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = &buildError{err: err, out: out}
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return layouts
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return "hack/image.sh: " + e.err.Error() + "\n" + string(e.out) }

func TestMain(m *testing.M) {
	code := m.Run()
	if layouts[0] != "" {
		_ = os.RemoveAll(filepath.Dir(layouts[0]))
	}
	os.Exit(code)
}

// digests reads the layout's index: image name → manifest digest.
func digests(t *testing.T, dir string) map[string]v1.Hash {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Hash{}
	for _, d := range m.Manifests {
		out[d.Annotations[ociimage.RefNameAnnotation]] = d.Digest
	}
	return out
}

func TestTwoBuildsGiveOneDigest(t *testing.T) {
	l := builtTwice(t)
	first, second := digests(t, l[0]), digests(t, l[1])
	if len(first) != 3 {
		t.Fatalf("the layout names %d images, want the controller, kubectl and the registry: %v", len(first), first)
	}
	for ref, d := range first {
		if second[ref] != d {
			t.Errorf("%s: %s, then %s", ref, d, second[ref])
		}
		t.Logf("%s\t%s", ref, d)
	}
	a, _ := os.ReadFile(filepath.Join(l[0], "index.json"))
	b, _ := os.ReadFile(filepath.Join(l[1], "index.json"))
	if !bytes.Equal(a, b) {
		t.Errorf("the two layouts' indexes differ:\n%s\n%s", a, b)
	}
}

// TestPushedImagesRunAsNonroot pushes the built layout to CNCF Distribution on 127.0.0.1,
// reads each image back by its tag and checks what a pod would meet: the digest, the user,
// /etc/passwd's entry for it, the binary's mode, and that the binary runs.
func TestPushedImagesRunAsNonroot(t *testing.T) {
	l := builtTwice(t)
	registry := testregistry.Start(t)
	pushed, err := ociimage.Push(l[0], registry+"/bpa")
	if err != nil {
		t.Fatal(err)
	}
	want := digests(t, l[0])
	if len(pushed) != len(want) {
		t.Fatalf("pushed %d images, want %d", len(pushed), len(want))
	}
	for _, p := range pushed {
		ref, err := name.ParseReference(p.Ref)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(ref)
		if err != nil {
			t.Fatalf("reading %s back: %v", p.Ref, err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		short := strings.TrimPrefix(p.Ref, registry+"/bpa/")
		if d != want[short] {
			t.Errorf("%s: the registry serves %s, the layout holds %s", p.Ref, d, want[short])
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Config.User != "65532:65532" || cfg.OS != "linux" || len(cfg.Config.Entrypoint) != 1 {
			t.Errorf("%s: user %q, os %q, entrypoint %v", p.Ref, cfg.Config.User, cfg.OS, cfg.Config.Entrypoint)
		}
		files := extract(t, img)
		if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd has no entry for 65532:\n%s", p.Ref, files["etc/passwd"].data)
		}
		if len(files["etc/ssl/certs/ca-certificates.crt"].data) == 0 {
			t.Errorf("%s: no CA certificates", p.Ref)
		}
		if tmp := files["tmp"]; tmp.mode != 0o1777 {
			t.Errorf("%s: /tmp mode %o, want 1777", p.Ref, tmp.mode)
		}
		entry := strings.TrimPrefix(cfg.Config.Entrypoint[0], "/")
		bin := files[entry]
		if bin.mode != 0o755 || bin.uid != 0 {
			t.Fatalf("%s: %s mode %o uid %d, want 755 owned by root", p.Ref, entry, bin.mode, bin.uid)
		}
		exe := filepath.Join(t.TempDir(), "entrypoint")
		if err := os.WriteFile(exe, bin.data, 0o755); err != nil {
			t.Fatal(err)
		}
		arg := "--help"
		if strings.HasSuffix(entry, "kubectl") {
			arg = "version --client"
		}
		out, err := exec.Command(exe, strings.Fields(arg)...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %s %s: %v\n%s", p.Ref, entry, arg, err, out)
		}
	}
}

type entry struct {
	data []byte
	mode int64
	uid  int
}

func extract(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = entry{data: data, mode: h.Mode, uid: h.Uid}
	}
}

func TestBuildRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []ociimage.File
		want  string
	}{
		{"a relative path", []ociimage.File{{Path: "usr/local/bin/x", Mode: 0o755}}, "not a clean absolute path"},
		{"an unclean path", []ociimage.File{{Path: "/usr/local/bin/../x", Mode: 0o755}}, "not a clean absolute path"},
		{"a file twice", []ociimage.File{{Path: "/usr/local/bin/x", Mode: 0o755}, {Path: "/usr/local/bin/x", Mode: 0o644}}, "listed twice"},
		{"a directory the base lacks", []ociimage.File{{Path: "/opt/x", Mode: 0o755}}, "not one of the base's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ociimage.Build(ociimage.Spec{Ref: "bpa-test:v1", Files: tc.files}, ociimage.Base([]byte("certs")))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if _, err := ociimage.Build(ociimage.Spec{Ref: "Not A Ref"}, nil); err == nil {
		t.Error("an image name with spaces was accepted")
	}
}
