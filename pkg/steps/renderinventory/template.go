// Package renderinventory is the render-inventory step: the kubespray inventory and extra
// variables for the placed, addressed hosts.
package renderinventory

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "render-inventory"

// Files the step writes under steps.OutputsDir.
const (
	InventoryFile = "hosts.ini"
	ExtraVarsFile = "extra-vars.json"
)

// Template renders the inventory (INI) and the extra variables (JSON).
func Template(stepImage string) wfv1.Template {
	return wfv1.Template{
		Name:   Name,
		Inputs: steps.HostsInput(),
		Container: steps.StepContainer(stepImage, Name, append(steps.CRArgs(),
			"--hosts="+steps.HostsFile,
			"--output-dir="+steps.OutputsDir,
		)),
		Outputs: wfv1.Outputs{Parameters: []wfv1.Parameter{
			steps.OutputFile(steps.InventoryParam, InventoryFile),
			steps.OutputFile(steps.ExtraVarsParam, ExtraVarsFile),
		}},
	}
}
