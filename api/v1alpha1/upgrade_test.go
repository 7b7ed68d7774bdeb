package v1alpha1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// TestKubernetesVersionAndUpgradePolicy: the version is kubespray's form, kube_version cannot
// be set around it, and serial is a count or a percentage.
func TestKubernetesVersionAndUpgradePolicy(t *testing.T) {
	serial := func(v intstr.IntOrString) *bpav1.UpgradePolicy { return &bpav1.UpgradePolicy{Serial: &v} }
	for _, tc := range []struct {
		name    string
		version string
		upgrade *bpav1.UpgradePolicy
		vars    map[string]bpav1.ExtraVarValue
		want    string // "" when valid
	}{
		{name: "a version and a policy", version: "1.34.3", upgrade: &bpav1.UpgradePolicy{Serial: ptr.To(intstr.FromString("25%")), Approval: bpav1.UpgradeApprovalPerWave}},
		{name: "a leading v", version: "v1.34.3", want: `spec.kubernetesVersion: Invalid value: "v1.34.3": must be a Kubernetes version as kubespray names it, such as 1.34.3`},
		{name: "a leading zero", version: "1.034.3", want: `spec.kubernetesVersion: Invalid value: "1.034.3": must be a Kubernetes version as kubespray names it, such as 1.34.3`},
		{name: "a zero", version: "1.34.0"},
		{name: "shell syntax", version: "1.34.3;reboot", want: "spec.kubernetesVersion: Invalid value"},
		{name: "kube_version around it", vars: map[string]bpav1.ExtraVarValue{"kube_version": bpav1.ExtraVar("1.33.7")}, want: "spec.kubespray.extraVars[kube_version]: Forbidden: set spec.kubernetesVersion instead"},
		{name: "a count", upgrade: serial(intstr.FromInt32(3))},
		{name: "a count as a string", upgrade: serial(intstr.FromString("3"))},
		{name: "no workers a wave", upgrade: serial(intstr.FromInt32(0)), want: `spec.upgrade.serial: Invalid value: "0": serial is a count of at least 1 or a percentage from 1% to 100%`},
		{name: "more than all", upgrade: serial(intstr.FromString("150%")), want: "spec.upgrade.serial"},
		{name: "not a number", upgrade: serial(intstr.FromString("half")), want: "spec.upgrade.serial"},
		{name: "an approval that does not exist", upgrade: &bpav1.UpgradePolicy{Approval: "sometimes"}, want: `spec.upgrade.approval: Unsupported value: "sometimes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validProvisioning()
			p.Spec.KubernetesVersion, p.Spec.Upgrade = tc.version, tc.upgrade
			if tc.vars != nil {
				p.Spec.Kubespray = &bpav1.KubesprayOptions{ExtraVars: tc.vars}
			}
			expectValidation(t, p, tc.want)
		})
	}
}

func TestWorkersPerWave(t *testing.T) {
	for _, tc := range []struct {
		serial  *intstr.IntOrString
		workers int
		want    int
	}{
		{nil, 10, 2}, {nil, 3, 1}, {nil, 0, 1},
		{ptr.To(intstr.FromInt32(4)), 10, 4}, {ptr.To(intstr.FromInt32(40)), 10, 10},
		{ptr.To(intstr.FromString("34%")), 3, 2}, {ptr.To(intstr.FromString("100%")), 7, 7},
	} {
		if got, err := (&bpav1.UpgradePolicy{Serial: tc.serial}).WorkersPerWave(tc.workers); err != nil || got != tc.want {
			t.Errorf("serial %v of %d workers: %d %v, want %d", tc.serial, tc.workers, got, err, tc.want)
		}
	}
}
