package artifacts

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in, repo, err string
	}{
		{in: "kubectl:1.33.1", repo: "binaries/kubectl"},
		{in: "node-exporter:v1.9.1_rc1", repo: "binaries/node-exporter"},
		{in: "a.b_c-d:V", repo: "binaries/a.b_c-d"},
		{in: "kubectl", err: "want NAME:VERSION"},
		{in: ":1.0", err: "name \"\""},
		{in: "Kubectl:1.0", err: "lowercase"},
		{in: "../etc:1.0", err: "lowercase"},
		{in: "a/b:1.0", err: "lowercase"},
		{in: "a--b:1.0", err: "single"},
		{in: "a;rm -rf:1.0", err: "lowercase"},
		{in: "kubectl:.hidden", err: "version \".hidden\""},
		{in: "kubectl:-x", err: "OCI tag"},
		{in: "kubectl:1.0:2", err: "OCI tag"},
		{in: "kubectl:$(id)", err: "OCI tag"},
		{in: strings.Repeat("a", 64) + ":1", err: "at most 63"},
		{in: "a:" + strings.Repeat("1", 129), err: "at most 128"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseRef(Binary, tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseRef(%q) = %v, %v; want an error with %q", tc.in, r, err, tc.err)
				}
				return
			}
			if err != nil || r.Repository() != tc.repo {
				t.Fatalf("ParseRef(%q) = %v, %v; want repository %s", tc.in, r, err, tc.repo)
			}
		})
	}
}

func TestValidateFileName(t *testing.T) {
	for name, ok := range map[string]bool{
		"kubectl": true, "ubuntu-24.04.img": true, "a+b_c.tar.gz": true,
		"": false, ".": false, "..": false, ".profile": false, "a/b": false, "-rf": false,
		"a b": false, "a;b": false, "a$b": false, "a\nb": false, strings.Repeat("x", 256): false,
	} {
		if err := ValidateFileName(name); (err == nil) != ok {
			t.Errorf("ValidateFileName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

func TestValidateSetPath(t *testing.T) {
	for p, ok := range map[string]bool{
		"kubeadm": true,
		"dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm":           true,
		"github.com/Mirantis/cri-dockerd/releases/download/v0.3.16/x": true,
		"multus/daemonset+thick.yml":                                  true,
		"":                                                            false,
		"/etc/passwd":                                                 false,
		"a//b":                                                        false,
		"a/../b":                                                      false,
		"../b":                                                        false,
		"a/./b":                                                       false,
		"a/.hidden":                                                   false,
		"a/":                                                          false,
		"a/b c":                                                       false,
		"a/$(id)":                                                     false,
		"a\\b":                                                        false,
		strings.Repeat("a/", 32) + "b":                                false,
		strings.Repeat("a", 256):                                      false,
	} {
		if err := ValidateSetPath(p); (err == nil) != ok {
			t.Errorf("ValidateSetPath(%q) = %v, want ok=%v", p, err, ok)
		}
	}
}

func TestKinds(t *testing.T) {
	for _, k := range Kinds {
		if back, ok := KindOfArtifactType(k.ArtifactType()); !ok || back != k {
			t.Fatalf("KindOfArtifactType(%q) = %v, %v", k.ArtifactType(), back, ok)
		}
	}
	if _, ok := KindOfArtifactType("application/vnd.akraino.bpa.image.v1"); ok {
		t.Fatal("KindOfArtifactType accepted a kind that is not one")
	}
	if r := (Ref{Kind: OSImage, Name: "ubuntu", Version: "24.04"}); r.String() != "os-images/ubuntu:24.04" {
		t.Fatalf("String() = %s", r)
	}
	if r := (Ref{Kind: FileSet, Name: "kubespray", Version: "v2.28.0"}); r.String() != "files/kubespray:v2.28.0" {
		t.Fatalf("String() = %s", r)
	}
}

// Whatever ParseRef accepts is a two-element repository path and a tag with nothing a shell,
// a path or an inventory would read specially.
var safeRef = regexp.MustCompile(`^(binaries|os-images|files)/[a-z0-9._-]+:[A-Za-z0-9_][A-Za-z0-9._-]*$`)

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"kubectl:1.0", "a:b", "../x:1", "a:b:c", "x:$(id)", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range Kinds {
			r, err := ParseRef(k, s)
			if err != nil {
				continue
			}
			if !safeRef.MatchString(r.String()) || strings.Contains(r.Name, "..") {
				t.Fatalf("ParseRef(%q) accepted %q", s, r)
			}
		}
	})
}

func TestCompareVersions(t *testing.T) {
	ordered := []string{"0.9", "1", "1.0", "1.0.1", "1.2", "1.9", "1.10", "1.10.0-rc1", "2", "v1", "v1.2", "v10"}
	for i := range ordered {
		for j := range ordered {
			got := CompareVersions(ordered[i], ordered[j])
			if (i < j && got >= 0) || (i > j && got <= 0) || (i == j && got != 0) {
				t.Errorf("CompareVersions(%q, %q) = %d", ordered[i], ordered[j], got)
			}
		}
	}
	if n, ok := Newest([]string{"1.9", "1.10", "latest-build", ".bad", "1.2"}); !ok || n != "latest-build" {
		// "latest-build" is a version too, and text sorts after digits: name tags by version.
		t.Fatalf("Newest = %q, %v", n, ok)
	}
	if n, _ := Newest([]string{"1.9", "1.10", "1.2"}); n != "1.10" {
		t.Fatalf("Newest = %q, want 1.10", n)
	}
	if _, ok := Newest(nil); ok {
		t.Fatal("Newest of nothing")
	}
}
