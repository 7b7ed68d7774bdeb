package workflows_test

import (
	"slices"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/argovalidate"
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
			if !slices.Contains(inputs, kudplugin.KubeconfigParam) {
				t.Errorf("template %q takes no %q parameter", kudplugin.EntryTemplate, kudplugin.KubeconfigParam)
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
