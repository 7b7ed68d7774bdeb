package siteregistry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

// PushOptions tune PushFile.
type PushOptions struct {
	// ChunkSize is the size of one PATCH of the chunked upload; 0: DefaultChunkSize.
	ChunkSize int64
	// MaxSize refuses a larger file before anything is sent; 0: no bound.
	MaxSize int64
	// StateDir remembers interrupted uploads so the next push of the same file resumes where
	// the registry stopped; empty: every push starts over.
	StateDir string
	// Replace lets a version that already holds a different file be retagged.
	Replace bool
	// Progress, when set, is told after every acknowledged chunk.
	Progress func(Progress)
}

// DefaultChunkSize is small enough that an interruption costs little, large enough that the
// per-request overhead does not matter.
const DefaultChunkSize = 16 << 20

// Progress is one step of an upload.
type Progress struct {
	File        string
	Done, Total int64
	// ResumedAt is where this run picked the upload up (0: from the start).
	ResumedAt int64
}

// Pushed says what PushFile left in the registry.
type Pushed struct {
	// Reference is the artifact's full reference, host included.
	Reference string
	Manifest  ocispec.Descriptor
	// File is the layer: the file's digest and size.
	File ocispec.Descriptor
	// ResumedAt is the offset an interrupted upload resumed from; Sent the bytes this run sent.
	ResumedAt, Sent int64
	// AlreadyThere: the registry had the file's blob before this run.
	AlreadyThere bool
}

// PushFile uploads a file as the artifact ref and tags it with ref's version. The blob goes up
// in chunks; an upload interrupted earlier resumes from the registry's acknowledged offset.
// The registry checks the digest before it accepts the blob, so a corrupt upload is refused.
func (c *Client) PushFile(ctx context.Context, ref artifacts.Ref, path string, opts PushOptions) (Pushed, error) {
	if err := ref.Validate(); err != nil {
		return Pushed{}, err
	}
	name := filepath.Base(path)
	if err := artifacts.ValidateFileName(name); err != nil {
		return Pushed{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return Pushed{}, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return Pushed{}, err
	}
	if !fi.Mode().IsRegular() {
		return Pushed{}, fmt.Errorf("%s: not a regular file", path)
	}
	if opts.MaxSize > 0 && fi.Size() > opts.MaxSize {
		return Pushed{}, fmt.Errorf("%s is %s, over the upload bound of %s (--max-size)", path, artifacts.HumanBytes(fi.Size()), artifacts.HumanBytes(opts.MaxSize))
	}
	layer, err := fileLayer(f, fi, name)
	if err != nil {
		return Pushed{}, fmt.Errorf("%s: %w", path, err)
	}

	repo, err := c.Repository(ref.Repository())
	if err != nil {
		return Pushed{}, err
	}
	ctx = auth.AppendRepositoryScope(ctx, repo.Reference, auth.ActionPull, auth.ActionPush)
	pushed := Pushed{Reference: c.Reference(ref.Repository(), ref.Version), File: layer}
	if err := c.checkTag(ctx, repo, ref, layer, opts.Replace); err != nil {
		return Pushed{}, err
	}
	if pushed.AlreadyThere, pushed.ResumedAt, pushed.Sent, err = c.pushBlob(ctx, repo, layer, f, name, opts); err != nil {
		return pushed, fmt.Errorf("%s: %w", pushed.Reference, err)
	}
	pushed.Manifest, err = tagArtifact(ctx, repo, ref, []ocispec.Descriptor{layer}, fi.ModTime())
	if err != nil {
		return pushed, fmt.Errorf("%s: %w", pushed.Reference, err)
	}
	return pushed, nil
}

// tagArtifact packs the manifest of ref's layers and tags it with ref's version. The manifest
// is reproducible (created is the newest file's time): the same files under the same version
// are the same digest.
func tagArtifact(ctx context.Context, repo *remote.Repository, ref artifacts.Ref, layers []ocispec.Descriptor, created time.Time) (ocispec.Descriptor, error) {
	m, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, ref.Kind.ArtifactType(), oras.PackManifestOptions{
		Layers: layers,
		ManifestAnnotations: map[string]string{
			ocispec.AnnotationCreated: created.UTC().Format(time.RFC3339),
			ocispec.AnnotationVersion: ref.Version,
		},
	})
	if err != nil {
		return m, fmt.Errorf("manifest: %w", err)
	}
	if err := repo.Tag(ctx, m, ref.Version); err != nil {
		return m, fmt.Errorf("tag: %w", err)
	}
	return m, nil
}

