// Package placement assigns BareMetalHosts to the masters and workers of a Provisioning, by
// the rules of the ICN BPA specification (DESIGN.md, "Host assignment rules"). It is pure: the
// hosts come in as a list, the claims go out as a result, and the callers do the I/O.
package placement

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// Host labels that stand for hardware inspection does not report.
const (
	SRIOVLabel = "feature.bpa.akraino.org/sriov"
	QATLabel   = "feature.bpa.akraino.org/qat"
)

// Entry is one node the CR asks for: a label, its roles, and what its host must be.
type Entry struct {
	Label string
	Roles []string
	bpav1.HostRequirements
}

// Role is the entry's roles as status and plan print them: master, worker or master,worker.
func (e Entry) Role() bpav1.NodeRoles { return bpav1.RolesOf(e.Roles...) }

// Consumer is who claims the hosts: the Provisioning, as a BareMetalHost consumerRef.
type Consumer struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// ConsumerFor names a Provisioning as a consumer.
func ConsumerFor(p *bpav1.Provisioning) Consumer {
	return Consumer{APIVersion: bpav1.GroupVersion.String(), Kind: "Provisioning", Namespace: p.Namespace, Name: p.Name}
}

// Ref is the consumerRef a claimed host carries.
func (c Consumer) Ref() *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: c.APIVersion, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}
}

// Holds reports whether a consumerRef names this consumer (any version of its group).
func (c Consumer) Holds(ref *corev1.ObjectReference) bool {
	return ref != nil && ref.Kind == c.Kind && ref.Namespace == c.Namespace && ref.Name == c.Name &&
		groupOf(ref.APIVersion) == groupOf(c.APIVersion)
}

func groupOf(apiVersion string) string {
	group, _, _ := strings.Cut(apiVersion, "/")
	return group
}

// Error is a failure to place one entry.
type Error struct {
	// Entry is the label of the entry that could not be placed.
	Entry string
	// Reason says why, naming the host and the shortfall where there is one.
	Reason string
	// Retryable is true when waiting can help: a host is still being provisioned.
	Retryable bool
}

func (e *Error) Error() string { return fmt.Sprintf("entry %q: %s", e.Entry, e.Reason) }

// IsRetryable reports whether err, or any error it wraps, is a placement failure that waiting
// for hosts to finish provisioning can cure.
func IsRetryable(err error) bool {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			if IsRetryable(e) {
				return true
			}
		}
		return false
	}
	var perr *Error
	return errors.As(err, &perr) && perr.Retryable
}

// Entries lists the nodes a Provisioning asks for, in placement order: MAC entries before
// resource entries, masters before workers, each in CR order. The same label under masters and
// workers is one node with both roles, which must meet both entries: the union of their
// requirements (the MAC either names, the larger CPU and memory, either feature); with no
// workers, the masters take the worker role too.
// The spec must have passed Provisioning.Validate.
func Entries(spec *bpav1.ProvisioningSpec) []Entry {
	var entries []Entry
	index := map[string]int{}
	add := func(list []bpav1.HostEntry, role string) {
		for _, item := range list {
			for label, req := range item {
				if i, ok := index[label]; ok {
					entries[i].Roles = append(entries[i].Roles, role)
					entries[i].HostRequirements = union(entries[i].HostRequirements, req)
					continue
				}
				index[label] = len(entries)
				entries = append(entries, Entry{Label: label, Roles: []string{role}, HostRequirements: req})
			}
		}
	}
	add(spec.Masters, bpav1.RoleMaster)
	add(spec.Workers, bpav1.RoleWorker)
	if len(spec.Workers) == 0 {
		for i := range entries {
			entries[i].Roles = append(entries[i].Roles, bpav1.RoleWorker)
		}
	}
	// A stable sort keeps masters before workers and CR order within each group.
	slices.SortStableFunc(entries, func(a, b Entry) int {
		return cmp.Compare(boolRank(a.MACAddress == ""), boolRank(b.MACAddress == ""))
	})
	return entries
}

