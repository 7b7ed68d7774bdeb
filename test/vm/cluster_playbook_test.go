//go:build vm

package vm_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

// clusterPlaybookPath is where the suite puts its cut of cluster.yml in kubespray's tree: beside
// the real one, so that its imports (boilerplate.yml, internal_facts.yml...) resolve as they do.
const clusterPlaybookPath = "/kubespray/playbooks/bpa-cluster.yml"

// clusterPlaybook is the real playbooks/cluster.yml of the kubespray release the test cluster is
// built for, read from the source its image is built from, cut after the first play that runs
// the role through: the same plays, in the same order, with the same options, and none after.
func clusterPlaybook(t *testing.T, through string) []byte {
	t.Helper()
	tarball := kubesprayTarball(t)
	raw, err := testutil.FileInArchive(tarball, "playbooks/cluster.yml")
	if err != nil {
		t.Fatal(err)
	}
	cut, err := cutPlaybook(raw, through)
	if err != nil {
		t.Fatalf("%s: %v", tarball, err)
	}
	return cut
}

// kubesprayTarball is the source of the kubespray release the test cluster is built for, in
// ../shared/third_party.
func kubesprayTarball(t *testing.T) string {
	return filepath.Join(testutil.RepoRoot(t), "..", "shared", "third_party", "kubespray-"+testcluster.KubesprayVersion+".tar.gz")
}

// cutPlaybook keeps a playbook's plays up to the first that runs the role through.
func cutPlaybook(raw []byte, through string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode {
		return nil, errors.New("cluster.yml is not a list of plays")
	}
	plays := doc.Content[0]
	for i, play := range plays.Content {
		if slices.Contains(rolesOf(play), through) {
			plays.Content = plays.Content[:i+1]
			return yaml.Marshal(&doc)
		}
	}
	return nil, fmt.Errorf("no play of cluster.yml runs the role %s", through)
}

// rolesOf is the roles a play runs, written as names or as {role: NAME, ...}.
func rolesOf(play *yaml.Node) []string {
	var names []string
	for i := 0; i+1 < len(play.Content); i += 2 {
		if play.Content[i].Value != "roles" {
			continue
		}
		for _, r := range play.Content[i+1].Content {
			if r.Kind == yaml.ScalarNode {
				names = append(names, r.Value)
				continue
			}
			for j := 0; j+1 < len(r.Content); j += 2 {
				if r.Content[j].Value == "role" {
					names = append(names, r.Content[j+1].Value)
				}
			}
		}
	}
	return names
}

// TestClusterPlaybookCut: cut after the download role, the real cluster.yml keeps its common
// plays and facts, and ends with the play that prepares the nodes for etcd (preinstall, the
// container engine, the downloads).
func TestClusterPlaybookCut(t *testing.T) {
	if _, err := os.Stat(kubesprayTarball(t)); err != nil {
		t.Skipf("kubespray's source is not here: ../shared/third_party is absent (%v)", err)
	}
	var plays []map[string]any
	if err := yaml.Unmarshal(clusterPlaybook(t, "download"), &plays); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range plays {
		names = append(names, fmt.Sprint(p["name"]))
	}
	if want := []string{"Common tasks for every playbooks", "Gather facts", "Prepare for etcd install"}; !slices.Equal(names, want) {
		t.Errorf("cluster.yml cut after its downloads: plays %q, want %q", names, want)
	}
	if _, err := cutPlaybook([]byte("- name: a\n  roles: [x]\n"), "download"); err == nil {
		t.Error("a playbook without the role was cut")
	}
}
