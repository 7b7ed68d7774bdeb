// Plan decisions: which kubespray run each Provisioning generation needs (create, scale the
// added workers, remove the removed ones, upgrade, renew, change the control plane), and what
// the status records once it has run. Pure: CRs in, a plan out.

package runkubespray

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubesprayreleases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// UnsupportedError is a change one kubespray run cannot apply. The CR is Stalled with its
// message until the spec changes again.
type UnsupportedError struct{ Reason string }

func (e *UnsupportedError) Error() string { return e.Reason }

// Record is what the status keeps of a generation once its Workflow has succeeded: the cluster
// as it now is, running Kubernetes version ("" when not known), with the kube_control_plane and
// etcd groups of the plan that ran (a new cluster's when the plan has none).
func Record(p *bpav1.Provisioning, plan Plan) *bpav1.ProvisionedNodes {
	g := groups{controlPlane: plan.ControlPlane, etcd: plan.Etcd}
	if len(g.controlPlane) == 0 {
		g = newGroups(&p.Spec)
	}
	if plan.Mode == ModeRemove {
		g = groups{controlPlane: without(g.controlPlane, plan.Nodes), etcd: without(g.etcd, plan.Nodes)}
	}
	return &bpav1.ProvisionedNodes{
		Generation: p.Generation, Digest: clusterDigest(&p.Spec), SettingsDigest: settingsDigest(&p.Spec),
		CertificateRenewal: p.Spec.CertificateRenewal,
		KubernetesVersion:  plan.KubernetesVersion,
		Masters:            recordEntries(entries(p.Spec.Masters)),
		Workers:            recordEntries(entries(p.Spec.Workers)),
		ControlPlane:       g.controlPlane,
		Etcd:               g.etcd,
	}
}

func recordEntries(byLabel map[string]string) []bpav1.ProvisionedEntry {
	var out []bpav1.ProvisionedEntry
	for _, label := range slices.Sorted(maps.Keys(byLabel)) {
		out = append(out, bpav1.ProvisionedEntry{Label: label, Digest: byLabel[label]})
	}
	return out
}

// mastersChange says how the spec's masters differ from the record's, or "" when they do not.
// A record written before masters were recorded has none to compare with: its digest (which
// covers the masters) still tells a cluster.yml run apart, and no such run releases a host.
func mastersChange(rec *bpav1.ProvisionedNodes, spec *bpav1.ProvisioningSpec) string {
	if len(rec.Masters) == 0 {
		return ""
	}
	added, removed, changed := diff(recorded(rec.Masters), entries(spec.Masters))
	var parts []string
	for _, d := range []struct {
		what   string
		labels []string
	}{{"added", added}, {"removed", removed}, {"changed in place", changed}} {
		if len(d.labels) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", strings.Join(d.labels, ", "), d.what))
		}
	}
	return strings.Join(parts, "; ")
}

