// Package installsoftware is the install-software step: on one node, over SSH, it installs or
// upgrades only the packages that differ from the Software CR for the node's role.
package installsoftware

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "install-software"

// Input parameters: one node of resolve-cluster-hosts' list.
const (
	NodeParam    = "node"
	RoleParam    = "role"
	AddressParam = "ip"
)

// Template installs the software on one node and outputs its report.
func Template(stepImage string) wfv1.Template {
	return wfv1.Template{
		Name: Name,
		Inputs: wfv1.Inputs{Parameters: []wfv1.Parameter{
			{Name: NodeParam}, {Name: RoleParam}, {Name: AddressParam},
		}},
		Container: steps.StepContainer(stepImage, Name, append(steps.CRArgs(),
			"--node={{inputs.parameters."+NodeParam+"}}",
			"--role={{inputs.parameters."+RoleParam+"}}",
			"--address={{inputs.parameters."+AddressParam+"}}",
			"--ssh-key="+steps.SSHKeyPath,
			"--output="+steps.OutputsDir+"/report.json",
		), steps.SSHKeyMount()),
		Outputs:       wfv1.Outputs{Parameters: []wfv1.Parameter{steps.OutputFile(steps.ReportParam, "report.json")}},
		RetryStrategy: steps.WaitForTheWorld(),
	}
}
