package siteregistry

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

// ImageCopy is one line of an images list: where an image comes from and the repository and
// tag it gets under the site registry's prefix.
type ImageCopy struct {
	// Source is an image reference (host/path:tag or host/path@digest) or oci:DIR:REF, an
	// image in an OCI image layout on disk (what `skopeo copy` and `make image` write) by its
	// ref.name.
	Source string
	// Target is path:tag under the site prefix.
	Target string
	// Line is where the list says it, for errors.
	Line int
}

// ParseImageList reads an images list: one image per line, "SOURCE [TARGET]", '#' comments
// and blank lines skipped. Without a TARGET an image keeps its repository path and tag (an
// OCI layout's image, its ref.name, when that is a path:tag). Every bad line is named; none is half-read.
func ParseImageList(r io.Reader) ([]ImageCopy, error) {
	var out []ImageCopy
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) > 2 {
			return nil, fmt.Errorf("images list line %d: want SOURCE [TARGET], got %d fields", n, len(fields))
		}
		c := ImageCopy{Source: fields[0], Line: n}
		if len(fields) == 2 {
			c.Target = fields[1]
		}
		target, err := defaultTarget(c)
		if err != nil {
			return nil, fmt.Errorf("images list line %d: %w", n, err)
		}
		c.Target = target
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("images list: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("images list: no image in it")
	}
	return out, nil
}

func defaultTarget(c ImageCopy) (string, error) {
	target := c.Target
	if dir, tag, ok := layoutSource(c.Source); ok {
		if dir == "" || tag == "" {
			return "", fmt.Errorf("source %q: want oci:DIR:REF", c.Source)
		}
		if target == "" {
			target = tag
		}
	} else {
		ref, err := registry.ParseReference(c.Source)
		if err != nil {
			return "", fmt.Errorf("source %q: %w", c.Source, err)
		}
		if ref.Reference == "" {
			return "", fmt.Errorf("source %q: name a tag or a digest", c.Source)
		}
		if target == "" {
			tag := ref.Reference
			if _, err := ref.Digest(); err == nil {
				return "", fmt.Errorf("source %q is named by digest: give the TARGET path:tag it gets at the site", c.Source)
			}
			target = ref.Repository + ":" + tag
		}
	}
	// A target is a repository path and a tag (distribution-spec grammar).
	path, tag, ok := strings.Cut(target, ":")
	if !ok || artifacts.ValidateRepository(path) != nil || artifacts.ValidateVersion(tag) != nil {
		return "", fmt.Errorf("target %q: want a lowercase repository path and a tag (path:tag)", target)
	}
	return target, nil
}

// layoutSource splits oci:DIR:REF as skopeo's oci transport does: DIR holds no colon, and REF
// (the image's org.opencontainers.image.ref.name in the layout's index) is the rest.
func layoutSource(s string) (dir, ref string, ok bool) {
	rest, ok := strings.CutPrefix(s, "oci:")
	if !ok {
		return "", "", false
	}
	dir, ref, _ = strings.Cut(rest, ":")
	return dir, ref, true
}

// SourceOptions say how to read source registries.
type SourceOptions struct {
	// PlainHTTP reads sources over HTTP (a mirror on loopback in development only).
	PlainHTTP bool
	// DockerConfig reads credentials from the operator's docker config (~/.docker/config.json,
	// DOCKER_CONFIG); anonymous when it has none for a host.
	DockerConfig bool
}

// Sources reads the images a list names: one authenticating client for every source registry,
// so the credentials are read once and a registry's tokens serve every image of the list.
type Sources struct {
	plainHTTP bool
	client    *auth.Client
}

// NewSources prepares reading sources; with DockerConfig it reads the docker config now.
func NewSources(opts SourceOptions) (*Sources, error) {
	client := &auth.Client{Cache: auth.NewCache(), Header: map[string][]string{"User-Agent": {"bpa-workflow-controller"}}}
	if opts.DockerConfig {
		store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("docker config: %w", err)
		}
		client.Credential = credentials.Credential(store)
	}
	return &Sources{plainHTTP: opts.PlainHTTP, client: client}, nil
}

// Copied is one image in the site registry.
type Copied struct {
	Source, Reference string
	Manifest          ocispec.Descriptor
}

// CopyImage copies one image (every platform of an index, every blob the registry lacks) to
// the site registry. Blobs already there are skipped, so a list copied again, or after an
// interruption, sends only what is missing.
func (c *Client) CopyImage(ctx context.Context, img ImageCopy, sources *Sources) (Copied, error) {
	path, tag, _ := strings.Cut(img.Target, ":")
	dst, err := c.Repository(path)
	if err != nil {
		return Copied{}, err
	}
	ctx = auth.AppendRepositoryScope(ctx, dst.Reference, auth.ActionPull, auth.ActionPush)
	src, srcRef, err := sources.open(ctx, img.Source)
	if err != nil {
		return Copied{}, fmt.Errorf("line %d: %w", img.Line, err)
	}
	desc, err := oras.Copy(ctx, src, srcRef, dst, tag, oras.CopyOptions{})
	if err != nil {
		return Copied{}, fmt.Errorf("line %d: copying %s: %w", img.Line, img.Source, err)
	}
	return Copied{Source: img.Source, Reference: c.Reference(path, tag), Manifest: desc}, nil
}

// open is the image a list's SOURCE names, and its tag or digest there.
func (sources *Sources) open(ctx context.Context, s string) (oras.ReadOnlyTarget, string, error) {
	if dir, tag, ok := layoutSource(s); ok {
		store, err := oci.NewFromFS(ctx, os.DirFS(dir))
		if err != nil {
			return nil, "", fmt.Errorf("OCI layout %s: %w", dir, err)
		}
		return store, tag, nil
	}
	repo, err := remote.NewRepository(s)
	if err != nil {
		return nil, "", err
	}
	repo.PlainHTTP = sources.plainHTTP
	repo.Client = sources.client
	return repo, repo.Reference.Reference, nil
}
