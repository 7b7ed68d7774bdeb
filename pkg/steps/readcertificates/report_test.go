package readcertificates_test

import (
	"os"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/readcertificates"
)

// kubeadmSample is what kubeadm v1.34.3's check-expiration printed for certificates its own
// `init phase certs all` made, the kubeconfig files not written yet (missing).
func kubeadmSample(t testing.TB) []byte {
	raw, err := os.ReadFile("testdata/check-expiration-v1.34.3.json")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func at(s string) metav1.Time {
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return metav1.NewTime(ts)
}

// TestParseKubeadm: the certificates kubeadm manages, soonest first, the authorities marked; the
// missing ones (kubeconfig files not written) left out.
func TestParseKubeadm(t *testing.T) {
	got, err := readcertificates.ParseKubeadm(kubeadmSample(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
	}
	want := []string{"apiserver", "apiserver-etcd-client", "apiserver-kubelet-client", "etcd-healthcheck-client", "etcd-peer", "etcd-server", "front-proxy-client", "ca", "etcd-ca", "front-proxy-ca"}
	if d := gocmp.Diff(want, names); d != "" {
		t.Errorf("certificates (-want +got):\n%s", d)
	}
	if !got[len(got)-1].Authority || got[0].Authority {
		t.Errorf("authorities not marked: %+v", got)
	}
	if got[0].Expires.Sub(got[len(got)-1].Expires.Time) > -9*365*24*time.Hour {
		t.Errorf("a leaf certificate (%s) and the CA (%s): kubeadm gives a year against ten", got[0].Expires, got[len(got)-1].Expires)
	}
	for _, raw := range []string{``, `{}`, `{"kind":"Other"}`, `{"kind":"CertificateExpirationInfo","certificates":[]}`,
		`{"kind":"CertificateExpirationInfo","certificates":[{"name":"a;b","expirationDate":"2027-01-01T00:00:00Z"}]}`} {
		if _, err := readcertificates.ParseKubeadm([]byte(raw)); err == nil {
			t.Errorf("ParseKubeadm(%q) accepted", raw)
		}
	}
}

// TestStatus: the soonest expiry across the masters names its certificate and master; a master
// not read is kept with its reason; nothing read at all keeps the status as it was (nil).
func TestStatus(t *testing.T) {
	r := readcertificates.Report{Masters: []bpav1.MasterCertificates{
		{Node: "m1", Certificates: []bpav1.CertificateExpiry{{Name: "apiserver", Expires: at("2027-03-01T00:00:00Z")}, {Name: "ca", Expires: at("2035-01-01T00:00:00Z"), Authority: true}}},
		{Node: "m2", Certificates: []bpav1.CertificateExpiry{{Name: "front-proxy-client", Expires: at("2027-02-01T00:00:00Z")}}},
		{Node: "m3", Unreadable: "10.0.0.13:22 did not answer"},
	}}
	st := r.Status()
	if st == nil || !st.NextExpiry.Equal(&metav1.Time{Time: at("2027-02-01T00:00:00Z").Time}) || st.NextToExpire != "front-proxy-client on m2" || len(st.Masters) != 3 {
		t.Errorf("status = %+v", st)
	}
	if got := r.Summary(); !strings.Contains(got, "m2: 1 certificates, the first to expire front-proxy-client on 2027-02-01T00:00:00Z") || !strings.Contains(got, "m3: not read: 10.0.0.13:22 did not answer") {
		t.Errorf("summary %q", got)
	}
	if st := (readcertificates.Report{Masters: []bpav1.MasterCertificates{{Node: "m1", Unreadable: "no"}}}).Status(); st != nil {
		t.Errorf("nothing read: status %+v, want nil", st)
	}
}

// FuzzParse: the report comes back through Argo; whatever it is, Parse accepts only what the
// status can hold, and never panics.
func FuzzParse(f *testing.F) {
	f.Add(`{"masters":[{"node":"m1","certificates":[{"name":"apiserver","expires":"2027-03-01T00:00:00Z"}]},{"node":"m2","unreadable":"x"}]}`)
	f.Add(`{"masters":[{"node":"M1"}]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := readcertificates.Parse(raw)
		if err != nil {
			return
		}
		for _, m := range r.Masters {
			if m.Node == "" || len(m.Unreadable) > 512 {
				t.Errorf("accepted %+v", m)
			}
		}
		_ = r.Status()
	})
}

// FuzzParseKubeadm: kubeadm's output is outside input.
func FuzzParseKubeadm(f *testing.F) {
	f.Add(kubeadmSample(f))
	f.Fuzz(func(t *testing.T, raw []byte) {
		certs, err := readcertificates.ParseKubeadm(raw)
		if err != nil {
			return
		}
		if len(certs) == 0 || len(certs) > 64 {
			t.Errorf("%d certificates accepted", len(certs))
		}
	})
}
