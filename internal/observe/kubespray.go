package observe

import (
	"fmt"
	"hash/fnv"
	"slices"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// RunningKubespray is a run-kubespray attempt whose pod runs now: where its progress is read.
type RunningKubespray struct {
	// Step is the Workflow's task: run-kubespray, upgrade-wave-2.
	Step string
	// Pod is the attempt's pod, in the Workflow's namespace.
	Pod string
}

// runningKubespray is the newest attempt of run-kubespray that is running, nil when none is.
// An upgrade's waves run one at a time, so one is running at most.
func runningKubespray(wf *wfv1.Workflow, pods []wfv1.NodeStatus) *RunningKubespray {
	found := newestIn(pods, runkubespray.Name, wfv1.NodeRunning)
	if found == nil {
		return nil
	}
	return &RunningKubespray{Step: taskOf(wf, found), Pod: PodName(wf, found)}
}

// taskOf is the DAG task a pod node is an attempt of: its retry node's display name, or its
// own without Argo's attempt suffix.
func taskOf(wf *wfv1.Workflow, n *wfv1.NodeStatus) string {
	for _, parent := range wf.Status.Nodes {
		if parent.Type == wfv1.NodeTypeRetry && slices.Contains(parent.Children, n.ID) {
			return parent.DisplayName
		}
	}
	return retrySuffix.ReplaceAllString(n.DisplayName, "")
}

// PodName is the pod Argo runs a pod node in. Argo names pods (its POD_NAMES=v2, the default
// since v3.2 and the annotation workflows.argoproj.io/pod-name-format) "<workflow>-<template>-"
// then the FNV-1a hash of the node's name; v1 named them by node ID. Argo's own function lives
// in a package that brings its server's authentication along; the test holds the two equal.
func PodName(wf *wfv1.Workflow, n *wfv1.NodeStatus) string {
	if wf.Annotations[podNameFormatAnnotation] == "v1" {
		return n.ID
	}
	if wf.Name == n.Name {
		return wf.Name
	}
	prefix := wf.Name
	if n.TemplateName != "" {
		prefix += "-" + n.TemplateName
	}
	// A name is at most 253 characters, the hash and its dash 11 of them.
	prefix = prefix[:min(len(prefix), 253-10-1)]
	h := fnv.New32a()
	_, _ = h.Write([]byte(n.Name))
	return fmt.Sprintf("%s-%d", prefix, h.Sum32())
}

const podNameFormatAnnotation = "workflows.argoproj.io/pod-name-format"
