// Package observe reads what a CR's status shows out of an Argo Workflow: phase, progress,
// times, the failing step and its message, and the steps' outputs (placed hosts, software
// reports). It is pure: a Workflow in, an Observation out, no client.
package observe

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/packer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checknodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/readcertificates"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveleases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// MaxMessageLength bounds the message copied into status: a step's message may be long, and
// status is read on every `kubectl get`.
const MaxMessageLength = 1024

// Observation is what a CR's status mirrors of one Workflow.
type Observation struct {
	// Name of the Workflow.
	Name string
	// Phase, Argo's; a Workflow Argo has not picked up yet is Pending.
	Phase bpav1.WorkflowPhase
	// Progress, Argo's "done/total".
	Progress              string
	StartedAt, FinishedAt *metav1.Time
	// Message is the failing step and its message when the Workflow failed, else Argo's
	// message, if any.
	Message string
	// Hosts placed and addressed by the Workflow; nil when no step has reported them (yet).
	Hosts []bpav1.Node
	// KubeconfigWritten is true once fetch-kubeconfig has succeeded.
	KubeconfigWritten bool
	// Reports of install-software, one per node, the newest attempt of each.
	Reports []installsoftware.Report
	// NodesReport is what report-nodes read of the cluster's nodes; nil before it has run.
	NodesReport *reportnodes.Report
	// Certificates are the masters' certificates read-certificates read; nil before it has run
	// or when it read none.
	Certificates *bpav1.CertificatesStatus
	// Upgrade is where an upgrade's waves stand; nil for a Workflow that is not an upgrade.
	Upgrade *bpav1.UpgradeStatus
	// NotAnswering are the nodes the run went on without, silent (pin-host-keys' output, its
	// newest attempt that succeeded); nil before it has.
	NotAnswering []bpav1.SilentNode
	// Kubespray is the run-kubespray attempt running now, whose log reports its progress;
	// nil when none runs.
	Kubespray *RunningKubespray
	// NodesUnavailable says why the node status could not be read (offloaded to Argo's
	// database, or undecodable); phase and progress are still mirrored.
	NodesUnavailable string
}

// Finished reports whether the phase is one Argo does not leave by itself (argo retry can).
func (o Observation) Finished() bool {
	return o.Phase == bpav1.PhaseSucceeded || o.Phase == bpav1.PhaseFailed || o.Phase == bpav1.PhaseError
}

// Of reads a Workflow. It never fails: what cannot be read is left out and said in
// NodesUnavailable, so a Workflow Argo could not fully report still has its phase mirrored.
func Of(in *wfv1.Workflow) Observation {
	o := Observation{
		Name:     in.Name,
		Phase:    phaseOf(in.Status.Phase),
		Progress: string(in.Status.Progress),
		Message:  in.Status.Message,
	}
	if !in.Status.StartedAt.IsZero() {
		o.StartedAt = in.Status.StartedAt.DeepCopy()
	}
	if !in.Status.FinishedAt.IsZero() {
		o.FinishedAt = in.Status.FinishedAt.DeepCopy()
	}
	nodes, why := nodesOf(in)
	o.NodesUnavailable = why
	pods := podNodes(nodes)
	switch o.Phase {
	case bpav1.PhaseFailed, bpav1.PhaseError:
		if failed := newestFailed(pods); failed != nil {
			o.Message = fmt.Sprintf("step %s failed: %s", stepOf(failed), failed.Message)
		}
	case bpav1.PhaseRunning:
		// A long step's failed attempt is otherwise invisible until its retry ends, an hour
		// later for run-kubespray: the operator sees it is being run a second time, and why.
		// Argo's own message, when it has one, is kept.
		if o.Message != "" {
			break
		}
		if failed := newestFailed(retrying(nodes, pods)); failed != nil {
			o.Message = fmt.Sprintf("step %s failed and is being retried: %s", stepOf(failed), failed.Message)
		}
	}
	o.Message = truncate(o.Message)
	o.Hosts = hostsOf(pods)
	o.KubeconfigWritten = slices.ContainsFunc(pods, func(n wfv1.NodeStatus) bool {
		return n.TemplateName == fetchkubeconfig.Name && n.Phase == wfv1.NodeSucceeded
	})
	o.Reports = reportsOf(pods)
	o.Upgrade = upgradeOf(in, nodes)
	o.NodesReport = nodesReportOf(pods)
	o.Certificates = certificatesOf(pods)
	o.NotAnswering = notAnsweringOf(pods)
	if o.Phase == bpav1.PhaseRunning {
		o.Kubespray = runningKubespray(in, pods)
	}
	return o
}

