// Package fileserver serves the site registry's files over plain HTTP, for the consumers that
// want a URL and not an OCI client: metal3's BareMetalHost image.url with its checksum URL,
// kubespray's files_repo, the KUD plugins' manifests, scripts that fetch a binary; and, under
// /v2/, a read-only, anonymous view of the registry for the nodes' container runtime. It holds
// no copy: every request reads the registry, and every byte it serves is checked against its
// digest (a corrupt blob ends the response short, so no client takes it for the whole file).
//
//	GET /binaries/NAME/VERSION/FILE            the file
//	GET /os-images/NAME/VERSION/FILE           the file
//	GET /files/NAME/VERSION/PATH               the file at PATH in a file set
//	GET /.../FILE.sha256sum                    "HEX  FILE\n", the format sha256sum writes and Ironic reads
//	GET /v2/...                                the OCI distribution API's pulls (manifests and blobs)
//	GET /healthz                               ok
package fileserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"strings"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

// Registry is what the server reads: siteregistry.Client.
type Registry interface {
	Resolve(ctx context.Context, ref artifacts.Ref) (siteregistry.Artifact, error)
	ResolveSet(ctx context.Context, ref artifacts.Ref) (siteregistry.FileSet, error)
	OpenFile(ctx context.Context, a siteregistry.Artifact) (io.ReadCloser, error)
	Repository(name string) (*remote.Repository, error)
}

// Handler serves the files.
type Handler struct {
	Registry Registry
	Log      *slog.Logger
}

const checksumSuffix = ".sha256sum"

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == "/healthz" {
		_, _ = io.WriteString(w, "ok\n")
		return
	}
	if r.URL.Path == "/v2" || strings.HasPrefix(r.URL.Path, "/v2/") {
		h.serveOCI(w, r)
		return
	}
	ref, file, err := parsePath(r.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	a, checksum, err := h.resolve(r.Context(), ref, file)
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		h.log().Error("resolving an artifact", "artifact", ref.String(), "error", err)
		http.Error(w, "cannot read "+ref.String()+" from the site registry", http.StatusBadGateway)
		return
	}
	etag := `"` + a.File.Digest.String() + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache") // a version may be replaced (upload --replace)
	if checksum {
		body := a.File.Digest.Encoded() + "  " + path.Base(a.FileName()) + "\n"
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, body) //nolint:gosec // G705: text/plain of a digest and a validated file name
		}
		return
	}
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(a.File.Size, 10))
	if r.Method == http.MethodHead {
		return
	}
	rc, err := h.Registry.OpenFile(r.Context(), a)
	if err != nil {
		h.log().Error("opening an artifact's file", "artifact", ref.String(), "error", err)
		w.Header().Del("Content-Length")
		http.Error(w, "cannot read "+ref.String()+" from the site registry", http.StatusBadGateway)
		return
	}
	defer func() { _ = rc.Close() }()
	if err := copyVerified(w, rc); err != nil {
		if r.Context().Err() == nil {
			h.log().Error("serving an artifact's file", "artifact", ref.String(), "digest", a.File.Digest.String(), "error", err)
		}
		// The headers are gone: only cutting the connection tells the client the body is not
		// the file (it sees fewer bytes than Content-Length).
		panic(http.ErrAbortHandler)
	}
}

// resolve finds the artifact serving file: a binary's or an OS image's one file, or the file
// at that path in a file set; checksum says file names its .sha256sum (a file set's own file of
// that name comes first). A file that is not there wraps errdef.ErrNotFound, saying why.
func (h *Handler) resolve(ctx context.Context, ref artifacts.Ref, file string) (a siteregistry.Artifact, checksum bool, err error) {
	notThere := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", errdef.ErrNotFound, fmt.Sprintf(format, args...))
	}
	base, checksum := strings.CutSuffix(file, checksumSuffix)
	if ref.Kind == artifacts.FileSet {
		set, err := h.Registry.ResolveSet(ctx, ref)
		if errors.Is(err, errdef.ErrNotFound) {
			return a, false, notThere("%s is not in the site registry", ref)
		}
		if err != nil {
			return a, false, err
		}
		if a, ok := set.File(file); ok {
			return a, false, nil
		}
		if a, ok := set.File(base); ok && checksum {
			return a, true, nil
		}
		return a, false, notThere("%s holds no %s", ref, file)
	}
	a, err = h.Registry.Resolve(ctx, ref)
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		return a, false, notThere("%s is not in the site registry", ref)
	case err != nil:
		return a, false, err
	case a.FileName() != base:
		return a, false, notThere("%s holds %s, not %s", ref, a.FileName(), base)
	}
	return a, checksum, nil
}

// copyVerified copies r to w, holding the last read back until r ends cleanly: r checks the
// digest at its end, so a corrupt file never reaches the client whole, even when only its last
// bytes differ.
func copyVerified(w io.Writer, r io.Reader) error {
	buf := make([]byte, 64<<10)
	held := make([]byte, 0, len(buf))
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(held); werr != nil {
				return werr
			}
			held = append(held[:0], buf[:n]...)
		}
		if err == io.EOF {
			_, werr := w.Write(held)
			return werr
		}
		if err != nil {
			return err
		}
	}
}

func (h *Handler) log() *slog.Logger {
	if h.Log == nil {
		return slog.Default()
	}
	return h.Log
}

// parsePath reads /KIND-DIR/NAME/VERSION/FILE, or /files/NAME/VERSION/PATH for a file set,
// each element validated as the upload validates it, so no path reaches the registry that an
// upload could not have made.
func parsePath(p string) (artifacts.Ref, string, error) {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 4)
	if len(parts) != 4 {
		return artifacts.Ref{}, "", errors.New("want /binaries/NAME/VERSION/FILE, /os-images/NAME/VERSION/FILE or /files/NAME/VERSION/PATH")
	}
	var ref artifacts.Ref
	for _, k := range artifacts.Kinds {
		if parts[0] == k.Dir() {
			ref.Kind = k
		}
	}
	if ref.Kind == "" {
		return artifacts.Ref{}, "", fmt.Errorf("unknown folder %q: want binaries, os-images or files", parts[0])
	}
	ref.Name, ref.Version = parts[1], parts[2]
	if err := ref.Validate(); err != nil {
		return artifacts.Ref{}, "", err
	}
	file := strings.TrimSuffix(parts[3], checksumSuffix)
	if ref.Kind == artifacts.FileSet {
		if err := artifacts.ValidateSetPath(file); err != nil {
			return artifacts.Ref{}, "", err
		}
	} else if err := artifacts.ValidateFileName(file); err != nil {
		return artifacts.Ref{}, "", err
	}
	return ref, parts[3], nil
}
