package runkubespray_test

import (
	"cmp"
	"errors"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
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
	p.Status.Provisioned = runkubespray.Record(p, runkubespray.Plan{})
	p.Generation = 2
	mutate(p)
	return p
}

// onCluster completes a wanted plan for a cluster that exists: unless the case says otherwise,
// the run renders the groups the record has, here its one master in both.
func onCluster(p *bpav1.Provisioning, want *runkubespray.Plan) {
	if p.Status.Provisioned != nil && want.ControlPlane == nil {
		want.ControlPlane, want.Etcd = []string{"master"}, []string{"master"}
	}
}

// v230 is an image of kubespray v2.30.0, which installs 1.32.0–1.34.3 (by default 1.34.3).
const v230 = "quay.io/kubespray/kubespray:v2.30.0"

// planCase is a generation and the plan it must get (with image, v230 unless set), or the
// refusal it must get (err, part of the message).
type planCase struct {
	name  string
	p     *bpav1.Provisioning
	image string
	want  runkubespray.Plan
	err   string
}

// check compares the case's plan with want (completed by onCluster), or checks that it is
// refused saying err.
func (tc planCase) check(t *testing.T) {
	t.Helper()
	onCluster(tc.p, &tc.want)
	got, err := runkubespray.PlanFor(tc.p, cmp.Or(tc.image, v230))
	if tc.err != "" {
		var unsupported *runkubespray.UnsupportedError
		if !errors.As(err, &unsupported) || !strings.Contains(err.Error(), tc.err) {
			t.Fatalf("got %+v, %v; want an UnsupportedError saying %q", got, err, tc.err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(tc.want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// unknownImage is a kubespray image of no release the controller knows: no version is planned.
const unknownImage = "registry.site.example/kubespray:custom"

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
		name: "first run of three masters", reason: "cluster.yml; the masters after the first (by name, as the inventory orders them) join, each cleared first of a join an earlier attempt left half done",
		p: func() *bpav1.Provisioning {
			p := base()
			p.Spec.Masters = []bpav1.HostEntry{entry("master-c", "00:00:00:00:00:0c"), entry("master-a", "00:00:00:00:00:0a"), entry("master-b", "00:00:00:00:00:0b")}
			return p
		}(),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate, Joining: []string{"master-b", "master-c"}},
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
			p.Status.Provisioned = runkubespray.Record(p, runkubespray.Plan{})
			q2 := resource.MustParse("8192Mi")
			p.Spec.Workers[0]["worker-1"] = bpav1.HostRequirements{Memory: &q2}
			return p
		}(),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate},
	}, {
		name: "master added with a worker", reason: "cluster.yml adds both; the second master stays out of etcd (one member, kept odd)",
		p: provisioned(func(p *bpav1.Provisioning) {
			p.Spec.Masters = append(p.Spec.Masters, entry("master-2", "00:00:00:00:00:09"))
			p.Spec.Workers = append(p.Spec.Workers, entry("worker-3", "00:00:00:00:00:04"))
		}),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate, ControlPlane: []string{"master", "master-2"}, Etcd: []string{"master"},
			EtcdChange: &runkubespray.EtcdChange{Before: []string{"master"}, After: []string{"master"}}, Joining: []string{"master-2"}},
	}, {
		name: "master replaced", reason: "added and removed at once: refused, split over two generations",
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
			p.Status.Provisioned = runkubespray.Record(p, runkubespray.Plan{})
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
		name: "the last workers removed", reason: "the masters would become workers: remove-node.yml, then cluster.yml, not built as one run",
		p:           provisioned(func(p *bpav1.Provisioning) { p.Spec.Workers = nil }),
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
			got, err := runkubespray.PlanFor(tc.p, unknownImage)
			var unsupported *runkubespray.UnsupportedError
			if tc.unsupported {
				if !errors.As(err, &unsupported) {
					t.Fatalf("%s: got plan %+v, err %v; want an UnsupportedError", tc.reason, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			onCluster(tc.p, &tc.want)
			if d := gocmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, d)
			}
		})
	}
}

