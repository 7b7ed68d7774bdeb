// Package testutil finds the shared fixtures and loads them, for tests only.
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

// Fixture is the path of a file in the specification's fixtures, kept in ../shared/fixtures
// beside the checkout.
func Fixture(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(RepoRoot(t), "..", "shared", "fixtures", name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("fixture %s: %v (the shared fixtures must be checked out beside the repository)", name, err)
	}
	return path
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