// notAnsweringOf reads pin-host-keys' silent nodes, the newest attempt that succeeded; an
// output that does not parse is none.
func notAnsweringOf(pods []wfv1.NodeStatus) []bpav1.SilentNode {
	n := newestSucceeded(pods, pinhostkeys.Name)
	if n == nil {
		return nil
	}
	raw, _ := outputParam(n, pinhostkeys.SilentParam)
	silent, err := pinhostkeys.ParseSilent(raw)
	if err != nil || silent == nil {
		return []bpav1.SilentNode{}
	}
	return silent
}

// certificatesOf reads read-certificates' output, the newest attempt that succeeded; a report
// that does not parse, or in which no master was read, is nil (the status keeps what it knew).
func certificatesOf(pods []wfv1.NodeStatus) *bpav1.CertificatesStatus {
	found := newestSucceeded(pods, readcertificates.Name)
	if found == nil {
		return nil
	}
	raw, _ := outputParam(found, readcertificates.ReportParam)
	r, err := readcertificates.Parse(raw)
	if err != nil {
		return nil
	}
	return r.Status()
}

// newestSucceeded is the newest attempt of a template that succeeded, nil when none has.
func newestSucceeded(pods []wfv1.NodeStatus, template string) *wfv1.NodeStatus {
	return newestIn(pods, template, wfv1.NodeSucceeded)
}

// newestIn is the newest attempt of a template in phase, nil when none is.
func newestIn(pods []wfv1.NodeStatus, template string, phase wfv1.NodePhase) *wfv1.NodeStatus {
	var found *wfv1.NodeStatus
	for i := range pods {
		n := &pods[i]
		if n.TemplateName == template && n.Phase == phase && (found == nil || newer(n, found)) {
			found = n
		}
	}
	return found
}

// nodesReportOf reads report-nodes' output, the newest attempt that succeeded; a report that
// does not parse is taken as unreadable.
func nodesReportOf(pods []wfv1.NodeStatus) *reportnodes.Report {
	found := newestSucceeded(pods, reportnodes.Name)
	if found == nil {
		return nil
	}
	raw, _ := outputParam(found, reportnodes.ReportParam)
	r, err := reportnodes.Parse(raw)
	if err != nil {
		return &reportnodes.Report{Unreadable: err.Error()}
	}
	return &r
}

// upgradeOf reads an upgrade's waves from its Workflow: which are done, which waits for
// approval, runs or failed, and that wave's nodes (its task's limit). nil when the Workflow is
// not an upgrade.
func upgradeOf(in *wfv1.Workflow, nodes wfv1.Nodes) *bpav1.UpgradeStatus {
	version, ok := in.Annotations[bpav1.WorkflowUpgradeAnnotation]
	if !ok {
		return nil
	}
	limits, tasks := map[string]string{}, map[string]bool{}
	if entry := in.GetTemplateByName(in.Spec.Entrypoint); entry != nil && entry.DAG != nil {
		for _, t := range entry.DAG.Tasks {
			tasks[t.Name] = true
			for _, p := range t.Arguments.Parameters {
				if p.Name == runkubespray.LimitParam && p.Value != nil {
					limits[t.Name] = p.Value.String()
				}
			}
		}
	}
	waves := []string{runkubespray.ControlPlaneTask}
	for i := 1; limits[runkubespray.WaveTask(i)] != ""; i++ {
		waves = append(waves, runkubespray.WaveTask(i))
	}
	// A DAG task's node (the retry node over its attempts, or its pod) is named as the task.
	phase := map[string]wfv1.NodePhase{}
	for _, n := range nodes {
		if n.Type != wfv1.NodeTypePod || !retrySuffix.MatchString(n.DisplayName) {
			phase[n.DisplayName] = n.Phase
		}
	}
	u := &bpav1.UpgradeStatus{KubernetesVersion: version, Waves: len(waves) - 1}
	at := ""
	for i, wave := range waves {
		p := phase[wave]
		if check := checknodes.Task(wave); p == wfv1.NodeSucceeded && tasks[check] {
			// A wave is upgraded once its nodes are checked.
			p = cmp.Or(phase[check], wfv1.NodePending)
		}
		switch p {
		case wfv1.NodeSucceeded:
			u.Upgraded = append(u.Upgraded, wave)
			continue
		case wfv1.NodeFailed, wfv1.NodeError:
			u.Failed, at = wave, wave
		case wfv1.NodeRunning, wfv1.NodePending:
			u.Running, at = wave, wave
		default:
			if i > 0 && phase[runkubespray.ApprovalTask(i)] == wfv1.NodeRunning {
				u.Waiting, at = wave, wave
			}
		}
		break
	}
	if at != "" {
		u.Nodes = strings.Split(limits[at], ",")
	}
	return u
}

