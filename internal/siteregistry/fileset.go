package siteregistry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

// FileSet is a tree of files uploaded as one artifact: one layer per file, titled by its path
// in the set.
type FileSet struct {
	Ref      artifacts.Ref
	Manifest ocispec.Descriptor
	// Files are the layers, sorted by path.
	Files []ocispec.Descriptor
}

// File finds the file at path in the set, as an Artifact that OpenFile reads.
func (s FileSet) File(path string) (Artifact, bool) {
	i := sort.Search(len(s.Files), func(i int) bool { return setPath(s.Files[i]) >= path })
	if i == len(s.Files) || setPath(s.Files[i]) != path {
		return Artifact{}, false
	}
	return Artifact{Ref: s.Ref, Manifest: s.Manifest, File: s.Files[i]}, true
}

func setPath(layer ocispec.Descriptor) string { return layer.Annotations[artifacts.TitleAnnotation] }

// ResolveFileSet reads ref's manifest and checks that it is a file set whose paths are all
// safe and distinct. It wraps errdef.ErrNotFound when the version does not exist.
func ResolveFileSet(ctx context.Context, repo *remote.Repository, ref artifacts.Ref) (FileSet, error) {
	desc, m, err := fetchArtifactManifest(ctx, repo, ref)
	if err != nil {
		return FileSet{}, err
	}
	if len(m.Layers) == 0 {
		return FileSet{}, fmt.Errorf("%s: no files", ref)
	}
	files := append([]ocispec.Descriptor(nil), m.Layers...)
	sort.SliceStable(files, func(i, j int) bool { return setPath(files[i]) < setPath(files[j]) })
	for i, f := range files {
		if err := artifacts.ValidateSetPath(setPath(f)); err != nil {
			return FileSet{}, fmt.Errorf("%s: %w", ref, err)
		}
		if i > 0 && setPath(files[i-1]) == setPath(f) {
			return FileSet{}, fmt.Errorf("%s: %s is in the set twice", ref, setPath(f))
		}
	}
	return FileSet{Ref: ref, Manifest: desc, Files: files}, nil
}

// ResolveSet finds the file set ref in the site registry.
func (c *Client) ResolveSet(ctx context.Context, ref artifacts.Ref) (FileSet, error) {
	if err := ref.Validate(); err != nil {
		return FileSet{}, err
	}
	repo, err := c.Repository(ref.Repository())
	if err != nil {
		return FileSet{}, err
	}
	return ResolveFileSet(ctx, repo, ref)
}

// PushedSet says what PushFileSet left in the registry.
type PushedSet struct {
	Reference string
	Manifest  ocispec.Descriptor
	// Files is how many files the set holds, Size their bytes; AlreadyThere how many of them the
	// registry had before this run, Sent the bytes this run sent.
	Files, AlreadyThere int
	Size, Sent          int64
}

// setFile is one file of a directory being uploaded.
type setFile struct {
	path  string // on disk
	layer ocispec.Descriptor
}

// PushFileSet uploads the regular files under dir as the file set ref, each under its path
// relative to dir. Every blob goes up as PushFile's does, resumably; the tag moves last, so a
// set is either the old one or the whole new one. MaxSize bounds the whole set.
func (c *Client) PushFileSet(ctx context.Context, ref artifacts.Ref, dir string, opts PushOptions) (PushedSet, error) {
	if ref.Kind != artifacts.FileSet {
		return PushedSet{}, fmt.Errorf("%s is not a file set", ref)
	}
	if err := ref.Validate(); err != nil {
		return PushedSet{}, err
	}
	files, newest, err := readSetDir(dir, opts.MaxSize)
	if err != nil {
		return PushedSet{}, err
	}
	repo, err := c.Repository(ref.Repository())
	if err != nil {
		return PushedSet{}, err
	}
	ctx = auth.AppendRepositoryScope(ctx, repo.Reference, auth.ActionPull, auth.ActionPush)
	pushed := PushedSet{Reference: c.Reference(ref.Repository(), ref.Version), Files: len(files)}
	layers := make([]ocispec.Descriptor, len(files))
	for i, f := range files {
		layers[i] = f.layer
		pushed.Size += f.layer.Size
	}
	if err := c.checkSetTag(ctx, repo, ref, layers, opts.Replace); err != nil {
		return PushedSet{}, err
	}
	for _, f := range files {
		already, sent, err := c.pushSetFile(ctx, repo, f, opts)
		pushed.Sent += sent
		if already {
			pushed.AlreadyThere++
		}
		if err != nil {
			return pushed, fmt.Errorf("%s: %w", pushed.Reference, err)
		}
	}
	if pushed.Manifest, err = tagArtifact(ctx, repo, ref, layers, newest); err != nil {
		return pushed, fmt.Errorf("%s: %w", pushed.Reference, err)
	}
	return pushed, nil
}

func (c *Client) pushSetFile(ctx context.Context, repo *remote.Repository, f setFile, opts PushOptions) (alreadyThere bool, sent int64, err error) {
	file, err := os.Open(f.path)
	if err != nil {
		return false, 0, err
	}
	defer func() { _ = file.Close() }()
	alreadyThere, _, sent, err = c.pushBlob(ctx, repo, f.layer, file, setPath(f.layer), opts)
	return alreadyThere, sent, err
}

// readSetDir lists and hashes the regular files under dir, sorted by path. A symbolic link or
// a special file is refused rather than skipped, so the set is never silently short.
func readSetDir(dir string, maxSize int64) ([]setFile, time.Time, error) {
	var files []setFile
	var newest time.Time
	var total int64
	if fi, err := os.Stat(dir); err != nil {
		return nil, newest, err
	} else if !fi.IsDir() {
		return nil, newest, fmt.Errorf("%s: not a directory (a file set is a directory's files; upload one file as a binary)", dir)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file (a file set holds regular files only)", path)
		}
		if err := artifacts.ValidateSetPath(rel); err != nil {
			return err
		}
		f, err := os.Open(path) //nolint:gosec // G304: the files under the directory the operator names are what is uploaded
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		total += fi.Size()
		if maxSize > 0 && total > maxSize {
			return fmt.Errorf("%s: over the upload bound of %s at %s (--max-size)", dir, artifacts.HumanBytes(maxSize), rel)
		}
		layer, err := fileLayer(f, fi, rel)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		files = append(files, setFile{path: path, layer: layer})
		return nil
	})
	if err != nil {
		return nil, newest, err
	}
	if len(files) == 0 {
		return nil, newest, fmt.Errorf("%s: no files to upload", dir)
	}
	// WalkDir's lexical order is by element; the set's is by whole path, which File searches.
	sort.Slice(files, func(i, j int) bool { return setPath(files[i].layer) < setPath(files[j].layer) })
	return files, newest, nil
}

// checkSetTag refuses to move a version to another set of files unless asked, as checkTag does
// for one file.
func (c *Client) checkSetTag(ctx context.Context, repo *remote.Repository, ref artifacts.Ref, layers []ocispec.Descriptor, replace bool) error {
	if replace {
		return nil
	}
	existing, err := ResolveFileSet(ctx, repo, ref)
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	differ := len(existing.Files) != len(layers)
	for i := 0; !differ && i < len(layers); i++ {
		differ = setPath(existing.Files[i]) != setPath(layers[i]) || existing.Files[i].Digest != layers[i].Digest
	}
	if differ {
		return fmt.Errorf("%s already holds a different set of %d files: upload it as a new version, or pass --replace", c.Reference(ref.Repository(), ref.Version), len(existing.Files))
	}
	return nil
}
