// Package pinhostkeys is the pin-host-keys step: before kubespray connects to any node, it
// records each node's SSH host key in the Secret "<cluster>-known-hosts" (first contact) or
// checks it against the key recorded there, so that kubespray's own SSH sessions can verify
// every node strictly.
package pinhostkeys

import (
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "pin-host-keys"

// Template pins the addressed hosts' keys, retrying with backoff while a node does not answer
// yet. mayNotAnswer are the nodes (entry labels) the run can do without, whose pinned keys are
// kept when they are silent: a removal's leaving nodes, a renewal's workers. Any other silent
// node makes the run wait, before any host is touched. It needs no SSH key: a host key is
// presented before anyone logs in.
func Template(stepImage string, mayNotAnswer []string) wfv1.Template {
	args := append(steps.CRArgs(),
		"--cluster="+steps.WorkflowParam(steps.ParamCluster),
		"--hosts="+steps.HostsFile,
	)
	if len(mayNotAnswer) > 0 {
		args = append(args, "--may-not-answer="+strings.Join(mayNotAnswer, ","))
	}
	return wfv1.Template{
		Name:          Name,
		Inputs:        steps.HostsInput(),
		Container:     steps.StepContainer(stepImage, Name, args),
		RetryStrategy: steps.WaitForTheWorld(),
	}
}
