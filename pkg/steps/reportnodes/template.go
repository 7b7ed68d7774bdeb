// Package reportnodes is the report-nodes step, every Provisioning Workflow's exit handler:
// through the kubeconfig fetch-kubeconfig stored, it reads which kubelet version each node of
// the cluster runs and whether it is Ready, for the Provisioning's status. It runs whether the
// Workflow succeeded or failed, so that an upgrade stopped by a failed wave shows which nodes
// run which version.
package reportnodes

import (
	"path"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step and its template.
const Name = "report-nodes"

// ReportParam is the step's output: the Report as JSON, from the file ReportFile.
const (
	ReportParam = "nodes-report"
	ReportFile  = "nodes-report.json"
)

// The cluster's kubeconfig Secret, mounted read-only: optional, since a first run may fail
// before fetch-kubeconfig has stored it.
const (
	KubeconfigVolume = "kubeconfig"
	KubeconfigDir    = "/etc/bpa/kubeconfig"
)

// KubeconfigPath is where the step reads the kubeconfig.
var KubeconfigPath = path.Join(KubeconfigDir, bpav1.KubeconfigSecretKey)

// Template reads the nodes. It calls no API of the management cluster (no token), only the new
// cluster's, and it does not fail the Workflow: what it cannot read it says in its report.
func Template(stepImage string) wfv1.Template {
	t := wfv1.Template{
		Name: Name,
		Container: steps.StepContainer(stepImage, Name, []string{
			"--kubeconfig=" + KubeconfigPath,
			"--output=" + path.Join(steps.OutputsDir, ReportFile),
		}, corev1.VolumeMount{Name: KubeconfigVolume, MountPath: KubeconfigDir, ReadOnly: true}),
		Outputs:       wfv1.Outputs{Parameters: []wfv1.Parameter{steps.OutputFile(ReportParam, ReportFile)}},
		RetryStrategy: steps.RetryFlakes(),
	}
	steps.NoToken(&t)
	return t
}

// Volume is the cluster's kubeconfig Secret, for the Workflow's volumes.
func Volume(cluster string) corev1.Volume {
	return corev1.Volume{Name: KubeconfigVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  cluster + bpav1.KubeconfigSecretSuffix,
		Items:       []corev1.KeyToPath{{Key: bpav1.KubeconfigSecretKey, Path: bpav1.KubeconfigSecretKey}},
		DefaultMode: ptr.To[int32](0o440),
		Optional:    ptr.To(true),
	}}}
}
