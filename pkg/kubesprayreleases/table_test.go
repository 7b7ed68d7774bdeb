package kubesprayreleases

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

var update = flag.Bool("update", false, "rewrite releases.json from the kubespray releases in ../shared/third_party")

// TestTableMatchesKubespray: the table is what each kubespray release in ../shared/third_party
// says of itself, read from its sources; with -update it is rewritten from them.
func TestTableMatchesKubespray(t *testing.T) {
	// Tests run in the package's folder: ../shared/third_party is beside the checkout, two up.
	dir := filepath.Join("..", "..", "..", "shared", "third_party")
	if d := os.Getenv("BPA_THIRD_PARTY"); d != "" {
		dir = d
	}
	archives, _ := filepath.Glob(filepath.Join(dir, "kubespray-v*.tar.gz"))
	if len(archives) == 0 {
		t.Skipf("no kubespray release in %s (../shared/third_party is absent): the table cannot be checked against kubespray's sources", dir)
	}
	var got []Release
	for _, a := range archives {
		r, err := readRelease(a)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	slices.SortFunc(got, func(a, b Release) int {
		va, _ := ParseVersion(a.Version)
		vb, _ := ParseVersion(b.Version)
		return va.Compare(vb)
	})
	raw, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	raw = append(raw, '\n')
	if *update {
		if err := os.WriteFile("releases.json", raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(string(table), string(raw)); diff != "" {
		t.Errorf("releases.json differs from the kubespray releases in %s (-table +sources); run go test -run TestTableMatchesKubespray -update:\n%s", dir, diff)
	}
}

var archiveVersion = regexp.MustCompile(`kubespray-(v[0-9]+\.[0-9]+\.[0-9]+)\.tar\.gz$`)

// readRelease reads a kubespray release's checksum tables from its source archive: the
// versions in kubelet's, kubeadm's and kubectl's for amd64, and its default (kube_version is the
// first of kubelet's).
func readRelease(archive string) (Release, error) {
	m := archiveVersion.FindStringSubmatch(archive)
	if m == nil {
		return Release{}, fmt.Errorf("%s: not kubespray-vX.Y.Z.tar.gz", archive)
	}
	checksums, err := testutil.FileInArchive(archive, "roles/kubespray_defaults/vars/main/checksums.yml")
	if err != nil {
		return Release{}, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(checksums, &doc); err != nil {
		return Release{}, fmt.Errorf("%s: checksums.yml: %w", archive, err)
	}
	r := Release{Version: m[1]}
	var sets [][]string
	for _, table := range []string{"kubelet_checksums", "kubeadm_checksums", "kubectl_checksums"} {
		versions := keys(child(child(doc.Content[0], table), "amd64"))
		if len(versions) == 0 {
			return Release{}, fmt.Errorf("%s: checksums.yml has no %s.amd64", archive, table)
		}
		sets = append(sets, versions)
	}
	r.DefaultKubernetes = sets[0][0]
	for _, v := range sets[0] {
		if slices.Contains(sets[1], v) && slices.Contains(sets[2], v) {
			r.Kubernetes = append(r.Kubernetes, v)
		}
	}
	if r.Kubernetes[0] != r.DefaultKubernetes {
		return Release{}, fmt.Errorf("%s: kubelet's default %s is not the newest version of all three tables", archive, r.DefaultKubernetes)
	}
	return r, nil
}

// child is a mapping node's value under key, or nil.
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// keys are a mapping node's keys, in the file's order.
func keys(n *yaml.Node) []string {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i < len(n.Content); i += 2 {
		out = append(out, n.Content[i].Value)
	}
	return out
}
