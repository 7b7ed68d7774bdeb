package placement_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
)

var us = placement.Consumer{APIVersion: "bpa.akraino.org/v1alpha1", Kind: "Provisioning", Namespace: "default", Name: "mine"}

type hostOpt func(*metal3v1alpha1.BareMetalHost)

func host(name string, cpus, ramMiB int, mac string, opts ...hostOpt) metal3v1alpha1.BareMetalHost {
	h := metal3v1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "metal3"},
		Spec:       metal3v1alpha1.BareMetalHostSpec{BootMACAddress: mac},
		Status: metal3v1alpha1.BareMetalHostStatus{
			Provisioning: metal3v1alpha1.ProvisionStatus{State: metal3v1alpha1.StateProvisioned},
			HardwareDetails: &metal3v1alpha1.HardwareDetails{
				CPU:          metal3v1alpha1.CPU{Count: cpus},
				RAMMebibytes: ramMiB,
				NIC:          []metal3v1alpha1.NIC{{MAC: mac}},
			},
		},
	}
	for _, o := range opts {
		o(&h)
	}
	return h
}

func state(s metal3v1alpha1.ProvisioningState) hostOpt {
	return func(h *metal3v1alpha1.BareMetalHost) { h.Status.Provisioning.State = s }
}

func claimedBy(kind, ns, name string) hostOpt {
	return func(h *metal3v1alpha1.BareMetalHost) {
		h.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: "bpa.akraino.org/v1alpha1", Kind: kind, Namespace: ns, Name: name}
	}
}

func nic(mac string) hostOpt {
	return func(h *metal3v1alpha1.BareMetalHost) {
		h.Status.HardwareDetails.NIC = append(h.Status.HardwareDetails.NIC, metal3v1alpha1.NIC{MAC: mac})
	}
}

func label(k, v string) hostOpt {
	return func(h *metal3v1alpha1.BareMetalHost) {
		if h.Labels == nil {
			h.Labels = map[string]string{}
		}
		h.Labels[k] = v
	}
}

func entry(label string, req bpav1.HostRequirements) bpav1.HostEntry {
	return bpav1.HostEntry{label: req}
}

func mac(m string) bpav1.HostRequirements { return bpav1.HostRequirements{MACAddress: m} }

func res(cpu int32, mem string) bpav1.HostRequirements {
	return bpav1.HostRequirements{CPU: ptr.To(cpu), Memory: ptr.To(resource.MustParse(mem))}
}

func placed(label string, role bpav1.NodeRoles, host, mac string) bpav1.Node {
	return bpav1.Node{Label: label, Role: role, BareMetalHost: "metal3/" + host, MAC: mac}
}

const (
	mac1 = "00:00:00:00:00:01"
	mac2 = "00:00:00:00:00:02"
	mac3 = "00:00:00:00:00:03"
	mac4 = "00:00:00:00:00:04"
)

