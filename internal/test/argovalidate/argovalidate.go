// Package argovalidate runs Argo's own validator on compiled Workflows and shipped
// WorkflowTemplates, resolving templateRefs against the templates in workflows/.
package argovalidate

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/validate"

	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

type templateGetter map[string]*wfv1.WorkflowTemplate

func (g templateGetter) Get(name string) (*wfv1.WorkflowTemplate, error) {
	if t, ok := g[name]; ok {
		return t.DeepCopy(), nil
	}
	return nil, fmt.Errorf("WorkflowTemplate %q is not shipped in workflows/", name)
}

type noClusterTemplates struct{}

func (noClusterTemplates) Get(name string) (*wfv1.ClusterWorkflowTemplate, error) {
	return nil, fmt.Errorf("ClusterWorkflowTemplate %q: none are used", name)
}

func shipped() (templateGetter, error) {
	templates, err := workflows.PluginTemplates()
	if err != nil {
		return nil, err
	}
	g := templateGetter{}
	for _, t := range templates {
		g[t.Name] = t
	}
	return g, nil
}

// Workflow validates a Workflow as `argo submit` would.
func Workflow(wf *wfv1.Workflow) error {
	g, err := shipped()
	if err != nil {
		return err
	}
	return validate.ValidateWorkflow(g, noClusterTemplates{}, wf.DeepCopy(), nil, validate.ValidateOpts{Submit: true})
}

// WorkflowTemplate validates a WorkflowTemplate as `argo template create` would.
func WorkflowTemplate(t *wfv1.WorkflowTemplate) error {
	g, err := shipped()
	if err != nil {
		return err
	}
	return validate.ValidateWorkflowTemplate(g, noClusterTemplates{}, t.DeepCopy(), nil, validate.ValidateOpts{})
}
