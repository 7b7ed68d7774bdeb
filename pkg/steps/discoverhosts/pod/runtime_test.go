package pod_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

func TestDiscoverHostsPlacesAndClaims(t *testing.T) {
	ns := env.Namespace(t)
	hosts := env.LoadSite(t, ns)
	p, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)

	placed, err := pod.Run(ctx(), env.Client, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []bpav1.Node{
		{Label: "master", Role: "master", BareMetalHost: ns + "/node-1", MAC: "00:c5:16:05:61:b2"},
		{Label: "worker-1", Role: "worker", BareMetalHost: ns + "/node-3", MAC: "00:c6:14:04:61:b2"},
		{Label: "worker-2", Role: "worker", BareMetalHost: ns + "/node-4", MAC: "00:c2:12:03:62:b2"},
	}
	if d := cmp.Diff(want, placed); d != "" {
		t.Errorf("placements (-want +got):\n%s", d)
	}
	consumer := placement.ConsumerFor(p)
	versions := map[string]string{}
	for name, h := range hosts {
		cur := env.Host(t, h)
		claimed := consumer.Holds(cur.Spec.ConsumerRef)
		if wantClaimed := name == "node-1" || name == "node-3" || name == "node-4"; claimed != wantClaimed {
			t.Errorf("%s claimed = %v, want %v (consumerRef %v)", name, claimed, wantClaimed, cur.Spec.ConsumerRef)
		}
		versions[name] = cur.ResourceVersion
	}

	// A retry (Argo's, argo retry, argo resubmit) places the same and writes nothing.
	again, err := pod.Run(ctx(), env.Client, ref, nil)
	if err != nil || !cmp.Equal(placed, again) {
		t.Fatalf("second run: %v, %v", again, err)
	}
	for name, h := range hosts {
		if rv := env.Host(t, h).ResourceVersion; rv != versions[name] {
			t.Errorf("%s was written again by a retry (resourceVersion %s → %s)", name, versions[name], rv)
		}
	}
}

func TestDiscoverHostsFailsFastOnAStaleWorkflow(t *testing.T) {
	ns := env.Namespace(t)
	env.LoadSite(t, ns)
	p, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	p.Spec.PodSubnet = "10.244.64.0/18"
	if err := env.Client.Update(ctx(), p); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref  stepcmd.CRRef
		want string
	}{
		{ref, "has moved on to generation 2; this Workflow was compiled from generation 1"},
		{stepcmd.CRRef{Namespace: ns, Name: "abc", UID: "other", Generation: 2}, "was deleted and created again"},
		{stepcmd.CRRef{Namespace: ns, Name: "gone", UID: "x", Generation: 1}, "no longer exists"},
	} {
		_, err := pod.Run(ctx(), env.Client, tc.ref, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || steps.IsRetryable(err) {
			t.Errorf("%+v: %v; want a final error saying %q", tc.ref, err, tc.want)
		}
	}
}

func TestDiscoverHostsWaitsForProvisioning(t *testing.T) {
	ns := env.Namespace(t)
	hosts := env.LoadSite(t, ns)
	_, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	node3 := env.Host(t, hosts["node-3"])
	node3.Status.Provisioning.State = metal3v1alpha1.StateProvisioning
	if err := env.Client.Status().Update(ctx(), node3); err != nil {
		t.Fatal(err)
	}
	_, err := pod.Run(ctx(), env.Client, ref, nil)
	if err == nil || !steps.IsRetryable(err) || !strings.Contains(err.Error(), `entry "worker-1"`) {
		t.Fatalf("%v; want a retryable error naming worker-1", err)
	}
	if ref := env.Host(t, hosts["node-1"]).Spec.ConsumerRef; ref != nil {
		t.Errorf("node-1 was claimed although the placement failed: %v", ref)
	}
}

// TestDiscoverHostsRace: two Provisionings want the same host at the same moment. Exactly one
// claims it; the other fails naming the holder. Repeated, because a race that passes once
// proves little.
func TestDiscoverHostsRace(t *testing.T) {
	for round := range 5 {
		ns := env.Namespace(t)
		env.LoadSite(t, ns)
		refs := map[string]stepcmd.CRRef{}
		for _, name := range []string{"left", "right"} {
			_, refs[name] = env.Provisioning(t, "provisioning-cluster-efg-kud-plugins.yaml", ns, name, ns)
		}
		var wg sync.WaitGroup
		results := map[string]error{}
		var mu sync.Mutex
		for name, ref := range refs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := pod.Run(ctx(), env.Client, ref, nil)
				mu.Lock()
				results[name] = err
				mu.Unlock()
			}()
		}
		wg.Wait()
		var winners []string
		for name, err := range results {
			if err == nil {
				winners = append(winners, name)
				continue
			}
			if !strings.Contains(err.Error(), "is claimed by Provisioning "+ns+"/") {
				t.Errorf("round %d: the loser %s failed with %v, want the holder named", round, name, err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: winners %v (errors %v), want exactly one", round, winners, results)
		}
		node5 := env.Host(t, &metal3v1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "node-5"}})
		if ref := node5.Spec.ConsumerRef; ref == nil || ref.Name != winners[0] {
			t.Errorf("round %d: node-5 held by %v, want the winner %s", round, ref, winners[0])
		}
	}
}

func TestDiscoverHostsAddsLeavingNodes(t *testing.T) {
	ns := env.Namespace(t)
	env.LoadSite(t, ns)
	p, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	placed, err := pod.Run(ctx(), env.Client, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The controller records the hosts in status; then worker-2 is removed from the spec.
	for _, pl := range placed {
		p.Status.Hosts = append(p.Status.Hosts, bpav1.Node{Label: pl.Label, Role: pl.Role, BareMetalHost: pl.BareMetalHost, MAC: pl.MAC})
	}
	if err := env.Client.Status().Update(ctx(), p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Workers = p.Spec.Workers[:1]
	if err := env.Client.Update(ctx(), p); err != nil {
		t.Fatal(err)
	}
	ref.Generation = p.Generation

	got, err := pod.Run(ctx(), env.Client, ref, []string{"worker-2"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(placed, got); d != "" {
		t.Errorf("the leaving worker-2 is in the inventory's hosts, on its host (-want +got):\n%s", d)
	}
	for leaving, want := range map[string]string{
		"worker-1": "still in the spec",
		"worker-9": "does not say which host it is",
	} {
		if _, err := pod.Run(ctx(), env.Client, ref, []string{leaving}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("leaving %s: %v, want %q", leaving, err, want)
		}
	}
	// Several nodes that cannot leave: each named.
	if _, err := pod.Run(ctx(), env.Client, ref, []string{"worker-1", "worker-9"}); err == nil ||
		!strings.Contains(err.Error(), `node "worker-1" is to be removed but is still in the spec`) || !strings.Contains(err.Error(), `node "worker-9"`) {
		t.Errorf("leaving worker-1 and worker-9: %v; want both named", err)
	}
}
