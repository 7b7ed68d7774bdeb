package steprun_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/identity"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/scheme"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/steprun"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// TestAStepWaitsForItsGrant starts discover-hosts as the cluster's ServiceAccount before the
// ServiceAccount is granted anything, as happens when a step pod starts before the controller
// has written the cluster's RoleBinding (it writes the grants alongside the first Workflow):
// the step waits, and goes on once the grants are written. Without the grants, it fails
// after steprun.GrantWait, saying it was refused.
func TestAStepWaitsForItsGrant(t *testing.T) {
	ns := newNamespace(t)
	loadSite(t, ns)
	p, ref := provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	if err := identity.EnsureAccounts(ctx(), env.Client, env.Client, p); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + steps.StepServiceAccount(p.Labels[bpav1.ClusterLabel]),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	asStep, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}

	defer func(wait time.Duration) { steprun.GrantWait = wait }(steprun.GrantWait)
	steprun.GrantWait = 500 * time.Millisecond
	if _, err := steprun.DiscoverHosts(ctx(), asStep, ref, nil); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("without its grants, discover-hosts gave %v, want a Forbidden error after the wait", err)
	}

	steprun.GrantWait = time.Minute
	const grantAfter = 700 * time.Millisecond
	granted := make(chan error, 1)
	go func() {
		time.Sleep(grantAfter)
		granted <- identity.EnsureGrants(ctx(), env.Client, env.Client, p, p.HostNamespaces())
	}()
	start := time.Now()
	placed, err := steprun.DiscoverHosts(ctx(), asStep, ref, nil)
	if err := <-granted; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("discover-hosts did not go on once granted: %v", err)
	}
	if took := time.Since(start); took < grantAfter || len(placed) == 0 {
		t.Errorf("discover-hosts returned %d placements after %s, before its grants were written %s in", len(placed), took, grantAfter)
	}
}
