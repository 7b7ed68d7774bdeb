package runkubespray_test

import (
	"fmt"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// clusterOf is a provisioned cluster of masters m1…mN (etcd drawn as a new cluster draws it)
// and one worker, at Kubernetes 1.34.3, then changed by mutate.
func clusterOf(masters int, mutate func(*bpav1.Provisioning)) *bpav1.Provisioning {
	p := &bpav1.Provisioning{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1}}
	for i := 1; i <= masters; i++ {
		p.Spec.Masters = append(p.Spec.Masters, entry(fmt.Sprintf("m%d", i), fmt.Sprintf("00:00:00:00:01:%02x", i)))
	}
	p.Spec.Workers = []bpav1.HostEntry{entry("w1", "00:00:00:00:02:01")}
	p.Status.Provisioned = runkubespray.Record(p, runkubespray.Plan{KubernetesVersion: "1.34.3"})
	p.Generation = 2
	mutate(p)
	return p
}

func addMasters(labels ...string) func(*bpav1.Provisioning) {
	return func(p *bpav1.Provisioning) {
		for i, l := range labels {
			p.Spec.Masters = append(p.Spec.Masters, entry(l, fmt.Sprintf("00:00:00:00:03:%02x", i)))
		}
	}
}

func removeMasters(labels ...string) func(*bpav1.Provisioning) {
	return func(p *bpav1.Provisioning) {
		var kept []bpav1.HostEntry
		for _, e := range p.Spec.Masters {
			keep := true
			for _, l := range labels {
				if _, ok := e[l]; ok {
					keep = false
				}
			}
			if keep {
				kept = append(kept, e)
			}
		}
		p.Spec.Masters = kept
	}
}

func l(labels ...string) []string { return labels }

// TestControlPlanePlan: masters added and removed as kubespray's docs/operations/nodes.md
// allows, etcd kept odd and within its quorum, and every other change of masters refused with
// the reason.
func TestControlPlanePlan(t *testing.T) {
	for _, tc := range []planCase{{
		name: "one master added to one: cluster.yml, out of etcd (two members would be even)",
		p:    clusterOf(1, addMasters("m2")),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.34.3", ControlPlane: l("m1", "m2"), Etcd: l("m1"),
			EtcdChange: &runkubespray.EtcdChange{Before: l("m1"), After: l("m1")}, Joining: l("m2")},
	}, {
		name: "two added to one: both join etcd, then the control plane's etcd endpoints are rewritten",
		p:    clusterOf(1, addMasters("m3", "m2")),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.34.3", ControlPlane: l("m1", "m2", "m3"), Etcd: l("m1", "m2", "m3"),
			EtcdChange: &runkubespray.EtcdChange{Before: l("m1"), After: l("m1", "m2", "m3")}, UpdateControlPlane: true, Joining: l("m2", "m3")},
	}, {
		name: "three added to one: two join etcd, the third does not",
		p:    clusterOf(1, addMasters("m2", "m3", "m4")),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.34.3", ControlPlane: l("m1", "m2", "m3", "m4"), Etcd: l("m1", "m2", "m3"),
			EtcdChange: &runkubespray.EtcdChange{Before: l("m1"), After: l("m1", "m2", "m3")}, UpdateControlPlane: true, Joining: l("m2", "m3", "m4")},
	}, {
		name: "a master whose label sorts first still goes last: the first master stays first",
		p:    clusterOf(1, addMasters("a0")),
		want: runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.34.3", ControlPlane: l("m1", "a0"), Etcd: l("m1"),
			EtcdChange: &runkubespray.EtcdChange{Before: l("m1"), After: l("m1")}, Joining: l("a0")},
	}, {
		name: "a master that is not an etcd member removed: remove-node.yml, etcd unchanged",
		p:    clusterOf(4, removeMasters("m4")),
		want: runkubespray.Plan{Mode: runkubespray.ModeRemove, Nodes: l("m4"), KubernetesVersion: "1.34.3", ControlPlane: l("m1", "m2", "m3", "m4"), Etcd: l("m1", "m2", "m3"),
			EtcdChange: &runkubespray.EtcdChange{Before: l("m1", "m2", "m3"), After: l("m1", "m2", "m3")}},
	}, {
		name: "two of five etcd members removed: three stay, a quorum and odd",
		p:    clusterOf(5, removeMasters("m2", "m5")),
		want: runkubespray.Plan{Mode: runkubespray.ModeRemove, Nodes: l("m2", "m5"), KubernetesVersion: "1.34.3", ControlPlane: l("m1", "m2", "m3", "m4", "m5"), Etcd: l("m1", "m2", "m3", "m4", "m5"),
			EtcdChange: &runkubespray.EtcdChange{Before: l("m1", "m2", "m3", "m4", "m5"), After: l("m1", "m3", "m4")}},
	}, {
		name: "two added, the version not recorded (an image of an unknown release)", image: unknownImage,
		p:   clusterOf(1, func(p *bpav1.Provisioning) { p.Status.Provisioned.KubernetesVersion = ""; addMasters("m2", "m3")(p) }),
		err: "masters m2, m3 would join etcd, after which upgrade-cluster.yml at the cluster's Kubernetes version rewrites every master's etcd endpoints, but that version is not recorded",
	}, {
		name: "the first master removed",
		p:    clusterOf(3, removeMasters("m1")),
		err:  "master m1 is the cluster's first master (the first of kubespray's kube_control_plane, on which kubeadm initialised the cluster), which kubespray cannot remove",
	}, {
		name: "one of three etcd members removed: two would be even",
		p:    clusterOf(3, removeMasters("m3")),
		err:  "masters m3 are etcd members: etcd would keep 2 members, an even number, which kubespray refuses",
	}, {
		name: "two of three etcd members removed: below the quorum",
		p:    clusterOf(3, removeMasters("m2", "m3")),
		err:  "masters m2, m3 are etcd members: 1 of etcd's 3 members would stay, fewer than its quorum of 2, and etcd stops without a quorum",
	}, {
		name: "added and removed at once",
		p:    clusterOf(4, func(p *bpav1.Provisioning) { removeMasters("m4")(p); addMasters("m5")(p) }),
		err:  "masters m5 added and m4 removed in one generation",
	}, {
		name: "a master moved to another host",
		p:    clusterOf(2, func(p *bpav1.Provisioning) { p.Spec.Masters[1] = entry("m2", "00:00:00:00:09:09") }),
		err:  "masters m2 changed their requirements in place: a master cannot move to another host",
	}, {
		name: "a master added while a worker leaves",
		p:    clusterOf(1, func(p *bpav1.Provisioning) { addMasters("m2")(p); p.Spec.Workers = nil }),
		err:  "workers w1 removed or changed together with a change of masters",
	}, {
		name: "a master removed with a setting changed",
		p:    clusterOf(4, func(p *bpav1.Provisioning) { removeMasters("m4")(p); p.Spec.PodSubnet = "10.244.64.0/18" }),
		err:  "masters m4 removed together with another change",
	}, {
		name: "a master removed from a record that cannot tell the settings",
		p:    clusterOf(4, func(p *bpav1.Provisioning) { removeMasters("m4")(p); p.Status.Provisioned.SettingsDigest = "" }),
		err:  "set annotation bpa.akraino.org/rerun to a new value first",
	}, {
		name: "a record without groups: the masters by label, etcd the first odd number",
		p: clusterOf(4, func(p *bpav1.Provisioning) {
			p.Status.Provisioned.ControlPlane, p.Status.Provisioned.Etcd = nil, nil
			removeMasters("m4")(p)
		}),
		want: runkubespray.Plan{Mode: runkubespray.ModeRemove, Nodes: l("m4"), KubernetesVersion: "1.34.3", ControlPlane: l("m1", "m2", "m3", "m4"), Etcd: l("m1", "m2", "m3"),
			EtcdChange: &runkubespray.EtcdChange{Before: l("m1", "m2", "m3"), After: l("m1", "m2", "m3")}},
	}} {
		t.Run(tc.name, tc.check)
	}
}

