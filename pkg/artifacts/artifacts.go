// Package artifacts names the site's binaries, OS images and file sets in its OCI registry: which
// repository and tag an upload goes to, which artifact type and media types it carries, and
// which names are allowed. The uploader, the file server and the install step share it, so an
// artifact pushed by one is found by the others.
//
// An artifact is an OCI image manifest (image-spec v1.1) with an artifactType, the empty config
// and one layer, the file itself, whose org.opencontainers.image.title annotation is the file's
// name: the shape `oras push` gives a single file, so any OCI client can upload one. A file set
// (kubespray's offline files, KUD plugin manifests) is the same with one layer per file, each
// titled by its path in the set: the shape `oras push` gives several files.
package artifacts

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Kind is what an artifact holds.
type Kind string

const (
	// Binary is a binary package installed on nodes (a Software CR names it).
	Binary Kind = "binary"
	// OSImage is a Linux OS image that metal3 writes onto a BareMetalHost.
	OSImage Kind = "os-image"
	// FileSet is a tree of files served over HTTP under one URL: kubespray's files_repo, the
	// KUD plugins' manifests.
	FileSet Kind = "file-set"
)

// Kinds lists every kind, in the order help texts show them.
var Kinds = []Kind{Binary, OSImage, FileSet}

// ParseKind accepts a kind's name.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown artifact kind %q: want binary, os-image or file-set", s)
}

// ArtifactType is the manifest's artifactType for a kind.
func (k Kind) ArtifactType() string {
	return "application/vnd.akraino.bpa." + string(k) + ".v1"
}

// Dir is the repository folder holding every artifact of a kind: binaries/NAME,
// os-images/NAME, files/NAME.
func (k Kind) Dir() string {
	switch k {
	case OSImage:
		return "os-images"
	case FileSet:
		return "files"
	}
	return "binaries"
}

// KindOfArtifactType is the kind a manifest's artifactType names, if any.
func KindOfArtifactType(t string) (Kind, bool) {
	for _, k := range Kinds {
		if k.ArtifactType() == t {
			return k, true
		}
	}
	return "", false
}

// LayerMediaType is the media type of the file's layer: the bytes as they are.
const LayerMediaType = "application/octet-stream"

// TitleAnnotation names the file a layer holds (the annotation oras writes and reads).
const TitleAnnotation = "org.opencontainers.image.title"

// A name becomes a repository path component (OCI distribution-spec's component grammar, less
// the separators a shell or a path would read specially) and a folder on nodes.
var nameRE = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*$`)

// A version is an OCI tag.
var versionRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// A repository is a path of lowercase components (OCI distribution-spec's name grammar).
var repositoryRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$`)

// ValidateRepository refuses a repository path that is not an OCI repository name of at most
// 255 characters.
func ValidateRepository(repository string) error {
	if len(repository) > 255 || !repositoryRE.MatchString(repository) {
		return fmt.Errorf("repository %q: want a lowercase repository path (OCI distribution-spec), at most 255 characters", repository)
	}
	return nil
}

