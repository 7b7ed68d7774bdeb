package discoverhosts

import (
	"fmt"
	"slices"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
)

// Place is the step's logic without I/O: it validates the Provisioning, keeps the hosts its
// hostSelector allows, and places its entries on them.
func Place(p *bpav1.Provisioning, hosts []metal3v1alpha1.BareMetalHost) ([]bpav1.Node, error) {
	if errs := p.Validate(); len(errs) > 0 {
		return nil, &bpav1.InvalidError{Kind: "Provisioning", Namespace: p.Namespace, Name: p.Name, Errs: errs}
	}
	selected, err := Select(p.Spec.HostSelector, hosts)
	if err != nil {
		return nil, err
	}
	return placement.Place(placement.Entries(&p.Spec), selected, placement.ConsumerFor(p))
}

// Select keeps the hosts a HostSelector allows; nil allows all.
func Select(sel *bpav1.HostSelector, hosts []metal3v1alpha1.BareMetalHost) ([]metal3v1alpha1.BareMetalHost, error) {
	if sel == nil {
		return hosts, nil
	}
	matches := labels.Everything()
	if sel.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(sel.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("spec.hostSelector.labelSelector: %w", err)
		}
		matches = s
	}
	var out []metal3v1alpha1.BareMetalHost
	for _, h := range hosts {
		if len(sel.Namespaces) > 0 && !slices.Contains(sel.Namespaces, h.Namespace) {
			continue
		}
		if matches.Matches(labels.Set(h.Labels)) {
			out = append(out, h)
		}
	}
	return out, nil
}
