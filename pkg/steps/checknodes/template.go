// Package checknodes is the check-nodes step: after each kubespray task that changes nodes
// (cluster.yml, a scale run, an upgrade's control plane and each of its waves, a control-plane
// change, a certificate renewal), it reads the nodes the task touched through the cluster's kubeconfig and fails the
// run unless each is Ready, schedulable and at the version the run installs. kubespray's own
// waits do not catch a node its upgrade leaves cordoned (kubespray #13030), and a failed check
// stops the waves after it, so one bad wave never spreads to the next.
package checknodes

import (
	"path"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
)

// Name of the step and its template.
const Name = "check-nodes"

// EveryNodeName is the template that checks every node of the resolved hosts, after a run that
// touched them all (cluster.yml): the compiled Workflow names none, so its size does not grow
// with the cluster's.
const EveryNodeName = "check-every-node"

// NodesParam is the input naming the nodes a task checks, comma-separated.
const NodesParam = "nodes"

// Wait is how long the step gives the nodes to become as they should: a kubelet restarted by
// the run takes seconds to report Ready again; a node still cordoned after this long stays so
// until someone uncordons it.
const Wait = 5 * time.Minute

// Task is the check task that follows a kubespray task.
func Task(after string) string { return "check-" + after }

// Template checks the nodes its task names, at version (kubespray's kube_version; empty leaves
// the version unchecked, for an image whose default the controller does not know). It calls
// only the new cluster's API, never the management cluster's (no token). A pod Argo lost is
// retried; a check that failed is final: the operator fixes the node and retries the step.
func Template(stepImage, version string) wfv1.Template {
	return template(Name, stepImage, "--nodes={{inputs.parameters."+NodesParam+"}}", version,
		wfv1.Inputs{Parameters: []wfv1.Parameter{{Name: NodesParam}}})
}

// EveryNodeTemplate is Template for every node of the hosts parameter (resolve-leases').
func EveryNodeTemplate(stepImage, version string) wfv1.Template {
	return template(EveryNodeName, stepImage, "--hosts="+steps.HostsFile, version, steps.HostsInput())
}

// AnsweringName is the template that checks the nodes its task names but those pin-host-keys
// went on without, after a run that left them out (a renewal).
const AnsweringName = "check-answering-nodes"

// SilentParam is AnsweringTemplate's input: pin-host-keys' silent-nodes output (JSON), as the
// file SilentFile.
const (
	SilentParam = "silent-nodes"
	SilentFile  = "silent-nodes.json"
)

// AnsweringTemplate is Template without the nodes of SilentParam.
func AnsweringTemplate(stepImage, version string) wfv1.Template {
	inputs := wfv1.Inputs{
		Parameters: []wfv1.Parameter{{Name: NodesParam}, {Name: SilentParam}},
		Artifacts:  []wfv1.Artifact{steps.InputFile(SilentParam, SilentFile)},
	}
	return template(AnsweringName, stepImage, "--nodes={{inputs.parameters."+NodesParam+"}}", version, inputs,
		"--except-silent="+path.Join(steps.InputsDir, SilentFile))
}

func template(name, stepImage, nodesArg, version string, inputs wfv1.Inputs, more ...string) wfv1.Template {
	args := append([]string{
		"--kubeconfig=" + reportnodes.KubeconfigPath,
		nodesArg,
		"--wait=" + Wait.String(),
	}, more...)
	if version != "" {
		args = append(args, "--version=v"+version)
	}
	t := wfv1.Template{
		Name:      name,
		Inputs:    inputs,
		Container: steps.StepContainer(stepImage, Name, args, corev1.VolumeMount{Name: reportnodes.KubeconfigVolume, MountPath: reportnodes.KubeconfigDir, ReadOnly: true}),
		RetryStrategy: &wfv1.RetryStrategy{
			Limit:       ptr.To(intstr.FromInt32(1)),
			RetryPolicy: wfv1.RetryPolicyOnError,
		},
	}
	steps.NoToken(&t)
	return t
}

// Arguments name the nodes one check task reads.
func Arguments(nodes []string) wfv1.Arguments {
	return wfv1.Arguments{Parameters: []wfv1.Parameter{{Name: NodesParam, Value: wfv1.AnyStringPtr(Names(nodes))}}}
}