// A file name is one path element: no separator, no leading dot (so neither "." nor ".."), and
// nothing a shell would read.
var fileNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._+-]{0,254}$`)

// ValidateName refuses a name that is not a lowercase repository component of at most 63
// characters.
func ValidateName(name string) error {
	if len(name) > 63 || !nameRE.MatchString(name) {
		return fmt.Errorf("name %q: want lowercase letters and digits, separated by single '.', '_' or '-', at most 63 characters", name)
	}
	return nil
}

// ValidateVersion refuses a version that is not an OCI tag.
func ValidateVersion(version string) error {
	if !versionRE.MatchString(version) {
		return fmt.Errorf("version %q: want an OCI tag: letters, digits, '_', '.', '-', not starting with '.' or '-', at most 128 characters", version)
	}
	return nil
}

// ValidateFileName refuses a file name that could leave its folder or reach a shell.
func ValidateFileName(name string) error {
	if !fileNameRE.MatchString(name) {
		return fmt.Errorf("file name %q: want one path element of letters, digits, '_', '.', '+', '-', not starting with '.', '+' or '-', at most 255 characters", name)
	}
	return nil
}

// ValidateDirectory refuses a directory that is not a clean absolute path of file names: none
// of its elements is . or .., and none holds a character a shell would read.
func ValidateDirectory(dir string) error {
	if !path.IsAbs(dir) || path.Clean(dir) != dir || dir == "/" || len(dir) > 255 {
		return fmt.Errorf("directory %q: want a clean absolute path of at most 255 characters", dir)
	}
	for _, e := range strings.Split(dir[1:], "/") {
		if err := ValidateFileName(e); err != nil {
			return fmt.Errorf("directory %q: %w", dir, err)
		}
	}
	return nil
}

// Bounds of a path in a file set: deep enough for kubespray's download paths, short enough for
// any file system.
const (
	maxSetPathLen      = 1024
	maxSetPathElements = 32
)

// ValidateSetPath refuses a path in a file set that is not relative, clean, and made of file
// names: nothing in it can leave the set's folder or reach a shell.
func ValidateSetPath(p string) error {
	elems := strings.Split(p, "/")
	if p == "" || len(p) > maxSetPathLen || len(elems) > maxSetPathElements {
		return fmt.Errorf("path %q in a file set: want a relative path of at most %d elements and %d characters", p, maxSetPathElements, maxSetPathLen)
	}
	for _, e := range elems {
		if err := ValidateFileName(e); err != nil {
			return fmt.Errorf("path %q in a file set: %w", p, err)
		}
	}
	return nil
}

// Ref is one artifact: a kind, a name and a version.
type Ref struct {
	Kind    Kind
	Name    string
	Version string
}

// ParseRef reads NAME:VERSION for a kind.
func ParseRef(kind Kind, s string) (Ref, error) {
	name, version, ok := strings.Cut(s, ":")
	if !ok {
		return Ref{}, fmt.Errorf("%s %q: want NAME:VERSION", kind, s)
	}
	r := Ref{Kind: kind, Name: name, Version: version}
	if err := r.Validate(); err != nil {
		return Ref{}, fmt.Errorf("%s %q: %w", kind, s, err)
	}
	return r, nil
}

// Validate checks the name and the version.
func (r Ref) Validate() error {
	if err := ValidateName(r.Name); err != nil {
		return err
	}
	return ValidateVersion(r.Version)
}

// Repository is the artifact's repository under the site registry's prefix.
func (r Ref) Repository() string { return r.Kind.Dir() + "/" + r.Name }

// String is REPOSITORY:VERSION.
func (r Ref) String() string { return r.Repository() + ":" + r.Version }

// CompareVersions orders versions as `sort -V` does for the usual cases: runs of digits compare
// as numbers, other runs as text, so 1.10 comes after 1.9 and v2 after v1.
func CompareVersions(a, b string) int {
	for a != "" && b != "" {
		ra, restA := versionRun(a)
		rb, restB := versionRun(b)
		if c := compareRun(ra, rb); c != 0 {
			return c
		}
		a, b = restA, restB
	}
	return len(a) - len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func versionRun(s string) (run, rest string) {
	i := 1
	for i < len(s) && isDigit(s[i]) == isDigit(s[0]) {
		i++
	}
	return s[:i], s[i:]
}

func compareRun(a, b string) int {
	if isDigit(a[0]) && isDigit(b[0]) {
		a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if len(a) != len(b) {
			return len(a) - len(b)
		}
	}
	return strings.Compare(a, b)
}

// Newest is the highest of the tags that are versions (CompareVersions), if any.
func Newest(tags []string) (string, bool) {
	newest := ""
	for _, t := range tags {
		if ValidateVersion(t) != nil {
			continue
		}
		if newest == "" || CompareVersions(t, newest) > 0 {
			newest = t
		}
	}
	return newest, newest != ""
}

// HumanBytes prints a size in binary units, as upload bounds and progress are read.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