// union is what a host must have to meet both a and b. Validation has made sure their MACs, if
// both name one, are the same.
func union(a, b bpav1.HostRequirements) bpav1.HostRequirements {
	u := a
	if u.MACAddress == "" {
		u.MACAddress = b.MACAddress
	}
	if b.CPU != nil && (u.CPU == nil || *b.CPU > *u.CPU) {
		u.CPU = b.CPU
	}
	if b.Memory != nil && (u.Memory == nil || b.Memory.Cmp(*u.Memory) > 0) {
		u.Memory = b.Memory
	}
	u.SRIOV = u.SRIOV || b.SRIOV
	u.QAT = u.QAT || b.QAT
	return u
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Place assigns a host to every entry, or returns every entry it could not place (joined).
// Only provisioned hosts that are free or already held by consumer count.
func Place(entries []Entry, hosts []metal3v1alpha1.BareMetalHost, consumer Consumer) ([]bpav1.Node, error) {
	p := newPlacer(hosts, consumer)
	placements := make([]bpav1.Node, 0, len(entries))
	var errs []error
	for _, entry := range entries {
		var (
			host *metal3v1alpha1.BareMetalHost
			mac  string
			err  *Error
		)
		if entry.MACAddress != "" {
			host, err = p.byMAC(entry)
			mac = strings.ToLower(entry.MACAddress)
		} else {
			host, err = p.byResources(entry)
			if host != nil {
				mac = strings.ToLower(host.Spec.BootMACAddress)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.taken[host] = entry.Label
		placements = append(placements, bpav1.Node{
			Label:         entry.Label,
			Role:          entry.Role(),
			BareMetalHost: hostName(host),
			MAC:           mac,
		})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	SortForOutput(placements)
	return placements, nil
}

// SortForOutput orders placements as plan and status print them: masters first, then by name.
func SortForOutput(placements []bpav1.Node) {
	slices.SortFunc(placements, func(a, b bpav1.Node) int {
		am := a.Role.Has(bpav1.RoleMaster)
		bm := b.Role.Has(bpav1.RoleMaster)
		if am != bm {
			return cmp.Compare(boolRank(am), boolRank(bm)) * -1
		}
		return cmp.Compare(a.Label, b.Label)
	})
}

type placer struct {
	consumer Consumer
	// byMACs maps every lower-case NIC and boot MAC to the hosts that have it.
	byMACs map[string][]*metal3v1alpha1.BareMetalHost
	// candidates are the hosts resource entries may take, smallest first.
	candidates []*metal3v1alpha1.BareMetalHost
	// waiting counts hosts still on their way to provisioned, for the retry hint.
	waiting int
	taken   map[*metal3v1alpha1.BareMetalHost]string
}

func newPlacer(hosts []metal3v1alpha1.BareMetalHost, consumer Consumer) *placer {
	p := &placer{
		consumer: consumer,
		byMACs:   make(map[string][]*metal3v1alpha1.BareMetalHost, len(hosts)),
		taken:    map[*metal3v1alpha1.BareMetalHost]string{},
	}
	for i := range hosts {
		h := &hosts[i]
		for _, mac := range hostMACs(h) {
			p.byMACs[mac] = append(p.byMACs[mac], h)
		}
		if provisioned(h) && p.available(h) {
			p.candidates = append(p.candidates, h)
		} else if provisioning(h) && p.available(h) {
			p.waiting++
		}
	}
	slices.SortFunc(p.candidates, func(a, b *metal3v1alpha1.BareMetalHost) int {
		return cmp.Or(
			cmp.Compare(cpuCount(a), cpuCount(b)),
			cmp.Compare(ramMiB(a), ramMiB(b)),
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name),
		)
	})
	return p
}

func hostMACs(h *metal3v1alpha1.BareMetalHost) []string {
	var macs []string
	if h.Spec.BootMACAddress != "" {
		macs = append(macs, strings.ToLower(h.Spec.BootMACAddress))
	}
	if hw := h.Status.HardwareDetails; hw != nil {
		for _, nic := range hw.NIC {
			if mac := strings.ToLower(nic.MAC); mac != "" && !slices.Contains(macs, mac) {
				macs = append(macs, mac)
			}
		}
	}
	return macs
}

func provisioned(h *metal3v1alpha1.BareMetalHost) bool {
	s := h.Status.Provisioning.State
	return s == metal3v1alpha1.StateProvisioned || s == metal3v1alpha1.StateExternallyProvisioned
}

// provisioning is true for the states a host passes through on its way to provisioned.
func provisioning(h *metal3v1alpha1.BareMetalHost) bool {
	switch h.Status.Provisioning.State {
	case metal3v1alpha1.StateNone, metal3v1alpha1.StateUnmanaged, metal3v1alpha1.StateRegistering,
		metal3v1alpha1.StateMatchProfile, metal3v1alpha1.StatePreparing, metal3v1alpha1.StateReady,
		metal3v1alpha1.StateAvailable, metal3v1alpha1.StateProvisioning, metal3v1alpha1.StateInspecting:
		return true
	}
	return false
}

func (p *placer) available(h *metal3v1alpha1.BareMetalHost) bool {
	return h.Spec.ConsumerRef == nil || p.consumer.Holds(h.Spec.ConsumerRef)
}

func cpuCount(h *metal3v1alpha1.BareMetalHost) int {
	if h.Status.HardwareDetails == nil {
		return 0
	}
	return h.Status.HardwareDetails.CPU.Count
}

func ramMiB(h *metal3v1alpha1.BareMetalHost) int {
	if h.Status.HardwareDetails == nil {
		return 0
	}
	return h.Status.HardwareDetails.RAMMebibytes
}

func hostName(h *metal3v1alpha1.BareMetalHost) string { return h.Namespace + "/" + h.Name }

func (p *placer) byMAC(e Entry) (*metal3v1alpha1.BareMetalHost, *Error) {
	mac := strings.ToLower(e.MACAddress)
	hosts := p.byMACs[mac]
	switch {
	case len(hosts) == 0:
		return nil, &Error{Entry: e.Label, Reason: fmt.Sprintf("no BareMetalHost has a NIC with MAC %s", mac)}
	case len(hosts) > 1:
		names := make([]string, len(hosts))
		for i, h := range hosts {
			names[i] = hostName(h)
		}
		slices.Sort(names)
		return nil, &Error{Entry: e.Label, Reason: fmt.Sprintf("MAC %s is on more than one BareMetalHost: %s", mac, strings.Join(names, ", "))}
	}
	h := hosts[0]
	if ref := h.Spec.ConsumerRef; ref != nil && !p.consumer.Holds(ref) {
		return nil, &Error{Entry: e.Label, Reason: fmt.Sprintf("BareMetalHost %s (MAC %s) is claimed by %s %s/%s", hostName(h), mac, ref.Kind, ref.Namespace, ref.Name)}
	}
	if !provisioned(h) {
		return nil, &Error{Entry: e.Label, Retryable: provisioning(h), Reason: fmt.Sprintf("BareMetalHost %s (MAC %s) is %q, not provisioned yet", hostName(h), mac, stateOf(h))}
	}
	if other, ok := p.taken[h]; ok {
		return nil, &Error{Entry: e.Label, Reason: fmt.Sprintf("BareMetalHost %s (MAC %s) is already placed for entry %q", hostName(h), mac, other)}
	}
	if short := shortfall(h, e.HostRequirements); short != "" {
		return nil, &Error{Entry: e.Label, Reason: fmt.Sprintf("BareMetalHost %s (MAC %s) %s", hostName(h), mac, short)}
	}
	return h, nil
}

// byResources takes the smallest sufficient host, preferring one this Provisioning already
// holds: a retried discover-hosts (or a later generation) keeps its claims rather than moving an
// entry to a smaller host that has come free, which would leak the claim it leaves.
func (p *placer) byResources(e Entry) (*metal3v1alpha1.BareMetalHost, *Error) {
	for _, ours := range []bool{true, false} {
		for _, h := range p.candidates {
			if _, ok := p.taken[h]; ok || (ours && !p.consumer.Holds(h.Spec.ConsumerRef)) {
				continue
			}
			if meets(h, e.HostRequirements) {
				return h, nil
			}
		}
	}
	reason := fmt.Sprintf("no free provisioned BareMetalHost has %s", describe(e.HostRequirements))
	if p.waiting > 0 {
		reason += fmt.Sprintf(" (%d more still provisioning)", p.waiting)
	}
	return nil, &Error{Entry: e.Label, Reason: reason, Retryable: p.waiting > 0}
}

func stateOf(h *metal3v1alpha1.BareMetalHost) string {
	if s := h.Status.Provisioning.State; s != "" {
		return string(s)
	}
	return "unknown"
}

// meets is shortfall(h, req) == "" without building the message: resource placement asks it
// of every candidate.
func meets(h *metal3v1alpha1.BareMetalHost, req bpav1.HostRequirements) bool {
	return (req.CPU == nil || cpuCount(h) >= int(*req.CPU)) &&
		(req.Memory == nil || int64(ramMiB(h))<<20 >= req.Memory.Value()) &&
		(!req.SRIOV || h.Labels[SRIOVLabel] == "true") &&
		(!req.QAT || h.Labels[QATLabel] == "true")
}

// shortfall says what a host lacks of req, or "" when it meets it.
func shortfall(h *metal3v1alpha1.BareMetalHost, req bpav1.HostRequirements) string {
	var missing []string
	if req.CPU != nil && cpuCount(h) < int(*req.CPU) {
		missing = append(missing, fmt.Sprintf("%d CPUs, fewer than the %d required", cpuCount(h), *req.CPU))
	}
	if req.Memory != nil && int64(ramMiB(h))<<20 < req.Memory.Value() {
		missing = append(missing, fmt.Sprintf("%d MiB of RAM, less than the %s required", ramMiB(h), req.Memory.String()))
	}
	if req.SRIOV && h.Labels[SRIOVLabel] != "true" {
		missing = append(missing, fmt.Sprintf("no %s=true label", SRIOVLabel))
	}
	if req.QAT && h.Labels[QATLabel] != "true" {
		missing = append(missing, fmt.Sprintf("no %s=true label", QATLabel))
	}
	if len(missing) == 0 {
		return ""
	}
	return "has " + strings.Join(missing, " and ")
}

func describe(req bpav1.HostRequirements) string {
	var parts []string
	if req.CPU != nil {
		parts = append(parts, fmt.Sprintf("at least %d CPUs", *req.CPU))
	}
	if req.Memory != nil {
		parts = append(parts, fmt.Sprintf("at least %s of RAM", req.Memory.String()))
	}
	if req.SRIOV {
		parts = append(parts, "SR-IOV")
	}
	if req.QAT {
		parts = append(parts, "QAT")
	}
	return strings.Join(parts, " and ")
}
