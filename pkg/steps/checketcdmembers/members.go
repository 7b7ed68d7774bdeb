package checketcdmembers

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// Member is one etcd member as `etcdctl member list -w json` prints it.
type Member struct {
	ID        uint64   `json:"ID"`
	Name      string   `json:"name"`
	PeerURLs  []string `json:"peerURLs"`
	IsLearner bool     `json:"isLearner"`
}

// Parse reads `etcdctl member list -w json`'s output: etcd's own answer, checked for what the
// comparison needs (every member has one peer URL whose host is an IP).
func Parse(raw []byte) ([]Member, error) {
	var list struct {
		Members *[]Member `json:"members"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("etcdctl member list: %w", err)
	}
	if list.Members == nil || len(*list.Members) == 0 {
		return nil, fmt.Errorf("etcdctl member list: no members")
	}
	for _, m := range *list.Members {
		if _, err := m.peerIP(); err != nil {
			return nil, fmt.Errorf("etcdctl member list: member %x (%q): %w", m.ID, m.Name, err)
		}
	}
	return *list.Members, nil
}

// peerIP is the IP of the member's first peer URL: kubespray gives each member one,
// https://<the node's IP>:2380, and finds a member by it when it removes one.
func (m Member) peerIP() (netip.Addr, error) {
	if len(m.PeerURLs) == 0 {
		return netip.Addr{}, fmt.Errorf("no peer URL")
	}
	u, err := url.Parse(m.PeerURLs[0])
	if err != nil {
		return netip.Addr{}, fmt.Errorf("peer URL: %w", err)
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return netip.Addr{}, fmt.Errorf("peer URL %q: its host is not an IP", m.PeerURLs[0])
	}
	return ip.Unmap(), nil
}

func (m Member) String() string {
	s := fmt.Sprintf("%s (%s)", m.Name, m.PeerURLs[0])
	if m.Name == "" {
		s = fmt.Sprintf("a member not started yet (%s)", m.PeerURLs[0])
	}
	if m.IsLearner {
		s += ", a learner"
	}
	return s
}

// Compare checks that etcd's members are exactly the expected nodes (labels, in the plan's
// order), each a started voting member, matched by IP. The error names what differs, both
// sides, and what it means.
func Compare(members []Member, expected []string, hosts []bpav1.Node) error {
	ips := map[netip.Addr]string{}
	for _, label := range expected {
		i := slices.IndexFunc(hosts, func(h bpav1.Node) bool { return h.Label == label })
		if i < 0 {
			return fmt.Errorf("etcd member %q is not among the addressed hosts", label)
		}
		ip, err := netip.ParseAddr(hosts[i].IP)
		if err != nil {
			return fmt.Errorf("etcd member %q: IP %q: %v", label, hosts[i].IP, err)
		}
		ips[ip.Unmap()] = label
	}
	var problems []string
	found := map[string]bool{}
	for _, m := range members {
		ip, _ := m.peerIP() // Parse checked it
		label, ok := ips[ip]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is not a node the cluster's record names", m))
		case m.Name == "" || m.IsLearner:
			problems = append(problems, fmt.Sprintf("node %s is %s, not a started voting member", label, m))
			found[label] = true
		default:
			found[label] = true
		}
	}
	for _, label := range expected {
		if !found[label] {
			problems = append(problems, fmt.Sprintf("node %s is not a member", label))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("etcd's members are not the %d the cluster's record names (%s): %s; etcd has %s",
		len(expected), describe(expected, hosts), strings.Join(problems, "; "), describeMembers(members))
}

func describe(labels []string, hosts []bpav1.Node) string {
	var out []string
	for _, l := range labels {
		for _, h := range hosts {
			if h.Label == l {
				out = append(out, fmt.Sprintf("%s %s", l, h.IP))
			}
		}
	}
	return strings.Join(out, ", ")
}

func describeMembers(members []Member) string {
	var out []string
	for _, m := range members {
		out = append(out, m.String())
	}
	return strings.Join(out, ", ")
}
