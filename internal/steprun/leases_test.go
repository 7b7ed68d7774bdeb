package steprun_test

import (
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/steprun"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// TestResolveLeasesChecksItsCR: resolve-leases, like every step, refuses to act for a CR that
// has moved on, was replaced or is gone; for its own CR it addresses the hosts.
func TestResolveLeasesChecksItsCR(t *testing.T) {
	ns := newNamespace(t)
	_, ref := provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	placed := []placement.Placement{{Label: "master", Role: "master", BareMetalHost: ns + "/node-1", MAC: "00:c5:16:05:61:b2"}}
	file := testutil.Fixture(t, "sample-site-dnsmasq.leases")

	got, err := steprun.ResolveLeases(ctx(), env.Client, ref, placed, file, leases.FormatDnsmasq)
	if err != nil || len(got) != 1 || got[0].IP == "" {
		t.Fatalf("for its own CR: %+v, %v", got, err)
	}
	for name, mutate := range map[string]func(*steprun.CRRef){
		"moved on":  func(r *steprun.CRRef) { r.Generation++ },
		"recreated": func(r *steprun.CRRef) { r.UID = "another-uid" },
		"gone":      func(r *steprun.CRRef) { r.Name = "gone" },
	} {
		stale := ref
		mutate(&stale)
		_, err := steprun.ResolveLeases(ctx(), env.Client, stale, placed, file, leases.FormatDnsmasq)
		if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), "Provisioning") {
			t.Errorf("%s: %v; want a final error naming the Provisioning", name, err)
		}
	}
}
