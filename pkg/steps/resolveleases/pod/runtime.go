package pod

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Run gives every placed host the IP of its MAC: from the DHCP server's lease file
// (mounted read-only from its host path) when one is given, else from the placed
// BareMetalHosts' NICs, read through the API. Like every step it first checks that its CR is
// still the one, at the generation, the Workflow was compiled from. A host without an address
// is a retryable failure naming it: the lease may not be taken yet.
func Run(ctx context.Context, c client.Reader, ref stepcmd.CRRef, placed []bpav1.Node, leaseFile string, format leases.Format) ([]bpav1.Node, error) {
	if err := stepcmd.Get(ctx, c, ref, &bpav1.Provisioning{}, "Provisioning"); err != nil {
		return nil, err
	}
	if leaseFile != "" {
		return ReadLeaseFile(placed, leaseFile, format)
	}
	var hosts []metal3v1alpha1.BareMetalHost
	for _, p := range placed {
		ns, name, _ := strings.Cut(p.BareMetalHost, "/")
		h := metal3v1alpha1.BareMetalHost{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &h); err != nil {
			return nil, steps.Retryable(fmt.Errorf("reading BareMetalHost %s of entry %q: %w", p.BareMetalHost, p.Label, err))
		}
		hosts = append(hosts, h)
	}
	return resolve(placed, leases.NewHostSource(hosts))
}

// ReadLeaseFile addresses the placed hosts from a DHCP server's lease file.
func ReadLeaseFile(placed []bpav1.Node, leaseFile string, format leases.Format) ([]bpav1.Node, error) {
	raw, err := os.ReadFile(leaseFile) //nolint:gosec // G304: the lease file the site configured, mounted read-only
	if err != nil {
		return nil, steps.Retryable(fmt.Errorf("reading the lease file: %w", err))
	}
	if format == "" {
		format = leases.Detect(raw)
	}
	table, err := leases.Parse(format, bytes.NewReader(raw))
	if err != nil {
		// DHCP servers rewrite the file in place (dnsmasq truncates and writes it again): a
		// read in between sees half a file. Argo's retry reads it again, within its bounded
		// backoff; a file that stays broken fails the run when the retries run out.
		return nil, steps.Retryable(fmt.Errorf("%s (%s format) cannot be parsed, perhaps read while the DHCP server rewrote it; reading it again: %w", leaseFile, format, err))
	}
	return resolve(placed, leases.FileSource{Table: table, Name: leaseFile, Now: time.Now()})
}

// resolve addresses the hosts; a host without an address may get one soon: retryable.
func resolve(placed []bpav1.Node, src leases.Source) ([]bpav1.Node, error) {
	addressed, err := leases.Resolve(placed, src)
	if err != nil {
		return nil, steps.Retryable(err)
	}
	return addressed, nil
}
