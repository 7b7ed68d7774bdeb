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
	"regexp"
	"strings"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
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

// The grammars of names, versions, file names and directories are the API's
// (bpav1.ArtifactNamePattern and its kin): declared once, there.
var (
	// ValidateName refuses a name that is not a lowercase repository component.
	ValidateName = bpav1.ValidateArtifactName
	// ValidateVersion refuses a version that is not an OCI tag.
	ValidateVersion = bpav1.ValidateArtifactVersion
	// ValidateFileName refuses a file name that could leave its folder or reach a shell.
	ValidateFileName = bpav1.ValidateFileName
	// ValidateDirectory refuses a directory that is not a clean absolute path of file names.
	ValidateDirectory = bpav1.ValidateDirectory
)

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
