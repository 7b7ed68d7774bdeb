package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBuildKeyCoversWhatMakesTheBinary: a binary cached for one tool at one version is not
// reused once its build tags, its pins or its version stamps change (runc built without
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
		k, err := buildKey(o, tl)
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
	write("go.sum", "github.com/opencontainers/runc v1.3.4 h1:x\n")
	if key(base) == first {
		t.Errorf("go.sum changed: the same key %s", first)
	}
	if _, err := buildKey(options{tools: t.TempDir()}, base); err == nil {
		t.Error("a tool module without go.mod was keyed")
	}
}
