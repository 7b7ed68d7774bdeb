// Package checketcdmembers is the check-etcd-members step: on either side of a run that adds or
// removes masters, it asks etcd (kubespray's etcdctl.sh on the first etcd member, over SSH)
// for its members and fails unless they are exactly the nodes the plan expects, so that a
// control-plane change starts only from the etcd the record describes and ends where it planned.
package checketcdmembers

import (
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step and its template.
const Name = "check-etcd-members"

// The DAG tasks that run it: before kubespray, and after.
const (
	BeforeTask = "check-etcd-before"
	AfterTask  = "check-etcd-after"
)

// MembersParam is the task's input: the expected members' labels, comma-separated, compiled in.
const MembersParam = "members"

// DefaultEtcdctl is kubespray's etcdctl wrapper on an etcd member (bin_dir/etcdctl.sh): it
// names the member's own client certificate, so no key leaves the node.
const DefaultEtcdctl = "/usr/local/bin/etcdctl.sh"

// Template checks etcd's membership against the task's members, logging in as user, retrying
// with backoff while the node does not answer.
func Template(stepImage, user string) wfv1.Template {
	args := append(steps.CRArgs(),
		"--cluster="+steps.WorkflowParam(steps.ParamCluster),
		"--hosts="+steps.HostsFile,
		"--ssh-key="+steps.SSHKeyPath,
		"--ssh-user="+user,
		"--members={{inputs.parameters."+MembersParam+"}}",
	)
	inputs := steps.HostsInput()
	inputs.Parameters = append(inputs.Parameters, wfv1.Parameter{Name: MembersParam})
	return wfv1.Template{
		Name:          Name,
		Inputs:        inputs,
		Container:     steps.StepContainer(stepImage, Name, args, steps.SSHKeyMount()),
		RetryStrategy: steps.WaitForTheWorld(),
	}
}

// Arguments are a task's: the hosts resolve-leases wrote and the expected members.
func Arguments(hosts wfv1.Parameter, members []string) wfv1.Arguments {
	return wfv1.Arguments{Parameters: []wfv1.Parameter{hosts, {Name: MembersParam, Value: wfv1.AnyStringPtr(strings.Join(members, ","))}}}
}