// diff compares two label → digest maps: the labels only in want, only in had, and in both
// with another digest, each sorted.
func diff(had, want map[string]string) (added, removed, changed []string) {
	for label, digest := range want {
		switch old, ok := had[label]; {
		case !ok:
			added = append(added, label)
		case old != digest:
			changed = append(changed, label)
		}
	}
	for label := range had {
		if _, ok := want[label]; !ok {
			removed = append(removed, label)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	slices.Sort(changed)
	return added, removed, changed
}

// versionPath is the field a version refusal names.
const versionPath = "spec.kubernetesVersion"

// PlanFor chooses this generation's kubespray run, with image (the kubespray image the
// run uses): the Kubernetes version (upgradePlan), then what the nodes need (nodesPlan). On a
// cluster that exists, the run renders the kube_control_plane and etcd groups the record has
// (or, for a change of masters, the ones it plans).
func PlanFor(p *bpav1.Provisioning, image string) (Plan, error) {
	plan, err := kubesprayPlan(p, image)
	if err == nil {
		err = notBelowTheNodes(p.Status.Kubelets, plan.KubernetesVersion)
	}
	if err != nil || p.Status.Provisioned == nil || len(plan.ControlPlane) > 0 {
		return plan, err
	}
	g := recordedGroups(p.Status.Provisioned)
	if len(g.controlPlane) == 0 {
		// A record from before masters were recorded: the masters cannot have changed.
		g = newGroups(&p.Spec)
	}
	plan.ControlPlane, plan.Etcd = g.controlPlane, g.etcd
	return plan, nil
}

func kubesprayPlan(p *bpav1.Provisioning, image string) (Plan, error) {
	release, known := kubesprayreleases.OfImage(image)
	rec := p.Status.Provisioned
	want := p.Spec.KubernetesVersion
	if _, err := kubesprayreleases.ParseVersion(want); want != "" && err != nil {
		// The schema refuses these; a CR stored under an older schema may still hold one.
		return Plan{}, &UnsupportedError{Reason: versionPath + ": " + err.Error()}
	}
	current := ""
	if rec != nil {
		current = rec.KubernetesVersion
	}
	switch {
	case rec == nil || current == want || (want == "" && current != ""):
		if rec != nil && p.Spec.CertificateRenewal != "" && p.Spec.CertificateRenewal != rec.CertificateRenewal {
			return renewalPlan(p, current)
		}
	case current == "":
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
			"%s: %s is set on a cluster whose version was not recorded (made before versions were, or by a kubespray image this controller does not know): unset it, or make the cluster again",
			versionPath, want)}
	case p.Spec.CertificateRenewal != "" && p.Spec.CertificateRenewal != rec.CertificateRenewal:
		// Whether an upgrade renews the certificates is kubespray's setting, not this plan's:
		// the record would claim a renewal that may not have run.
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
			"spec.certificateRenewal: the renewal comes with the upgrade %s → %s: upgrade with the renewal as it was, then renew in the next generation", current, want)}
	default:
		return upgradePlan(p, release, known, current, want)
	}
	plan, err := nodesPlan(p, cmp.Or(want, current))
	if err != nil {
		return plan, err
	}
	// The version the run installs: the spec's, else the one the cluster runs, else (a new
	// cluster) the release's default, recorded so that a later image cannot move it.
	switch plan.KubernetesVersion = cmp.Or(want, current); {
	case plan.KubernetesVersion == "" && known:
		plan.KubernetesVersion = release.DefaultKubernetes
	case want != "" && rec == nil && known && !release.Supports(want):
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
			"%s: kubespray %s cannot install Kubernetes %s; it installs %s", versionPath, release.Version, want, release.Ranges())}
	}
	return plan, nil
}

// notBelowTheNodes refuses a run at version below what any node's kubelet runs, whatever the
// record says: after a failed upgrade wave the record still has the old version while the
// control plane runs the new one, and a run at the old one would take it down. The kubelets
// are report-nodes' reading, written whether the run succeeded or not. A half-done upgrade can
// only be finished.
func notBelowTheNodes(kubelets []bpav1.KubeletVersion, version string) error {
	v, err := kubesprayreleases.ParseVersion(version)
	if err != nil {
		return nil // no version to hold (an unknown image decides it), or refused already
	}
	var newest kubesprayreleases.Version
	var nodes []string
	for _, k := range kubelets {
		// A kubelet version this plan cannot read (a vendor's suffix) cannot be compared.
		if kv, err := kubesprayreleases.ParseVersion(k.Version); err == nil && kv.Compare(v) > 0 && kv.Compare(newest) >= 0 {
			if kv.Compare(newest) > 0 {
				nodes = nil
			}
			newest, nodes = kv, append(nodes, k.Nodes...)
		}
	}
	if nodes == nil {
		return nil
	}
	slices.Sort(nodes)
	return &UnsupportedError{Reason: fmt.Sprintf(
		"%s: %s is older than %s, which %s already run (an upgrade that did not finish): Kubernetes does not go down; set %s to finish the upgrade",
		versionPath, version, newest, strings.Join(nodes, ", "), newest)}
}

