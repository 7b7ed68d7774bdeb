// Package pinhostkeys is the pin-host-keys step: before kubespray connects to any node, it
// records each node's SSH host key in the Secret "<cluster>-known-hosts" (first contact) or
// checks it against the key recorded there, so that kubespray's own SSH sessions can verify
// every node strictly.
package pinhostkeys

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
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
	args = append(args, "--silent-output="+path.Join(steps.OutputsDir, SilentFile))
	return wfv1.Template{
		Name:          Name,
		Inputs:        steps.HostsInput(),
		Outputs:       wfv1.Outputs{Parameters: []wfv1.Parameter{steps.OptionalOutputFile(SilentParam, SilentFile)}},
		Container:     steps.StepContainer(stepImage, Name, args),
		RetryStrategy: steps.WaitForTheWorld(),
	}
}

// The nodes the run goes on without, silent: the step's output, for the CR's status.
const (
	SilentParam = "silent-nodes"
	SilentFile  = "silent-nodes.json"
)

// ParseSilent reads SilentParam's value: the silent nodes, each named, with an address and a
// time; an empty value is none.
func ParseSilent(raw string) ([]bpav1.SilentNode, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var silent []bpav1.SilentNode
	if err := json.Unmarshal([]byte(raw), &silent); err != nil {
		return nil, fmt.Errorf("%s: %w", SilentParam, err)
	}
	for _, n := range silent {
		if n.Node == "" || n.Address == "" || n.TriedAt.IsZero() {
			return nil, fmt.Errorf("%s: a node without a name, an address or a time: %+v", SilentParam, n)
		}
	}
	return silent, nil
}
