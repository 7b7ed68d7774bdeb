package day2_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/day2"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

func entry(label, mac string) bpav1.HostEntry {
	return bpav1.HostEntry{label: {MACAddress: mac}}
}

func base() *bpav1.Provisioning {
	return &bpav1.Provisioning{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1},
		Spec: bpav1.ProvisioningSpec{
			Masters: []bpav1.HostEntry{entry("master", "00:00:00:00:00:01")},
			Workers: []bpav1.HostEntry{entry("worker-1", "00:00:00:00:00:02"), entry("worker-2", "00:00:00:00:00:03")},
		},
	}
}

// provisioned is base() once its first Workflow has succeeded, then changed by mutate.
func provisioned(mutate func(*bpav1.Provisioning)) *bpav1.Provisioning {
	p := base()
	p.Status.Provisioned = day2.Record(p)
	p.Generation = 2
	mutate(p)
	return p
}

func TestKubesprayPlan(t *testing.T) {
	cases := []struct {
		name, reason string
		p            *bpav1.Provisioning
		want         runkubespray.Plan
		unsupported  bool
	}{{
		name: "first run", reason: "nothing provisioned yet: cluster.yml",
		p: base(), want: runkubespray.Plan{Mode: runkubespray.ModeCreate},
	}, {
		name: "no change", reason: "a new generation with the same nodes converges with cluster.yml",
		p: provisioned(func(*bpav1.Provisioning) {}), want: runkubespray.Plan{Mode: runkubespray.ModeCreate},
	}, {
		name: "workers added", reason: "scale.yml limited to the added workers, sorted",
		p: provisioned(func(p *bpav1.Provisioning) {
			p.Spec.Workers = append(p.Spec.Workers, entry("worker-4", "00:00:00:00:00:05"), entry("worker-3", "00:00:00:00:00:04"))
		}),
		want: runkubespray.Plan{Mode: runkubespray.ModeScale, Nodes: []string{"worker-3", "worker-4"}},
	}, {
		name: "worker removed", reason: "remove-node.yml for it",
		p:    provisioned(func(p *bpav1.Provisioning) { p.Spec.Workers = p.Spec.Workers[1:] }),
		want: runkubespray.Plan{Mode: runkubespray.ModeRemove, Nodes: []string{"worker-1"}},
	}, {
		name: "worker reordered", reason: "the order of entries is not a change",
		p: provisioned(func(p *bpav1.Provisioning) {
			p.Spec.Workers[0], p.Spec.Workers[1] = p.Spec.Workers[1], p.Spec.Workers[0]
		}),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate},
	}, {
		name: "memory written another way", reason: "8192Mi is 8Gi: quantities are compared canonically",
		p: func() *bpav1.Provisioning {
			p := base()
			q := resource.MustParse("8Gi")
			p.Spec.Workers[0]["worker-1"] = bpav1.HostRequirements{Memory: &q}
			p.Status.Provisioned = day2.Record(p)
			q2 := resource.MustParse("8192Mi")
			p.Spec.Workers[0]["worker-1"] = bpav1.HostRequirements{Memory: &q2}
			return p
		}(),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate},
	}, {
		name: "master added", reason: "control-plane changes are not built: refused, not cluster.yml",
		p: provisioned(func(p *bpav1.Provisioning) {
			p.Spec.Masters = append(p.Spec.Masters, entry("master-2", "00:00:00:00:00:09"))
			p.Spec.Workers = append(p.Spec.Workers, entry("worker-3", "00:00:00:00:00:04"))
		}),
		unsupported: true,
	}, {
		name: "master replaced", reason: "a removed master is still an etcd member: refused",
		p: provisioned(func(p *bpav1.Provisioning) {
			p.Spec.Masters = []bpav1.HostEntry{entry("master-2", "00:00:00:00:00:09")}
		}),
		unsupported: true,
	}, {
		name: "master moved to another host", reason: "a master whose MAC changed is another host",
		p: provisioned(func(p *bpav1.Provisioning) {
			p.Spec.Masters = []bpav1.HostEntry{entry("master", "00:00:00:00:00:09")}
		}),
		unsupported: true,
	}, {
		name: "a record without masters", reason: "written before masters were recorded: planned by its digest, as then",
		p: provisioned(func(p *bpav1.Provisioning) {
			p.Status.Provisioned.Masters = nil
			p.Spec.PodSubnet = "10.244.64.0/18"
		}),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate},
	}, {
		name: "pod subnet changed", reason: "anything but the workers is cluster.yml",
		p:    provisioned(func(p *bpav1.Provisioning) { p.Spec.PodSubnet = "10.244.64.0/18" }),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate},
	}, {
		name: "first workers", reason: "from masters-as-workers to workers regroups every node: cluster.yml",
		p: func() *bpav1.Provisioning {
			p := base()
			workers := p.Spec.Workers
			p.Spec.Workers = nil
			p.Status.Provisioned = day2.Record(p)
			p.Spec.Workers = workers
			return p
		}(),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate},
	}, {
		name: "added and removed", reason: "kubespray cannot do both in one run",
		p: provisioned(func(p *bpav1.Provisioning) {
			p.Spec.Workers = []bpav1.HostEntry{p.Spec.Workers[0], entry("worker-3", "00:00:00:00:00:04")}
		}),
		unsupported: true,
	}, {
		name: "changed in place", reason: "a worker whose MAC changed is another host",
		p: provisioned(func(p *bpav1.Provisioning) {
			p.Spec.Workers[0] = entry("worker-1", "00:00:00:00:00:0a")
		}),
		unsupported: true,
	}, {
		name: "removed with a masters change", reason: "cluster.yml cannot remove nodes",
		p: provisioned(func(p *bpav1.Provisioning) {
			p.Spec.Masters = append(p.Spec.Masters, entry("master-2", "00:00:00:00:00:09"))
			p.Spec.Workers = p.Spec.Workers[1:]
		}),
		unsupported: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := day2.KubesprayPlan(tc.p)
			var unsupported *day2.UnsupportedError
			if tc.unsupported {
				if !errors.As(err, &unsupported) {
					t.Fatalf("%s: got plan %+v, err %v; want an UnsupportedError", tc.reason, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, d)
			}
		})
	}
}

