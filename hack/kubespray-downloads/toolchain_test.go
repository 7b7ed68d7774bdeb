package main

import (
	"archive/zip"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestParseGoVersion: a .go-version names one released Go; anything else (a second line, a
// toolchain name, a shell word) is refused before it reaches GOTOOLCHAIN.
func TestParseGoVersion(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{"1.24.5\n", "go1.24.5"},
		{"1.24.11", "go1.24.11"},
		{" 1.25\n", "go1.25"},
		{"", ""},
		{"go1.24.5", ""},
		{"1.24.5\n1.25.0\n", ""},
		{"1.24.5;rm -rf /", ""},
		{"1.24rc1", ""},
		{"1.24.5+auto", ""},
		{"2.0.0", ""},
	} {
		got, err := parseGoVersion(tc.content)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("parseGoVersion(%q) = %q, want an error", tc.content, got)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("parseGoVersion(%q) = %q, %v; want %q", tc.content, got, err, tc.want)
		case err != nil && !strings.Contains(err.Error(), "1.24.5"):
			t.Errorf("parseGoVersion(%q): %v does not say what it wants", tc.content, err)
		}
	}
}

// TestToolchainOfReadsUpstreamsGoVersion: a tool whose upstream names its Go is built with the
// Go its pinned module's source names, read through the real go command from a module proxy
// (a file:// one the test lays out); a tool without GoVersionFile uses the machine's Go, and a
// source without the file is an error naming it.
func TestToolchainOfReadsUpstreamsGoVersion(t *testing.T) {
	proxy, tools := t.TempDir(), t.TempDir()
	upstream := func(version string, files map[string]string) {
		t.Helper()
		dir := filepath.Join(proxy, "example.com", "upstream", "@v")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		gomod := "module example.com/upstream\n\ngo 1.24.0\n"
		write(t, filepath.Join(dir, version+".mod"), gomod)
		write(t, filepath.Join(dir, version+".info"), `{"Version":"`+version+`"}`)
		f, err := os.Create(filepath.Join(dir, version+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		z := zip.NewWriter(f)
		files["go.mod"] = gomod
		for name, content := range files {
			w, err := z.Create("example.com/upstream@" + version + "/" + name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte(content)); err != nil {
				t.Fatal(err)
			}
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		folder := filepath.Join(tools, "upstream-"+version)
		if err := os.MkdirAll(folder, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(folder, "go.mod"), "module example.com/tool\n\ngo 1.24.0\n\nrequire example.com/upstream "+version+"\n")
	}
	upstream("v1.0.0", map[string]string{".go-version": "1.24.5\n"})
	upstream("v1.1.0", map[string]string{})
	upstream("v1.2.0", map[string]string{".go-version": "1.24.5 && true\n"})

	cache := t.TempDir()
	// The module cache is read-only; this runs before TempDir's removal.
	t.Cleanup(func() {
		_ = filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	t.Setenv("GOMODCACHE", cache)
	t.Setenv("GOPROXY", "file://"+proxy)
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GOTOOLCHAIN", "local")

	o := options{tools: tools}
	tl := tool{Module: "example.com/upstream", GoVersionFile: ".go-version"}
	ctx := context.Background()
	if got, err := toolchainOf(ctx, o, tl, "upstream-v1.0.0"); err != nil || got != "go1.24.5" {
		t.Errorf("toolchainOf = %q, %v; want go1.24.5", got, err)
	}
	if got, err := toolchainOf(ctx, o, tool{Module: "example.com/upstream"}, "upstream-v1.0.0"); err != nil || got != "" {
		t.Errorf("without GoVersionFile: %q, %v; want the machine's Go (\"\")", got, err)
	}
	if got, err := toolchainOf(ctx, o, tl, "upstream-v1.1.0"); err == nil || !strings.Contains(err.Error(), ".go-version") {
		t.Errorf("a source without .go-version: %q, %v; want an error naming the file", got, err)
	}
	if got, err := toolchainOf(ctx, o, tl, "upstream-v1.2.0"); err == nil || !strings.Contains(err.Error(), "1.24.5 && true") {
		t.Errorf("a .go-version with more than a version: %q, %v; want an error quoting it", got, err)
	}
	if got, err := toolchainOf(ctx, o, tl, "absent"); err == nil {
		t.Errorf("a tool folder that is not there: %q, want an error", got)
	}
}

// TestBuiltWithReadsTheBinarysGo: the check after a build reads the Go a binary was built with
// from the binary itself (this test's own binary, built by the running Go).
func TestBuiltWithReadsTheBinarysGo(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := builtWith(self, runtime.Version()); err != nil {
		t.Errorf("built with %s: %v", runtime.Version(), err)
	}
	if err := builtWith(self, "go1.21.0"); err == nil || !strings.Contains(err.Error(), runtime.Version()) {
		t.Errorf("asked for go1.21.0: %v; want an error naming %s", err, runtime.Version())
	}
	if err := builtWith(self, ""); err != nil {
		t.Errorf("the machine's Go: %v", err)
	}
	notBinary := filepath.Join(t.TempDir(), "script")
	write(t, notBinary, "#!/bin/sh\n")
	if err := builtWith(notBinary, "go1.24.5"); err == nil {
		t.Error("a file that is no Go binary passed")
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseGoVersion: whatever a .go-version holds, what reaches GOTOOLCHAIN is "go" and a
// released version, digits and dots only, and what it accepts it reads back the same.
func FuzzParseGoVersion(f *testing.F) {
	for _, s := range []string{"1.24.5\n", "1.25", "go1.24.5", "1.24.5\n1.25.0", "1.24.5;rm", "", "1.999.999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		got, err := parseGoVersion(content)
		if err != nil {
			return
		}
		v, ok := strings.CutPrefix(got, "go1.")
		if !ok || v == "" || strings.Trim(v, "0123456789.") != "" || strings.Contains(v, "..") || strings.HasSuffix(v, ".") {
			t.Fatalf("parseGoVersion(%q) = %q", content, got)
		}
		if again, err := parseGoVersion(strings.TrimPrefix(got, "go")); err != nil || again != got {
			t.Fatalf("%q read back as %q, %v", got, again, err)
		}
	})
}
