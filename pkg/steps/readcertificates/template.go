// Package readcertificates is the read-certificates step: after fetch-kubeconfig, it reads when
// each master's kubeadm-managed certificates expire (kubeadm certs check-expiration, over SSH)
// for the Provisioning's status, so that a site sees a renewal coming (spec.certificateRenewal).
package readcertificates

import (
	"path"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "read-certificates"

// ReportParam is the step's output: the Report as JSON, from the file ReportFile.
const (
	ReportParam = "certificates-report"
	ReportFile  = "certificates-report.json"
)

// DefaultKubeadm is where kubespray installs kubeadm on a master (bin_dir).
const DefaultKubeadm = "/usr/local/bin/kubeadm"

// Template reads the masters' certificates, logging in as user; leaving are the nodes the run
// removed. It does not fail the Workflow over a master it cannot read (the report says so).
func Template(stepImage, user string, leaving []string) wfv1.Template {
	args := append(steps.CRArgs(),
		"--cluster="+steps.WorkflowParam(steps.ParamCluster),
		"--hosts="+steps.HostsFile,
		"--ssh-key="+steps.SSHKeyPath,
		"--ssh-user="+user,
		"--output="+path.Join(steps.OutputsDir, ReportFile),
	)
	if len(leaving) > 0 {
		args = append(args, "--leaving="+strings.Join(leaving, ","))
	}
	return wfv1.Template{
		Name:          Name,
		Inputs:        steps.HostsInput(),
		Container:     steps.StepContainer(stepImage, Name, args, steps.SSHKeyMount()),
		Outputs:       wfv1.Outputs{Parameters: []wfv1.Parameter{steps.OutputFile(ReportParam, ReportFile)}},
		RetryStrategy: steps.RetryFlakes(),
	}
}