func phaseOf(p wfv1.WorkflowPhase) bpav1.WorkflowPhase {
	switch p {
	case wfv1.WorkflowRunning:
		return bpav1.PhaseRunning
	case wfv1.WorkflowSucceeded:
		return bpav1.PhaseSucceeded
	case wfv1.WorkflowFailed:
		return bpav1.PhaseFailed
	case wfv1.WorkflowError:
		return bpav1.PhaseError
	}
	return bpav1.PhasePending
}

// nodesOf returns the node status, decompressing it when Argo compressed it (large
// Workflows), or why it is not there.
func nodesOf(in *wfv1.Workflow) (wfv1.Nodes, string) {
	if len(in.Status.Nodes) > 0 {
		return in.Status.Nodes, ""
	}
	if in.Status.CompressedNodes != "" {
		wf := &wfv1.Workflow{Status: wfv1.WorkflowStatus{CompressedNodes: in.Status.CompressedNodes}}
		if err := packer.DecompressWorkflow(wf); err != nil {
			return nil, fmt.Sprintf("the Workflow's compressed node status cannot be read: %v", err)
		}
		return wf.Status.Nodes, ""
	}
	if in.Status.OffloadNodeStatusVersion != "" {
		return nil, "the Workflow's node status is offloaded to Argo's database; hosts and reports are not mirrored"
	}
	return nil, ""
}

// podNodes are the nodes that ran a container, in a fixed order (by ID), so that everything
// drawn from them is deterministic.
func podNodes(nodes wfv1.Nodes) []wfv1.NodeStatus {
	var pods []wfv1.NodeStatus
	for _, n := range nodes {
		if n.Type == wfv1.NodeTypePod {
			pods = append(pods, n)
		}
	}
	slices.SortFunc(pods, func(a, b wfv1.NodeStatus) int { return strings.Compare(a.ID, b.ID) })
	return pods
}

// newer orders nodes by when they finished (or started), then by ID.
func newer(a, b *wfv1.NodeStatus) bool {
	ta, tb := a.FinishedAt, b.FinishedAt
	if ta.IsZero() || tb.IsZero() {
		ta, tb = a.StartedAt, b.StartedAt
	}
	if !ta.Equal(&tb) {
		return tb.Before(&ta)
	}
	return a.ID > b.ID
}

// retrying are the attempts of steps Argo is still retrying: the pods under a retry node that
// has not finished.
func retrying(nodes wfv1.Nodes, pods []wfv1.NodeStatus) []wfv1.NodeStatus {
	open := map[string]bool{}
	for _, n := range nodes {
		if n.Type == wfv1.NodeTypeRetry && !n.Fulfilled() {
			for _, child := range n.Children {
				open[child] = true
			}
		}
	}
	var attempts []wfv1.NodeStatus
	for _, p := range pods {
		if open[p.ID] {
			attempts = append(attempts, p)
		}
	}
	return attempts
}

func newestFailed(pods []wfv1.NodeStatus) *wfv1.NodeStatus {
	var found *wfv1.NodeStatus
	for i := range pods {
		n := &pods[i]
		if n.Phase != wfv1.NodeFailed && n.Phase != wfv1.NodeError {
			continue
		}
		if found == nil || newer(n, found) {
			found = n
		}
	}
	return found
}

var retrySuffix = regexp.MustCompile(`\(\d+\)$`)

// stepOf names a node's step as an operator knows it: its template (a KUD plugin's
// WorkflowTemplate), and for the per-node install, the node.
func stepOf(n *wfv1.NodeStatus) string {
	step := n.TemplateName
	if n.TemplateRef != nil {
		step = n.TemplateRef.Name
	}
	if step == "" {
		step = retrySuffix.ReplaceAllString(n.DisplayName, "")
	}
	if n.Inputs != nil {
		for _, p := range n.Inputs.Parameters {
			if (p.Name == installsoftware.NodeParam || p.Name == runkubespray.LimitParam) && p.Value != nil {
				step += " on " + p.Value.String()
			}
		}
	}
	return step
}

