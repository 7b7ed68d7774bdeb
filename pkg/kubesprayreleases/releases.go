// Package kubesprayreleases is what each kubespray release this controller knows can install:
// the Kubernetes versions in its own checksum tables (kubelet, kubeadm and kubectl for amd64),
// and its default, the newest (kubespray's kube_version is the first of kubelet's). The table
// is generated from the releases' sources (go test -run TestTableMatchesKubespray -update, with
// ../shared/third_party beside the checkout) and checked against them by that test. It also
// says which changes of a cluster's version kubespray's upgrade-cluster.yml can make.
package kubesprayreleases

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Release is one kubespray release.
type Release struct {
	// Version of kubespray, "v2.30.0".
	Version string `json:"version"`
	// DefaultKubernetes is the Kubernetes version it installs when none is named.
	DefaultKubernetes string `json:"defaultKubernetes"`
	// Kubernetes are the versions it can install, newest first.
	Kubernetes []string `json:"kubernetes"`
}

//go:embed releases.json
var table []byte

// releases is the table, parsed once.
var releases = func() []Release {
	var out []Release
	if err := json.Unmarshal(table, &out); err != nil {
		panic(fmt.Sprintf("kubesprayreleases: releases.json: %v", err)) // generated and tested
	}
	return out
}()

// All is every release of the table, oldest first.
func All() []Release { return slices.Clone(releases) }

// Lookup is the release of that version ("v2.30.0").
func Lookup(version string) (Release, bool) {
	i := slices.IndexFunc(releases, func(r Release) bool { return r.Version == version })
	if i < 0 {
		return Release{}, false
	}
	return releases[i], true
}

// imageTag is a kubespray image's release tag: name:vX.Y.Z, perhaps pinned by digest too.
var imageTag = regexp.MustCompile(`:(v[0-9]+\.[0-9]+\.[0-9]+)(@sha256:[a-f0-9]{64})?$`)

// OfImage is the release a kubespray image runs, read from its tag, and whether the table
// knows it.
func OfImage(image string) (Release, bool) {
	m := imageTag.FindStringSubmatch(image)
	if m == nil {
		return Release{}, false
	}
	return Lookup(m[1])
}

// Supports says whether the release can install that Kubernetes version.
func (r Release) Supports(kubernetes string) bool { return slices.Contains(r.Kubernetes, kubernetes) }

// Known lists the table's release versions, for messages.
func Known() string {
	var out []string
	for _, r := range releases {
		out = append(out, r.Version)
	}
	return strings.Join(out, ", ")
}

// Version is a Kubernetes version, major.minor.patch.
type Version struct{ Major, Minor, Patch int }

var versionPattern = regexp.MustCompile(`^v?([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$`)

// ParseVersion reads "1.34.3" (or "v1.34.3"). Only the one spelling is a version: kubespray
// looks kube_version up in its checksum tables as written, so "1.034.3" would read here as
// 1.34.3 and there as nothing.
func ParseVersion(s string) (Version, error) {
	m := versionPattern.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("%q is not a Kubernetes version such as 1.34.3", s)
	}
	var v Version
	for i, p := range []*int{&v.Major, &v.Minor, &v.Patch} {
		*p, _ = strconv.Atoi(m[i+1]) // at most three digits
	}
	if strings.TrimPrefix(s, "v") != v.String() {
		return Version{}, fmt.Errorf("%q has a leading zero: write %s", s, v)
	}
	return v, nil
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare orders versions: negative when v is older than w.
func (v Version) Compare(w Version) int {
	for _, d := range []int{v.Major - w.Major, v.Minor - w.Minor, v.Patch - w.Patch} {
		if d != 0 {
			return d
		}
	}
	return 0
}

// UpgradeTargets are the versions a cluster at from can go to with this release: those it
// supports, newer than from, at most one minor version on (Kubernetes' version skew policy,
// which kubeadm enforces), newest first.
func (r Release) UpgradeTargets(from Version) []string {
	var out []string
	for _, k := range r.Kubernetes {
		to, err := ParseVersion(k)
		if err == nil && to.Major == from.Major && to.Compare(from) > 0 && to.Minor <= from.Minor+1 {
			out = append(out, k)
		}
	}
	return out
}

// CheckUpgrade says why a cluster at from cannot go to to with this release, or nil when
// upgrade-cluster.yml can take it there.
func (r Release) CheckUpgrade(from, to string) error {
	f, err := ParseVersion(from)
	if err != nil {
		return err
	}
	t, err := ParseVersion(to)
	if err != nil {
		return err
	}
	targets := r.UpgradeTargets(f)
	allowed := "none: no newer version within one minor version"
	if len(targets) > 0 {
		allowed = Release{Kubernetes: targets}.Ranges()
	}
	switch {
	case t.Compare(f) < 0:
		return fmt.Errorf("%s is older than the cluster's %s: Kubernetes does not go down (kubespray %s can upgrade it to %s)", to, from, r.Version, allowed)
	case t.Major != f.Major || t.Minor > f.Minor+1:
		return fmt.Errorf("%s skips a minor version from the cluster's %s: upgrade one minor version at a time (kubespray %s can upgrade it to %s)", to, from, r.Version, allowed)
	case !r.Supports(t.String()):
		return fmt.Errorf("kubespray %s cannot install Kubernetes %s (it can upgrade the cluster's %s to %s)", r.Version, to, from, allowed)
	}
	return nil
}

// Ranges says which versions the release installs, minor by minor, newest first:
// "1.34.0–1.34.3, 1.33.0–1.33.7".
func (r Release) Ranges() string {
	var out []string
	for i := 0; i < len(r.Kubernetes); {
		newest, _ := ParseVersion(r.Kubernetes[i])
		j := i
		for j+1 < len(r.Kubernetes) {
			next, _ := ParseVersion(r.Kubernetes[j+1])
			if next.Major != newest.Major || next.Minor != newest.Minor {
				break
			}
			j++
		}
		if i == j {
			out = append(out, r.Kubernetes[i])
		} else {
			out = append(out, r.Kubernetes[j]+"–"+r.Kubernetes[i])
		}
		i = j + 1
	}
	return strings.Join(out, ", ")
}
