package v1alpha1_test

import (
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// TestGrammarsMatchTheCRDs: the patterns the CRD markers write into the schema (markers cannot
// name a constant) are the grammars declared in grammar.go and software_types.go, and the
// admission policy checks package names with the same pattern: one grammar, wherever checked.
func TestGrammarsMatchTheCRDs(t *testing.T) {
	raw, err := os.ReadFile("../../config/crd/bases/bpa.akraino.org_softwares.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, list := range []string{"masterBinaries", "workerBinaries"} {
		item := spec.Properties[list].Items.Schema.Properties
		for field, want := range map[string]struct {
			pattern string
			max     int64
		}{
			"name":      {bpav1.ArtifactNamePattern, bpav1.ArtifactNameMaxLength},
			"version":   {bpav1.ArtifactVersionPattern, bpav1.ArtifactVersionMaxLength},
			"directory": {bpav1.DirectoryPattern, bpav1.DirectoryMaxLength},
		} {
			got := item[field]
			if got.Pattern != want.pattern || got.MaxLength == nil || *got.MaxLength != want.max {
				t.Errorf("spec.%s[].%s: CRD pattern %q max %v; the API declares %q max %d", list, field, got.Pattern, got.MaxLength, want.pattern, want.max)
			}
		}
	}
	for _, list := range []string{"masterSoftware", "workerSoftware"} {
		if got := spec.Properties[list].Items.Schema.Pattern; got != bpav1.PackageNamePattern {
			t.Errorf("spec.%s[]: CRD pattern %q, the API declares %q", list, got, bpav1.PackageNamePattern)
		}
	}
	policy, err := os.ReadFile("../../config/policy/cluster-label.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(policy), "name.matches('"+bpav1.PackageNamePattern+"')") {
		t.Errorf("the admission policy does not check package names with %s", bpav1.PackageNamePattern)
	}
}
