// Package resolveclusterhosts is the resolve-cluster-hosts step of the Software Workflow: it
// reads the ConfigMap "<cluster>-hosts" and outputs the nodes to install on, as the JSON list
// the install fan-out iterates over.
package resolveclusterhosts

import (
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "resolve-cluster-hosts"

// Template lists the cluster's nodes; with only set, just those nodes.
func Template(stepImage string, only []string) wfv1.Template {
	// The cluster is the Software's own label, read with the CR: no flag names it.
	args := append(steps.CRArgs(), "--output="+steps.OutputsDir+"/nodes.json")
	if len(only) > 0 {
		args = append(args, "--only="+strings.Join(only, ","))
	}
	return wfv1.Template{
		Name:          Name,
		Container:     steps.StepContainer(stepImage, Name, args),
		Outputs:       wfv1.Outputs{Parameters: []wfv1.Parameter{steps.OutputFile(steps.NodesParam, "nodes.json")}},
		RetryStrategy: steps.WaitForTheWorld(),
	}
}
