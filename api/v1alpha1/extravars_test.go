package v1alpha1_test

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// TestExtraVarsAreTypedAndInert: kubespray's variables keep their JSON types (booleans,
// numbers, strings, lists, maps); a Jinja2 delimiter in any string, a key or a value, at any
// depth, is refused naming its path, as are names that steer the connection, values deeper than
// 8 levels or larger than 16 KiB, and values that are not JSON.
func TestExtraVarsAreTypedAndInert(t *testing.T) {
	deep := any("x")
	for range 8 {
		deep = []any{deep}
	}
	for _, tc := range []struct {
		name string
		vars map[string]bpav1.ExtraVarValue
		want string // "" when valid
	}{
		{"typed", map[string]bpav1.ExtraVarValue{
			"kube_proxy_strict_arp": bpav1.ExtraVar(true), "dns_min_replicas": bpav1.ExtraVar(1), "kube_network_plugin": bpav1.ExtraVar("flannel"),
			"supplementary_addresses_in_ssl_keys": bpav1.ExtraVar([]string{"10.0.0.1"}), "unset": bpav1.ExtraVar(nil),
			"containerd_registries_mirrors": bpav1.ExtraVar([]map[string]any{{"prefix": "docker.io", "mirrors": []map[string]any{{"host": "http://10.0.0.1:5000", "capabilities": []string{"pull"}, "skip_verify": false}}}}),
		}, ""},
		{"jinja at the top", map[string]bpav1.ExtraVarValue{"x": bpav1.ExtraVar("{{ lookup('pipe', 'id') }}")}, `spec.kubespray.extraVars[x]: Invalid value: "{{ lookup('pipe', 'id') }}": extra variable values may not contain Jinja2`},
		{"jinja in a list in a map", map[string]bpav1.ExtraVarValue{"m": bpav1.ExtraVar(map[string]any{"a": []any{1, "{% raw %}"}})}, `spec.kubespray.extraVars[m][a][1]`},
		{"jinja comment in a key", map[string]bpav1.ExtraVarValue{"m": bpav1.ExtraVar(map[string]any{"{# x #}": 1})}, "extra variable keys may not contain Jinja2"},
		{"a brace is fine", map[string]bpav1.ExtraVarValue{"m": bpav1.ExtraVar("{a} {")}, ""},
		{"connection variable", map[string]bpav1.ExtraVarValue{"ansible_ssh_common_args": bpav1.ExtraVar("-o ProxyCommand=x")}, "not start with ansible_"},
		{"too deep", map[string]bpav1.ExtraVarValue{"d": bpav1.ExtraVar(deep)}, "at most 8 levels deep"},
		{"too large", map[string]bpav1.ExtraVarValue{"l": bpav1.ExtraVar(strings.Repeat("a", 16<<10))}, "may not be more than 16384"},
		{"not JSON", map[string]bpav1.ExtraVarValue{"j": apiextensionsv1.JSON{Raw: []byte("{")}}, "must be JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validProvisioning()
			p.Spec.Kubespray = &bpav1.KubesprayOptions{ExtraVars: tc.vars}
			expectValidation(t, p, tc.want)
		})
	}
}

// expectValidation checks that p is valid (want "") or refused with an error saying want.
func expectValidation(t *testing.T, p *bpav1.Provisioning, want string) {
	t.Helper()
	errs := p.Validate().ToAggregate()
	switch {
	case want == "" && errs != nil:
		t.Errorf("refused: %v", errs)
	case want != "" && (errs == nil || !strings.Contains(errs.Error(), want)):
		t.Errorf("errors %v, want one saying %q", errs, want)
	}
}

func validProvisioning() *bpav1.Provisioning {
	p := &bpav1.Provisioning{}
	p.Name, p.Namespace = "p", "ns"
	p.Labels = map[string]string{bpav1.ClusterLabel: "c"}
	p.Spec.Masters = []bpav1.HostEntry{{"master-1": {MACAddress: "52:54:00:00:00:01"}}}
	return p
}
