// Package kubespraydownloads is what kubespray downloads for a run: the files and images its
// own download role takes, as kubespray itself evaluates them (Playbook, run from the kubespray
// image with the run's inventory and extra variables, contacting no node), read back here. It
// is how the tests know what an offline site's mirror must hold and check that offline mode's
// variables send every download to the mirror.
package kubespraydownloads

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Playbook writes every node's downloads to {{ bpa_downloads_dir }}/File (Parse reads it).
// It is run as run-kubespray runs kubespray, from kubespray's working directory.
//
//go:embed downloads.yml
var Playbook []byte

// DirVar is the extra variable naming the folder Playbook writes File into.
const (
	DirVar = "bpa_downloads_dir"
	File   = "downloads.json"
)

// Download is one file or image kubespray fetches.
type Download struct {
	// Name is the download's key in kubespray's downloads (kubeadm, cni, coredns...), or
	// kubeadm_COMPONENT for the control plane's images.
	Name string `json:"name"`
	// URL of a file, and the Checksum kubespray checks it against ("sha256:HEX"; empty when
	// kubespray checks none).
	URL      string `json:"url,omitempty"`
	Checksum string `json:"checksum,omitempty"`
	// Image is an image reference, REPOSITORY:TAG.
	Image string `json:"image,omitempty"`
}

// IsImage says whether the download is an image.
func (d Download) IsImage() bool { return d.Image != "" }

func (d Download) String() string {
	if d.IsImage() {
		return d.Name + " (image " + d.Image + ")"
	}
	return d.Name + " (" + d.URL + ")"
}

var (
	nameRe     = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	checksumRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	imageRe    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/\[\]-]*:[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
)

// Parse reads the list as Playbook wrote it, node → downloads: every entry a named file (an
// http(s) URL, an optional sha256 checksum) or image (REPOSITORY:TAG), nothing else.
func Parse(raw []byte) (map[string][]Download, error) {
	var byNode map[string][]Download
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&byNode); err != nil {
		return nil, fmt.Errorf("kubespray's download list: %w", err)
	}
	if len(byNode) == 0 {
		return nil, fmt.Errorf("kubespray's download list names no node")
	}
	for _, node := range slices.Sorted(maps.Keys(byNode)) {
		if !nameRe.MatchString(node) {
			return nil, fmt.Errorf("kubespray's download list: node %q: want letters, digits, _ . -", node)
		}
		for i, d := range byNode[node] {
			if err := d.validate(); err != nil {
				return nil, fmt.Errorf("kubespray's download list, node %s, entry %d: %w", node, i, err)
			}
		}
	}
	return byNode, nil
}

// All is every node's downloads together (Merge).
func All(byNode map[string][]Download) []Download {
	var lists [][]Download
	for _, node := range slices.Sorted(maps.Keys(byNode)) {
		lists = append(lists, byNode[node])
	}
	return Merge(lists...)
}

func (d Download) validate() error {
	if !nameRe.MatchString(d.Name) {
		return fmt.Errorf("name %q: want letters, digits, _ . -", d.Name)
	}
	if d.IsImage() {
		if d.URL != "" || d.Checksum != "" {
			return fmt.Errorf("%s: an image has no url or checksum", d.Name)
		}
		if !imageRe.MatchString(d.Image) {
			return fmt.Errorf("%s: image %q: want REPOSITORY:TAG", d.Name, d.Image)
		}
		return nil
	}
	u, err := url.Parse(d.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: url %q: want an http(s) URL", d.Name, d.URL)
	}
	if d.Checksum != "" && !checksumRe.MatchString(d.Checksum) {
		return fmt.Errorf("%s: checksum %q: want sha256:HEX", d.Name, d.Checksum)
	}
	return nil
}

// Merge is every node's downloads together, each once, sorted by name; the same name with two
// different sources (one node's architecture differing, say) is kept twice.
func Merge(lists ...[]Download) []Download {
	var all []Download
	for _, l := range lists {
		for _, d := range l {
			if !slices.Contains(all, d) {
				all = append(all, d)
			}
		}
	}
	slices.SortFunc(all, func(a, b Download) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.URL+a.Image, b.URL+b.Image)
	})
	return all
}

// Outside are the downloads that do not come from the mirror: a file not under filesRepo, an
// image not in registry (HOST[:PORT]).
func Outside(list []Download, filesRepo, registry string) []Download {
	var out []Download
	for _, d := range list {
		if d.IsImage() && !strings.HasPrefix(d.Image, registry+"/") ||
			!d.IsImage() && !strings.HasPrefix(d.URL, strings.TrimSuffix(filesRepo, "/")+"/") {
			out = append(out, d)
		}
	}
	return out
}