func TestPlace(t *testing.T) {
	site := []metal3v1alpha1.BareMetalHost{
		host("small", 4, 8192, mac1),
		host("medium", 16, 16384, mac2),
		host("large", 32, 65536, mac3, nic("aa:bb:cc:dd:ee:ff")),
		host("medium-b", 16, 16384, mac4),
	}
	cases := []struct {
		name    string
		reason  string
		spec    bpav1.ProvisioningSpec
		hosts   []metal3v1alpha1.BareMetalHost
		want    []bpav1.Node
		wantErr string
		retry   bool
	}{
		{
			name:   "mac-case-insensitive",
			reason: "a MAC matches whatever case the CR or the host writes it in",
			spec:   bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", mac("AA:BB:CC:DD:EE:FF"))}, Workers: []bpav1.HostEntry{entry("w", mac(strings.ToUpper(mac1)))}},
			hosts:  site,
			want:   []bpav1.Node{placed("m", "master", "large", "aa:bb:cc:dd:ee:ff"), placed("w", "worker", "small", mac1)},
		},
		{
			name:   "smallest-fit-first",
			reason: "resources take the smallest sufficient host: fewest CPUs, then least RAM, then name",
			spec:   bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", res(8, "8Gi"))}, Workers: []bpav1.HostEntry{entry("w1", res(8, "8Gi")), entry("w2", res(1, "1Gi"))}},
			hosts:  site,
			want:   []bpav1.Node{placed("m", "master", "medium", mac2), placed("w1", "worker", "medium-b", mac4), placed("w2", "worker", "small", mac1)},
		},
		{
			name:   "fewest-cpus-before-least-ram",
			reason: "CPUs order candidates before RAM: a host with fewer CPUs but more RAM comes first",
			spec:   bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", res(4, "1Gi"))}},
			hosts:  []metal3v1alpha1.BareMetalHost{host("many-cpus-little-ram", 32, 4096, mac1), host("few-cpus-much-ram", 8, 65536, mac2)},
			want:   []bpav1.Node{placed("m", "master,worker", "few-cpus-much-ram", mac2)},
		},
		{
			name:   "mac-entries-first",
			reason: "a resource entry earlier in the CR must not take the host a MAC entry names",
			spec:   bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", res(1, "1Gi"))}, Workers: []bpav1.HostEntry{entry("w", mac(mac1))}},
			hosts:  site,
			want:   []bpav1.Node{placed("m", "master", "medium", mac2), placed("w", "worker", "small", mac1)},
		},
		{
			name:    "mac-and-resources-shortfall",
			reason:  "with both, the MAC's host must meet the resources, and the message names entry, host and shortfall",
			spec:    bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", bpav1.HostRequirements{MACAddress: mac1, CPU: ptr.To[int32](8), Memory: ptr.To(resource.MustParse("16Gi"))})}},
			hosts:   site,
			wantErr: `entry "m": BareMetalHost metal3/small (MAC 00:00:00:00:00:01) has 4 CPUs, fewer than the 8 required and 8192 MiB of RAM, less than the 16Gi required`,
		},
		{
			name:    "claimed-by-another-by-mac",
			reason:  "a host another consumer holds is never chosen, and the message names the holder",
			spec:    bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", mac(mac1))}},
			hosts:   []metal3v1alpha1.BareMetalHost{host("small", 4, 8192, mac1, claimedBy("Provisioning", "default", "theirs"))},
			wantErr: `entry "m": BareMetalHost metal3/small (MAC 00:00:00:00:00:01) is claimed by Provisioning default/theirs`,
		},
		{
			name:   "claimed-by-another-skipped-by-resources",
			reason: "resource placement passes over hosts held by others",
			spec:   bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", res(1, "1Gi"))}},
			hosts:  []metal3v1alpha1.BareMetalHost{host("small", 4, 8192, mac1, claimedBy("Machine", "x", "y")), host("medium", 16, 16384, mac2)},
			want:   []bpav1.Node{placed("m", "master,worker", "medium", mac2)},
		},
		{
			name:   "claimed-by-us",
			reason: "hosts we already hold count, so a rerun of discover-hosts places the same way",
			spec:   bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", mac(mac1))}},
			hosts:  []metal3v1alpha1.BareMetalHost{host("small", 4, 8192, mac1, claimedBy("Provisioning", "default", "mine"))},
			want:   []bpav1.Node{placed("m", "master,worker", "small", mac1)},
		},
		{
			name:    "mac-host-still-provisioning",
			reason:  "a host on its way to provisioned makes the failure retryable",
			spec:    bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", mac(mac1))}},
			hosts:   []metal3v1alpha1.BareMetalHost{host("small", 4, 8192, mac1, state(metal3v1alpha1.StateProvisioning))},
			wantErr: `entry "m": BareMetalHost metal3/small (MAC 00:00:00:00:00:01) is "provisioning", not provisioned yet`,
			retry:   true,
		},
		{
			name:    "mac-host-deprovisioning",
			reason:  "a host on its way out will not come back by waiting: not retryable",
			spec:    bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", mac(mac1))}},
			hosts:   []metal3v1alpha1.BareMetalHost{host("small", 4, 8192, mac1, state(metal3v1alpha1.StateDeprovisioning))},
			wantErr: `entry "m": BareMetalHost metal3/small (MAC 00:00:00:00:00:01) is "deprovisioning", not provisioned yet`,
		},
		{
			name:   "externally-provisioned-counts",
			reason: "hosts installed outside Ironic but registered count as provisioned",
			spec:   bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", mac(mac1))}},
			hosts:  []metal3v1alpha1.BareMetalHost{host("small", 4, 8192, mac1, state(metal3v1alpha1.StateExternallyProvisioned))},
			want:   []bpav1.Node{placed("m", "master,worker", "small", mac1)},
		},
		{
			name:    "no-fit-waiting",
			reason:  "no sufficient host while others still provision: retryable, and it says how many",
			spec:    bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", res(64, "1Gi"))}},
			hosts:   []metal3v1alpha1.BareMetalHost{host("small", 4, 8192, mac1), host("new", 4, 8192, mac2, state(metal3v1alpha1.StateInspecting))},
			wantErr: `entry "m": no free provisioned BareMetalHost has at least 64 CPUs and at least 1Gi of RAM (1 more still provisioning)`,
			retry:   true,
		},
		{
			name:    "unknown-mac",
			reason:  "a MAC no host has fails at once",
			spec:    bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", mac("de:ad:be:ef:00:00"))}},
			hosts:   site,
			wantErr: `entry "m": no BareMetalHost has a NIC with MAC de:ad:be:ef:00:00`,
		},
		{
			name:    "mac-on-two-hosts",
			reason:  "an ambiguous MAC is refused rather than guessed",
			spec:    bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", mac(mac1))}},
			hosts:   []metal3v1alpha1.BareMetalHost{host("a", 4, 8192, mac1), host("b", 4, 8192, mac2, nic(mac1))},
			wantErr: `entry "m": MAC 00:00:00:00:00:01 is on more than one BareMetalHost: metal3/a, metal3/b`,
		},
		{
			name:   "dual-role-meets-both-entries",
			reason: "a node with both roles meets the union of its master and worker entries: 16 CPUs from one, 16Gi from the other",
			spec:   bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("n", res(16, "1Gi"))}, Workers: []bpav1.HostEntry{entry("n", res(1, "16Gi"))}},
			hosts:  []metal3v1alpha1.BareMetalHost{host("cpus-only", 16, 1024, mac1), host("ram-only", 1, 16384, mac2), host("both", 16, 16384, mac3)},
			want:   []bpav1.Node{placed("n", "master,worker", "both", mac3)},
		},
		{
			name:    "dual-role-shortfall-against-worker-entry",
			reason:  "a shortfall against the worker entry is reported too",
			spec:    bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("n", mac(mac1))}, Workers: []bpav1.HostEntry{entry("n", res(8, "1Gi"))}},
			hosts:   []metal3v1alpha1.BareMetalHost{host("small", 4, 8192, mac1)},
			wantErr: `entry "n": BareMetalHost metal3/small (MAC 00:00:00:00:00:01) has 4 CPUs, fewer than the 8 required`,
		},
		{
			name:   "own-claim-preferred",
			reason: "a host this Provisioning already holds is kept over a smaller one that came free: a retry never moves or leaks a claim",
			spec:   bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", res(2, "1Gi"))}},
			hosts:  []metal3v1alpha1.BareMetalHost{host("small", 4, 8192, mac1), host("medium", 16, 16384, mac2, claimedBy("Provisioning", "default", "mine"))},
			want:   []bpav1.Node{placed("m", "master,worker", "medium", mac2)},
		},
		{
			name:   "dual-role",
			reason: "the same label under masters and workers is one node with both roles",
			spec:   bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("n1", mac(mac1))}, Workers: []bpav1.HostEntry{entry("n1", mac(mac1)), entry("n2", mac(mac2))}},
			hosts:  site,
			want:   []bpav1.Node{placed("n1", "master,worker", "small", mac1), placed("n2", "worker", "medium", mac2)},
		},
		{
			name:   "sriov-and-qat-labels",
			reason: "sriov and qat are met by the feature labels and combine with resources",
			spec:   bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", mac(mac1))}, Workers: []bpav1.HostEntry{entry("w", bpav1.HostRequirements{CPU: ptr.To[int32](8), SRIOV: true, QAT: true})}},
			hosts: []metal3v1alpha1.BareMetalHost{
				host("small", 4, 8192, mac1),
				host("medium", 16, 16384, mac2, label(placement.SRIOVLabel, "true")),
				host("large", 32, 65536, mac3, label(placement.SRIOVLabel, "true"), label(placement.QATLabel, "true")),
			},
			want: []bpav1.Node{placed("m", "master", "small", mac1), placed("w", "worker", "large", mac3)},
		},
		{
			name:    "all-failures-reported",
			reason:  "every entry that cannot be placed is named, not just the first",
			spec:    bpav1.ProvisioningSpec{Masters: []bpav1.HostEntry{entry("m", mac("de:ad:be:ef:00:01"))}, Workers: []bpav1.HostEntry{entry("w", mac("de:ad:be:ef:00:02"))}},
			hosts:   site,
			wantErr: "entry \"m\": no BareMetalHost has a NIC with MAC de:ad:be:ef:00:01\nentry \"w\": no BareMetalHost has a NIC with MAC de:ad:be:ef:00:02",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := placement.Place(placement.Entries(&tc.spec), tc.hosts, us)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("%s: want error %q, got placements %v", tc.reason, tc.wantErr, got)
				}
				if err.Error() != tc.wantErr {
					t.Errorf("%s:\nwant error %q\ngot        %q", tc.reason, tc.wantErr, err.Error())
				}
				if placement.IsRetryable(err) != tc.retry {
					t.Errorf("%s: retryable = %v, want %v", tc.reason, placement.IsRetryable(err), tc.retry)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPlaceFixtures reproduces the placement table of the shared fixtures' README.
func TestPlaceFixtures(t *testing.T) {
	want := map[string][]string{
		"provisioning-cluster-abc.yaml":              {"master master node-1", "worker-1 worker node-3", "worker-2 worker node-4"},
		"provisioning-cluster-efg-kud-plugins.yaml":  {"master-1 master,worker node-5"},
		"provisioning-cluster-xyz-resources.yaml":    {"master-1 master node-1", "master-2 master node-2", "worker worker node-3"},
		"provisioning-cluster-rst-by-resources.yaml": {"master-1 master node-2", "worker-1 worker node-4"},
	}
	hosts := testutil.SiteHosts(t)
	for _, name := range testutil.ProvisioningFixtures {
		t.Run(name, func(t *testing.T) {
			p := testutil.Provisioning(t, name)
			got, err := placement.Place(placement.Entries(&p.Spec), hosts, placement.ConsumerFor(p))
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, pl := range got {
				lines = append(lines, fmt.Sprintf("%s %s %s", pl.Label, pl.Role, strings.TrimPrefix(pl.BareMetalHost, "metal3/")))
			}
			if diff := cmp.Diff(want[name], lines); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlaceDoesNotDependOnHostOrder(t *testing.T) {
	hosts := testutil.SiteHosts(t)
	p := testutil.Provisioning(t, "provisioning-cluster-rst-by-resources.yaml")
	first, err := placement.Place(placement.Entries(&p.Spec), hosts, placement.ConsumerFor(p))
	if err != nil {
		t.Fatal(err)
	}
	reversed := make([]metal3v1alpha1.BareMetalHost, len(hosts))
	for i := range hosts {
		reversed[len(hosts)-1-i] = hosts[i]
	}
	second, err := placement.Place(placement.Entries(&p.Spec), reversed, placement.ConsumerFor(p))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("placement depends on the order hosts are listed in (-first +second):\n%s", diff)
	}
}
