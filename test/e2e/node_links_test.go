//go:build e2e

package e2e_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRemoveLinksIntoLeavesOthersLinks: the node's cleanup removes the kubelet's links into its
// own pods' logs and nothing else in the folder every kubelet of the machine shares.
func TestRemoveLinksIntoLeavesOthersLinks(t *testing.T) {
	dir, ours, theirs := t.TempDir(), t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(ours, "ns_pod-a_uid", "main"), 0o755))
	for name, to := range map[string]string{
		"pod-a_ns_main-1.log":  filepath.Join(ours, "ns_pod-a_uid", "main", "0.log"),
		"pod-b_ns_main-2.log":  filepath.Join(ours, "ns_pod-b_uid", "main", "0.log"), // dangling already
		"other_ns_main-3.log":  filepath.Join(theirs, "ns_other_uid", "main", "0.log"),
		"sibling_ns_main.log":  ours + "-sibling/ns_x_uid/main/0.log", // shares the prefix, not the folder
		"relative_ns_main.log": "ns_pod-a_uid/main/0.log",
	} {
		must(t, os.Symlink(to, filepath.Join(dir, name)))
	}
	must(t, os.WriteFile(filepath.Join(dir, "plain.log"), nil, 0o644))

	if err := removeLinksInto(dir, ours); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	must(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"other_ns_main-3.log", "plain.log", "relative_ns_main.log", "sibling_ns_main.log"}; !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
	if err := removeLinksInto(filepath.Join(dir, "absent"), ours); err != nil {
		t.Errorf("a machine without the folder: %v", err)
	}
}
