// Package ociimage builds the project's container images without a Docker daemon, as ko does:
// each image is a small root filesystem (a non-root user, CA certificates, one static binary)
// written as tar layers with fixed owners, modes and times, assembled, written to an OCI image
// layout and pushed to a registry with go-containerregistry. The same inputs give the same
// digest: nothing of the build's time, host or user reaches a layer or the config.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the uid and gid every image runs as: the steps' (steps.StepUser), named "nonroot" in
// /etc/passwd because OpenSSH's client refuses to run as a uid without a passwd entry.
const User = 65532

// RefNameAnnotation names an image in the layout's index ("name:tag"); image-push tags it so.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// epoch is every layer entry's and the config's time: builds do not depend on the clock.
var epoch = time.Unix(0, 0).UTC()

// File is one file of an image's root filesystem.
type File struct {
	Path string // absolute, slash-separated
	Mode int64  // permissions, with the sticky bit (0o1000) where wanted
	UID  int    // owner and group
	Dir  bool
	Data []byte
}

// Spec is one image: its files on top of the base, how it runs, and its labels.
type Spec struct {
	// Ref is the image's name and tag, e.g. "bpa-workflow-controller:v0.1.0".
	Ref        string
	Files      []File
	Entrypoint []string
	// Labels become the config's labels (org.opencontainers.image.*).
	Labels map[string]string
}

// Base is the root filesystem every image starts from: /etc/passwd and /etc/group with root and
// nonroot (65532, home /home/nonroot), the CA certificates the build machine trusts (Debian's
// ca-certificates bundle), and a world-writable /tmp for when no emptyDir is mounted.
func Base(caCertificates []byte) []File {
	return []File{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", User, User))},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", User))},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")},
		{Path: "/etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Data: caCertificates},
	}
}

// dirs are the directories every image has, with their owner and mode.
var dirs = []File{
	{Path: "/etc", Mode: 0o755, Dir: true}, {Path: "/etc/ssl", Mode: 0o755, Dir: true}, {Path: "/etc/ssl/certs", Mode: 0o755, Dir: true},
	{Path: "/home", Mode: 0o755, Dir: true}, {Path: "/home/nonroot", Mode: 0o700, UID: User, Dir: true},
	{Path: "/root", Mode: 0o700, Dir: true}, {Path: "/tmp", Mode: 0o1777, Dir: true},
	{Path: "/usr", Mode: 0o755, Dir: true}, {Path: "/usr/local", Mode: 0o755, Dir: true}, {Path: "/usr/local/bin", Mode: 0o755, Dir: true},
}

// Build assembles one image for linux on the build machine's architecture: the base and the
// spec's files in two layers (the base is shared between images), running as nonroot.
func Build(spec Spec, base []File) (v1.Image, error) {
	if _, err := name.NewTag(spec.Ref, name.WithDefaultRegistry("")); err != nil {
		return nil, fmt.Errorf("image %q: %w", spec.Ref, err)
	}
	for _, f := range slices.Concat(base, spec.Files) {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("image %s: %q is not a clean absolute path", spec.Ref, f.Path)
		}
		if !hasDir(path.Dir(f.Path)) {
			return nil, fmt.Errorf("image %s: %s: its directory is not one of the base's", spec.Ref, f.Path)
		}
	}
	baseLayer, err := Layer(append(slices.Clone(dirs), base...))
	if err != nil {
		return nil, fmt.Errorf("image %s: base layer: %w", spec.Ref, err)
	}
	appLayer, err := Layer(spec.Files)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	return assemble(spec.Ref, baseLayer, "base (passwd, group, CA certificates)", appLayer, func(c *v1.Config) {
		c.Entrypoint = spec.Entrypoint
		c.User = fmt.Sprintf("%d:%d", User, User)
		c.WorkingDir = "/home/nonroot"
		c.Env = []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"HOME=/home/nonroot",
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		}
		c.Labels = spec.Labels
	})
}

// assemble is every image of this package: an OCI image for linux on the build machine's
// architecture, of a base layer and the image's own on top, dated the epoch (so the same
// layers give the same digest), its config as configure leaves it.
func assemble(ref string, base v1.Layer, baseWhat string, top v1.Layer, configure func(*v1.Config)) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "ociimage: " + baseWhat}},
		mutate.Addendum{Layer: top, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "ociimage: " + ref}},
	)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: epoch}
	cfg.OS = "linux"
	cfg.Architecture = runtime.GOARCH
	configure(&cfg.Config)
	return mutate.ConfigFile(img, cfg)
}

