package ociimage

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ContainerdNameAnnotation is the full name `ctr images import` gives a manifest of an OCI
// archive; the OCI ref.name annotation alone is only a tag to it.
const ContainerdNameAnnotation = "io.containerd.image.name"

// ContainerdName is the name a container runtime resolves a short reference to, and so the name
// an imported image must have for a pod's `image:` to find it without a pull:
// "bpa-kubectl:v1.33.13" is docker.io/library/bpa-kubectl:v1.33.13.
func ContainerdName(ref string) (string, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", fmt.Errorf("image %q: %w (want name:tag)", ref, err)
	}
	registry := tag.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io"
	}
	return registry + "/" + tag.RepositoryStr() + ":" + tag.TagStr(), nil
}

// FromLayout reads the images of an OCI image layout by the names in its index.
func FromLayout(dir string) (map[string]v1.Image, error) {
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
	out := map[string]v1.Image{}
	for _, desc := range manifest.Manifests {
		if ref := desc.Annotations[RefNameAnnotation]; ref != "" {
			if out[ref], err = p.Image(desc.Digest); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// RootFS is an image made of a whole root filesystem (a Debian tree from mmdebstrap, say) and
// a layer of files on top, with its config as given.
type RootFS struct {
	Ref string
	// Tarball is the root filesystem, as an uncompressed tar file.
	Tarball string
	Files   []File
	Config  v1.Config
	Labels  map[string]string
}

// BuildRootFS assembles a RootFS image for linux on the build machine's architecture.
func BuildRootFS(spec RootFS) (v1.Image, error) {
	if _, err := ContainerdName(spec.Ref); err != nil {
		return nil, err
	}
	base, err := tarball.LayerFromFile(spec.Tarball, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	top, err := Layer(spec.Files)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	return assemble(spec.Ref, base, "root filesystem", top, func(c *v1.Config) {
		*c = spec.Config
		c.Labels = spec.Labels
	})
}

// WriteArchive writes images, keyed by their short references, as one OCI image layout in a
// tar stream that `ctr images import` reads, each manifest annotated with the name a pod's
// `image:` resolves to (ContainerdName). Blobs the images share are written once.
func WriteArchive(w io.Writer, images map[string]v1.Image) error {
	tw := tar.NewWriter(w)
	written := map[v1.Hash]bool{}
	blob := func(h v1.Hash, open func() (io.ReadCloser, error), size int64) error {
		if written[h] {
			return nil
		}
		written[h] = true
		rc, err := open()
		if err != nil {
			return err
		}
		defer rc.Close()
		if err := tw.WriteHeader(&tar.Header{Name: "blobs/" + h.Algorithm + "/" + h.Hex, Mode: 0o644, Size: size, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		n, err := io.Copy(tw, rc)
		if err == nil && n != size {
			err = fmt.Errorf("blob %s: %d bytes, its descriptor says %d", h, n, size)
		}
		return err
	}
	bytesOf := func(raw []byte) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(string(raw))), nil }
	}
	var index v1.IndexManifest
	index.SchemaVersion = 2
	index.MediaType = types.OCIImageIndex
	refs := make([]string, 0, len(images))
	for ref := range images {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	for _, ref := range refs {
		img := images[ref]
		full, err := ContainerdName(ref)
		if err != nil {
			return err
		}
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		for _, l := range layers {
			d, err := l.Digest()
			if err != nil {
				return err
			}
			size, err := l.Size()
			if err != nil {
				return err
			}
			if err := blob(d, l.Compressed, size); err != nil {
				return fmt.Errorf("image %s: %w", ref, err)
			}
		}
		cfgName, err := img.ConfigName()
		if err != nil {
			return err
		}
		cfg, err := img.RawConfigFile()
		if err != nil {
			return err
		}
		if err := blob(cfgName, bytesOf(cfg), int64(len(cfg))); err != nil {
			return err
		}
		manifest, err := img.RawManifest()
		if err != nil {
			return err
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		mt, err := img.MediaType()
		if err != nil {
			return err
		}
		if err := blob(digest, bytesOf(manifest), int64(len(manifest))); err != nil {
			return err
		}
		tag, _ := name.NewTag(ref)
		index.Manifests = append(index.Manifests, v1.Descriptor{
			MediaType: mt, Size: int64(len(manifest)), Digest: digest,
			Annotations: map[string]string{ContainerdNameAnnotation: full, RefNameAnnotation: tag.TagStr()},
		})
	}
	for _, f := range []struct {
		name string
		data any
	}{{"oci-layout", map[string]string{"imageLayoutVersion": "1.0.0"}}, {"index.json", index}} {
		raw, err := json.Marshal(f.data)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(raw)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(raw); err != nil {
			return err
		}
	}
	return tw.Close()
}
