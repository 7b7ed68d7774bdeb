package renderinventory_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/golden"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

// ansibleInventory is what `ansible-inventory --list` makes of an inventory: every group's
// hosts and children, and every host's variables.
type ansibleInventory struct {
	groups map[string][]string
	// ordered are each group's hosts in Ansible's order (kubespray's "first" master is
	// groups['kube_control_plane'][0]).
	ordered map[string][]string
	vars    map[string]map[string]any
}

func parseWithAnsible(t *testing.T, inventory []byte) ansibleInventory {
	t.Helper()
	bin, err := exec.LookPath("ansible-inventory")
	if err != nil {
		t.Fatal("ansible-inventory is not installed (apt-get install ansible-core; .ci/run does)")
	}
	path := filepath.Join(t.TempDir(), "hosts.ini")
	if err := os.WriteFile(path, inventory, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-i", path, "--list")
	cmd.Env = append(os.Environ(), "ANSIBLE_LOCAL_TEMP="+t.TempDir(), "HOME="+t.TempDir(), "ANSIBLE_INVENTORY_UNPARSED_FAILED=true", "ANSIBLE_INVENTORY_ENABLED=ini")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("ansible-inventory refused the inventory: %v\n%s\n%s", err, stderr, inventory)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	inv := ansibleInventory{groups: map[string][]string{}, ordered: map[string][]string{}}
	for name, body := range raw {
		if name == "_meta" {
			var meta struct {
				Hostvars map[string]map[string]any `json:"hostvars"`
			}
			if err := json.Unmarshal(body, &meta); err != nil {
				t.Fatal(err)
			}
			inv.vars = meta.Hostvars
			continue
		}
		var g struct {
			Hosts    []string `json:"hosts"`
			Children []string `json:"children"`
		}
		if err := json.Unmarshal(body, &g); err != nil {
			t.Fatal(err)
		}
		inv.ordered[name] = slices.Clone(g.Hosts)
		members := append(g.Hosts, g.Children...)
		slices.Sort(members)
		inv.groups[name] = members
	}
	return inv
}

func TestInventoryFixturesParseWithAnsible(t *testing.T) {
	want := map[string]map[string][]string{
		"provisioning-cluster-abc.yaml": {
			"kube_control_plane": {"master"}, "etcd": {"master"}, "kube_node": {"worker-1", "worker-2"},
		},
		"provisioning-cluster-efg-kud-plugins.yaml": {
			"kube_control_plane": {"master-1"}, "etcd": {"master-1"}, "kube_node": {"master-1"},
		},
		"provisioning-cluster-rst-by-resources.yaml": {
			"kube_control_plane": {"master-1"}, "etcd": {"master-1"}, "kube_node": {"worker-1"},
		},
		"provisioning-cluster-xyz-resources.yaml": {
			"kube_control_plane": {"master-1", "master-2"}, "etcd": {"master-1"}, "kube_node": {"worker"},
		},
	}
	hosts := testutil.SiteHosts(t)
	for _, name := range testutil.ProvisioningFixtures {
		t.Run(name, func(t *testing.T) {
			p := testutil.Provisioning(t, name)
			placed, err := placement.Place(placement.Entries(&p.Spec), hosts, placement.ConsumerFor(p))
			if err != nil {
				t.Fatal(err)
			}
			addressed, err := leases.Resolve(placed, leases.NewHostSource(hosts))
			if err != nil {
				t.Fatal(err)
			}
			inv, err := renderinventory.Inventory(renderinventory.InventoryInput{Cluster: p.Labels["cluster"], User: "root", Hosts: addressed})
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, strings.TrimSuffix(name, ".yaml")+".ini", inv)

			got := parseWithAnsible(t, inv)
			for group, members := range want[name] {
				if diff := cmp.Diff(members, got.groups[group]); diff != "" {
					t.Errorf("group %s (-want +got):\n%s", group, diff)
				}
			}
			if diff := cmp.Diff([]string{"calico_rr", "kube_control_plane", "kube_node"}, got.groups["k8s_cluster"]); diff != "" {
				t.Errorf("k8s_cluster children (-want +got):\n%s", diff)
			}
			for _, h := range addressed {
				vars := got.vars[h.Label]
				for _, key := range []string{"ansible_host", "ip", "access_ip"} {
					if vars[key] != h.IP {
						t.Errorf("host %s: %s = %v, want %s", h.Label, key, vars[key], h.IP)
					}
				}
				if vars["ansible_user"] != "root" {
					t.Errorf("host %s: ansible_user = %v", h.Label, vars["ansible_user"])
				}
			}
		})
	}
}

