package renderinventory

// The inventory is rendered from an embedded sprig template parsed once with
// missingkey=error. Every value is validated before it reaches the template: a host label that
// could smuggle Ansible syntax is refused, not escaped.

import (
	"bytes"
	"embed"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

//go:embed *.tmpl
var files embed.FS

var parsed = template.Must(template.New("").Funcs(sprig.TxtFuncMap()).Option("missingkey=error").ParseFS(files, "*.tmpl"))

// InventoryInput is what the kubespray inventory is rendered from.
type InventoryInput struct {
	Cluster string
	// User is the SSH login user.
	User string
	// Hosts are the placed hosts, each with its IP.
	Hosts []bpav1.Node
	// Groups, when set, are the kube_control_plane and etcd groups in the controller's order
	// (a cluster that exists); else they are drawn from the masters in the hosts' order.
	Groups Groups
}

// Groups are kubespray's kube_control_plane and etcd groups, in inventory order.
type Groups struct {
	ControlPlane, Etcd []string
}

type inventoryData struct {
	Cluster string
	User    string
	// Hosts are the nodes, each IP in its canonical form.
	Hosts   []bpav1.Node
	Masters []string
	Etcd    []string
	Workers []string
}

// Inventory renders kubespray's INI inventory: kube_control_plane from the masters, an
// odd-sized etcd group drawn from them, kube_node from the workers.
func Inventory(in InventoryInput) ([]byte, error) {
	data, err := inventoryDataFor(in)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := parsed.ExecuteTemplate(&buf, "inventory.ini.tmpl", data); err != nil {
		return nil, fmt.Errorf("rendering the inventory: %w", err)
	}
	return buf.Bytes(), nil
}

func inventoryDataFor(in InventoryInput) (*inventoryData, error) {
	if msgs := validation.IsDNS1123Label(in.Cluster); len(msgs) > 0 {
		return nil, fmt.Errorf("cluster %q: %s", in.Cluster, strings.Join(msgs, "; "))
	}
	if !bpav1.IsSSHUser(in.User) {
		return nil, fmt.Errorf("ssh user %q: must be a Linux user name of at most 32 characters", in.User)
	}
	if len(in.Hosts) == 0 {
		return nil, fmt.Errorf("no hosts to render")
	}
	d := &inventoryData{Cluster: in.Cluster, User: in.User}
	seen := map[string]bool{}
	for _, h := range in.Hosts {
		if msgs := validation.IsDNS1123Label(h.Label); len(msgs) > 0 {
			return nil, fmt.Errorf("host %q: a host name in the inventory must be a DNS-1123 label: %s", h.Label, strings.Join(msgs, "; "))
		}
		if seen[h.Label] {
			return nil, fmt.Errorf("host %q: listed twice", h.Label)
		}
		seen[h.Label] = true
		ip, err := netip.ParseAddr(h.IP)
		if err != nil {
			return nil, fmt.Errorf("host %q: IP %q: %v", h.Label, h.IP, err)
		}
		h.IP = ip.String()
		d.Hosts = append(d.Hosts, h)
		roles := h.Role.List()
		for _, role := range roles {
			switch role {
			case bpav1.RoleMaster:
				d.Masters = append(d.Masters, h.Label)
			case bpav1.RoleWorker:
				d.Workers = append(d.Workers, h.Label)
			default:
				return nil, fmt.Errorf("host %q: unknown role %q", h.Label, role)
			}
		}
	}
	if len(d.Masters) == 0 {
		return nil, fmt.Errorf("no master among the hosts")
	}
	d.Etcd = EtcdMembers(d.Masters)
	if len(in.Groups.ControlPlane) > 0 {
		if err := in.Groups.check(d.Masters); err != nil {
			return nil, err
		}
		d.Masters, d.Etcd = in.Groups.ControlPlane, in.Groups.Etcd
	}
	return d, nil
}

// check verifies planned groups against the masters among the hosts: the control plane is
// exactly those masters, etcd an odd number of them, none twice.
func (g Groups) check(masters []string) error {
	if !slices.Equal(slices.Sorted(slices.Values(g.ControlPlane)), slices.Sorted(slices.Values(masters))) {
		return fmt.Errorf("the planned control plane %v is not the masters among the hosts %v", g.ControlPlane, masters)
	}
	if len(g.Etcd)%2 == 0 {
		return fmt.Errorf("the planned etcd group %v has an even number of members, which kubespray refuses", g.Etcd)
	}
	seen := map[string]bool{}
	for _, m := range g.Etcd {
		if !slices.Contains(masters, m) || seen[m] {
			return fmt.Errorf("the planned etcd group %v: %q is not a master among the hosts, or is listed twice", g.Etcd, m)
		}
		seen[m] = true
	}
	return nil
}

// EtcdMembers draws an odd-sized etcd group from the masters, in their order: all of them
// when their number is odd, all but the last when it is even (an even member adds no fault
// tolerance and one more vote to lose).
func EtcdMembers(masters []string) []string {
	n := len(masters)
	if n%2 == 0 {
		n--
	}
	return append([]string(nil), masters[:n]...)
}
