package pod_test

import (
	"strings"
	"testing"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveleases/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// TestResolveLeasesChecksItsCR: resolve-leases, like every step, refuses to act for a CR that
// has moved on, was replaced or is gone; for its own CR it addresses the hosts.
func TestResolveLeasesChecksItsCR(t *testing.T) {
	ns := env.Namespace(t)
	_, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	placed := []bpav1.Node{{Label: "master", Role: "master", BareMetalHost: ns + "/node-1", MAC: "00:c5:16:05:61:b2"}}
	file := testutil.Fixture(t, "sample-site-dnsmasq.leases")

	got, err := pod.Run(ctx(), env.Client, ref, placed, file, leases.FormatDnsmasq)
	if err != nil || len(got) != 1 || got[0].IP == "" {
		t.Fatalf("for its own CR: %+v, %v", got, err)
	}
	for name, mutate := range map[string]func(*stepcmd.CRRef){
		"moved on":  func(r *stepcmd.CRRef) { r.Generation++ },
		"recreated": func(r *stepcmd.CRRef) { r.UID = "another-uid" },
		"gone":      func(r *stepcmd.CRRef) { r.Name = "gone" },
	} {
		stale := ref
		mutate(&stale)
		_, err := pod.Run(ctx(), env.Client, stale, placed, file, leases.FormatDnsmasq)
		if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), "Provisioning") {
			t.Errorf("%s: %v; want a final error naming the Provisioning", name, err)
		}
	}
}