// fileLayer is the layer of a file: its digest, size and title.
func fileLayer(f *os.File, fi os.FileInfo, title string) (ocispec.Descriptor, error) {
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ocispec.Descriptor{}, err
	}
	return ocispec.Descriptor{
		MediaType:   artifacts.LayerMediaType,
		Digest:      digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(h.Sum(nil))),
		Size:        fi.Size(),
		Annotations: map[string]string{artifacts.TitleAnnotation: title},
	}, nil
}

// pushBlob sends a layer's blob unless the registry holds it already.
func (c *Client) pushBlob(ctx context.Context, repo *remote.Repository, layer ocispec.Descriptor, f *os.File, name string, opts PushOptions) (alreadyThere bool, resumedAt, sent int64, err error) {
	if alreadyThere, err = repo.Blobs().Exists(ctx, layer); err != nil || alreadyThere {
		return alreadyThere, 0, 0, err
	}
	resumedAt, sent, err = c.uploadBlob(ctx, repo, layer, f, name, opts)
	if err != nil {
		err = fmt.Errorf("uploading %s: %w", name, err)
	}
	return false, resumedAt, sent, err
}

// checkTag refuses to move a version to another file unless asked: a version names one file,
// and nodes decide what to update by it.
func (c *Client) checkTag(ctx context.Context, repo *remote.Repository, ref artifacts.Ref, layer ocispec.Descriptor, replace bool) error {
	if replace {
		return nil
	}
	existing, err := ResolveFile(ctx, repo, ref)
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		return nil
	case err != nil:
		return err
	case existing.File.Digest != layer.Digest:
		return fmt.Errorf("%s already holds %s (%s), a different file: upload it as a new version, or pass --replace", c.Reference(ref.Repository(), ref.Version), existing.File.Annotations[artifacts.TitleAnnotation], existing.File.Digest)
	}
	return nil
}

// uploadState is what StateDir keeps of an interrupted upload: where to ask for its offset.
type uploadState struct {
	Location string        `json:"location"`
	Digest   digest.Digest `json:"digest"`
}

func stateFile(dir, repository string, d digest.Digest) string {
	if dir == "" {
		return ""
	}
	key := sha256.Sum256([]byte(repository + "@" + d.String()))
	return filepath.Join(dir, hex.EncodeToString(key[:16])+".json")
}

// uploadBlob sends the blob in chunks, resuming a remembered upload when the registry still
// has it, and finishes with the digest, which the registry checks.
func (c *Client) uploadBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, f *os.File, name string, opts PushOptions) (resumedAt, sent int64, err error) {
	chunk := opts.ChunkSize
	if chunk <= 0 {
		chunk = DefaultChunkSize
	}
	state := stateFile(opts.StateDir, c.host+"/"+repo.Reference.Repository, desc.Digest)
	location, offset := "", int64(0)
	if s, ok := readState(state, desc.Digest); ok {
		// An upload the registry forgot (garbage-collected, restarted without its storage) starts
		// over; anything else is a real failure.
		if loc, off, err := c.uploadStatus(ctx, s.Location); err == nil && off <= desc.Size {
			location, offset, resumedAt = loc, off, off
		}
	}
	if location == "" {
		if location, err = c.startUpload(ctx, repo); err != nil {
			return 0, 0, err
		}
	}
	if opts.Progress != nil {
		opts.Progress(Progress{File: name, Done: offset, Total: desc.Size, ResumedAt: resumedAt})
	}
	for offset < desc.Size {
		n := min(chunk, desc.Size-offset)
		if location, err = c.patch(ctx, location, f, offset, n); err != nil {
			return resumedAt, sent, err
		}
		offset += n
		sent += n
		if err := writeState(state, uploadState{Location: location, Digest: desc.Digest}); err != nil {
			return resumedAt, sent, err
		}
		if opts.Progress != nil {
			opts.Progress(Progress{File: name, Done: offset, Total: desc.Size, ResumedAt: resumedAt})
		}
	}
	if err := c.finish(ctx, location, desc.Digest); err != nil {
		// A refused digest will be refused again: the remembered upload is no use.
		_ = os.Remove(state)
		return resumedAt, sent, err
	}
	if state != "" {
		_ = os.Remove(state)
	}
	return resumedAt, sent, nil
}