// TestInventoryUserIsTheNodesOnly: the SSH user is the nodes' (k8s_cluster's), not all's,
// which the implicit localhost would inherit; no ansible_become, which would override the
// become: false of kubespray's tasks on localhost (run-kubespray passes --become).
func TestInventoryUserIsTheNodesOnly(t *testing.T) {
	inv, err := renderinventory.Inventory(renderinventory.InventoryInput{Cluster: "c", User: "ubuntu", Hosts: []bpav1.Node{
		{Label: "m", Role: "master,worker", IP: "10.0.0.1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := parseWithAnsible(t, inv)
	if v := got.vars["m"]; v["ansible_user"] != "ubuntu" || v["ansible_become"] != nil {
		t.Errorf("host vars = %v, want ansible_user ubuntu and no ansible_become", v)
	}
	if strings.Contains(string(inv), "[all:vars]") {
		t.Errorf("the inventory sets variables for all, the implicit localhost among them:\n%s", inv)
	}
}

func TestInventoryRefusesSmuggling(t *testing.T) {
	cases := []struct {
		name, reason string
		in           renderinventory.InventoryInput
		wantErr      string
	}{
		{
			name:    "label-with-variables",
			reason:  "a label that adds Ansible variables to its host line is refused",
			in:      renderinventory.InventoryInput{Cluster: "c", User: "root", Hosts: []bpav1.Node{{Label: "m ansible_connection=local", Role: "master", IP: "10.0.0.1"}}},
			wantErr: `host "m ansible_connection=local": a host name in the inventory must be a DNS-1123 label`,
		},
		{
			name:    "label-with-newline",
			reason:  "a label that opens a new section is refused",
			in:      renderinventory.InventoryInput{Cluster: "c", User: "root", Hosts: []bpav1.Node{{Label: "m\n[all:vars]\nx=1", Role: "master", IP: "10.0.0.1"}}},
			wantErr: `a host name in the inventory must be a DNS-1123 label`,
		},
		{
			name:    "ip-with-variables",
			reason:  "an IP field must be an IP",
			in:      renderinventory.InventoryInput{Cluster: "c", User: "root", Hosts: []bpav1.Node{{Label: "m", Role: "master", IP: "10.0.0.1 ansible_port=2222"}}},
			wantErr: `host "m": IP "10.0.0.1 ansible_port=2222"`,
		},
		{
			name:    "user-with-variables",
			reason:  "the SSH user must be a user name",
			in:      renderinventory.InventoryInput{Cluster: "c", User: "root ansible_become_pass=x", Hosts: []bpav1.Node{{Label: "m", Role: "master", IP: "10.0.0.1"}}},
			wantErr: `ssh user "root ansible_become_pass=x"`,
		},
		{
			name:    "no-master",
			reason:  "an inventory without a master would leave kubespray nothing to build",
			in:      renderinventory.InventoryInput{Cluster: "c", User: "root", Hosts: []bpav1.Node{{Label: "w", Role: "worker", IP: "10.0.0.1"}}},
			wantErr: "no master among the hosts",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := renderinventory.Inventory(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("%s: want error containing %q, got %v\n%s", tc.reason, tc.wantErr, err, out)
			}
		})
	}
}

func TestEtcdMembers(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 1, 3: 3, 4: 3, 5: 5, 6: 5} {
		masters := make([]string, n)
		for i := range masters {
			masters[i] = string(rune('a' + i))
		}
		got := renderinventory.EtcdMembers(masters)
		if len(got) != want || !slices.Equal(got, masters[:want]) {
			t.Errorf("%d masters: etcd %v, want the first %d", n, got, want)
		}
	}
}

// TestInventoryPlannedGroups: on a cluster that exists, the groups are the controller's, in its
// order: the first master first even when a newer one's label sorts before it, a master added
// last, etcd the members it has (not a new draw from the masters); groups that do not fit the
// hosts are refused.
func TestInventoryPlannedGroups(t *testing.T) {
	hosts := []bpav1.Node{
		{Label: "a-master", Role: "master", IP: "10.0.0.9"},
		{Label: "m1", Role: "master", IP: "10.0.0.11"},
		{Label: "m2", Role: "master", IP: "10.0.0.12"},
		{Label: "m3", Role: "master", IP: "10.0.0.13"},
		{Label: "w1", Role: "worker", IP: "10.0.0.21"},
	}
	planned := renderinventory.Groups{ControlPlane: []string{"m1", "m2", "m3", "a-master"}, Etcd: []string{"m1", "m2", "m3"}}
	inv, err := renderinventory.Inventory(renderinventory.InventoryInput{Cluster: "c", User: "root", Hosts: hosts, Groups: planned})
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "planned-groups.ini", inv)
	got := parseWithAnsible(t, inv)
	for group, want := range map[string][]string{"kube_control_plane": {"m1", "m2", "m3", "a-master"}, "etcd": {"m1", "m2", "m3"}, "kube_node": {"w1"}} {
		if d := cmp.Diff(want, got.ordered[group]); d != "" {
			t.Errorf("group %s (-want +got):\n%s", group, d)
		}
	}
	for _, tc := range []struct {
		groups renderinventory.Groups
		want   string
	}{
		{renderinventory.Groups{ControlPlane: []string{"m1", "m2", "m3"}, Etcd: []string{"m1"}}, "the planned control plane [m1 m2 m3] is not the masters among the hosts"},
		{renderinventory.Groups{ControlPlane: planned.ControlPlane, Etcd: []string{"m1", "m2"}}, "has an even number of members, which kubespray refuses"},
		{renderinventory.Groups{ControlPlane: planned.ControlPlane, Etcd: []string{"m1", "m1", "m2"}}, `"m1" is not a master among the hosts, or is listed twice`},
		{renderinventory.Groups{ControlPlane: planned.ControlPlane, Etcd: []string{"w1"}}, `"w1" is not a master among the hosts`},
	} {
		if _, err := renderinventory.Inventory(renderinventory.InventoryInput{Cluster: "c", User: "root", Hosts: hosts, Groups: tc.groups}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("groups %+v: %v, want an error saying %q", tc.groups, err, tc.want)
		}
	}
}
