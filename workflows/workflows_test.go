package workflows_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/argovalidate"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/kudplugin"
	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

func TestPluginTemplatesAreValid(t *testing.T) {
	templates, err := workflows.PluginTemplates()
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range templates {
		t.Run(tmpl.Name, func(t *testing.T) {
			if err := argovalidate.WorkflowTemplate(tmpl); err != nil {
				t.Fatalf("Argo's validator refuses it: %v", err)
			}
			entry := tmpl.GetTemplateByName(kudplugin.EntryTemplate)
			if entry == nil {
				t.Fatalf("no %q template", kudplugin.EntryTemplate)
			}
			var inputs []string
			for _, p := range entry.Inputs.Parameters {
				inputs = append(inputs, p.Name)
			}
			for _, param := range []string{kudplugin.KubeconfigParam, kudplugin.KubectlImageParam} {
				if !slices.Contains(inputs, param) {
					t.Errorf("template %q takes no %q parameter (the compiler passes it)", kudplugin.EntryTemplate, param)
				}
			}
		})
	}
}

func TestPluginsOfTheSpecification(t *testing.T) {
	plugins, err := workflows.Plugins()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"multus", "ovn4nfv", "nfd", "sriov-network", "qat-plugin", "onap4k8s"} {
		if !slices.Contains(plugins, want) {
			t.Errorf("no WorkflowTemplate for KUD plugin %q", want)
		}
	}
}

// TestKustomizationListsEveryTemplate: kustomize (config/plugins) installs every shipped
// plugin template, and nothing else.
func TestKustomizationListsEveryTemplate(t *testing.T) {
	raw, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("bpa-plugin-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(k.Resources)
	if !slices.Equal(k.Resources, files) {
		t.Errorf("kustomization.yaml lists %v, the templates are %v", k.Resources, files)
	}
}
