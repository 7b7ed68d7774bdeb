package v1alpha1_test

import (
	"slices"
	"testing"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

func TestNodeRoles(t *testing.T) {
	for _, tc := range []struct {
		roles          bpav1.NodeRoles
		list           []string
		master, worker bool
		valid          bool
	}{
		{bpav1.RolesOf(bpav1.RoleMaster), []string{"master"}, true, false, true},
		{bpav1.RolesOf(bpav1.RoleWorker), []string{"worker"}, false, true, true},
		{bpav1.RolesOf(bpav1.RoleMaster, bpav1.RoleWorker), []string{"master", "worker"}, true, true, true},
		{"worker,master", []string{"worker", "master"}, true, true, false},
		{"etcd", []string{"etcd"}, false, false, false},
	} {
		if got := tc.roles.List(); !slices.Equal(got, tc.list) {
			t.Errorf("%q.List() = %v, want %v", tc.roles, got, tc.list)
		}
		if tc.roles.Has(bpav1.RoleMaster) != tc.master || tc.roles.Has(bpav1.RoleWorker) != tc.worker {
			t.Errorf("%q.Has: master %v worker %v", tc.roles, tc.roles.Has(bpav1.RoleMaster), tc.roles.Has(bpav1.RoleWorker))
		}
		if err := tc.roles.Validate(); (err == nil) != tc.valid {
			t.Errorf("%q.Validate() = %v, want valid=%v", tc.roles, err, tc.valid)
		}
	}
}
