// Package registrygate fronts the site registry with the one rule Distribution has no setting
// for: a bound on the size of an upload. Every request passes through to the registry, which
// keeps authenticating and checking digests; a blob upload whose bytes would go past the bound
// is refused with 413 and the distribution spec's SIZE_INVALID error, before the registry
// stores the byte that crosses it. The bound holds across the chunks of a chunked upload and
// across resumed ones: each chunk is measured from the offset the registry holds.
package registrygate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

// Gate is the handler in front of the registry.
type Gate struct {
	// Upstream is the registry, http://127.0.0.1:PORT beside the gate.
	Upstream *url.URL
	// MaxUpload bounds one blob's size, in bytes.
	MaxUpload int64
	// Transport reaches the upstream; nil: http.DefaultTransport.
	Transport http.RoundTripper
	Log       *slog.Logger
}

// uploadPath is a blob upload session (PATCH, PUT) or its start (POST, which may carry the
// whole blob).
var uploadPath = regexp.MustCompile(`^/v2/.+/blobs/uploads/([^/]*)$`)

// Handler is the gate's http.Handler.
func (g *Gate) Handler() http.Handler {
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(g.Upstream)
			r.Out.Host = r.In.Host
			r.SetXForwarded()
		},
		Transport: g.Transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// The proxy hands over its outgoing request, whose body may be wrapped: the bounded
			// body travels in the context.
			if b, ok := r.Context().Value(bodyKey{}).(*boundedBody); ok && b.over.Load() {
				g.refuse(w, b.offset+b.room+1)
				return
			}
			g.log().Error("reaching the registry", "method", r.Method, "path", r.URL.Path, "error", err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !uploadPath.MatchString(r.URL.Path) || (r.Method != http.MethodPatch && r.Method != http.MethodPut && r.Method != http.MethodPost) {
			proxy.ServeHTTP(w, r) //nolint:gosec // G704: Rewrite sends every request to the fixed upstream, never where the request says
			return
		}
		offset, err := g.offset(r)
		if err != nil {
			g.log().Error("asking the registry for an upload's offset", "path", r.URL.Path, "error", err)
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		room := g.MaxUpload - offset
		if r.ContentLength > room {
			g.refuse(w, offset+r.ContentLength)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			b := &boundedBody{ReadCloser: r.Body, room: room, offset: offset}
			r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, b))
			r.Body = b
		}
		proxy.ServeHTTP(w, r) //nolint:gosec // G704: Rewrite sends every request to the fixed upstream, never where the request says
	})
}

// offset is how many bytes the upload already holds, as the registry answers for the session
// (0 for a new one). The client's Content-Range is not taken for it: a client could understate
// it, and the registry is the one that knows.
func (g *Gate) offset(r *http.Request) (int64, error) {
	if r.Method == http.MethodPost || strings.HasSuffix(r.URL.Path, "/") {
		return 0, nil
	}
	u := *g.Upstream
	u.Path, u.RawQuery = r.URL.Path, r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	req.Host = r.Host
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	t := g.Transport
	if t == nil {
		t = http.DefaultTransport
	}
	resp, err := t.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	defer func() { _, _ = io.Copy(io.Discard, resp.Body); _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusNoContent {
		// Not a session the registry knows, or not this client's: the registry answers the
		// upload itself, and anything it stores is still bounded from 0.
		return 0, nil
	}
	_, last, ok := strings.Cut(strings.TrimPrefix(resp.Header.Get("Range"), "bytes="), "-")
	n, err := strconv.ParseInt(last, 10, 64)
	if !ok || err != nil || n <= 0 {
		return 0, nil
	}
	return n + 1, nil
}

// refuse answers 413 for an upload of at least size bytes.
func (g *Gate) refuse(w http.ResponseWriter, size int64) {
	msg := fmt.Sprintf("blob upload refused: %d bytes or more, over the site registry's bound of %s (%d bytes)", size, artifacts.HumanBytes(g.MaxUpload), g.MaxUpload)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{"code": "SIZE_INVALID", "message": msg}}})
}

func (g *Gate) log() *slog.Logger {
	if g.Log == nil {
		return slog.Default()
	}
	return g.Log
}

type bodyKey struct{}

// errOverBound ends a body that would take the upload past the bound.
var errOverBound = errors.New("over the upload bound")

// boundedBody passes room bytes, then fails: the registry never receives the byte that
// crosses the bound.
type boundedBody struct {
	io.ReadCloser
	room, offset int64
	read         atomic.Int64
	over         atomic.Bool
}

func (b *boundedBody) Read(p []byte) (int, error) {
	left := b.room - b.read.Load()
	if left <= 0 {
		// One more byte tells a body that ends exactly at the bound from one that goes on.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			b.over.Store(true)
			return 0, errOverBound
		}
		return 0, err
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	return n, err
}
