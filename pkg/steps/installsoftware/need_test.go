package installsoftware_test

import (
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
)

func TestSoftwareNodes(t *testing.T) {
	spec := bpav1.SoftwareSpec{
		MasterSoftware: []bpav1.SoftwarePackage{{Name: "curl"}},
		WorkerSoftware: []bpav1.SoftwarePackage{{Name: "jq", Version: "1.6-2"}},
	}
	nodes := []bpav1.Node{{Label: "m", Role: "master"}, {Label: "w1", Role: "worker"}, {Label: "w2", Role: "worker"}, {Label: "mw", Role: "master,worker"}}
	done := func(names ...string) []bpav1.NodeSoftwareReport {
		var out []bpav1.NodeSoftwareReport
		for _, n := range nodes {
			for _, name := range names {
				if n.Label == name {
					out = append(out, bpav1.NodeSoftwareReport{Node: name, Digest: installsoftware.PackagesDigest(&spec, n.Role, nil)})
				}
			}
		}
		return out
	}
	workersChanged := spec.DeepCopy()
	workersChanged.WorkerSoftware[0].Version = "1.7-1"

	cases := []struct {
		name, reason string
		spec         bpav1.SoftwareSpec
		reports      []bpav1.NodeSoftwareReport
		want         []string
		all          bool
	}{
		{"first run", "no node has the packages yet: every node, unlimited", spec, nil, []string{"m", "mw", "w1", "w2"}, true},
		{"up to date", "every node reported this list", spec, done("m", "w1", "w2", "mw"), nil, false},
		{"a node joined", "only the node without a report", spec, done("m", "w1", "mw"), []string{"w2"}, false},
		{"workers' version changed", "the workers and the dual-role node, not the master", *workersChanged, done("m", "w1", "w2", "mw"), []string{"mw", "w1", "w2"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sw := &bpav1.Software{Spec: tc.spec, Status: bpav1.SoftwareStatus{Nodes: tc.reports}}
			got, all := installsoftware.SoftwareNodes(sw, nodes, nil)
			if d := gocmp.Diff(tc.want, got); d != "" || all != tc.all {
				t.Errorf("%s: all=%v (want %v) (-want +got):\n%s", tc.reason, all, tc.all, d)
			}
		})
	}
}

func TestPackagesDigest(t *testing.T) {
	spec := bpav1.SoftwareSpec{
		MasterSoftware: []bpav1.SoftwarePackage{{Name: "curl"}},
		WorkerSoftware: []bpav1.SoftwarePackage{{Name: "curl"}},
	}
	if installsoftware.PackagesDigest(&spec, "master", nil) == installsoftware.PackagesDigest(&spec, "worker", nil) {
		t.Errorf("the same list on both roles must still differ by role, or a node changing role would not run")
	}
	pinned := spec.DeepCopy()
	pinned.WorkerSoftware[0].Version = "7.88.1-10"
	if installsoftware.PackagesDigest(&spec, "worker", nil) == installsoftware.PackagesDigest(pinned, "worker", nil) {
		t.Errorf("pinning a version must change the digest")
	}
	if installsoftware.PackagesDigest(&spec, "master", nil) != installsoftware.PackagesDigest(pinned, "master", nil) {
		t.Errorf("a workers' change must not change the masters' digest")
	}
}

// TestBinariesInTheDigest: binaries count by the file the registry resolves them to, so a new
// upload makes exactly the nodes whose file differs need a run; without binaries the digest is
// what it always was (no status churns after an upgrade).
func TestBinariesInTheDigest(t *testing.T) {
	spec := bpav1.SoftwareSpec{MasterSoftware: []bpav1.SoftwarePackage{{Name: "curl"}}}
	before := installsoftware.PackagesDigest(&spec, "master", nil)
	if before != installsoftware.PackagesDigest(&spec, "master", map[string]string{"master:tool": "sha256:aa"}) {
		t.Error("resolved digests of binaries the spec does not name changed the digest")
	}
	spec.MasterBinaries = []bpav1.BinaryPackage{{Name: "tool"}}
	v1 := installsoftware.PackagesDigest(&spec, "master", map[string]string{"master:tool": "sha256:aa"})
	v2 := installsoftware.PackagesDigest(&spec, "master", map[string]string{"master:tool": "sha256:bb"})
	if v1 == before || v1 == v2 {
		t.Error("a binary, and a new file for it, must change the digest")
	}
	moved := spec.DeepCopy()
	moved.MasterBinaries[0].Directory = "/opt/bin"
	if installsoftware.PackagesDigest(moved, "master", map[string]string{"master:tool": "sha256:aa"}) == v1 {
		t.Error("another directory must change the digest")
	}
	if installsoftware.PackagesDigest(&spec, "worker", map[string]string{"master:tool": "sha256:bb"}) != installsoftware.PackagesDigest(&spec, "worker", nil) {
		t.Error("a masters' binary must not change the workers' digest")
	}

	// Two masters; one already has the new upload (it joined later): only the other runs.
	sw := &bpav1.Software{Spec: spec}
	sw.Status.Nodes = []bpav1.NodeSoftwareReport{{Node: "m1", Digest: v1}, {Node: "m2", Digest: v2}}
	need, all := installsoftware.SoftwareNodes(sw, []bpav1.Node{{Label: "m1", Role: "master"}, {Label: "m2", Role: "master"}}, map[string]string{"master:tool": "sha256:bb"})
	if !slices.Equal(need, []string{"m1"}) || all {
		t.Errorf("need %v all %v, want only m1", need, all)
	}
}

// TestCertificateRenewalPlan: a new spec.certificateRenewal renews the control plane's
// certificates (kubespray's renewal on every master), alone, whether the cluster's version is
// recorded or not; an upgrade renews them anyway; the same value again is no renewal.
