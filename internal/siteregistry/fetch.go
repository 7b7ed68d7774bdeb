package siteregistry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

// MaxManifestSize bounds what is read of a manifest: an artifact's is well under 1 KiB, and
// the distribution spec's own bound for manifests is 4 MiB.
const MaxManifestSize = 4 << 20

// Artifact is one uploaded file, as the registry holds it.
type Artifact struct {
	Ref      artifacts.Ref
	Manifest ocispec.Descriptor
	// File is the layer: the file's digest, size and name (its title annotation).
	File ocispec.Descriptor
}

// FileName is the file's name, checked by ResolveFile.
func (a Artifact) FileName() string { return a.File.Annotations[artifacts.TitleAnnotation] }

// ResolveFile reads ref's manifest and checks that it is an artifact of ref's kind holding one
// file with a safe name. It wraps errdef.ErrNotFound when the version does not exist.
func ResolveFile(ctx context.Context, repo *remote.Repository, ref artifacts.Ref) (Artifact, error) {
	desc, m, err := fetchArtifactManifest(ctx, repo, ref)
	if err != nil {
		return Artifact{}, err
	}
	if len(m.Layers) != 1 {
		return Artifact{}, fmt.Errorf("%s: %d layers, want the one file", ref, len(m.Layers))
	}
	layer := m.Layers[0]
	if err := artifacts.ValidateFileName(layer.Annotations[artifacts.TitleAnnotation]); err != nil {
		return Artifact{}, fmt.Errorf("%s: %w", ref, err)
	}
	return Artifact{Ref: ref, Manifest: desc, File: layer}, nil
}

// fetchArtifactManifest reads ref's manifest, digest-checked, and checks that it is an
// artifact of ref's kind.
func fetchArtifactManifest(ctx context.Context, repo *remote.Repository, ref artifacts.Ref) (ocispec.Descriptor, ocispec.Manifest, error) {
	var m ocispec.Manifest
	desc, rc, err := repo.FetchReference(ctx, ref.Version)
	if err != nil {
		return desc, m, fmt.Errorf("%s: %w", ref, err)
	}
	defer func() { _ = rc.Close() }()
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return desc, m, fmt.Errorf("%s: a %s, not an artifact manifest", ref, desc.MediaType)
	}
	if desc.Size > MaxManifestSize {
		return desc, m, fmt.Errorf("%s: manifest of %d bytes, over the %d this reads", ref, desc.Size, MaxManifestSize)
	}
	raw, err := content.ReadAll(rc, desc)
	if err != nil {
		return desc, m, fmt.Errorf("%s: manifest: %w", ref, err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return desc, m, fmt.Errorf("%s: manifest: %w", ref, err)
	}
	// oras push writes the type as artifactType (image-spec v1.1) or, for older registries, as
	// the config's media type.
	kind, ok := artifacts.KindOfArtifactType(m.ArtifactType)
	if !ok {
		kind, ok = artifacts.KindOfArtifactType(m.Config.MediaType)
	}
	if !ok || kind != ref.Kind {
		return desc, m, fmt.Errorf("%s: artifact type %q, want %q", ref, m.ArtifactType+m.Config.MediaType, ref.Kind.ArtifactType())
	}
	return desc, m, nil
}

// Resolve finds ref in the site registry.
func (c *Client) Resolve(ctx context.Context, ref artifacts.Ref) (Artifact, error) {
	if err := ref.Validate(); err != nil {
		return Artifact{}, err
	}
	repo, err := c.Repository(ref.Repository())
	if err != nil {
		return Artifact{}, err
	}
	return ResolveFile(ctx, repo, ref)
}

// OpenFile streams a's file. Reading it to the end checks its size and digest: a short,
// long or corrupt blob ends in an error instead of EOF, so nothing reads a wrong file as whole.
func (c *Client) OpenFile(ctx context.Context, a Artifact) (io.ReadCloser, error) {
	repo, err := c.Repository(a.Ref.Repository())
	if err != nil {
		return nil, err
	}
	rc, err := repo.Blobs().Fetch(ctx, a.File)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.Ref, err)
	}
	return &verifiedFile{Reader: Verified(rc, a.File, a.Ref.String()), rc: rc}, nil
}

type verifiedFile struct {
	io.Reader
	rc io.Closer
}

func (f *verifiedFile) Close() error { return f.rc.Close() }

// Verified wraps r, a blob's bytes, so that reading it to the end checks them against desc's
// size and digest: a short, long or corrupt blob ends in an error naming name instead of EOF.
func Verified(r io.Reader, desc ocispec.Descriptor, name string) io.Reader {
	return &verifiedReader{vr: content.NewVerifyReader(r, desc), name: name}
}

type verifiedReader struct {
	vr   *content.VerifyReader
	name string
}

func (f *verifiedReader) Read(p []byte) (int, error) {
	n, err := f.vr.Read(p)
	if err == io.EOF {
		if verr := f.vr.Verify(); verr != nil {
			return n, fmt.Errorf("%s: %w", f.name, verr)
		}
	}
	return n, err
}

// ResolveBinary finds binaries/NAME at version, or at its newest version when version is empty
// (what a Software's binary entry asks for).
func (c *Client) ResolveBinary(ctx context.Context, name, version string) (Artifact, error) {
	if version == "" {
		return c.ResolveNewest(ctx, artifacts.Binary, name)
	}
	return c.Resolve(ctx, artifacts.Ref{Kind: artifacts.Binary, Name: name, Version: version})
}

// ResolveNewest finds the highest version of a kind and name (artifacts.Newest over its tags).
func (c *Client) ResolveNewest(ctx context.Context, kind artifacts.Kind, name string) (Artifact, error) {
	if err := artifacts.ValidateName(name); err != nil {
		return Artifact{}, err
	}
	ref := artifacts.Ref{Kind: kind, Name: name}
	repo, err := c.Repository(ref.Repository())
	if err != nil {
		return Artifact{}, err
	}
	var tags []string
	if err := repo.Tags(ctx, "", func(page []string) error {
		tags = append(tags, page...)
		return nil
	}); err != nil {
		// A repository nobody uploaded to is NAME_UNKNOWN, a 404: nothing uploaded, as an
		// empty tag list would say.
		var resp *errcode.ErrorResponse
		if errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound {
			return Artifact{}, fmt.Errorf("%s: no version uploaded: %w", ref.Repository(), errdef.ErrNotFound)
		}
		return Artifact{}, fmt.Errorf("%s: listing versions: %w", ref.Repository(), err)
	}
	newest, ok := artifacts.Newest(tags)
	if !ok {
		return Artifact{}, fmt.Errorf("%s: no version uploaded: %w", ref.Repository(), errdef.ErrNotFound)
	}
	ref.Version = newest
	return ResolveFile(ctx, repo, ref)
}
