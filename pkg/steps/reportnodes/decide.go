package reportnodes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// Report is what the step read of the cluster's nodes.
type Report struct {
	// Kubelets groups the nodes by the kubelet version they run, oldest first.
	Kubelets []bpav1.KubeletVersion `json:"kubelets,omitempty"`
	// Unreadable says why no node was read (no kubeconfig yet, the API server did not answer);
	// the status then keeps what it last knew.
	Unreadable string `json:"unreadable,omitempty"`
}

// ReportOf groups nodes by kubelet version; within a version the nodes are sorted, those not
// Ready and those cordoned listed apart.
func ReportOf(nodes []corev1.Node) Report {
	byVersion := map[string]*bpav1.KubeletVersion{}
	for _, n := range nodes {
		v := n.Status.NodeInfo.KubeletVersion
		if byVersion[v] == nil {
			byVersion[v] = &bpav1.KubeletVersion{Version: v}
		}
		k := byVersion[v]
		k.Nodes = append(k.Nodes, n.Name)
		if !Ready(n) {
			k.NotReady = append(k.NotReady, n.Name)
		}
		if n.Spec.Unschedulable {
			k.Cordoned = append(k.Cordoned, n.Name)
		}
	}
	var r Report
	for _, v := range slices.SortedFunc(maps.Keys(byVersion), compareVersions) {
		k := byVersion[v]
		slices.Sort(k.Nodes)
		slices.Sort(k.NotReady)
		slices.Sort(k.Cordoned)
		r.Kubelets = append(r.Kubelets, *k)
	}
	return r
}

// Ready reports whether the node says it is Ready.
func Ready(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// compareVersions orders "v1.33.7" before "v1.34.3" (numerically, then as text).
func compareVersions(a, b string) int {
	pa, pb := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := 0; i < min(len(pa), len(pb)); i++ {
		var x, y int
		_, errX := fmt.Sscan(pa[i], &x)
		_, errY := fmt.Sscan(pb[i], &y)
		if errX == nil && errY == nil && x != y {
			return x - y
		}
	}
	return strings.Compare(a, b)
}

// Summary is one line for kubectl get: "v1.33.7 ×1, v1.34.3 ×2 (1 NotReady, 1 cordoned)".
func (r Report) Summary() string {
	var parts []string
	for _, k := range r.Kubelets {
		part := fmt.Sprintf("%s ×%d", k.Version, len(k.Nodes))
		var apart []string
		if len(k.NotReady) > 0 {
			apart = append(apart, fmt.Sprintf("%d NotReady", len(k.NotReady)))
		}
		if len(k.Cordoned) > 0 {
			apart = append(apart, fmt.Sprintf("%d cordoned", len(k.Cordoned)))
		}
		if len(apart) > 0 {
			part += " (" + strings.Join(apart, ", ") + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// MaxReportBytes bounds a report: a cluster has at most 5000 hosts, each named in it once.
const MaxReportBytes = 512 << 10

// Parse reads a report as the step wrote it: strict JSON, node names that are DNS-1123
// subdomains, versions without spaces or control characters.
func Parse(raw string) (Report, error) {
	if len(raw) > MaxReportBytes {
		return Report{}, fmt.Errorf("a nodes report of %d bytes: at most %d", len(raw), MaxReportBytes)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("a nodes report: %w", err)
	}
	for _, k := range r.Kubelets {
		if k.Version == "" || len(k.Version) > 64 || strings.ContainsFunc(k.Version, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
			return Report{}, fmt.Errorf("a nodes report: kubelet version %q", k.Version)
		}
		for _, n := range slices.Concat(k.Nodes, k.NotReady, k.Cordoned) {
			if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
				return Report{}, fmt.Errorf("a nodes report: node %q: %s", n, strings.Join(msgs, "; "))
			}
		}
	}
	return r, nil
}
