package v1alpha1

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// The grammars of what the site's artifacts are named by, declared once: the CRD markers of
// BinaryPackage (TestGrammarsMatchTheCRDs checks the generated schema against these), the Go
// validation of the API and pkg/artifacts, which names what is uploaded, all use them.
const (
	// ArtifactNamePattern is a binary's (or any artifact's) name: a lowercase repository path
	// component (OCI distribution-spec's, less the separators a shell or a path would read
	// specially), and a file name on the nodes.
	ArtifactNamePattern   = `^[a-z0-9]+([._-][a-z0-9]+)*$`
	ArtifactNameMaxLength = 63
	// ArtifactVersionPattern is an OCI tag.
	ArtifactVersionPattern   = `^[A-Za-z0-9_][A-Za-z0-9._-]*$`
	ArtifactVersionMaxLength = 128
	// FileNamePattern is one path element: no separator, no leading dot (so neither "." nor
	// ".."), and nothing a shell would read.
	FileNamePattern   = `^[A-Za-z0-9_][A-Za-z0-9._+-]*$`
	FileNameMaxLength = 255
	// DirectoryPattern is an absolute path of file names.
	DirectoryPattern   = `^(/[A-Za-z0-9_][A-Za-z0-9._+-]*)+$`
	DirectoryMaxLength = 255
)

var (
	artifactNameRE    = regexp.MustCompile(ArtifactNamePattern)
	artifactVersionRE = regexp.MustCompile(ArtifactVersionPattern)
	fileNameRE        = regexp.MustCompile(FileNamePattern)
)

// ValidateArtifactName refuses a name that is not a lowercase repository component of at most
// ArtifactNameMaxLength characters.
func ValidateArtifactName(name string) error {
	if len(name) > ArtifactNameMaxLength || !artifactNameRE.MatchString(name) {
		return fmt.Errorf("name %q: want lowercase letters and digits, separated by single '.', '_' or '-', at most %d characters", name, ArtifactNameMaxLength)
	}
	return nil
}

// ValidateArtifactVersion refuses a version that is not an OCI tag.
func ValidateArtifactVersion(version string) error {
	if len(version) > ArtifactVersionMaxLength || !artifactVersionRE.MatchString(version) {
		return fmt.Errorf("version %q: want an OCI tag: letters, digits, '_', '.', '-', not starting with '.' or '-', at most %d characters", version, ArtifactVersionMaxLength)
	}
	return nil
}

// ValidateFileName refuses a file name that could leave its folder or reach a shell.
func ValidateFileName(name string) error {
	if len(name) > FileNameMaxLength || !fileNameRE.MatchString(name) {
		return fmt.Errorf("file name %q: want one path element of letters, digits, '_', '.', '+', '-', not starting with '.', '+' or '-', at most %d characters", name, FileNameMaxLength)
	}
	return nil
}

// ValidateDirectory refuses a directory that is not a clean absolute path of file names: none
// of its elements is . or .., and none holds a character a shell would read.
func ValidateDirectory(dir string) error {
	if !path.IsAbs(dir) || path.Clean(dir) != dir || dir == "/" || len(dir) > DirectoryMaxLength {
		return fmt.Errorf("directory %q: want a clean absolute path of at most %d characters", dir, DirectoryMaxLength)
	}
	for _, e := range strings.Split(dir[1:], "/") {
		if err := ValidateFileName(e); err != nil {
			return fmt.Errorf("directory %q: %w", dir, err)
		}
	}
	return nil
}