func hasDir(p string) bool {
	return p == "/" || slices.ContainsFunc(dirs, func(d File) bool { return d.Path == p })
}

// Layer writes files as one gzipped tar layer, sorted by path, owned by their UID, dated the
// epoch: the same files give the same digest.
func Layer(files []File) (v1.Layer, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for i, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("%q is not a clean absolute path", f.Path)
		}
		if i > 0 && files[i-1].Path == f.Path {
			return nil, fmt.Errorf("%s is listed twice", f.Path)
		}
		h := &tar.Header{
			Name:    strings.TrimPrefix(f.Path, "/"),
			Mode:    f.Mode,
			Uid:     f.UID,
			Gid:     f.UID,
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		if f.Dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.Data))
		}
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := w.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// BinaryFile reads an executable into /usr/local/bin.
func BinaryFile(src, binary string) (File, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return File{}, err
	}
	return File{Path: "/usr/local/bin/" + binary, Mode: 0o755, Data: data}, nil
}

// WriteLayout writes the images into a new OCI image layout at dir (which must not exist, so
// that a layout never mixes two builds), each named in the index by its Ref.
func WriteLayout(dir string, specs []Spec, images []v1.Image) (layout.Path, error) {
	if _, err := os.Stat(dir); err == nil {
		return "", fmt.Errorf("%s exists: remove it first", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	for i, img := range images {
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{RefNameAnnotation: specs[i].Ref})); err != nil {
			return "", fmt.Errorf("writing %s: %w", specs[i].Ref, err)
		}
	}
	return p, nil
}

// Pushed is one image pushed by Push.
type Pushed struct {
	Ref    string
	Digest v1.Hash
}

// Push pushes every named image of the layout at dir to registry (host[:port][/path]), tagged
// with its name. A registry on localhost or 127.0.0.1 is spoken to over plain HTTP.
func Push(dir, registry string, opts ...remote.Option) ([]Pushed, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	index, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []Pushed
	for _, desc := range manifest.Manifests {
		ref := desc.Annotations[RefNameAnnotation]
		if ref == "" {
			continue
		}
		tag, err := name.NewTag(strings.TrimSuffix(registry, "/") + "/" + ref)
		if err != nil {
			return nil, fmt.Errorf("pushing %s to %s: %w", ref, registry, err)
		}
		img, err := p.Image(desc.Digest)
		if err != nil {
			return nil, err
		}
		if err := remote.Write(tag, img, opts...); err != nil {
			return nil, fmt.Errorf("pushing %s: %w", tag, err)
		}
		out = append(out, Pushed{Ref: tag.String(), Digest: desc.Digest})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s names no image: run `make image` first", dir)
	}
	return out, nil
}

// Inputs are what the project's images are built from.
type Inputs struct {
	ControllerBinary, KubectlBinary, RegistryBinary string
	ControllerRef, KubectlRef, RegistryRef          string
	Revision                                        string
}

// ProjectSpecs are the project's three images: the controller (manager and steps, one binary),
// kubectl, which the KUD plugin WorkflowTemplates run, and CNCF Distribution's registry, the
// site registry the chart deploys (built from its module like the test registry).
func ProjectSpecs(in Inputs) ([]Spec, error) {
	controller, err := BinaryFile(in.ControllerBinary, "bpa-workflow-controller")
	if err != nil {
		return nil, err
	}
	kubectl, err := BinaryFile(in.KubectlBinary, "kubectl")
	if err != nil {
		return nil, err
	}
	registry, err := BinaryFile(in.RegistryBinary, "registry")
	if err != nil {
		return nil, err
	}
	labels := func(title string) map[string]string {
		l := map[string]string{
			"org.opencontainers.image.title":  title,
			"org.opencontainers.image.source": "https://github.com/akraino-edge-stack/bpa-workflow-controller",
		}
		if in.Revision != "" {
			l["org.opencontainers.image.revision"] = in.Revision
		}
		return l
	}
	return []Spec{
		{Ref: in.ControllerRef, Files: []File{controller}, Entrypoint: []string{"/usr/local/bin/bpa-workflow-controller"}, Labels: labels("bpa-workflow-controller")},
		{Ref: in.KubectlRef, Files: []File{kubectl}, Entrypoint: []string{"/usr/local/bin/kubectl"}, Labels: labels("kubectl")},
		{Ref: in.RegistryRef, Files: []File{registry}, Entrypoint: []string{"/usr/local/bin/registry"}, Labels: labels("registry")},
	}, nil
}