// upgradePlan is the upgrade of a cluster at current to want, or why it is refused: only the
// version may change in that generation, and kubespray's release must take the cluster there.
func upgradePlan(p *bpav1.Provisioning, release kubesprayreleases.Release, known bool, current, want string) (Plan, error) {
	if !known {
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
			"%s: %s → %s needs a kubespray image of a release this controller knows (%s), to check the upgrade before it starts",
			versionPath, current, want, kubesprayreleases.Known())}
	}
	if err := release.CheckUpgrade(current, want); err != nil {
		return Plan{}, &UnsupportedError{Reason: versionPath + ": " + err.Error()}
	}
	if !asRecorded(p) {
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
			"%s: the upgrade %s → %s comes with other changes: upgrade with the nodes and settings as they are, then change them in the next generation", versionPath, current, want)}
	}
	workers := slices.Sorted(maps.Keys(entries(p.Spec.Workers)))
	perWave, err := p.Spec.Upgrade.WorkersPerWave(len(workers))
	if err != nil {
		return Plan{}, &UnsupportedError{Reason: "spec.upgrade.serial: " + err.Error()}
	}
	plan := Plan{Mode: ModeUpgrade, KubernetesVersion: want,
		Approval: p.Spec.Upgrade.UpgradeApprovalOf() == bpav1.UpgradeApprovalPerWave}
	for chunk := range slices.Chunk(workers, perWave) {
		plan.Waves = append(plan.Waves, chunk)
	}
	return plan, nil
}

// renewalPlan renews the control plane's certificates of a cluster at version (the recorded
// one, perhaps unknown: the renewal does not depend on it), or says why it cannot: nothing
// else may change in that generation.
func renewalPlan(p *bpav1.Provisioning, version string) (Plan, error) {
	if !asRecorded(p) {
		return Plan{}, &UnsupportedError{Reason: "spec.certificateRenewal: the renewal comes with other changes: renew with the nodes and settings as they are, then change them in the next generation"}
	}
	return Plan{Mode: ModeRenewCertificates, KubernetesVersion: version}, nil
}

// asRecorded reports whether p's nodes and settings are those its record has: what an upgrade
// or a renewal, which change nothing else, needs.
func asRecorded(p *bpav1.Provisioning) bool {
	rec := p.Status.Provisioned
	return mastersChange(rec, &p.Spec) == "" && rec.Digest == clusterDigest(&p.Spec) && maps.Equal(recorded(rec.Workers), entries(p.Spec.Workers))
}

// recorded maps recorded entries' labels to their digests.
func recorded(list []bpav1.ProvisionedEntry) map[string]string {
	out := map[string]string{}
	for _, e := range list {
		out[e.Label] = e.Digest
	}
	return out
}

// createPlan is a new cluster's cluster.yml. kubeadm initialises the cluster on the first
// master and the others join it, as masters added later do: an attempt of Argo's retry (or of
// a later generation) first resets a join an earlier one left half done, which kubeadm's
// preflight would refuse again and again.
func createPlan(spec *bpav1.ProvisioningSpec) Plan {
	plan := Plan{Mode: ModeCreate}
	if cp := newGroups(spec).controlPlane; len(cp) > 1 {
		plan.Joining = cp[1:]
	}
	return plan
}

