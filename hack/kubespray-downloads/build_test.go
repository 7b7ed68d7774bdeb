package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildKeyCoversWhatMakesTheBinary: a binary cached for one tool at one version is not
// reused once its build tags, its pins, its version stamps or the Go that builds it change (runc built without
// seccomp once outlived the tag that asked for it).
func TestBuildKeyCoversWhatMakesTheBinary(t *testing.T) {
	tools := t.TempDir()
	dir := filepath.Join(tools, "runc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module x\n\nrequire github.com/opencontainers/runc v1.3.4\n")
	write("go.sum", "")
	o := options{tools: tools}
	base := tool{Dir: "runc", CGO: true, LDFlags: "-X main.version=VERSION"}
	key := func(tl tool) string {
		t.Helper()
		k, err := buildKey(o, tl, "runc", "")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	first := key(base)
	if again := key(base); again != first {
		t.Fatalf("the same build keyed %s, then %s", first, again)
	}
	withTags := base
	withTags.Tags = []string{"seccomp"}
	withStamps := base
	withStamps.LDFlags = "-X main.version=VERSION -X main.gitCommit=x"
	for what, tl := range map[string]tool{"a build tag": withTags, "a version stamp": withStamps} {
		if key(tl) == first {
			t.Errorf("%s added: the same key %s", what, first)
		}
	}
	if k, err := buildKey(o, base, "runc", "go1.24.5"); err != nil || k == first {
		t.Errorf("built with upstream's Go, not the machine's: key %s, %v (the machine's: %s)", k, err, first)
	}
	write("go.sum", "github.com/opencontainers/runc v1.3.4 h1:x\n")
	if key(base) == first {
		t.Errorf("go.sum changed: the same key %s", first)
	}
	if _, err := buildKey(options{tools: t.TempDir()}, base, "runc", ""); err == nil {
		t.Error("a tool module without go.mod was keyed")
	}
}

// TestSourceOfPicksTheModuleAtTheWantedVersion: a tool with a module per version (Kubernetes
// for an upgrade's two) is built from the folder whose go.mod pins the version kubespray asks
// for; a version no folder pins is an error naming what there is.
func TestSourceOfPicksTheModuleAtTheWantedVersion(t *testing.T) {
	tools := t.TempDir()
	for dir, version := range map[string]string{"kubernetes": "v1.34.3", "kubernetes-1.33.4": "v1.33.4"} {
		if err := os.MkdirAll(filepath.Join(tools, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		gomod := "module example.com/" + dir + "\n\ngo 1.25\n\nrequire k8s.io/kubernetes " + version + "\n"
		if err := os.WriteFile(filepath.Join(tools, dir, "go.mod"), []byte(gomod), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := options{tools: tools}
	kubeadm := func(v string) plan {
		return plan{Download: file("kubeadm", "dl.k8s.io/release/v"+v+"/bin/linux/amd64/kubeadm"), Recipe: recipes["kubeadm"]}
	}
	seen := map[string]string{}
	for _, tc := range []struct{ version, dir string }{{"1.34.3", "kubernetes"}, {"1.33.4", "kubernetes-1.33.4"}} {
		src, err := sourceOf(o, kubeadm(tc.version), repo, seen)
		if err != nil {
			t.Fatalf("kubeadm %s: %v", tc.version, err)
		}
		if src.Dir != tc.dir || src.Version != "v"+tc.version {
			t.Errorf("kubeadm %s built from %+v, want %s at v%s", tc.version, src, tc.dir, tc.version)
		}
	}
	_, err := sourceOf(o, kubeadm("1.32.0"), repo, seen)
	if err == nil || !strings.Contains(err.Error(), "kubernetes at v1.34.3, kubernetes-1.33.4 at v1.33.4") {
		t.Errorf("kubeadm 1.32.0, which no folder pins: %v", err)
	}
	if _, err := sourceOf(options{pauseVersion: "3.10.1"}, plan{Download: image("pod_infra", "10.0.0.1:5000/pause:3.10"), Recipe: recipes["pod_infra"]}, repo, seen); err == nil {
		t.Error("pause 3.10 wanted, 3.10.1 built: no error")
	}
}
