package compile

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// TestMayNotAnswer: the nodes each run kind can do without, which pin-host-keys lets be silent.
func TestMayNotAnswer(t *testing.T) {
	spec := &bpav1.ProvisioningSpec{
		Masters: []bpav1.HostEntry{{"master": {}}, {"master-2": {}}},
		Workers: []bpav1.HostEntry{{"worker-2": {}}, {"worker-1": {}}},
	}
	for _, tc := range []struct {
		name string
		plan runkubespray.Plan
		want []string
	}{
		{name: "a new cluster needs every node", plan: runkubespray.Plan{Mode: runkubespray.ModeCreate}},
		{name: "a scale run: the workers it does not add", plan: runkubespray.Plan{Mode: runkubespray.ModeScale, Nodes: []string{"worker-1"}},
			want: []string{"worker-2"}},
		{name: "an upgrade: the workers, each wave waiting for its own", plan: runkubespray.Plan{Mode: runkubespray.ModeUpgrade, Waves: [][]string{{"worker-1"}, {"worker-2"}}},
			want: []string{"worker-1", "worker-2"}},
		{name: "a removal: its leaving nodes, sorted", plan: runkubespray.Plan{Mode: runkubespray.ModeRemove, Nodes: []string{"worker-2", "worker-1"}},
			want: []string{"worker-1", "worker-2"}},
		{name: "a removal: the other workers too", plan: runkubespray.Plan{Mode: runkubespray.ModeRemove, Nodes: []string{"worker-3"}},
			want: []string{"worker-1", "worker-2", "worker-3"}},
		{name: "a master removed: it and the workers", plan: runkubespray.Plan{Mode: runkubespray.ModeRemove, Nodes: []string{"master-2"}, EtcdChange: &runkubespray.EtcdChange{}},
			want: []string{"master-2", "worker-1", "worker-2"}},
		{name: "a renewal: the masters but the first, and the workers, sorted", plan: runkubespray.Plan{Mode: runkubespray.ModeRenewCertificates},
			want: []string{"master-2", "worker-1", "worker-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, mayNotAnswer(tc.plan, spec)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
