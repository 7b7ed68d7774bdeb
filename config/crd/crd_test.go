// Package crd_test checks the generated CRDs with the API server's own code: the CRD
// validation kube-apiserver runs on create (structural schema, CEL compilation and cost), and
// the schema and CEL validation it runs on every custom resource.
package crd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

type crd struct {
	internal   *apiextensions.CustomResourceDefinition
	schema     validation.SchemaValidator
	structural *structuralschema.Structural
}

func load(t *testing.T, file string) crd {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("bases", file))
	if err != nil {
		t.Fatal(err)
	}
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &v1); err != nil {
		t.Fatal(err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&v1)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1, &internal, nil); err != nil {
		t.Fatal(err)
	}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal); len(errs) > 0 {
		t.Fatalf("the API server would refuse %s: %v", file, errs.ToAggregate())
	}
	// The internal version keeps a schema shared by every version at spec.validation.
	validationSpec := internal.Spec.Validation
	if validationSpec == nil {
		validationSpec = internal.Spec.Versions[0].Schema
	}
	props := validationSpec.OpenAPIV3Schema
	sv, _, err := validation.NewSchemaValidator(props)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := structuralschema.NewStructural(props)
	if err != nil {
		t.Fatal(err)
	}
	return crd{internal: &internal, schema: sv, structural: ss}
}

// validate runs what the API server runs on a created object: defaulting is left out, the
// OpenAPI schema and the CEL rules are in.
func (c crd) validate(obj map[string]any) []string {
	var msgs []string
	for _, e := range validation.ValidateCustomResource(nil, obj, c.schema) {
		msgs = append(msgs, e.Error())
	}
	errs, _ := cel.NewValidator(c.structural, true, celconfig.PerCallLimit).Validate(context.Background(), nil, c.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	return msgs
}

func object(t *testing.T, text string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(text), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(testutil.Fixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestFixturesAreAccepted(t *testing.T) {
	crds := map[string]crd{
		"Provisioning": load(t, "bpa.akraino.org_provisionings.yaml"),
		"Software":     load(t, "bpa.akraino.org_softwares.yaml"),
		"Cluster":      load(t, "bpa.akraino.org_clusters.yaml"),
	}
	for _, name := range append(testutil.ProvisioningFixtures, "software-cluster-xyz.yaml", "cluster-xyz.yaml") {
		obj := object(t, fixture(t, name))
		if errs := crds[obj["kind"].(string)].validate(obj); len(errs) > 0 {
			t.Errorf("%s is refused: %v", name, errs)
		}
	}
}

func TestBadInputIsRefused(t *testing.T) {
	prov := load(t, "bpa.akraino.org_provisionings.yaml")
	sw := load(t, "bpa.akraino.org_softwares.yaml")
	abc := fixture(t, "provisioning-cluster-abc.yaml")
	rst := fixture(t, "provisioning-cluster-rst-by-resources.yaml")
	swXYZ := fixture(t, "software-cluster-xyz.yaml")
	cases := []struct {
		name string
		crd  crd
		obj  string
		want string
	}{
		{"malformed-mac", prov, strings.Replace(abc, "00:c6:14:04:61:b2", "00:c6:14:04:61", 1), "mac-address"},
		{"label-not-dns", prov, strings.Replace(abc, "- worker-1:", "- 'Worker_1 ansible_host=1.2.3.4':", 1), "a host label must be a DNS-1123 label"},
		{"two-labels-in-one-entry", prov, strings.Replace(abc, "    - worker-2:", "      worker-3: {mac-address: '00:00:00:00:00:01'}\n    - worker-2:", 1), "Too many: 2"},
		{"empty-entry", prov, strings.Replace(abc, "    - worker-2:\n        mac-address: 00:c2:12:03:62:b2", "    - worker-2: {}", 1), "an entry needs a mac-address"},
		{"bad-memory", prov, strings.Replace(rst, "memory: 4Gi", "memory: 4 GB", 1), "memory"},
		{"plugin-path", prov, abc + "  KUDPlugins: [../../etc]\n", "KUDPlugins[0]"},
		{"bad-pod-subnet", prov, abc + "  PodSubnet: 10.244.0.0/40\n", "PodSubnet must be a CIDR"},
		{"no-masters", prov, strings.Replace(abc, "  masters:\n    - master:\n        mac-address: 00:c5:16:05:61:b2\n", "", 1), "masters"},
		{"reserved-label", prov, strings.Replace(abc, "- worker-1:", "- all:", 1), "reserved names"},
		{"package-remove", sw, strings.Replace(swXYZ, "- htop", "- openssh-server-", 1), "masterSoftware[1]"},
		{"package-shell", sw, strings.Replace(swXYZ, "- htop", "- 'htop;reboot'", 1), "masterSoftware[1]"},
		{"package-option", sw, strings.Replace(swXYZ, "- htop", "- '-oAPT::Get::Assume-Yes=1'", 1), "masterSoftware[1]"},
		{"version-shell", sw, strings.Replace(swXYZ, "version: 3.3.9-3", "version: '3.3.9 $(id)'", 1), "version"},
		{"package-map-two-keys", sw, strings.Replace(swXYZ, "    - maven:\n", "    - curl2: {version: '1'}\n      maven:\n", 1), "Too many: 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.crd.validate(object(t, tc.obj))
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Errorf("want an error naming %q, got %v", tc.want, errs)
			}
		})
	}
}
