package controller

import (
	"slices"
	"strings"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/observe"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
)

// applySoftwareObservation mirrors one Workflow of the current generation and merges its
// per-node reports: a node without failures records the generation and the digest of the
// packages it now has, so it is not run again until they change.
func applySoftwareObservation(sw *bpav1.Software, o observe.Observation) {
	applyObservation(&sw.Status.WorkflowStatus, sw.Generation, o)
	for _, r := range o.Reports {
		i := slices.IndexFunc(sw.Status.Nodes, func(n bpav1.NodeSoftwareReport) bool { return n.Node == r.Node })
		if i < 0 {
			sw.Status.Nodes = append(sw.Status.Nodes, bpav1.NodeSoftwareReport{Node: r.Node})
			i = len(sw.Status.Nodes) - 1
		}
		n := &sw.Status.Nodes[i]
		n.Role = r.Role
		n.Changed = slices.Clone(r.Changed)
		n.Unchanged = len(r.Unchanged)
		n.Failed = nil
		for _, f := range r.Failed {
			n.Failed = append(n.Failed, f.Package+": "+f.Reason)
		}
		n.Binaries = nil
		installed := map[string]string{}
		for _, b := range r.Binaries {
			n.Binaries = append(n.Binaries, b.NodeBinary)
			for _, role := range r.Role.List() {
				installed[role+":"+b.Name] = b.Digest
			}
		}
		if len(r.Failed) == 0 {
			n.Generation = sw.Generation
			// The binaries as the node has them: a later upload makes the registry's digest
			// differ, and only then does the node need a run.
			n.Digest = installsoftware.PackagesDigest(&sw.Spec, r.Role, installed)
		}
	}
	slices.SortFunc(sw.Status.Nodes, func(a, b bpav1.NodeSoftwareReport) int { return strings.Compare(a.Node, b.Node) })
}

// clusterNodes lists the nodes of a Provisioning's status that its spec still names (a
// remove run may report the nodes it removed).
func clusterNodes(p *bpav1.Provisioning) []bpav1.Node {
	nodes := make([]bpav1.Node, 0, len(p.Status.Hosts))
	for _, h := range p.Status.Hosts {
		if p.Spec.HasEntry(h.Label) {
			nodes = append(nodes, h)
		}
	}
	return nodes
}

// pruneReports drops the reports of nodes that left the cluster.
func pruneReports(sw *bpav1.Software, nodes []bpav1.Node) {
	sw.Status.Nodes = slices.DeleteFunc(sw.Status.Nodes, func(r bpav1.NodeSoftwareReport) bool {
		return !slices.ContainsFunc(nodes, func(n bpav1.Node) bool { return n.Label == r.Node })
	})
}
