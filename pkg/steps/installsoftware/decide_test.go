package installsoftware_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
)

func TestPackagesFor(t *testing.T) {
	spec := &bpav1.SoftwareSpec{
		MasterSoftware: []bpav1.SoftwarePackage{{Name: "curl"}, {Name: "jq", Version: "1.6-2"}},
		WorkerSoftware: []bpav1.SoftwarePackage{{Name: "curl", Version: "7.88.1-10"}, {Name: "jq"}, {Name: "tmux"}},
	}
	cases := []struct {
		name, role, reason string
		spec               *bpav1.SoftwareSpec
		want               []bpav1.SoftwarePackage
		err                string
	}{
		{"master", "master", "the masters' list", spec, spec.MasterSoftware, ""},
		{"worker", "worker", "the workers' list", spec, spec.WorkerSoftware, ""},
		{"both", "master,worker", "both lists, a pin winning over no pin", spec,
			[]bpav1.SoftwarePackage{{Name: "curl", Version: "7.88.1-10"}, {Name: "jq", Version: "1.6-2"}, {Name: "tmux"}}, ""},
		{"two pins", "master,worker", "one package pinned to two versions on one node", &bpav1.SoftwareSpec{
			MasterSoftware: []bpav1.SoftwarePackage{{Name: "jq", Version: "1.6-2"}},
			WorkerSoftware: []bpav1.SoftwarePackage{{Name: "jq", Version: "1.7-1"}},
		}, nil, "jq is pinned to 1.6-2 for masters and 1.7-1 for workers"},
		{"shell in a name", "master", "a name that would reach the shell", &bpav1.SoftwareSpec{
			MasterSoftware: []bpav1.SoftwarePackage{{Name: "curl;reboot"}},
		}, nil, `package name "curl;reboot"`},
		{"shell in a version", "master", "a version that would reach the shell", &bpav1.SoftwareSpec{
			MasterSoftware: []bpav1.SoftwarePackage{{Name: "curl", Version: "1$(id)"}},
		}, nil, `version "1$(id)"`},
		{"bad role", "etcd", "roles are master and worker", spec, nil, `role "etcd"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := installsoftware.PackagesFor(tc.spec, bpav1.NodeRoles(tc.role))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%s: %v, want an error with %q", tc.reason, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, d)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	want := []bpav1.SoftwarePackage{{Name: "bash"}, {Name: "jq", Version: "1.6-2"}, {Name: "tmux"}, {Name: "curl", Version: "7.88.1-10"}}
	have := installsoftware.Installed{"bash": "5.2.15-2", "jq": "1.5+dfsg-1", "curl": "7.88.1-10"}
	install, unchanged := installsoftware.Decide(want, have)
	if d := cmp.Diff([]bpav1.SoftwarePackage{{Name: "jq", Version: "1.6-2"}, {Name: "tmux"}}, install); d != "" {
		t.Errorf("to install: a pinned upgrade and a missing package (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"bash=5.2.15-2", "curl=7.88.1-10"}, unchanged); d != "" {
		t.Errorf("unchanged: present unpinned, pinned and equal (-want +got):\n%s", d)
	}
	if got := installsoftware.InstallWords(installsoftware.Apt, install); !cmp.Equal(got, []string{"jq=1.6-2", "tmux"}) {
		t.Errorf("apt words %v", got)
	}
	if got := installsoftware.InstallWords(installsoftware.Dnf, install); !cmp.Equal(got, []string{"jq-1.6-2", "tmux"}) {
		t.Errorf("dnf words %v", got)
	}
}

func TestParseDpkgQuery(t *testing.T) {
	out := "bash\tii \t5.2.15-2+b2\nvim\trc \t2:9.0.1378-2\nlibc6:amd64\tii \t2.36-9\nbroken line\n\tii \t1.0\njq\tii \t\n"
	got := installsoftware.ParseDpkgQuery([]byte(out))
	want := installsoftware.Installed{"bash": "5.2.15-2+b2", "libc6": "2.36-9"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("only installed (ii) packages with a name and version, arch stripped (-want +got):\n%s", d)
	}
}

func TestParseRPMQuery(t *testing.T) {
	out := "curl\t7.76.1-26.el9\npackage tmux is not installed\nkernel\t5.14.0-1.el9\nkernel\t5.14.0-2.el9\n"
	got := installsoftware.ParseRPMQuery([]byte(out))
	want := installsoftware.Installed{"curl": "7.76.1-26.el9", "kernel": "5.14.0-2.el9"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// The parsers read what a node prints: they must never panic, and what they return must be
// names and versions without separators.
// The grammars every parsed name and version must match: what a node prints is taken in only
// when it is a package's.
var (
	names    = regexp.MustCompile(bpav1.PackageNamePattern)
	versions = regexp.MustCompile(bpav1.PackageVersionPattern)
)

// TestHostileQueryOutput: a node's crafted query output yields only well-formed packages.
func TestHostileQueryOutput(t *testing.T) {
	out := []byte("bash\tii \t5.2.15-2+b2\n" +
		"jq\tii \t1.6\x1b]0;pwned\x07\n" + // a terminal escape in the version
		"evil;reboot\tii \t1.0\n" + // a name no package has
		"big\tii \t" + strings.Repeat("9", 4096) + "\n")
	got := installsoftware.ParseDpkgQuery(out)
	if len(got) != 1 || got["bash"] != "5.2.15-2+b2" {
		t.Errorf("parsed %v; want bash only", got)
	}
	if got := installsoftware.ParseRPMQuery([]byte("curl\t7.76\x00.1\nvim\t9.0\n")); len(got) != 1 || got["vim"] != "9.0" {
		t.Errorf("parsed %v; want vim only", got)
	}
}

func FuzzParseDpkgQuery(f *testing.F) {
	f.Add([]byte("bash\tii \t5.2.15-2+b2\nvim\trc \t2:9.0\n"))
	f.Add([]byte("\t\t\n\n\tii \t"))
	f.Fuzz(func(t *testing.T, out []byte) {
		for name, v := range installsoftware.ParseDpkgQuery(out) {
			if !names.MatchString(name) || !versions.MatchString(v) || len(v) > bpav1.PackageVersionMaxLength {
				t.Fatalf("parsed %q=%q from %q: not a package name and version", name, v, out)
			}
		}
	})
}

func FuzzParseRPMQuery(f *testing.F) {
	f.Add([]byte("curl\t7.76.1-26.el9\npackage tmux is not installed\n"))
	f.Add([]byte("a\tb\tc\n\t\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		for name, v := range installsoftware.ParseRPMQuery(out) {
			if !names.MatchString(name) || !versions.MatchString(v) || len(name) > bpav1.PackageNameMaxLength {
				t.Fatalf("parsed %q=%q from %q: not a package name and version", name, v, out)
			}
		}
	})
}
