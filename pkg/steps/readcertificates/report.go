package readcertificates

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// kubeadmCertificate is one entry of `kubeadm certs check-expiration -o json`
// (output.kubeadm.k8s.io/v1alpha3, CertificateExpirationInfo).
type kubeadmCertificate struct {
	Name              string       `json:"name"`
	ExpirationDate    *metav1.Time `json:"expirationDate"`
	ExternallyManaged bool         `json:"externallyManaged"`
	Missing           bool         `json:"missing"`
}

// maxCertificates bounds what one master may list: kubeadm lists about fifteen.
const maxCertificates = 64

// ParseKubeadm reads kubeadm's check-expiration output: the certificates it manages and their
// authorities, soonest first. Missing and externally managed ones are left out (kubeadm
// neither has nor renews them).
func ParseKubeadm(raw []byte) ([]bpav1.CertificateExpiry, error) {
	var info struct {
		Kind                   string               `json:"kind"`
		Certificates           []kubeadmCertificate `json:"certificates"`
		CertificateAuthorities []kubeadmCertificate `json:"certificateAuthorities"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&info); err != nil {
		return nil, fmt.Errorf("kubeadm certs check-expiration: %w", err)
	}
	if info.Kind != "CertificateExpirationInfo" {
		return nil, fmt.Errorf("kubeadm certs check-expiration: kind %q, want CertificateExpirationInfo", info.Kind)
	}
	if n := len(info.Certificates) + len(info.CertificateAuthorities); n > maxCertificates {
		return nil, fmt.Errorf("kubeadm certs check-expiration: %d certificates, more than %d", n, maxCertificates)
	}
	var out []bpav1.CertificateExpiry
	for i, list := range [][]kubeadmCertificate{info.Certificates, info.CertificateAuthorities} {
		for _, c := range list {
			if c.Missing || c.ExternallyManaged || c.ExpirationDate == nil {
				continue
			}
			if err := checkName(c.Name); err != nil {
				return nil, fmt.Errorf("kubeadm certs check-expiration: %w", err)
			}
			out = append(out, bpav1.CertificateExpiry{Name: c.Name, Expires: metav1.NewTime(c.ExpirationDate.UTC()), Authority: i == 1})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("kubeadm certs check-expiration: no certificate it manages")
	}
	sortCertificates(out)
	return out, nil
}

// checkName accepts kubeadm's certificate names ("apiserver", "admin.conf"): a DNS subdomain.
func checkName(name string) error {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("certificate name %q: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}

func sortCertificates(list []bpav1.CertificateExpiry) {
	slices.SortStableFunc(list, func(a, b bpav1.CertificateExpiry) int {
		if c := a.Expires.Compare(b.Expires.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// Report is the step's output: each master's certificates, or why they could not be read.
type Report struct {
	Masters []bpav1.MasterCertificates `json:"masters"`
}

// Status is the report as the Provisioning's status shows it: each master's certificates and
// the soonest expiry among all. nil when no master could be read (the status keeps what it
// last knew).
func (r Report) Status() *bpav1.CertificatesStatus {
	st := &bpav1.CertificatesStatus{Masters: slices.Clone(r.Masters)}
	read := false
	for _, m := range r.Masters {
		for _, c := range m.Certificates {
			read = true
			if st.NextExpiry == nil || c.Expires.Before(st.NextExpiry) {
				st.NextExpiry = c.Expires.DeepCopy()
				st.NextToExpire = fmt.Sprintf("%s on %s", c.Name, m.Node)
			}
		}
	}
	if !read {
		return nil
	}
	return st
}

// maxUnreadable bounds a master's reason in the status.
const maxUnreadable = 512

// Parse reads the step's output (outside input: it comes back through Argo), checked as the
// status needs it: node labels, certificate names, bounded sizes.
func Parse(raw string) (Report, error) {
	var r Report
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return Report{}, fmt.Errorf("certificates report: %w", err)
	}
	if len(r.Masters) > 99 {
		return Report{}, fmt.Errorf("certificates report: %d masters, more than a cluster has", len(r.Masters))
	}
	seen := map[string]bool{}
	for _, m := range r.Masters {
		if msgs := validation.IsDNS1123Label(m.Node); len(msgs) > 0 || seen[m.Node] {
			return Report{}, fmt.Errorf("certificates report: node %q: not a node label, or listed twice", m.Node)
		}
		seen[m.Node] = true
		if len(m.Certificates) > maxCertificates || len(m.Unreadable) > maxUnreadable {
			return Report{}, fmt.Errorf("certificates report: node %q: too much", m.Node)
		}
		for _, c := range m.Certificates {
			if err := checkName(c.Name); err != nil {
				return Report{}, fmt.Errorf("certificates report: node %q: %w", m.Node, err)
			}
		}
	}
	return r, nil
}

// Truncate bounds a reason, cutting between characters.
func Truncate(s string) string {
	if len(s) <= maxUnreadable {
		return s
	}
	return strings.ToValidUTF8(s[:maxUnreadable-len("…")], "") + "…"
}

// Summary is the report for the step's log: each master's soonest expiry, or why it was not read.
func (r Report) Summary() string {
	var lines []string
	for _, m := range r.Masters {
		switch {
		case m.Unreadable != "":
			lines = append(lines, fmt.Sprintf("%s: not read: %s", m.Node, m.Unreadable))
		case len(m.Certificates) > 0:
			first := m.Certificates[0]
			lines = append(lines, fmt.Sprintf("%s: %d certificates, the first to expire %s on %s", m.Node, len(m.Certificates), first.Name, first.Expires.UTC().Format(time.RFC3339)))
		}
	}
	return strings.Join(lines, "\n")
}
