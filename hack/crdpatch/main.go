// Command crdpatch finishes the CRDs controller-gen writes where its markers cannot reach:
// a Software package item is either a string or a one-key map, which a structural schema can
// only express as an untyped node carrying value validations for both forms. It rewrites the
// files named on the command line in place and is idempotent.
package main

import (
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

func main() {
	for _, path := range os.Args[1:] {
		if err := patchFile(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdpatch: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func patchFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		return err
	}
	if crd.Spec.Names.Kind != "Software" {
		return nil
	}
	for i := range crd.Spec.Versions {
		spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
		for _, field := range []string{"masterSoftware", "workerSoftware"} {
			list, ok := spec.Properties[field]
			if !ok || list.Items == nil || list.Items.Schema == nil {
				return fmt.Errorf("spec.%s has no items schema", field)
			}
			list.Items.Schema = packageItemSchema(list.Items.Schema.Description)
			spec.Properties[field] = list
		}
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// packageItemSchema accepts "name" or {name: {version: v}}. JSON schema applies pattern and
// maxLength to strings only, and min/maxProperties and additionalProperties to objects only,
// so one untyped node validates both forms.
func packageItemSchema(description string) *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{
		Description:            description,
		XPreserveUnknownFields: ptr.To(true),
		Pattern:                bpav1.PackageNamePattern,
		MaxLength:              ptr.To[int64](bpav1.PackageNameMaxLength),
		MinProperties:          ptr.To[int64](1),
		MaxProperties:          ptr.To[int64](1),
		AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{
			Allows: true,
			Schema: &apiextensionsv1.JSONSchemaProps{
				Type:     "object",
				Required: []string{"version"},
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"version": {
						Type:        "string",
						Description: "version to pin, in the package manager's grammar.",
						Pattern:     bpav1.PackageVersionPattern,
						MaxLength:   ptr.To[int64](bpav1.PackageVersionMaxLength),
					},
				},
			},
		},
	}
}
