package runkubespray

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

// groups are a cluster's kube_control_plane and etcd groups in inventory order.
type groups struct{ controlPlane, etcd []string }

// recordedGroups are the groups the record says the cluster has. A record written before they
// were recorded has them as the inventory then rendered them: the masters by label (discover-
// hosts' order), etcd the first odd number of them.
func recordedGroups(rec *bpav1.ProvisionedNodes) groups {
	g := groups{controlPlane: slices.Clone(rec.ControlPlane), etcd: slices.Clone(rec.Etcd)}
	if len(g.controlPlane) == 0 {
		g.controlPlane = slices.Sorted(maps.Keys(recorded(rec.Masters)))
	}
	if len(g.etcd) == 0 {
		g.etcd = renderinventory.EtcdMembers(g.controlPlane)
	}
	return g
}

// newGroups are a new cluster's groups, as render-inventory draws them from the masters.
func newGroups(spec *bpav1.ProvisioningSpec) groups {
	cp := slices.Sorted(maps.Keys(entries(spec.Masters)))
	return groups{controlPlane: cp, etcd: renderinventory.EtcdMembers(cp)}
}

// controlPlanePlan is the run of a generation whose masters differ from the record's, or why it
// is refused. kubespray's documented procedures (docs/operations/nodes.md) decide it:
//   - a master added: cluster.yml with it last in kube_control_plane (kubespray cannot add one
//     first); masters join etcd two at a time, so that etcd keeps an odd number of members
//     (kubespray refuses an even one), and when some do, upgrade-cluster.yml for the control
//     plane and etcd rewrites every master's etcd endpoints;
//   - a master removed: remove-node.yml, never the first (kubespray cannot remove it), and only
//     if etcd keeps a quorum of its members and an odd number of them;
//   - etcd's membership is checked on the nodes before and after either.
func controlPlanePlan(p *bpav1.Provisioning, g groups, version string) (Plan, error) {
	rec := p.Status.Provisioned
	added, removed, changed := diff(recorded(rec.Masters), entries(p.Spec.Masters))
	_, workersRemoved, workersChanged := diff(recorded(rec.Workers), entries(p.Spec.Workers))
	unsupported := func(format string, args ...any) (Plan, error) {
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(changed) > 0:
		return unsupported("masters %s changed their requirements in place: a master cannot move to another host; remove it in one generation and add the new one in the next",
			strings.Join(changed, ", "))
	case len(added) > 0 && len(removed) > 0:
		return unsupported("masters %s added and %s removed in one generation: add the new masters in one generation and remove the others in the next",
			strings.Join(added, ", "), strings.Join(removed, ", "))
	case len(workersRemoved)+len(workersChanged) > 0:
		return unsupported("workers %s removed or changed together with a change of masters: change the masters in one generation and the workers in the next",
			strings.Join(slices.Concat(workersRemoved, workersChanged), ", "))
	case len(added) > 0:
		return addMasters(g, added, version)
	}
	return removeMasters(p, g, removed)
}

// addMasters runs cluster.yml with the added masters last in kube_control_plane (each cleared
// first of a join an earlier attempt left half done); the first even number of them join etcd.
func addMasters(g groups, added []string, version string) (Plan, error) {
	joiningEtcd := added[:len(added)/2*2]
	plan := Plan{
		Mode:         ModeCreate,
		ControlPlane: slices.Concat(g.controlPlane, added),
		Etcd:         slices.Concat(g.etcd, joiningEtcd),
		EtcdChange:   &EtcdChange{Before: g.etcd, After: slices.Concat(g.etcd, joiningEtcd)},
		Joining:      added,
	}
	if len(joiningEtcd) > 0 {
		if version == "" {
			return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
				"masters %s would join etcd, after which upgrade-cluster.yml at the cluster's Kubernetes version rewrites every master's etcd endpoints, but that version is not recorded (a kubespray image of a release this controller does not know): add one master at a time, which stays out of etcd",
				strings.Join(joiningEtcd, ", "))}
		}
		plan.UpdateControlPlane = true
	}
	return plan, nil
}

// removeMasters runs remove-node.yml for the removed masters, with the groups as they are
// (kubespray needs a leaving node in its inventory).
func removeMasters(p *bpav1.Provisioning, g groups, removed []string) (Plan, error) {
	rec := p.Status.Provisioned
	if first := g.controlPlane[0]; slices.Contains(removed, first) {
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
			"master %s is the cluster's first master (the first of kubespray's kube_control_plane, on which kubeadm initialised the cluster), which kubespray cannot remove (its docs/operations/nodes.md): restore it in spec.masters",
			first)}
	}
	if rec.SettingsDigest == "" || rec.SettingsDigest != settingsDigest(&p.Spec) || !maps.Equal(recorded(rec.Workers), entries(p.Spec.Workers)) {
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
			"masters %s removed together with another change (or the record, written by an older controller, cannot tell): remove-node.yml applies nothing else; remove the masters with the workers and settings as the last run left them, or set annotation %s to a new value first so that a cluster.yml run records them",
			strings.Join(removed, ", "), bpav1.RerunAnnotation)}
	}
	var leavingEtcd, staying []string
	for _, m := range g.etcd {
		if slices.Contains(removed, m) {
			leavingEtcd = append(leavingEtcd, m)
		} else {
			staying = append(staying, m)
		}
	}
	if quorum := len(g.etcd)/2 + 1; len(staying) < quorum {
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
			"masters %s are etcd members: %d of etcd's %d members would stay, fewer than its quorum of %d, and etcd stops without a quorum: remove fewer at once",
			strings.Join(leavingEtcd, ", "), len(staying), len(g.etcd), quorum)}
	}
	if len(staying)%2 == 0 {
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
			"masters %s are etcd members: etcd would keep %d members, an even number, which kubespray refuses (\"Stop if even number of etcd hosts\"): etcd members leave two at a time, and only while a quorum stays (from five members or more); add masters first",
			strings.Join(leavingEtcd, ", "), len(staying))}
	}
	return Plan{
		Mode:         ModeRemove,
		Nodes:        removed,
		ControlPlane: g.controlPlane,
		Etcd:         g.etcd,
		EtcdChange:   &EtcdChange{Before: g.etcd, After: staying},
	}, nil
}

// settingsDigest is the digest of everything in the spec but its nodes and version.
func settingsDigest(spec *bpav1.ProvisioningSpec) string {
	rest := spec.DeepCopy()
	rest.Masters, rest.Workers, rest.KubernetesVersion, rest.Upgrade, rest.CertificateRenewal = nil, nil, "", nil, ""
	return steps.Digest(rest)
}

// without is list without the labels in gone, in its order.
func without(list, gone []string) []string {
	var out []string
	for _, l := range list {
		if !slices.Contains(gone, l) {
			out = append(out, l)
		}
	}
	return out
}
