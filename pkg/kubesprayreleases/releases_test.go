package kubesprayreleases

import (
	"strings"
	"testing"
)

func TestOfImage(t *testing.T) {
	for _, tc := range []struct {
		image, want string
	}{
		{"quay.io/kubespray/kubespray:v2.30.0", "v2.30.0"},
		{"registry.site:5000/kubespray:v2.31.0@sha256:" + strings.Repeat("a", 64), "v2.31.0"},
		{"quay.io/kubespray/kubespray:v2.29.0", ""}, // not in the table
		{"quay.io/kubespray/kubespray:latest", ""},
		{"quay.io/kubespray/kubespray@sha256:" + strings.Repeat("a", 64), ""},
		{"kubespray:v2.30.0-custom", ""},
	} {
		r, ok := OfImage(tc.image)
		if ok != (tc.want != "") || r.Version != tc.want {
			t.Errorf("OfImage(%q) = %q %v, want %q", tc.image, r.Version, ok, tc.want)
		}
	}
}

func TestReleaseTable(t *testing.T) {
	r, ok := Lookup("v2.30.0")
	if !ok || r.DefaultKubernetes != "1.34.3" || !r.Supports("1.33.7") || r.Supports("1.35.0") || r.Supports("1.31.9") {
		t.Errorf("v2.30.0: %+v %v", r, ok)
	}
	if all := All(); len(all) < 2 || all[0].Version != "v2.30.0" {
		t.Errorf("All() = %v", all)
	}
}

func TestCheckUpgrade(t *testing.T) {
	r, _ := Lookup("v2.30.0")
	for _, tc := range []struct {
		from, to, want string
	}{
		{"1.33.7", "1.34.3", ""},
		{"1.33.0", "1.33.7", ""},
		{"1.32.11", "1.33.7", ""},
		{"1.31.4", "1.32.11", ""}, // from a version the release does not install: kubeadm upgrades it
		{"1.32.11", "1.34.3", "skips a minor version from the cluster's 1.32.11: upgrade one minor version at a time (kubespray v2.30.0 can upgrade it to 1.33.0–1.33.7)"},
		{"1.34.3", "1.33.7", "1.33.7 is older than the cluster's 1.34.3: Kubernetes does not go down (kubespray v2.30.0 can upgrade it to none"},
		{"1.34.0", "1.35.0", "kubespray v2.30.0 cannot install Kubernetes 1.35.0 (it can upgrade the cluster's 1.34.0 to 1.34.1–1.34.3)"},
		{"1.33.7", "1.34.9", "cannot install Kubernetes 1.34.9"},
		{"1.33.7", "2.0.0", "skips a minor version"},
		{"1.33.7", "1.34", `"1.34" is not a Kubernetes version such as 1.34.3`},
		{"1.33.7", "1.34.3; rm -rf /", "is not a Kubernetes version"},
	} {
		err := r.CheckUpgrade(tc.from, tc.to)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckUpgrade(%s → %s) = %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "1.34.3", want: "1.34.3"},
		{in: "v1.34.3", want: "1.34.3"},
		{in: "1.34.0", want: "1.34.0"},
		{in: "1.34", err: `"1.34" is not a Kubernetes version such as 1.34.3`},
		{in: "1.34.3-rc.1", err: `"1.34.3-rc.1" is not a Kubernetes version such as 1.34.3`},
		{in: "", err: `"" is not a Kubernetes version such as 1.34.3`},
		{in: "1.034.3", err: `"1.034.3" has a leading zero: write 1.34.3`},
		{in: "v01.34.3", err: `"v01.34.3" has a leading zero: write 1.34.3`},
		{in: "1.34.03", err: `"1.34.03" has a leading zero: write 1.34.3`},
	} {
		v, err := ParseVersion(tc.in)
		got, gotErr := v.String(), ""
		if err != nil {
			got, gotErr = "", err.Error()
		}
		if got != tc.want || gotErr != tc.err {
			t.Errorf("ParseVersion(%q) = %q, %q; want %q, %q", tc.in, got, gotErr, tc.want, tc.err)
		}
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.34.3", "v1.2.3", "1.2", "x", "1.034.3", "01.34.3", "1.34.00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		// What parses is the one spelling of its version (with or without a v), prints as
		// digits and dots alone, and parses back to itself.
		again, err := ParseVersion(v.String())
		if err != nil || again != v || strings.TrimPrefix(s, "v") != v.String() || strings.Trim(v.String(), "0123456789.") != "" {
			t.Fatalf("%q → %v → %v %v", s, v, again, err)
		}
	})
}

func TestRanges(t *testing.T) {
	r := Release{Kubernetes: []string{"1.34.3", "1.34.2", "1.33.7", "1.32.0"}}
	if got, want := r.Ranges(), "1.34.2–1.34.3, 1.33.7, 1.32.0"; got != want {
		t.Errorf("Ranges() = %q, want %q", got, want)
	}
}
