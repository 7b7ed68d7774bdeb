package pod

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// claimAttempts bounds how often discover-hosts re-places after losing a claim race.
const claimAttempts = 5

// Run places the Provisioning's entries on the BareMetalHosts and claims each chosen
// host through spec.consumerRef. A claim is an update conditioned on the host's
// resourceVersion, so of two Provisionings racing for one host exactly one wins; the loser
// lists again and places elsewhere, or fails naming the holder. Hosts it already holds are
// kept, so a retry, `argo retry` or `argo resubmit` claims nothing twice.
//
// leaving are nodes a remove run takes out: gone from the spec, they are added from the CR's
// status (where the controller recorded them) if this Provisioning still holds their hosts.
func Run(ctx context.Context, c client.Client, ref stepcmd.CRRef, leaving []string) ([]bpav1.Node, error) {
	p := &bpav1.Provisioning{}
	if err := stepcmd.Get(ctx, c, ref, p, "Provisioning"); err != nil {
		return nil, err
	}
	consumer := placement.ConsumerFor(p)
	gone, err := leavingNodes(ctx, c, p, consumer, leaving)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		hosts, err := listHosts(ctx, c, p.HostNamespaces())
		if err != nil {
			return nil, err
		}
		placed, err := discoverhosts.Place(p, hosts)
		if err != nil {
			if placement.IsRetryable(err) {
				return nil, steps.Retryable(err)
			}
			return nil, err
		}
		lost, err := claim(ctx, c, hosts, placed, consumer)
		if err != nil {
			return nil, err
		}
		if lost == "" {
			placed = append(placed, gone...)
			placement.SortForOutput(placed)
			return placed, nil
		}
		if attempt == claimAttempts {
			return nil, steps.Retryable(fmt.Errorf("BareMetalHost %s changed under every one of %d claims; another claimant is racing", lost, claimAttempts))
		}
	}
}

// listHosts lists the BareMetalHosts of the namespaces the Provisioning takes hosts from.
func listHosts(ctx context.Context, c client.Reader, namespaces []string) ([]metal3v1alpha1.BareMetalHost, error) {
	var all []metal3v1alpha1.BareMetalHost
	for _, ns := range namespaces {
		var list metal3v1alpha1.BareMetalHostList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, steps.Retryable(fmt.Errorf("listing BareMetalHosts: %w", err))
		}
		all = append(all, list.Items...)
	}
	return all, nil
}

// claim sets consumerRef on each placed host not yet held. It returns the host whose claim
// lost a race (it changed since it was listed), so the caller places again.
func claim(ctx context.Context, c client.Client, hosts []metal3v1alpha1.BareMetalHost, placed []bpav1.Node, consumer placement.Consumer) (string, error) {
	byName := map[string]*metal3v1alpha1.BareMetalHost{}
	for i := range hosts {
		byName[hosts[i].Namespace+"/"+hosts[i].Name] = &hosts[i]
	}
	for _, pl := range placed {
		h := byName[pl.BareMetalHost]
		if h == nil {
			return "", fmt.Errorf("placed on %s, which was not listed", pl.BareMetalHost)
		}
		if consumer.Holds(h.Spec.ConsumerRef) {
			continue
		}
		before := h.DeepCopy()
		h.Spec.ConsumerRef = consumer.Ref()
		err := c.Patch(ctx, h, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		switch {
		case err == nil:
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			return pl.BareMetalHost, nil
		default:
			return "", steps.Retryable(fmt.Errorf("claiming BareMetalHost %s for entry %q: %w", pl.BareMetalHost, pl.Label, err))
		}
	}
	return "", nil
}

// leavingNodes finds the hosts of the nodes a remove run takes out, naming every node it
// cannot (a host not readable yet makes the whole failure retryable only when no other is final).
func leavingNodes(ctx context.Context, c client.Reader, p *bpav1.Provisioning, consumer placement.Consumer, leaving []string) ([]bpav1.Node, error) {
	var out []bpav1.Node
	var final, waiting []error
	for _, label := range leaving {
		if p.Spec.HasEntry(label) {
			final = append(final, fmt.Errorf("node %q is to be removed but is still in the spec", label))
			continue
		}
		i := slices.IndexFunc(p.Status.Hosts, func(h bpav1.Node) bool { return h.Label == label })
		if i < 0 {
			final = append(final, fmt.Errorf("node %q is to be removed, but the Provisioning's status does not say which host it is", label))
			continue
		}
		h := p.Status.Hosts[i]
		ns, name, _ := strings.Cut(h.BareMetalHost, "/")
		bmh := &metal3v1alpha1.BareMetalHost{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, bmh); err != nil {
			waiting = append(waiting, fmt.Errorf("reading BareMetalHost %s of leaving node %q: %w", h.BareMetalHost, label, err))
			continue
		}
		if !consumer.Holds(bmh.Spec.ConsumerRef) {
			final = append(final, fmt.Errorf("node %q is to be removed, but this Provisioning no longer holds its host %s", label, h.BareMetalHost))
			continue
		}
		out = append(out, bpav1.Node{Label: label, Role: h.Role, BareMetalHost: h.BareMetalHost, MAC: h.MAC})
	}
	if err := steps.Classified(final, waiting); err != nil {
		return nil, err
	}
	return out, nil
}