func readState(path string, d digest.Digest) (uploadState, bool) {
	if path == "" {
		return uploadState{}, false
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return uploadState{}, false
	}
	var s uploadState
	if json.Unmarshal(raw, &s) != nil || s.Digest != d || s.Location == "" {
		return uploadState{}, false
	}
	return s, true
}

// writeState replaces the state file whole (rename), so a crash never leaves half of one.
func writeState(path string, s uploadState) error {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("upload state: %w", err)
	}
	raw, _ := json.Marshal(s)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("upload state: %w", err)
	}
	return os.Rename(tmp, path)
}

func (c *Client) startUpload(ctx context.Context, repo *remote.Repository) (string, error) {
	u := fmt.Sprintf("%s://%s/v2/%s/blobs/uploads/", c.scheme(), c.host, repo.Reference.Repository)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", requestError("starting the upload", err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusAccepted {
		return "", responseError("starting the upload", resp)
	}
	return location(resp)
}

// uploadStatus asks the registry how much of an upload it holds (distribution-spec: GET on the
// upload's location answers 204 with Range: 0-<last byte>).
func (c *Client) uploadStatus(ctx context.Context, loc string) (string, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", 0, requestError("asking for the upload's offset", err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusNoContent {
		return "", 0, responseError("asking for the upload's offset", resp)
	}
	next, err := location(resp)
	if err != nil {
		return "", 0, err
	}
	end, err := rangeEnd(resp.Header.Get("Range"))
	if err != nil {
		return "", 0, err
	}
	return next, end, nil
}

// rangeEnd reads "0-<last>" as the number of bytes held. "0-0" is what registries answer for
// an empty upload; one byte held is read as none, and that byte is sent again, which the
// registry refuses as a range error: the upload then starts over.
func rangeEnd(h string) (int64, error) {
	first, last, ok := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
	if !ok || first != "0" {
		return 0, fmt.Errorf("registry answered Range %q, want 0-<last byte>", h)
	}
	n, err := strconv.ParseInt(last, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("registry answered Range %q, want 0-<last byte>", h)
	}
	if n == 0 {
		return 0, nil
	}
	return n + 1, nil
}

func (c *Client) patch(ctx context.Context, loc string, f *os.File, offset, n int64) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, chunkTimeout)
	defer cancel()
	body := func() io.Reader { return io.NewSectionReader(f, offset, n) }
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, loc, body())
	if err != nil {
		return "", err
	}
	// The authenticating client replays a request after a challenge: it needs the body again.
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body()), nil }
	req.ContentLength = n
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Content-Range", fmt.Sprintf("%d-%d", offset, offset+n-1))
	resp, err := c.http.Do(req)
	if err != nil {
		return "", requestError(fmt.Sprintf("sending bytes %d-%d", offset, offset+n-1), err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusAccepted {
		return "", responseError(fmt.Sprintf("sending bytes %d-%d", offset, offset+n-1), resp)
	}
	return location(resp)
}

func (c *Client) finish(ctx context.Context, loc string, d digest.Digest) error {
	u, err := url.Parse(loc)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("digest", d.String())
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), http.NoBody)
	if err != nil {
		return err
	}
	req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
	resp, err := c.http.Do(req)
	if err != nil {
		return requestError("completing the upload", err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusCreated {
		return responseError("completing the upload", resp)
	}
	return nil
}

// location is the response's Location, resolved against the request (registries may answer
// with a path).
func location(resp *http.Response) (string, error) {
	u, err := resp.Location()
	if err != nil {
		return "", fmt.Errorf("registry answered %s without a usable Location: %w", resp.Status, err)
	}
	return u.String(), nil
}

// responseError names what failed and the registry's own error codes (distribution-spec's
// error body), never the request's URL (its query holds the upload's state token).
func responseError(doing string, resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	var parts []string
	if json.Unmarshal(raw, &body) == nil {
		for _, e := range body.Errors {
			parts = append(parts, strings.TrimSpace(e.Code+": "+e.Message))
		}
	}
	if len(parts) == 0 && len(bytes.TrimSpace(raw)) > 0 && len(raw) < 200 {
		parts = append(parts, string(bytes.TrimSpace(raw)))
	}
	msg := fmt.Sprintf("%s: registry answered %s", doing, resp.Status)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	return errors.New(msg)
}

// requestError drops the URL from a transport error: an upload's location carries its state
// token, which belongs in no log.
func requestError(doing string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%s: %w", doing, err)
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}
