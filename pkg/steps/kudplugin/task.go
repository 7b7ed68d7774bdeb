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
	// ManifestParam is what kubectl applies; its default in each WorkflowTemplate is the
	// plugin's upstream URL, which offline mode replaces with the site mirror's.
	ManifestParam = "manifest"
)

// TaskName is the DAG task of a plugin, as the Argo UI shows it.
func TaskName(plugin string) string { return "kud-plugin-" + plugin }

// WorkflowTemplateName is the WorkflowTemplate installing a plugin.
func WorkflowTemplateName(plugin string) string { return TemplatePrefix + plugin }

// TemplateRef refers to a plugin's WorkflowTemplate.
func TemplateRef(plugin string) *wfv1.TemplateRef {
	return &wfv1.TemplateRef{Name: WorkflowTemplateName(plugin), Template: EntryTemplate}
}

// Arguments hands a plugin the kubeconfig Secret's name, the site's kubectl image and, when
// not empty, the manifest to apply instead of the template's own.
func Arguments(kubeconfigSecret, kubectlImage, manifest string) wfv1.Arguments {
	args := wfv1.Arguments{Parameters: []wfv1.Parameter{
		{Name: KubeconfigParam, Value: wfv1.AnyStringPtr(kubeconfigSecret)},
		{Name: KubectlImageParam, Value: wfv1.AnyStringPtr(kubectlImage)},
	}}
	if manifest != "" {
		args.Parameters = append(args.Parameters, wfv1.Parameter{Name: ManifestParam, Value: wfv1.AnyStringPtr(manifest)})
	}
	return args
}
