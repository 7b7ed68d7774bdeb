// Package offline is offline mode: what a site without internet access tells kubespray,
// containerd and the KUD plugins so that they take everything from the site's mirror instead.
//
// The mirror is the product's file server (bpa-workflow-controller serve-files) as the nodes
// reach it: its /files/NAME/VERSION/ serves the site registry's file sets (kubespray's
// files_repo, the KUD plugins' manifests), and its /v2/ the registry's images, read-only and
// without the account that can push. Everything here is pure: the compiler and the
// render-inventory step call it with the controller's options.
package offline

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

// Mirror is where an offline site's nodes and pods get their files and images.
type Mirror struct {
	// URL is the file server's base URL as the nodes reach it: http(s)://HOST[:PORT].
	URL string
	// KubesprayFiles is the file set serving kubespray's files_repo.
	KubesprayFiles artifacts.Ref
	// KUDManifests is the file set holding each KUD plugin's manifest as PLUGIN.yaml; empty:
	// none uploaded, and a Provisioning naming plugins cannot be compiled offline.
	KUDManifests artifacts.Ref
}

// ParseURL checks a mirror URL: http or https, a host, an optional port, nothing else.
func ParseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("offline mirror %q: want http(s)://HOST[:PORT], the file server as the nodes reach it", s)
	}
	if strings.ContainsAny(u.Host, "{}%'\" ") {
		return nil, fmt.Errorf("offline mirror %q: the host holds characters Ansible or a shell would read", s)
	}
	return u, nil
}

// ParseFileSet reads NAME:VERSION of a file set.
func ParseFileSet(s string) (artifacts.Ref, error) {
	return artifacts.ParseRef(artifacts.FileSet, s)
}

// Endpoints are a mirror URL's base (SCHEME://HOST[:PORT]) and its registry host as image
// references name it (HOST[:PORT]: the port a plain-HTTP mirror implies is written out, as an
// image reference without one means HTTPS's).
func Endpoints(mirrorURL string) (base, registry string, err error) {
	u, err := ParseURL(mirrorURL)
	if err != nil {
		return "", "", err
	}
	registry = u.Host
	if u.Port() == "" && u.Scheme == "http" {
		registry = net.JoinHostPort(u.Hostname(), "80")
	}
	return u.Scheme + "://" + u.Host, registry, nil
}

// Validate checks the URL and the file sets.
func (m Mirror) Validate() error {
	if _, err := ParseURL(m.URL); err != nil {
		return err
	}
	if err := m.KubesprayFiles.Validate(); err != nil || m.KubesprayFiles.Kind != artifacts.FileSet {
		return fmt.Errorf("offline mirror: kubespray's files %q: want a file set NAME:VERSION", m.KubesprayFiles.Name+":"+m.KubesprayFiles.Version)
	}
	if m.KUDManifests != (artifacts.Ref{}) && (m.KUDManifests.Validate() != nil || m.KUDManifests.Kind != artifacts.FileSet) {
		return fmt.Errorf("offline mirror: KUD manifests %q: want a file set NAME:VERSION", m.KUDManifests.Name+":"+m.KUDManifests.Version)
	}
	return nil
}

// FileSetURL is the URL a file set is served under.
func (m Mirror) FileSetURL(set artifacts.Ref) string {
	return strings.TrimSuffix(m.URL, "/") + "/" + set.Kind.Dir() + "/" + set.Name + "/" + set.Version
}

// PluginManifest is the URL of a KUD plugin's manifest on the mirror.
func (m Mirror) PluginManifest(plugin string) (string, error) {
	if m.KUDManifests == (artifacts.Ref{}) {
		return "", fmt.Errorf("offline mode takes the KUD plugins' manifests from the site registry, and this controller names no set of them (--offline-kud-manifests NAME:VERSION)")
	}
	return m.FileSetURL(m.KUDManifests) + "/" + plugin + ".yaml", nil
}

// Kubespray's download base URLs, by variable, and the folder of the files_repo set each one
// points at. The folders are the upstream download sites' names, which is how kubespray's
// contrib/offline/manage-offline-files.sh lays out what it downloads, so its output uploads as
// it is (upload file-set kubespray:VERSION offline-files/). These are download sites, not
// container registries: images go through registry_host.
var downloadBases = [][2]string{
	{"dl_k8s_io_url", "dl.k8s.io"},
	{"github_url", "github.com"},
	{"storage_googleapis_url", "storage.googleapis.com"},
	{"get_helm_url", "get.helm.sh"},
}

// imageRepoVars are kubespray's image repository variables, each an upstream registry's;
// offline, all of them are the mirror, which serves every image under its path without the
// upstream host (the TARGET `upload images` gives by default).
var imageRepoVars = []string{"kube_image_repo", "gcr_image_repo", "github_image_repo", "docker_image_repo", "quay_image_repo"}

// KubesprayVars are the extra variables of an offline kubespray run: files from the mirror's
// files_repo, images from its registry view, and containerd told to pull every registry's
// images through the mirror (the _default host configuration, which applies to any registry
// without one of its own), so the new cluster's own pods pull from it too.
//
// Each is a variable kubespray's roles read: the end-to-end suite's TestKubesprayImage evaluates
// kubespray's own download role with them (every file and image from the mirror). The mirror's
// own host has a hosts.toml of its
// own, naming its scheme: that is how containerd, and nerdctl (kubespray's image pulls) which
// reads the same /etc/containerd/certs.d, reach a plain-HTTP mirror; neither needs a flag.
func (m Mirror) KubesprayVars() (map[string]any, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	base, registry, _ := Endpoints(m.URL)
	filesRepo := m.FileSetURL(m.KubesprayFiles)
	mirror := func(prefix string) map[string]any {
		return map[string]any{
			"prefix": prefix,
			"server": base,
			"mirrors": []any{map[string]any{
				"host":         base,
				"capabilities": []any{"pull", "resolve"},
				"skip_verify":  false,
			}},
		}
	}
	vars := map[string]any{
		"registry_host":                 registry,
		"files_repo":                    filesRepo,
		"containerd_registries_mirrors": []any{mirror(registry), mirror("_default")},
	}
	for _, v := range imageRepoVars {
		vars[v] = registry
	}
	for _, b := range downloadBases {
		vars[b[0]] = filesRepo + "/" + b[1]
	}
	return vars, nil
}

// VarNames are the variables KubesprayVars sets, sorted: a Provisioning's own extraVars may not
// set them in offline mode.
func VarNames() []string {
	names := []string{"registry_host", "files_repo", "containerd_registries_mirrors"}
	names = append(names, imageRepoVars...)
	for _, b := range downloadBases {
		names = append(names, b[0])
	}
	slices.Sort(names)
	return names
}
