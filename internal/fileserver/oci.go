package fileserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

// The read-only OCI view: the pulls of the distribution spec (GET and HEAD of /v2/, manifests
// and blobs), anonymous, so the nodes' containerd pulls the site's images without the account
// that can push. Nothing is cached: manifests are checked against their digest, blobs as they
// stream, as the files are.

// ociRequest is one pull request: a repository and a manifest reference or a blob digest.
type ociRequest struct {
	name      string
	manifest  bool
	reference string
}

// parseOCIPath reads /v2/NAME/manifests/REFERENCE and /v2/NAME/blobs/DIGEST.
func parseOCIPath(p string) (ociRequest, error) {
	rest := strings.TrimPrefix(p, "/v2/")
	for _, kind := range []string{"/manifests/", "/blobs/"} {
		i := strings.LastIndex(rest, kind)
		if i < 0 {
			continue
		}
		req := ociRequest{name: rest[:i], manifest: kind == "/manifests/", reference: rest[i+len(kind):]}
		if err := artifacts.ValidateRepository(req.name); err != nil {
			return ociRequest{}, err
		}
		if _, err := digest.Parse(req.reference); err != nil && (!req.manifest || artifacts.ValidateVersion(req.reference) != nil) {
			return ociRequest{}, fmt.Errorf("reference %q: not a tag or a digest", req.reference)
		}
		return req, nil
	}
	return ociRequest{}, errors.New("want /v2/NAME/manifests/REFERENCE or /v2/NAME/blobs/DIGEST")
}

func (h *Handler) serveOCI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	if r.URL.Path == "/v2/" || r.URL.Path == "/v2" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
		return
	}
	req, err := parseOCIPath(r.URL.Path)
	if err != nil {
		ociError(w, http.StatusNotFound, "NAME_INVALID", err.Error())
		return
	}
	repo, err := h.Registry.Repository(req.name)
	if err != nil {
		ociError(w, http.StatusNotFound, "NAME_INVALID", err.Error())
		return
	}
	// Tags hold no colon, digests do.
	what := req.name + ":" + req.reference
	if strings.Contains(req.reference, ":") {
		what = req.name + "@" + req.reference
	}
	upstream := func(err error) {
		code := "BLOB_UNKNOWN"
		if req.manifest {
			code = "MANIFEST_UNKNOWN"
		}
		if errors.Is(err, errdef.ErrNotFound) {
			ociError(w, http.StatusNotFound, code, what+" is not in the site registry")
			return
		}
		h.log().Error("reading the site registry", "what", what, "error", err)
		ociError(w, http.StatusBadGateway, "UNAVAILABLE", "cannot read "+what+" from the site registry")
	}
	if req.manifest {
		serveManifest(w, r, repo, req, upstream)
		return
	}
	h.serveBlob(w, r, repo, req, what, upstream)
}

// serveManifest serves a manifest of repo, checked against the digest it was asked by.
func serveManifest(w http.ResponseWriter, r *http.Request, repo *remote.Repository, req ociRequest, upstream func(error)) {
	desc, rc, err := repo.FetchReference(r.Context(), req.reference)
	if err != nil {
		upstream(err)
		return
	}
	defer func() { _ = rc.Close() }()
	if desc.Size > siteregistry.MaxManifestSize {
		upstream(fmt.Errorf("manifest of %d bytes, over the %d this serves", desc.Size, siteregistry.MaxManifestSize))
		return
	}
	raw, err := content.ReadAll(rc, desc)
	if err != nil {
		upstream(err)
		return
	}
	if d, err := digest.Parse(req.reference); err == nil && d != desc.Digest {
		upstream(fmt.Errorf("asked for %s, the registry answered %s", d, desc.Digest))
		return
	}
	w.Header().Set("Content-Type", desc.MediaType)
	w.Header().Set("Docker-Content-Digest", desc.Digest.String())
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	if r.Method == http.MethodGet {
		_, _ = w.Write(raw) //nolint:gosec // G705: a manifest checked against its digest, sent as its own media type, not HTML
	}
}

// serveBlob serves a blob of repo, every byte checked against its digest as it is sent.
func (h *Handler) serveBlob(w http.ResponseWriter, r *http.Request, repo *remote.Repository, req ociRequest, what string, upstream func(error)) {
	// HEAD asks the registry for the blob's size; GET fetches it in the same request.
	var desc ocispec.Descriptor
	var rc io.ReadCloser
	var err error
	if r.Method == http.MethodHead {
		desc, err = repo.Blobs().Resolve(r.Context(), req.reference)
	} else {
		desc, rc, err = repo.Blobs().FetchReference(r.Context(), req.reference)
	}
	if err != nil {
		upstream(err)
		return
	}
	if rc != nil {
		defer func() { _ = rc.Close() }()
	}
	if desc.Digest.String() != req.reference {
		upstream(fmt.Errorf("asked for %s, the registry answered %s", req.reference, desc.Digest))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Docker-Content-Digest", desc.Digest.String())
	w.Header().Set("ETag", `"`+desc.Digest.String()+`"`)
	w.Header().Set("Content-Length", strconv.FormatInt(desc.Size, 10))
	if rc == nil {
		return
	}
	if err := copyVerified(w, siteregistry.Verified(rc, desc, what)); err != nil {
		if r.Context().Err() == nil {
			h.log().Error("serving a blob", "what", what, "error", err)
		}
		panic(http.ErrAbortHandler)
	}
}

// ociError writes the distribution spec's error body.
func ociError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": message}}})
}