// TestControlPlaneRecorded: what a run's outcome records is the groups after it, so that the
// next generation plans from them: an added master last, a removed one gone from both.
func TestControlPlaneRecorded(t *testing.T) {
	for _, tc := range []struct {
		name               string
		p                  *bpav1.Provisioning
		controlPlane, etcd []string
	}{
		{name: "added", p: clusterOf(1, addMasters("m3", "m2")), controlPlane: l("m1", "m2", "m3"), etcd: l("m1", "m2", "m3")},
		{name: "removed", p: clusterOf(5, removeMasters("m2", "m5")), controlPlane: l("m1", "m3", "m4"), etcd: l("m1", "m3", "m4")},
		{name: "a new cluster", p: func() *bpav1.Provisioning {
			p := clusterOf(2, func(*bpav1.Provisioning) {})
			p.Status.Provisioned = nil
			return p
		}(),
			controlPlane: l("m1", "m2"), etcd: l("m1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := runkubespray.PlanFor(tc.p, v230)
			if err != nil {
				t.Fatal(err)
			}
			rec := runkubespray.OutcomeOf(tc.p, plan).Provisioned
			if d := gocmp.Diff([][]string{tc.controlPlane, tc.etcd}, [][]string{rec.ControlPlane, rec.Etcd}); d != "" {
				t.Errorf("recorded groups (-want +got):\n%s", d)
			}
			// The next generation with nothing changed converges with those groups.
			tc.p.Status.Provisioned = &rec
			tc.p.Generation++
			next, err := runkubespray.PlanFor(tc.p, v230)
			if err != nil {
				t.Fatal(err)
			}
			if next.Mode != runkubespray.ModeCreate || next.EtcdChange != nil || !slices.Equal(next.ControlPlane, tc.controlPlane) || !slices.Equal(next.Etcd, tc.etcd) {
				t.Errorf("next generation = %+v, want cluster.yml with the recorded groups", next)
			}
		})
	}
}
