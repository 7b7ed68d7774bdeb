package controller

import (
	"context"
	"fmt"
	"slices"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
)

// releaseClaims clears spec.consumerRef on the BareMetalHosts the Provisioning holds that
// release selects (by namespace/name); nil selects them all. Each update is conditioned on the
// host's resourceVersion, so a host claimed anew meanwhile is never released by mistake. It
// returns the released hosts.
func releaseClaims(ctx context.Context, reader client.Reader, c client.Client, p *bpav1.Provisioning, release func(name string) bool) ([]string, error) {
	var hosts metal3v1alpha1.BareMetalHostList
	// Every namespace: a claim is released wherever it is, whatever the selector says now.
	if err := reader.List(ctx, &hosts); err != nil {
		return nil, fmt.Errorf("listing BareMetalHosts: %w", err)
	}
	consumer := placement.ConsumerFor(p)
	var released []string
	for i := range hosts.Items {
		h := &hosts.Items[i]
		name := h.Namespace + "/" + h.Name
		if !consumer.Holds(h.Spec.ConsumerRef) || (release != nil && !release(name)) {
			continue
		}
		before := h.DeepCopy()
		h.Spec.ConsumerRef = nil
		if err := c.Patch(ctx, h, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return released, fmt.Errorf("releasing BareMetalHost %s: %w", name, err)
		}
		released = append(released, name)
	}
	slices.Sort(released)
	return released, nil
}
