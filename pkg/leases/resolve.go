package leases

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// Source is where resolve-leases finds addresses.
type Source interface {
	// Lookup returns the IP of mac on host, or a reason it has none.
	Lookup(host string, mac string) (string, error)
}

// FileSource looks MACs up in a lease file's table.
type FileSource struct {
	Table Table
	// Name is the file, for messages.
	Name string
	// Now is when the lookup happens: a lease that ended before it is no address.
	Now time.Time
}

// Lookup implements Source.
func (s FileSource) Lookup(_ string, mac string) (string, error) {
	l, ok := s.Table[strings.ToLower(mac)]
	if !ok {
		return "", fmt.Errorf("no active lease for MAC %s in %s", mac, s.Name)
	}
	if l.LapsedAt(s.Now) {
		return "", fmt.Errorf("the lease of %s for MAC %s in %s lapsed at %s (the DHCP server has not rewritten the file since): the host has not renewed it",
			l.IP, mac, s.Name, l.Ends.UTC().Format(time.RFC3339))
	}
	return l.IP.String(), nil
}

// HostSource looks MACs up in the BareMetalHosts' inspected NICs.
type HostSource struct {
	hosts map[string]*metal3v1alpha1.BareMetalHost
}

// NewHostSource indexes hosts by name.
func NewHostSource(hosts []metal3v1alpha1.BareMetalHost) HostSource {
	s := HostSource{hosts: make(map[string]*metal3v1alpha1.BareMetalHost, len(hosts))}
	for i := range hosts {
		s.hosts[hosts[i].Namespace+"/"+hosts[i].Name] = &hosts[i]
	}
	return s
}

// Lookup implements Source. A dual-stack NIC is listed once per address: its first IPv4
// address is the node's (what kubespray's inventory and most site networks address nodes by),
// else its first global IPv6 one; link-local addresses never are.
func (s HostSource) Lookup(host string, mac string) (string, error) {
	h, ok := s.hosts[host]
	if !ok {
		return "", fmt.Errorf("BareMetalHost %s is gone", host)
	}
	var v6 string
	if h.Status.HardwareDetails != nil {
		for _, nic := range h.Status.HardwareDetails.NIC {
			if !strings.EqualFold(nic.MAC, mac) {
				continue
			}
			ip, err := netip.ParseAddr(strings.TrimSpace(nic.IP))
			if err != nil || ip.IsLinkLocalUnicast() || ip.IsUnspecified() {
				continue
			}
			if ip.Unmap().Is4() {
				return ip.Unmap().String(), nil
			}
			if v6 == "" {
				v6 = ip.String()
			}
		}
	}
	if v6 != "" {
		return v6, nil
	}
	return "", fmt.Errorf("BareMetalHost %s reports no IP for its NIC with MAC %s", host, mac)
}

// Error is a placed host without an address. It is retryable: the host may not have asked
// the DHCP server yet.
type Error struct {
	Label  string
	Host   string
	Reason error
}

func (e *Error) Error() string {
	return fmt.Sprintf("entry %q (BareMetalHost %s): %v", e.Label, e.Host, e.Reason)
}

// Resolve fills in the IP of every placement, or returns every one it could not (joined).
func Resolve(placements []bpav1.Node, src Source) ([]bpav1.Node, error) {
	out := make([]bpav1.Node, len(placements))
	var errs []error
	for i, p := range placements {
		ip, err := src.Lookup(p.BareMetalHost, p.MAC)
		if err != nil {
			errs = append(errs, &Error{Label: p.Label, Host: p.BareMetalHost, Reason: err})
			continue
		}
		p.IP = ip
		out[i] = p
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := oneAddressOneNode(out); err != nil {
		return nil, err
	}
	return out, nil
}

// oneAddressOneNode is an invariant of every plan, whatever the addresses' source: two nodes
// never share an address (Ansible would configure one host twice and the other never).
func oneAddressOneNode(placed []bpav1.Node) error {
	by := map[string]string{}
	for _, p := range placed {
		if other, ok := by[p.IP]; ok {
			return fmt.Errorf("entries %q and %q would both get address %s: the lease source gives one address to two hosts", other, p.Label, p.IP)
		}
		by[p.IP] = p.Label
	}
	return nil
}
