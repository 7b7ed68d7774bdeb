package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
)

// DebPackage is a package the test repository carries.
type DebPackage struct{ Name, Version string }

// AptNode is a node's package system made for a test: a local file: repository built with
// dpkg-deb and apt-ftparchive, its own dpkg database and install root, and an apt
// configuration pointing at them. Its Env (APT_CONFIG, DPKG_ADMINDIR), set by sshd in the
// node's sessions, makes the real apt-get, dpkg and dpkg-query work on it, unchanged, and never
// on the machine's own.
type AptNode struct {
	Dir      string
	AdminDir string
	Root     string
	Env      map[string]string
}

// NewAptNode builds the repository with pkgs and a database holding status (DpkgStatus, say).
func NewAptNode(t *testing.T, status string, pkgs ...DebPackage) *AptNode {
	t.Helper()
	for _, tool := range []string{"dpkg-deb", "apt-ftparchive", "apt-get"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: run `make test-deps` (Debian dpkg, apt-utils)", tool)
		}
	}
	dir := testinterrupt.TempDir(t)
	n := &AptNode{Dir: dir, AdminDir: filepath.Join(dir, "dpkg"), Root: filepath.Join(dir, "root")}
	for _, d := range []string{"repo", "root", "dpkg/info", "dpkg/updates", "dpkg/triggers", "lists/partial",
		"cache/archives/partial", "etc/sources.list.d", "etc/preferences.d", "log", "build"} {
		mkdir(t, filepath.Join(dir, d))
	}
	writeFile(t, filepath.Join(n.AdminDir, "status"), status)
	writeFile(t, filepath.Join(n.AdminDir, "available"), "")
	for _, p := range pkgs {
		n.build(t, p)
	}
	repo := filepath.Join(dir, "repo")
	run(t, repo, filepath.Join(repo, "Packages"), "apt-ftparchive", "packages", ".")
	run(t, repo, filepath.Join(repo, "Release"), "apt-ftparchive", "release", ".")
	writeFile(t, filepath.Join(dir, "etc", "sources.list"), "deb [trusted=yes] file:"+repo+" ./\n")
	conf := fmt.Sprintf(`Dir::State::status "%[1]s/dpkg/status";
Dir::State::Lists "%[1]s/lists";
Dir::Cache "%[1]s/cache";
Dir::Etc::SourceList "%[1]s/etc/sources.list";
Dir::Etc::SourceParts "%[1]s/etc/sources.list.d";
Dir::Etc::Preferences "%[1]s/etc/preferences";
Dir::Etc::PreferencesParts "%[1]s/etc/preferences.d";
Dir::Log "%[1]s/log";
DPkg::Options { "--admindir=%[1]s/dpkg"; "--instdir=%[1]s/root"; };
APT::Sandbox::User "root";
`, dir)
	writeFile(t, filepath.Join(dir, "apt.conf"), conf)
	n.Env = map[string]string{"APT_CONFIG": filepath.Join(dir, "apt.conf"), "DPKG_ADMINDIR": n.AdminDir}
	return n
}

// build makes NAME_VERSION_all.deb in the repository; it installs one file naming its version.
func (n *AptNode) build(t *testing.T, p DebPackage) {
	t.Helper()
	tree := filepath.Join(n.Dir, "build", p.Name+"-"+strings.ReplaceAll(p.Version, ":", "_"))
	mkdir(t, filepath.Join(tree, "DEBIAN"))
	mkdir(t, filepath.Join(tree, "usr", "share", "bpa-test"))
	writeFile(t, filepath.Join(tree, "usr", "share", "bpa-test", p.Name), p.Version+"\n")
	writeFile(t, filepath.Join(tree, "DEBIAN", "control"), fmt.Sprintf(
		"Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: test <test@example.org>\nDescription: a test package\n", p.Name, p.Version))
	deb := filepath.Join(n.Dir, "repo", p.Name+"_"+strings.ReplaceAll(p.Version, ":", "%3a")+"_all.deb")
	run(t, "", "", "dpkg-deb", "--root-owner-group", "--build", tree, deb)
}

// Installed is the content of the file a package installed into the node's root, if any.
func (n *AptNode) Installed(name string) string {
	raw, err := os.ReadFile(filepath.Join(n.Root, "usr", "share", "bpa-test", name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}

func run(t *testing.T, dir, stdout string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out []byte
	var err error
	if stdout == "" {
		out, err = cmd.CombinedOutput()
	} else {
		out, err = cmd.Output()
		if err == nil {
			err = os.WriteFile(stdout, out, 0o644)
		}
	}
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
