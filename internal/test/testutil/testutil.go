// Package testutil finds the specification's sample CRs and site files in config/samples and
// loads them, for tests only. The repository is self-contained: no test reads outside it.
package testutil

import (
	"os"
	"path/filepath"
	"testing"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
)

// RepoRoot is the directory holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Fixture is the path of one of the specification's sample files, the project's own copies:
// CRs in config/samples, the sample site (BareMetalHosts, lease files) in config/samples/site.
func Fixture(t testing.TB, name string) string {
	t.Helper()
	for _, dir := range []string{"config/samples", "config/samples/site"} {
		path := filepath.Join(RepoRoot(t), dir, name)
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	t.Fatalf("fixture %s: not in config/samples or config/samples/site", name)
	return ""
}

// SiteHosts loads the sample site's BareMetalHosts.
func SiteHosts(t testing.TB) []metal3v1alpha1.BareMetalHost {
	t.Helper()
	hosts, err := manifest.BareMetalHosts(Fixture(t, "sample-site-baremetalhosts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return hosts
}

// Provisioning loads a Provisioning fixture.
func Provisioning(t testing.TB, name string) *bpav1.Provisioning {
	t.Helper()
	p, err := manifest.Provisioning(Fixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ProvisioningFixtures are the sample Provisionings of the specification.
var ProvisioningFixtures = []string{
	"provisioning-cluster-abc.yaml",
	"provisioning-cluster-efg-kud-plugins.yaml",
	"provisioning-cluster-rst-by-resources.yaml",
	"provisioning-cluster-xyz-resources.yaml",
}

// WriteTree writes files (a slash-separated path → its content) under dir, making folders as
// needed, and returns dir.
func WriteTree(t testing.TB, dir string, files map[string]string) string {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