// TestMastersChangeMessage: the refusal says what changed and what the masters must be.
func TestMastersChangeMessage(t *testing.T) {
	p := provisioned(func(p *bpav1.Provisioning) {
		p.Spec.Masters = []bpav1.HostEntry{entry("master", "00:00:00:00:00:0a"), entry("master-2", "00:00:00:00:00:09")}
	})
	_, err := day2.KubesprayPlan(p)
	want := "masters master-2 added; master changed in place: control-plane changes are not supported yet; " +
		"restore spec.masters to [master], and add or remove workers, plugins or settings instead"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

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
					out = append(out, bpav1.NodeSoftwareReport{Node: name, Digest: day2.PackagesDigest(&spec, n.Role, nil)})
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
			got, all := day2.SoftwareNodes(sw, nodes, nil)
			if d := cmp.Diff(tc.want, got); d != "" || all != tc.all {
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
	if day2.PackagesDigest(&spec, "master", nil) == day2.PackagesDigest(&spec, "worker", nil) {
		t.Errorf("the same list on both roles must still differ by role, or a node changing role would not run")
	}
	pinned := spec.DeepCopy()
	pinned.WorkerSoftware[0].Version = "7.88.1-10"
	if day2.PackagesDigest(&spec, "worker", nil) == day2.PackagesDigest(pinned, "worker", nil) {
		t.Errorf("pinning a version must change the digest")
	}
	if day2.PackagesDigest(&spec, "master", nil) != day2.PackagesDigest(pinned, "master", nil) {
		t.Errorf("a workers' change must not change the masters' digest")
	}
}

// TestBinariesInTheDigest: binaries count by the file the registry resolves them to, so a new
// upload makes exactly the nodes whose file differs need a run; without binaries the digest is
// what it always was (no status churns after an upgrade).
func TestBinariesInTheDigest(t *testing.T) {
	spec := bpav1.SoftwareSpec{MasterSoftware: []bpav1.SoftwarePackage{{Name: "curl"}}}
	before := day2.PackagesDigest(&spec, "master", nil)
	if before != day2.PackagesDigest(&spec, "master", map[string]string{"master:tool": "sha256:aa"}) {
		t.Error("resolved digests of binaries the spec does not name changed the digest")
	}
	spec.MasterBinaries = []bpav1.BinaryPackage{{Name: "tool"}}
	v1 := day2.PackagesDigest(&spec, "master", map[string]string{"master:tool": "sha256:aa"})
	v2 := day2.PackagesDigest(&spec, "master", map[string]string{"master:tool": "sha256:bb"})
	if v1 == before || v1 == v2 {
		t.Error("a binary, and a new file for it, must change the digest")
	}
	moved := spec.DeepCopy()
	moved.MasterBinaries[0].Directory = "/opt/bin"
	if day2.PackagesDigest(moved, "master", map[string]string{"master:tool": "sha256:aa"}) == v1 {
		t.Error("another directory must change the digest")
	}
	if day2.PackagesDigest(&spec, "worker", map[string]string{"master:tool": "sha256:bb"}) != day2.PackagesDigest(&spec, "worker", nil) {
		t.Error("a masters' binary must not change the workers' digest")
	}

	// Two masters; one already has the new upload (it joined later): only the other runs.
	sw := &bpav1.Software{Spec: spec}
	sw.Status.Nodes = []bpav1.NodeSoftwareReport{{Node: "m1", Digest: v1}, {Node: "m2", Digest: v2}}
	need, all := day2.SoftwareNodes(sw, []bpav1.Node{{Label: "m1", Role: "master"}, {Label: "m2", Role: "master"}}, map[string]string{"master:tool": "sha256:bb"})
	if !slices.Equal(need, []string{"m1"}) || all {
		t.Errorf("need %v all %v, want only m1", need, all)
	}
}
