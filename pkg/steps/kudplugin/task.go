// Package kudplugin installs one KUD plugin into the new cluster, through the WorkflowTemplate
// bpa-plugin-<name> shipped in workflows/.
package kudplugin

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// Conventions every plugin WorkflowTemplate follows.
const (
	// TemplatePrefix + plugin name is the WorkflowTemplate's name.
	TemplatePrefix = "bpa-plugin-"
	// EntryTemplate is the template a DAG task refers to.
	EntryTemplate = "install"
	// KubeconfigParam names the Secret (key "value") holding the new cluster's kubeconfig.
	KubeconfigParam = "kubeconfig-secret"
	// KubectlImageParam is the image the plugin's pods run kubectl from.
	KubectlImageParam = "kubectl-image"
)

// TaskName is the DAG task of a plugin, as the Argo UI shows it.
func TaskName(plugin string) string { return "kud-plugin-" + plugin }

// WorkflowTemplateName is the WorkflowTemplate installing a plugin.
func WorkflowTemplateName(plugin string) string { return TemplatePrefix + plugin }

// TemplateRef refers to a plugin's WorkflowTemplate.
func TemplateRef(plugin string) *wfv1.TemplateRef {
	return &wfv1.TemplateRef{Name: WorkflowTemplateName(plugin), Template: EntryTemplate}
}

// Arguments hands a plugin the kubeconfig Secret's name and the site's kubectl image.
func Arguments(kubeconfigSecret, kubectlImage string) wfv1.Arguments {
	return wfv1.Arguments{Parameters: []wfv1.Parameter{
		{Name: KubeconfigParam, Value: wfv1.AnyStringPtr(kubeconfigSecret)},
		{Name: KubectlImageParam, Value: wfv1.AnyStringPtr(kubectlImage)},
	}}
}
