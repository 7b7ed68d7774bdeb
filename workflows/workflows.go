// Package workflows ships the WorkflowTemplates that Provisioning Workflows refer to: one per
// KUD plugin, named bpa-plugin-<name>, each with an "install" template taking the new
// cluster's kubeconfig Secret.
package workflows

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"sigs.k8s.io/yaml"
)

//go:embed bpa-plugin-*.yaml
var files embed.FS

// PluginTemplates returns the shipped WorkflowTemplates, sorted by name.
func PluginTemplates() ([]*wfv1.WorkflowTemplate, error) {
	names, err := fs.Glob(files, "bpa-plugin-*.yaml")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := make([]*wfv1.WorkflowTemplate, 0, len(names))
	for _, name := range names {
		raw, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var t wfv1.WorkflowTemplate
		if err := yaml.UnmarshalStrict(raw, &t); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if want := strings.TrimSuffix(name, ".yaml"); t.Name != want {
			return nil, fmt.Errorf("%s: names WorkflowTemplate %q, want %q", name, t.Name, want)
		}
		out = append(out, &t)
	}
	return out, nil
}

// Plugins returns the names of the KUD plugins with a shipped WorkflowTemplate, sorted.
func Plugins() ([]string, error) {
	templates, err := PluginTemplates()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(templates))
	for i, t := range templates {
		names[i] = strings.TrimPrefix(t.Name, "bpa-plugin-")
	}
	return names, nil
}
