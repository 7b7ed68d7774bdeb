package installsoftware

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// Package managers a node may have.
const (
	Apt = "apt"
	Dnf = "dnf"
)

// Installed maps the name of each installed package to its version.
type Installed map[string]string

var (
	packageName = regexp.MustCompile(bpav1.PackageNamePattern)
	version     = regexp.MustCompile(bpav1.PackageVersionPattern)
)

// PackagesFor is the package list of a role: the masters', the workers', or both for a node
// with both roles. The same package pinned to two versions for one node is an error; pinned
// and unpinned, the pin wins. Names and versions are checked against the Debian/RPM grammar
// again here: they reach a shell on the node.
func PackagesFor(spec *bpav1.SoftwareSpec, role bpav1.NodeRoles) ([]bpav1.SoftwarePackage, error) {
	var out []bpav1.SoftwarePackage
	index := map[string]int{}
	for _, r := range role.List() {
		var list []bpav1.SoftwarePackage
		switch r {
		case bpav1.RoleMaster:
			list = spec.MasterSoftware
		case bpav1.RoleWorker:
			list = spec.WorkerSoftware
		default:
			return nil, fmt.Errorf("role %q: want master, worker or master,worker", role)
		}
		for _, p := range list {
			if !packageName.MatchString(p.Name) {
				return nil, fmt.Errorf("package name %q is not a Debian or RPM package name", p.Name)
			}
			if p.Version != "" && !version.MatchString(p.Version) {
				return nil, fmt.Errorf("package %s: version %q is not a Debian or RPM version", p.Name, p.Version)
			}
			i, seen := index[p.Name]
			switch {
			case !seen:
				index[p.Name] = len(out)
				out = append(out, p)
			case out[i].Version == "":
				out[i].Version = p.Version
			case p.Version != "" && p.Version != out[i].Version:
				return nil, fmt.Errorf("package %s is pinned to %s for masters and %s for workers; node of role %s cannot have both", p.Name, out[i].Version, p.Version, role)
			}
		}
	}
	return out, nil
}

// Decide splits the wanted packages into those to install or upgrade (missing, or pinned to
// another version than installed) and those already as asked.
func Decide(want []bpav1.SoftwarePackage, have Installed) (install []bpav1.SoftwarePackage, unchanged []string) {
	for _, p := range want {
		v, ok := have[p.Name]
		if ok && (p.Version == "" || p.Version == v) {
			unchanged = append(unchanged, p.Name+"="+v)
			continue
		}
		install = append(install, p)
	}
	return install, unchanged
}

// InstallWords are the package arguments of an install: name=version for apt, name-version
// for dnf, the bare name when unpinned.
func InstallWords(pm string, pkgs []bpav1.SoftwarePackage) []string {
	words := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		switch {
		case p.Version == "":
			words = append(words, p.Name)
		case pm == Dnf:
			words = append(words, p.Name+"-"+p.Version)
		default:
			words = append(words, p.Name+"="+p.Version)
		}
	}
	return words
}

// DpkgFormat is the dpkg-query format ParseDpkgQuery reads: name, status abbreviation, version.
const DpkgFormat = `${Package}\t${db:Status-Abbrev}\t${Version}\n`

// RPMFormat is the rpm query format ParseRPMQuery reads: name, version-release.
const RPMFormat = `%{NAME}\t%{VERSION}-%{RELEASE}\n`

// ParseDpkgQuery reads `dpkg-query -W -f DpkgFormat` output: only packages whose status is
// installed ("ii") count; other lines (config files left, half-installed) do not.
func ParseDpkgQuery(out []byte) Installed {
	have := Installed{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 3 || strings.TrimSpace(fields[1]) != "ii" || fields[0] == "" || fields[2] == "" {
			continue
		}
		name, _, _ := strings.Cut(fields[0], ":") // name:arch for multi-arch packages
		if wellFormed(name, fields[2]) {
			have[name] = fields[2]
		}
	}
	return have
}

// wellFormed reports whether a name and version a node printed are a package's: anything else
// (a node's terminal escapes, a flood of text) is not taken in, so it never reaches a report.
func wellFormed(name, ver string) bool {
	return len(name) <= bpav1.PackageNameMaxLength && len(ver) <= bpav1.PackageVersionMaxLength &&
		packageName.MatchString(name) && version.MatchString(ver)
}

// ParseRPMQuery reads `rpm -q --qf RPMFormat` output; "package X is not installed" lines
// have no tab and are skipped. With several versions of one package installed, the last wins.
func ParseRPMQuery(out []byte) Installed {
	have := Installed{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, ver, ok := strings.Cut(sc.Text(), "\t")
		if !ok || !wellFormed(name, ver) {
			continue
		}
		have[name] = ver
	}
	return have
}

// Names lists package names, sorted.
func Names(pkgs []bpav1.SoftwarePackage) []string {
	names := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}
