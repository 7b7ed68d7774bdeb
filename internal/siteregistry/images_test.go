package siteregistry

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseImageList(t *testing.T) {
	list, err := ParseImageList(strings.NewReader(`# images for the site
mirror.example:5000/library/app:1.0
mirror.example:5000/kube/pause@sha256:` + strings.Repeat("0", 64) + ` kube/pause:3.10   # pinned
oci:/srv/layout:v0.1.0 bpa/controller:v0.1.0

oci:bin/images:bpa-kubectl:v1.33.13
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []ImageCopy{
		{Source: "mirror.example:5000/library/app:1.0", Target: "library/app:1.0", Line: 2},
		{Source: "mirror.example:5000/kube/pause@sha256:" + strings.Repeat("0", 64), Target: "kube/pause:3.10", Line: 3},
		{Source: "oci:/srv/layout:v0.1.0", Target: "bpa/controller:v0.1.0", Line: 4},
		// A layout's ref.name that is a path:tag is the default target.
		{Source: "oci:bin/images:bpa-kubectl:v1.33.13", Target: "bpa-kubectl:v1.33.13", Line: 6},
	}
	if len(list) != len(want) {
		t.Fatalf("got %+v", list)
	}
	for i := range want {
		if list[i] != want[i] {
			t.Errorf("entry %d: got %+v, want %+v", i, list[i], want[i])
		}
	}
}

func TestParseImageListRefuses(t *testing.T) {
	for list, want := range map[string]string{
		"":                        "no image in it",
		"# only a comment\n":      "no image in it",
		"a:1 b:1 c:1":             "line 1: want SOURCE [TARGET], got 3 fields",
		"\nhost:5000/app":         `line 2: source "host:5000/app": name a tag or a digest`,
		"oci:/srv/layout:v1":      `line 1: target "v1": want a lowercase repository path and a tag`,
		"oci:/srv/layout":         `want oci:DIR:REF`,
		"host/app:1 ../etc:1":     `target "../etc:1"`,
		"host/app:1 app:1;rm":     `target "app:1;rm"`,
		"host/app:1 App/x:1":      `target "App/x:1"`,
		"HOST//app:1":             `source "HOST//app:1"`,
		"host/app@sha256:" + "ab": `source "host/app@sha256:ab"`,
	} {
		_, err := ParseImageList(strings.NewReader(list))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseImageList(%q) = %v, want %q", list, err, want)
		}
	}
}

// safeTarget is the distribution spec's repository path and tag, written out here so the fuzz
// target checks the parser against the grammar rather than against itself.
var safeTarget = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// Whatever the list parser accepts has a target that is a safe repository path and tag.
func FuzzParseImageList(f *testing.F) {
	for _, s := range []string{"host/app:1", "oci:dir:app:1 x/y:2", "# c\nh:1/a@sha256:" + strings.Repeat("0", 64) + " a:1", "a b c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		list, err := ParseImageList(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, c := range list {
			if !safeTarget.MatchString(c.Target) || strings.Contains(c.Target, "..") || c.Line < 1 {
				t.Fatalf("ParseImageList(%q) accepted %+v", s, c)
			}
		}
	})
}