// TestKubernetesVersionPlan: the version each run installs, and the upgrades planned or refused,
// with kubespray v2.30.0 (it installs 1.32.0–1.34.3, by default 1.34.3).
func TestKubernetesVersionPlan(t *testing.T) {
	at := func(version string, mutate func(*bpav1.Provisioning)) *bpav1.Provisioning {
		p := base()
		p.Spec.Workers = append(p.Spec.Workers, entry("worker-3", "00:00:00:00:00:04"), entry("worker-4", "00:00:00:00:00:05"), entry("worker-5", "00:00:00:00:00:06"))
		p.Status.Provisioned = runkubespray.Record(p, runkubespray.Plan{KubernetesVersion: version})
		p.Generation = 2
		mutate(p)
		return p
	}
	to := func(version string) func(*bpav1.Provisioning) {
		return func(p *bpav1.Provisioning) { p.Spec.KubernetesVersion = version }
	}
	workers := [][]string{{"worker-1"}, {"worker-2"}, {"worker-3"}, {"worker-4"}, {"worker-5"}}
	for _, tc := range []planCase{
		{name: "a new cluster gets the release's default, recorded", p: base(), want: runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.34.3"}},
		{name: "a new cluster at a version the release installs", p: func() *bpav1.Provisioning { p := base(); p.Spec.KubernetesVersion = "1.33.7"; return p }(),
			want: runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.33.7"}},
		{name: "a new cluster at a version the release does not install", p: func() *bpav1.Provisioning { p := base(); p.Spec.KubernetesVersion = "1.31.4"; return p }(),
			err: "spec.kubernetesVersion: kubespray v2.30.0 cannot install Kubernetes 1.31.4; it installs 1.34.0–1.34.3, 1.33.0–1.33.7, 1.32.0–1.32.11"},
		{name: "a new cluster, an image the table does not know: kubespray decides", image: unknownImage,
			p: func() *bpav1.Provisioning { p := base(); p.Spec.KubernetesVersion = "1.31.4"; return p }(), want: runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.31.4"}},
		{name: "unset later: the cluster keeps its version, whatever the image's default", p: at("1.33.7", func(p *bpav1.Provisioning) {
			p.Spec.Workers = append(p.Spec.Workers, entry("worker-6", "00:00:00:00:00:07"))
		}), want: runkubespray.Plan{Mode: runkubespray.ModeScale, Nodes: []string{"worker-6"}, KubernetesVersion: "1.33.7"}},
		{name: "the same version: nothing to upgrade", p: at("1.33.7", to("1.33.7")), want: runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.33.7"}},
		{name: "a minor upgrade, default serial 20% of 5 workers: one a wave", p: at("1.33.7", to("1.34.3")),
			want: runkubespray.Plan{Mode: runkubespray.ModeUpgrade, KubernetesVersion: "1.34.3", Waves: workers}},
		{name: "two a wave, each approved", p: at("1.33.7", func(p *bpav1.Provisioning) {
			p.Spec.KubernetesVersion = "1.34.3"
			p.Spec.Upgrade = &bpav1.UpgradePolicy{Serial: ptr.To(intstr.FromInt32(2)), Approval: bpav1.UpgradeApprovalPerWave}
		}), want: runkubespray.Plan{Mode: runkubespray.ModeUpgrade, KubernetesVersion: "1.34.3", Approval: true,
			Waves: [][]string{{"worker-1", "worker-2"}, {"worker-3", "worker-4"}, {"worker-5"}}}},
		{name: "half the workers a wave, rounded up", p: at("1.34.0", func(p *bpav1.Provisioning) {
			p.Spec.KubernetesVersion = "1.34.3"
			p.Spec.Upgrade = &bpav1.UpgradePolicy{Serial: ptr.To(intstr.FromString("50%"))}
		}), want: runkubespray.Plan{Mode: runkubespray.ModeUpgrade, KubernetesVersion: "1.34.3",
			Waves: [][]string{{"worker-1", "worker-2", "worker-3"}, {"worker-4", "worker-5"}}}},
		{name: "skipping a minor version", p: at("1.32.11", to("1.34.3")),
			err: "spec.kubernetesVersion: 1.34.3 skips a minor version from the cluster's 1.32.11: upgrade one minor version at a time (kubespray v2.30.0 can upgrade it to 1.33.0–1.33.7)"},
		{name: "going down", p: at("1.34.3", to("1.33.7")), err: "spec.kubernetesVersion: 1.33.7 is older than the cluster's 1.34.3: Kubernetes does not go down"},
		{name: "a version the image cannot install", p: at("1.34.3", to("1.35.0")), err: "spec.kubernetesVersion: kubespray v2.30.0 cannot install Kubernetes 1.35.0"},
		{name: "an upgrade with a worker added", p: at("1.33.7", func(p *bpav1.Provisioning) {
			p.Spec.KubernetesVersion = "1.34.3"
			p.Spec.Workers = append(p.Spec.Workers, entry("worker-6", "00:00:00:00:00:07"))
		}), err: "the upgrade 1.33.7 → 1.34.3 comes with other changes"},
		{name: "an upgrade with another setting changed", p: at("1.33.7", func(p *bpav1.Provisioning) {
			p.Spec.KubernetesVersion = "1.34.3"
			p.Spec.PodSubnet = "10.244.64.0/18"
		}), err: "the upgrade 1.33.7 → 1.34.3 comes with other changes"},
		{name: "an upgrade with an image the table does not know", image: unknownImage, p: at("1.33.7", to("1.34.3")),
			err: "needs a kubespray image of a release this controller knows (v2.30.0, v2.31.0)"},
		{name: "a leading zero, stored before the schema refused it", p: at("1.34.3", to("1.034.3")),
			err: `spec.kubernetesVersion: "1.034.3" has a leading zero: write 1.34.3`},
		{name: "a new cluster with a leading zero, an image the table does not know", image: unknownImage,
			p:   func() *bpav1.Provisioning { p := base(); p.Spec.KubernetesVersion = "1.34.03"; return p }(),
			err: `spec.kubernetesVersion: "1.34.03" has a leading zero: write 1.34.3`},
		{name: "a version set on a cluster whose version is not recorded", p: at("", to("1.34.3")), err: "whose version was not recorded"},
		{name: "an upgrade of a cluster with no workers: the control plane alone", p: func() *bpav1.Provisioning {
			p := base()
			p.Spec.Workers = nil
			p.Status.Provisioned = runkubespray.Record(p, runkubespray.Plan{KubernetesVersion: "1.33.7"})
			p.Spec.KubernetesVersion = "1.34.3"
			return p
		}(), want: runkubespray.Plan{Mode: runkubespray.ModeUpgrade, KubernetesVersion: "1.34.3"}},
	} {
		t.Run(tc.name, tc.check)
	}
}

// TestHalfDoneUpgrade: after a wave failed, the record still has the old version and the
// kubelets (report-nodes' reading) the new one on the nodes already upgraded. No run may take
// those nodes down, whatever the record says.
func TestHalfDoneUpgrade(t *testing.T) {
	halfDone := func(mutate func(*bpav1.Provisioning)) *bpav1.Provisioning {
		p := base()
		p.Status.Provisioned = runkubespray.Record(p, runkubespray.Plan{KubernetesVersion: "1.33.7"})
		p.Generation = 3
		p.Spec.KubernetesVersion = "1.34.3"
		p.Status.Kubelets = []bpav1.KubeletVersion{
			{Version: "v1.33.7", Nodes: []string{"worker-1", "worker-2"}},
			{Version: "v1.34.3", Nodes: []string{"master"}},
		}
		mutate(p)
		return p
	}
	refused := "spec.kubernetesVersion: 1.33.7 is older than 1.34.3, which master already run (an upgrade that did not finish): Kubernetes does not go down; set 1.34.3 to finish the upgrade"
	for _, tc := range []planCase{
		{name: "set back to the recorded version", p: halfDone(func(p *bpav1.Provisioning) { p.Spec.KubernetesVersion = "1.33.7" }), err: refused},
		{name: "unset: the recorded version", p: halfDone(func(p *bpav1.Provisioning) { p.Spec.KubernetesVersion = "" }), err: refused},
		{name: "set back, with a worker added", p: halfDone(func(p *bpav1.Provisioning) {
			p.Spec.KubernetesVersion = "1.33.7"
			p.Spec.Workers = append(p.Spec.Workers, entry("worker-3", "00:00:00:00:00:04"))
		}), err: refused},
		{name: "every node at the newer version: the newest and all of them named", p: halfDone(func(p *bpav1.Provisioning) {
			p.Spec.KubernetesVersion = "1.33.7"
			p.Status.Kubelets = []bpav1.KubeletVersion{{Version: "v1.34.3", Nodes: []string{"worker-2", "master", "worker-1"}}, {Version: "v1.34.0", Nodes: []string{"worker-3"}}}
		}), err: "1.33.7 is older than 1.34.3, which master, worker-1, worker-2 already run"},
		{name: "finished: the upgrade again, to the version the masters run",
			p: halfDone(func(*bpav1.Provisioning) {}), want: runkubespray.Plan{Mode: runkubespray.ModeUpgrade, KubernetesVersion: "1.34.3", Waves: [][]string{{"worker-1"}, {"worker-2"}}}},
		{name: "a kubelet version the plan cannot read is not compared", p: halfDone(func(p *bpav1.Provisioning) {
			p.Spec.KubernetesVersion = "1.33.7"
			p.Status.Kubelets = []bpav1.KubeletVersion{{Version: "v1.35.0+vendor.1", Nodes: []string{"master"}}}
		}), want: runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.33.7"}},
	} {
		t.Run(tc.name, tc.check)
	}
}

func TestCertificateRenewalPlan(t *testing.T) {
	at := func(version, renewal string, mutate func(*bpav1.Provisioning)) *bpav1.Provisioning {
		p := base()
		p.Spec.CertificateRenewal = renewal
		p.Status.Provisioned = runkubespray.Record(p, runkubespray.Plan{KubernetesVersion: version})
		p.Generation = 2
		mutate(p)
		return p
	}
	renew := func(value string) func(*bpav1.Provisioning) {
		return func(p *bpav1.Provisioning) { p.Spec.CertificateRenewal = value }
	}
	for _, tc := range []planCase{
		{name: "a new value: the renewal", p: at("1.34.3", "", renew("2026-11")),
			want: runkubespray.Plan{Mode: runkubespray.ModeRenewCertificates, KubernetesVersion: "1.34.3"}},
		{name: "another new value: another renewal", p: at("1.34.3", "2026-11", renew("2027-10")),
			want: runkubespray.Plan{Mode: runkubespray.ModeRenewCertificates, KubernetesVersion: "1.34.3"}},
		{name: "the same value: nothing to renew", p: at("1.34.3", "2026-11", func(*bpav1.Provisioning) {}),
			want: runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.34.3"}},
		{name: "unset: nothing to renew", p: at("1.34.3", "2026-11", renew("")),
			want: runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.34.3"}},
		{name: "with a worker added", p: at("1.34.3", "", func(p *bpav1.Provisioning) {
			renew("2026-11")(p)
			p.Spec.Workers = append(p.Spec.Workers, entry("worker-3", "00:00:00:00:00:04"))
		}), err: "spec.certificateRenewal: the renewal comes with other changes"},
		{name: "the version not recorded: the renewal does not need it", image: unknownImage, p: at("", "", renew("2026-11")),
			want: runkubespray.Plan{Mode: runkubespray.ModeRenewCertificates}},
		{name: "with an upgrade: refused, the record would claim a renewal kubespray may skip", p: at("1.33.7", "", func(p *bpav1.Provisioning) {
			renew("2026-11")(p)
			p.Spec.KubernetesVersion = "1.34.3"
		}), err: "spec.certificateRenewal: the renewal comes with the upgrade 1.33.7 → 1.34.3: upgrade with the renewal as it was, then renew in the next generation"},
		{name: "an upgrade with the renewal as it was", p: at("1.33.7", "2026-11", func(p *bpav1.Provisioning) {
			p.Spec.KubernetesVersion = "1.34.3"
		}), want: runkubespray.Plan{Mode: runkubespray.ModeUpgrade, KubernetesVersion: "1.34.3", Waves: [][]string{{"worker-1"}, {"worker-2"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t)
			if tc.err == "" {
				if got := runkubespray.OutcomeOf(tc.p, tc.want).Provisioned.CertificateRenewal; got != tc.p.Spec.CertificateRenewal {
					t.Errorf("recorded renewal %q, want the spec's %q", got, tc.p.Spec.CertificateRenewal)
				}
			}
		})
	}
}
