// Package fetchkubeconfig is the fetch-kubeconfig step: over SSH it reads the first master's
// admin.conf, points it at that master, and stores it in the Secret "<cluster>-kubeconfig".
package fetchkubeconfig

import (
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "fetch-kubeconfig"

// Template fetches the kubeconfig, retrying with backoff while the master does not answer.
// master (the first masters entry), user and leaving (the nodes a remove run takes out) are
// compiled in from the generation the Workflow runs: the step finishes what kubespray did, even
// when the spec has moved on meanwhile.
func Template(stepImage, master, user string, leaving []string) wfv1.Template {
	args := append(steps.CRArgs(),
		"--cluster="+steps.WorkflowParam(steps.ParamCluster),
		"--hosts="+steps.HostsFile,
		"--ssh-key="+steps.SSHKeyPath,
		"--master="+master,
		"--ssh-user="+user,
	)
	if len(leaving) > 0 {
		args = append(args, "--leaving="+strings.Join(leaving, ","))
	}
	return wfv1.Template{
		Name:          Name,
		Inputs:        steps.HostsInput(),
		Container:     steps.StepContainer(stepImage, Name, args, steps.SSHKeyMount()),
		RetryStrategy: steps.WaitForTheWorld(),
	}
}
