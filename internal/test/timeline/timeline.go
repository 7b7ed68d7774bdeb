// Package timeline splits a finished Workflow's run into where its time went: for each pod,
// how long it waited after what it depends on had ended (Argo's scheduling, a retry's backoff)
// and how long it ran (the pod's start and the step's work), from the Workflow's own node
// times. The end-to-end suites print it to say where the product's time goes beside
// kubespray's.
package timeline

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// Row is one pod of the Workflow.
type Row struct {
	// Step is the pod's name in the DAG, with its attempt ("run-kubespray(1)") when retried.
	Step string
	// Start is when the pod's node began, from the apply.
	Start time.Duration
	// Waited is from when what it waited for ended (the tasks it depends on, the attempt before
	// it, or the Workflow's start) to its start.
	Waited time.Duration
	// Ran is from its start to its end.
	Ran time.Duration
}

// Timeline is a Workflow's pods, in the order they started, and its critical path's share.
type Timeline struct {
	Rows []Row
	// Created is from the apply to the Workflow's start: the controller's share before Argo.
	Created time.Duration
	// Waited and Ran sum the rows on the critical path: the chain of pods, each the last to
	// end of those the next waited for, from the Workflow's last pod back to its first.
	Waited, Ran time.Duration
	// Path is that chain's steps, first to last.
	Path []string
}

var attempt = regexp.MustCompile(`^(.*)\((\d+)\)$`)

// Of reads wf's pod nodes against applied, the moment the CR change was applied. Pods that
// have not ended are left out.
func Of(wf *wfv1.Workflow, applied time.Time) Timeline {
	depends := map[string][]string{}
	if entry := wf.GetTemplateByName(wf.Spec.Entrypoint); entry != nil && entry.DAG != nil {
		for _, t := range entry.DAG.Tasks {
			depends[t.Name] = dependencies(t)
		}
	}
	var pods []wfv1.NodeStatus
	ended := map[string]wfv1.NodeStatus{} // by step and attempt, its latest pod
	for _, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod && !n.StartedAt.IsZero() && !n.FinishedAt.IsZero() {
			pods = append(pods, n)
			ended[n.DisplayName] = n
			if task, _ := taskOf(n.DisplayName); ended[task].FinishedAt.Time.Before(n.FinishedAt.Time) {
				ended[task] = n
			}
		}
	}
	slices.SortFunc(pods, func(a, b wfv1.NodeStatus) int { return a.StartedAt.Compare(b.StartedAt.Time) })
	start := wf.Status.StartedAt.Time
	tl := Timeline{Created: start.Sub(applied)}
	before := map[string]wfv1.NodeStatus{} // what each pod waited for: the last of it to end
	for _, n := range pods {
		task, try := taskOf(n.DisplayName)
		from, waitedFor := start, wfv1.NodeStatus{}
		var waitedOn []string
		deps, inDAG := depends[task]
		switch {
		case try > 0:
			waitedOn = []string{fmt.Sprintf("%s(%d)", task, try-1)}
		case inDAG:
			waitedOn = deps
		default:
			// The exit handler waits for the DAG: every pod that ended before it started.
			for _, p := range pods {
				if !p.FinishedAt.After(n.StartedAt.Time) {
					waitedOn = append(waitedOn, p.DisplayName)
				}
			}
		}
		for _, d := range waitedOn {
			if e, ok := ended[d]; ok && e.FinishedAt.After(from) {
				from, waitedFor = e.FinishedAt.Time, e
			}
		}
		before[n.ID] = waitedFor
		tl.Rows = append(tl.Rows, Row{Step: n.DisplayName, Start: n.StartedAt.Sub(applied), Waited: n.StartedAt.Sub(from), Ran: n.FinishedAt.Sub(n.StartedAt.Time)})
	}
	tl.criticalPath(pods, before, start)
	return tl
}

// criticalPath walks back from the pod that ended last (the exit handler's, when there is one)
// through what each waited for.
func (tl *Timeline) criticalPath(pods []wfv1.NodeStatus, before map[string]wfv1.NodeStatus, start time.Time) {
	if len(pods) == 0 {
		return
	}
	last := slices.MaxFunc(pods, func(a, b wfv1.NodeStatus) int { return a.FinishedAt.Compare(b.FinishedAt.Time) })
	for n := last; n.ID != ""; n = before[n.ID] {
		from := start
		if b := before[n.ID]; b.ID != "" {
			from = b.FinishedAt.Time
		}
		tl.Waited += n.StartedAt.Sub(from)
		tl.Ran += n.FinishedAt.Sub(n.StartedAt.Time)
		tl.Path = append([]string{n.DisplayName}, tl.Path...)
	}
}

// taskOf is a pod's task and attempt: "run-kubespray(1)" is run-kubespray's second attempt.
func taskOf(displayName string) (string, int) {
	if m := attempt.FindStringSubmatch(displayName); m != nil {
		var n int
		_, _ = fmt.Sscan(m[2], &n)
		return m[1], n
	}
	return displayName, 0
}

var dependsTask = regexp.MustCompile(`([a-z0-9-]+)\.(Succeeded|Failed|Errored|Skipped|Completed|Daemoned|AnySucceeded|AllFailed)`)

// dependencies are the tasks a DAG task waits for, from its depends expression (the compiler
// writes "a.Succeeded && b.Succeeded") or its dependencies list.
func dependencies(t wfv1.DAGTask) []string {
	deps := slices.Clone(t.Dependencies)
	for _, m := range dependsTask.FindAllStringSubmatch(t.Depends, -1) {
		deps = append(deps, m[1])
	}
	return deps
}

// String is the timeline as a table: each pod's start, wait and run in seconds, then the
// critical path's sums.
func (tl Timeline) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %8s %8s %8s\n", "pod", "start s", "waited s", "ran s")
	for _, r := range tl.Rows {
		fmt.Fprintf(&b, "%-34s %8.0f %8.0f %8.0f\n", r.Step, r.Start.Seconds(), r.Waited.Seconds(), r.Ran.Seconds())
	}
	fmt.Fprintf(&b, "apply → Workflow started %.0f s; on the critical path (%s): waited %.0f s, ran %.0f s",
		tl.Created.Seconds(), strings.Join(tl.Path, " → "), tl.Waited.Seconds(), tl.Ran.Seconds())
	return b.String()
}