// nodesPlan chooses this generation's kubespray run by comparing the spec with the cluster
// as the last successful Workflow left it (version is the Kubernetes version it runs, "" when
// not known):
//   - masters added or removed: controlPlanePlan;
//   - nothing provisioned yet, or anything but the nodes changed: cluster.yml;
//   - only workers added: scale.yml limited to them;
//   - only workers removed: remove-node.yml for them;
//   - workers both added and removed (or one changed in place): refused, because kubespray
//     cannot do both in one run; the message says how to split the change.
func nodesPlan(p *bpav1.Provisioning, version string) (Plan, error) {
	rec := p.Status.Provisioned
	if rec == nil {
		return createPlan(&p.Spec), nil
	}
	if mastersChange(rec, &p.Spec) != "" {
		return controlPlanePlan(p, recordedGroups(rec), version)
	}
	want := entries(p.Spec.Workers)
	had := recorded(rec.Workers)
	added, removed, changed := diff(had, want)

	if len(changed) > 0 {
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
			"workers %s changed their requirements in place: remove them in one generation and add them back in the next", strings.Join(changed, ", "))}
	}
	// Going from no workers (the masters are the workers) to some, or back, regroups every
	// node: that is a cluster.yml run, and it cannot remove nodes.
	regroup := (len(had) == 0) != (len(want) == 0)
	if rec.Digest != clusterDigest(&p.Spec) || regroup {
		if len(removed) > 0 && len(want) == 0 {
			return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
				"workers %s are the cluster's last: without workers the masters become the workers, which needs kubespray's cluster.yml after remove-node.yml, two runs that are not built as one: keep at least one worker",
				strings.Join(removed, ", "))}
		}
		if len(removed) > 0 {
			return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
				"workers %s removed together with a change that needs kubespray's cluster.yml: remove them in one generation and make the other change in the next", strings.Join(removed, ", "))}
		}
		return Plan{Mode: ModeCreate}, nil
	}
	switch {
	case len(added) > 0 && len(removed) > 0:
		return Plan{}, &UnsupportedError{Reason: fmt.Sprintf(
			"workers %s added and %s removed in one generation: remove them in one generation and add the others in the next", strings.Join(added, ", "), strings.Join(removed, ", "))}
	case len(added) > 0:
		return Plan{Mode: ModeScale, Nodes: added}, nil
	case len(removed) > 0:
		return Plan{Mode: ModeRemove, Nodes: removed}, nil
	}
	// Nothing changed that kubespray sees (a new generation with the same nodes): cluster.yml
	// is idempotent and converges whatever drifted.
	return Plan{Mode: ModeCreate}, nil
}

// entries maps each entry's label to the digest of its requirements.
func entries(list []bpav1.HostEntry) map[string]string {
	out := map[string]string{}
	for _, entry := range list {
		for label, req := range entry {
			out[label] = steps.Digest(req)
		}
	}
	return out
}

// clusterDigest is the digest of everything in the spec but the workers, the version and its
// rollout, and the certificate renewal (an upgrade compares versions, a renewal its value; a
// spec without them has the digest it had before they existed).
func clusterDigest(spec *bpav1.ProvisioningSpec) string {
	rest := spec.DeepCopy()
	rest.Workers, rest.KubernetesVersion, rest.Upgrade, rest.CertificateRenewal = nil, "", nil, ""
	return steps.Digest(rest)
}

// Outcome is what a Provisioning run leaves the cluster as, computed from the spec it was
// compiled from and carried on its Workflow (bpav1.WorkflowRecordAnnotation): once the run has
// succeeded the controller records it, whatever the CR's spec has become meanwhile.
type Outcome struct {
	// Provisioned is the cluster after the run.
	Provisioned bpav1.ProvisionedNodes `json:"provisioned"`
	// Leaving are the nodes the run removes; their hosts are handed back once it succeeds.
	Leaving []string `json:"leaving,omitempty"`
}

// OutcomeOf is the outcome of running plan on p's current generation.
func OutcomeOf(p *bpav1.Provisioning, plan Plan) Outcome {
	o := Outcome{Provisioned: *Record(p, plan)}
	if plan.Mode == ModeRemove {
		o.Leaving = slices.Sorted(slices.Values(plan.Nodes))
	}
	return o
}

// Annotation is the outcome as the Workflow's annotation value.
func (o Outcome) Annotation() string {
	raw, err := json.Marshal(o)
	if err != nil {
		panic(fmt.Sprintf("runkubespray: outcome: %v", err)) // plain strings and numbers always marshal
	}
	return string(raw)
}

// ParseOutcome reads a Workflow's outcome annotation.
func ParseOutcome(annotation string) (Outcome, error) {
	var o Outcome
	if err := json.Unmarshal([]byte(annotation), &o); err != nil {
		return Outcome{}, fmt.Errorf("annotation %s: %w", bpav1.WorkflowRecordAnnotation, err)
	}
	if o.Provisioned.Generation < 1 || o.Provisioned.Digest == "" {
		return Outcome{}, fmt.Errorf("annotation %s: no generation or digest", bpav1.WorkflowRecordAnnotation)
	}
	return o, nil
}
