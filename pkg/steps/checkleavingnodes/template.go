// Package checkleavingnodes is the check-leaving-nodes step of a remove run: before
// kubespray's remove-node.yml, it asks each leaving node's sshd for its host key, and when one
// does not answer (powered off, dead, gone), it tells kubespray to remove the nodes without
// resetting them, as kubespray documents for a node that is not online.
package checkleavingnodes

import (
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// Name of the step, its template and its DAG task.
const Name = "check-leaving-nodes"

// Template checks the leaving nodes (the hosts parameter holds them, with their addresses). It
// needs no SSH key: a host key is presented before anyone logs in. Its failures are the API
// server's: retried once.
func Template(stepImage string, leaving []string) wfv1.Template {
	return wfv1.Template{
		Name:   Name,
		Inputs: steps.HostsInput(),
		Container: steps.StepContainer(stepImage, Name, append(steps.CRArgs(),
			"--hosts="+steps.HostsFile,
			"--leaving="+strings.Join(leaving, ","),
			"--output="+steps.OutputsDir+"/"+runkubespray.RemovalVarsFile,
		)),
		Outputs:       wfv1.Outputs{Parameters: []wfv1.Parameter{steps.OutputFile(runkubespray.RemovalVarsParam, runkubespray.RemovalVarsFile)}},
		RetryStrategy: steps.RetryFlakes(),
	}
}
