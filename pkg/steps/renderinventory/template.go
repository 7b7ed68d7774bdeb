// Package renderinventory is the render-inventory step: the kubespray inventory and extra
// variables for the placed, addressed hosts.
package renderinventory

import (
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "render-inventory"

// Files the step writes under steps.OutputsDir.
const (
	InventoryFile = "hosts.ini"
	ExtraVarsFile = "extra-vars.json"
)

// Flags of the step that turn offline mode on.
const (
	OfflineMirrorFlag         = "offline-mirror"
	OfflineKubesprayFilesFlag = "offline-kubespray-files"
	// KubernetesVersionFlag is the version the run installs (kube_version).
	KubernetesVersionFlag = "kubernetes-version"
	// ControlPlaneFlag and EtcdFlag are the groups as planned, comma-separated, in order.
	ControlPlaneFlag = "control-plane"
	EtcdFlag         = "etcd"
)

// Template renders the inventory (INI) and the extra variables (JSON); with a mirror, the
// extra variables are offline mode's; with a kubernetesVersion, kube_version is it; with
// groups, those are the inventory's kube_control_plane and etcd.
func Template(stepImage string, mirror *offline.Mirror, kubernetesVersion string, groups Groups) wfv1.Template {
	args := append(steps.CRArgs(),
		"--hosts="+steps.HostsFile,
		"--output-dir="+steps.OutputsDir,
	)
	if kubernetesVersion != "" {
		args = append(args, "--"+KubernetesVersionFlag+"="+kubernetesVersion)
	}
	if len(groups.ControlPlane) > 0 {
		args = append(args, "--"+ControlPlaneFlag+"="+strings.Join(groups.ControlPlane, ","), "--"+EtcdFlag+"="+strings.Join(groups.Etcd, ","))
	}
	if mirror != nil {
		args = append(args, "--"+OfflineMirrorFlag+"="+mirror.URL,
			"--"+OfflineKubesprayFilesFlag+"="+mirror.KubesprayFiles.Name+":"+mirror.KubesprayFiles.Version)
	}
	return wfv1.Template{
		Name:      Name,
		Inputs:    steps.HostsInput(),
		Container: steps.StepContainer(stepImage, Name, args),
		Outputs: wfv1.Outputs{Parameters: []wfv1.Parameter{
			steps.OutputFile(steps.InventoryParam, InventoryFile),
			steps.OutputFile(steps.ExtraVarsParam, ExtraVarsFile),
		}},
	}
}
