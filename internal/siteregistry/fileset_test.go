package siteregistry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

func writeTree(t *testing.T, files map[string]string) string {
	return testutil.WriteTree(t, t.TempDir(), files)
}

func readSetFile(t *testing.T, c *Client, set FileSet, path string) string {
	t.Helper()
	a, ok := set.File(path)
	if !ok {
		t.Fatalf("%s has no %s", set.Ref, path)
	}
	return string(readFile(t, c, a))
}

func TestPushFileSetThenReadItBack(t *testing.T) {
	reg := testregistry.StartSecure(t)
	c := clientFor(t, reg, nil)
	ctx := testContext(t)
	tree := map[string]string{
		"dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm": strings.Repeat("k", 3<<20),
		"dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubelet": "kubelet",
		"get.helm.sh/helm-v3.17.3-linux-amd64.tar.gz":       "helm",
		"a-b/c": "sorted as a whole path, after a-b/ and before a/",
		"a/b":   "ab",
	}
	dir := writeTree(t, tree)
	ref := artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: "v2.28.0"}
	pushed, err := c.PushFileSet(ctx, ref, dir, PushOptions{ChunkSize: 1 << 20, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if pushed.Files != 5 || pushed.AlreadyThere != 0 || pushed.Sent != pushed.Size || pushed.Reference != reg.Addr+"/site/files/kubespray:v2.28.0" {
		t.Fatalf("pushed = %+v", pushed)
	}
	set, err := c.ResolveSet(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if set.Manifest.Digest != pushed.Manifest.Digest || len(set.Files) != 5 {
		t.Fatalf("resolved %+v, pushed %+v", set, pushed)
	}
	for p, data := range tree {
		if got := readSetFile(t, c, set, p); got != data {
			t.Errorf("%s: read back %d bytes, want %d", p, len(got), len(data))
		}
	}
	for _, p := range []string{"dl.k8s.io", "dl.k8s.io/release", "kubeadm", "a", "z"} {
		if _, ok := set.File(p); ok {
			t.Errorf("File(%q) found a file", p)
		}
	}

	// The same tree again sends nothing and makes the same manifest.
	again, err := c.PushFileSet(ctx, ref, dir, PushOptions{})
	if err != nil || again.AlreadyThere != 5 || again.Sent != 0 || again.Manifest.Digest != pushed.Manifest.Digest {
		t.Fatalf("second push = %+v, %v", again, err)
	}

	// A changed tree under the same version is refused unless replacing, and the set is kept.
	if err := os.WriteFile(filepath.Join(dir, "a", "b"), []byte("changed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PushFileSet(ctx, ref, dir, PushOptions{}); err == nil || !strings.Contains(err.Error(), "already holds a different set of 5 files") {
		t.Fatalf("push of a changed set: %v", err)
	}
	set, _ = c.ResolveSet(ctx, ref)
	if got := readSetFile(t, c, set, "a/b"); got != "ab" {
		t.Fatalf("the refused push changed a/b to %q", got)
	}
	replaced, err := c.PushFileSet(ctx, ref, dir, PushOptions{Replace: true})
	if err != nil || replaced.AlreadyThere != 4 || replaced.Sent != int64(len("changed")) {
		t.Fatalf("replacing push = %+v, %v", replaced, err)
	}
	set, _ = c.ResolveSet(ctx, ref)
	if got := readSetFile(t, c, set, "a/b"); got != "changed" {
		t.Fatalf("after --replace a/b is %q", got)
	}

	// A file set is not read as a binary, nor a binary as a file set.
	if _, err := c.Resolve(ctx, artifacts.Ref{Kind: artifacts.Binary, Name: "kubespray", Version: "v2.28.0"}); err == nil {
		t.Fatal("the file set resolved as a binary")
	}
	path, _ := randomFile(t, "tool", 10)
	bin := artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "1"}
	if _, err := c.PushFile(ctx, bin, path, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResolveSet(ctx, artifacts.Ref{Kind: artifacts.FileSet, Name: "tool", Version: "1"}); err == nil {
		t.Fatal("binaries/tool resolved as a file set")
	}
}

func TestFileSetRefusals(t *testing.T) {
	reg := testregistry.StartSecure(t)
	c := clientFor(t, reg, nil)
	ctx := testContext(t)
	ref := artifacts.Ref{Kind: artifacts.FileSet, Name: "kud-plugins", Version: "1"}

	linked := writeTree(t, map[string]string{"multus.yaml": "x"})
	if err := os.Symlink("/etc/passwd", filepath.Join(linked, "passwd")); err != nil {
		t.Fatal(err)
	}
	hidden := writeTree(t, map[string]string{"multus.yaml": "x", "sub/.secret": "y"})
	big := writeTree(t, map[string]string{"a": strings.Repeat("a", 600), "b": strings.Repeat("b", 600)})
	for name, tc := range map[string]struct {
		dir  string
		opts PushOptions
		ref  artifacts.Ref
		want string
	}{
		"a symbolic link":      {dir: linked, ref: ref, want: "passwd: not a regular file"},
		"a hidden file":        {dir: hidden, ref: ref, want: `path "sub/.secret" in a file set`},
		"over the bound":       {dir: big, ref: ref, opts: PushOptions{MaxSize: 1000}, want: "over the upload bound of 1000 B at b (--max-size)"},
		"an empty directory":   {dir: t.TempDir(), ref: ref, want: "no files to upload"},
		"a missing directory":  {dir: filepath.Join(t.TempDir(), "nope"), ref: ref, want: "no such file or directory"},
		"not a file set ref":   {dir: big, ref: artifacts.Ref{Kind: artifacts.Binary, Name: "a", Version: "1"}, want: "is not a file set"},
		"a version with slash": {dir: big, ref: artifacts.Ref{Kind: artifacts.FileSet, Name: "a", Version: "../1"}, want: "want an OCI tag"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.PushFileSet(ctx, tc.ref, tc.dir, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := c.ResolveSet(ctx, ref); err == nil {
		t.Fatal("a refused upload left a set behind")
	}
}