func outputParam(n *wfv1.NodeStatus, name string) (string, bool) {
	if n.Outputs == nil {
		return "", false
	}
	for _, p := range n.Outputs.Parameters {
		if p.Name == name && p.Value != nil {
			return p.Value.String(), true
		}
	}
	return "", false
}

// hostsOf reads the placed hosts from resolve-leases' output (with IPs) or, before it has
// run, from discover-hosts'.
func hostsOf(pods []wfv1.NodeStatus) []bpav1.Node {
	for _, step := range []string{resolveleases.Name, discoverhosts.Name} {
		var found *wfv1.NodeStatus
		for i := range pods {
			n := &pods[i]
			if n.TemplateName != step || n.Phase != wfv1.NodeSucceeded {
				continue
			}
			if _, ok := outputParam(n, steps.HostsParam); ok && (found == nil || newer(n, found)) {
				found = n
			}
		}
		if found == nil {
			continue
		}
		raw, _ := outputParam(found, steps.HostsParam)
		var placed []bpav1.Node
		if err := json.Unmarshal([]byte(raw), &placed); err != nil {
			continue
		}
		hosts := make([]bpav1.Node, 0, len(placed))
		for _, p := range placed {
			hosts = append(hosts, bpav1.Node{Label: p.Label, Role: p.Role, BareMetalHost: p.BareMetalHost, MAC: p.MAC, IP: p.IP})
		}
		slices.SortFunc(hosts, func(a, b bpav1.Node) int { return strings.Compare(a.Label, b.Label) })
		return slices.CompactFunc(hosts, func(a, b bpav1.Node) bool { return a.Label == b.Label })
	}
	return nil
}

// reportsOf reads install-software's reports, the newest attempt per node (a retried node
// reports again), sorted by node.
func reportsOf(pods []wfv1.NodeStatus) []installsoftware.Report {
	newest := map[string]*wfv1.NodeStatus{}
	reports := map[string]installsoftware.Report{}
	for i := range pods {
		n := &pods[i]
		if n.TemplateName != installsoftware.Name {
			continue
		}
		raw, ok := outputParam(n, steps.ReportParam)
		if !ok {
			continue
		}
		var r installsoftware.Report
		if err := json.Unmarshal([]byte(raw), &r); err != nil || r.Node == "" {
			continue
		}
		if prev := newest[r.Node]; prev == nil || newer(n, prev) {
			newest[r.Node], reports[r.Node] = n, r
		}
	}
	var out []installsoftware.Report
	for _, r := range reports {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b installsoftware.Report) int { return strings.Compare(a.Node, b.Node) })
	return out
}

func truncate(s string) string {
	if len(s) <= MaxMessageLength {
		return s
	}
	cut := s[:MaxMessageLength-len("…")]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + "…"
}

// Newest picks the Workflow to mirror among those of one CR generation: the newest by
// creation, so that after `argo resubmit` the resubmitted one is followed. Equal creation
// times (one-second resolution) prefer a resubmitted Workflow, then the later name.
func Newest(wfs []wfv1.Workflow) *wfv1.Workflow {
	var best *wfv1.Workflow
	for i := range wfs {
		w := &wfs[i]
		if best == nil || laterThan(w, best) {
			best = w
		}
	}
	return best
}

func laterThan(a, b *wfv1.Workflow) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	_, ra := a.Labels[bpav1.ResubmittedFromLabel]
	_, rb := b.Labels[bpav1.ResubmittedFromLabel]
	if ra != rb {
		return ra
	}
	return a.Name > b.Name
}

// KeptFacts are the facts the Workflow's kubespray runs handed over (runkubespray.FactsParam),
// and why an output could not be read. runkubespray.Merge keeps each node's newest by when
// they were gathered, whatever order the runs come in.
func KeptFacts(wf *wfv1.Workflow) ([]runkubespray.KeptFacts, []error) {
	nodes, _ := nodesOf(wf)
	pods := podNodes(nodes)
	var kept []runkubespray.KeptFacts
	var errs []error
	for i := range pods {
		raw, ok := outputParam(&pods[i], runkubespray.FactsParam)
		if !ok {
			continue
		}
		facts, err := runkubespray.ParseKeptFacts(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("step %s of Workflow %s: %w", pods[i].DisplayName, wf.Name, err))
			continue
		}
		if len(facts) > 0 {
			kept = append(kept, facts)
		}
	}
	return kept, errs
}
