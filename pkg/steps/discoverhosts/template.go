// Package discoverhosts is the discover-hosts step: it places the Provisioning's entries on
// BareMetalHosts and outputs the placed hosts as JSON.
package discoverhosts

import (
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "discover-hosts"

// Template lists BareMetalHosts, places the CR's entries on them and claims them. It retries
// with backoff while hosts are still provisioning. leaving are the nodes a remove run takes
// out: they are no longer in the spec, but kubespray's remove-node.yml needs them in the
// inventory, so the step adds them from the CR's status.
func Template(stepImage string, leaving []string) wfv1.Template {
	args := append(steps.CRArgs(), "--output="+steps.OutputsDir+"/hosts.json")
	if len(leaving) > 0 {
		args = append(args, "--leaving="+strings.Join(leaving, ","))
	}
	return wfv1.Template{
		Name:          Name,
		Container:     steps.StepContainer(stepImage, Name, args),
		Outputs:       wfv1.Outputs{Parameters: []wfv1.Parameter{steps.OutputFile(steps.HostsParam, "hosts.json")}},
		RetryStrategy: steps.WaitForTheWorld(),
	}
}
