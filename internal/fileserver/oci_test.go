package fileserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
)

// pushImage puts a small image (a config and one layer) into the site registry at name:tag.
func (s *site) pushImage(t *testing.T, name, tag string, layer []byte) ocispec.Descriptor {
	t.Helper()
	repo, err := s.client.Repository(name)
	if err != nil {
		t.Fatal(err)
	}
	return testregistry.PushImage(t, repo, tag, layer)
}

// TestImagesArePulledThroughTheReadOnlyView pulls with oras-go, an OCI client, anonymously,
// over the view's /v2/ (the registry itself asks for the account).
func TestImagesArePulledThroughTheReadOnlyView(t *testing.T) {
	s := startSite(t)
	pushed := s.pushImage(t, "library/pause", "3.10", []byte("a layer"))
	u, _ := url.Parse(s.url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	view, err := remote.NewRepository(u.Host + "/library/pause")
	if err != nil {
		t.Fatal(err)
	}
	view.PlainHTTP = true
	dst := memory.New()
	got, err := oras.Copy(ctx, view, "3.10", dst, "3.10", oras.DefaultCopyOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != pushed.Digest {
		t.Fatalf("pulled %s through the view, pushed %s", got.Digest, pushed.Digest)
	}
	// By digest too, as containerd asks once it resolved the tag.
	if _, err := oras.Copy(ctx, view, pushed.Digest.String(), memory.New(), "", oras.DefaultCopyOptions); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/v2/", 200, ""},
		{"GET", "/v2/library/pause/manifests/3.11", 404, "MANIFEST_UNKNOWN"},
		{"GET", "/v2/library/other/manifests/3.10", 404, "MANIFEST_UNKNOWN"},
		{"GET", "/v2/library/pause/blobs/sha256:" + strings.Repeat("0", 64), 404, "BLOB_UNKNOWN"},
		{"GET", "/v2/library/pause/blobs/3.10", 404, "NAME_INVALID"},
		{"GET", "/v2/Library/pause/manifests/3.10", 404, "NAME_INVALID"},
		{"GET", "/v2/library/../pause/manifests/3.10", 404, "NAME_INVALID"},
		{"GET", "/v2/library/pause/tags/list", 404, "NAME_INVALID"},
		{"POST", "/v2/library/pause/blobs/uploads/", 405, ""},
		{"PUT", "/v2/library/pause/manifests/3.10", 405, ""},
		{"DELETE", "/v2/library/pause/manifests/3.10", 405, ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body, err := get(t, tc.method, s.url+tc.path)
			if err != nil || resp.StatusCode != tc.status {
				t.Fatalf("%s %s: %s %q, %v; want %d", tc.method, tc.path, resp.Status, body, err, tc.status)
			}
			if tc.code == "" {
				return
			}
			var e struct{ Errors []struct{ Code string } }
			if json.Unmarshal(body, &e) != nil || len(e.Errors) != 1 || e.Errors[0].Code != tc.code {
				t.Fatalf("%s %s: body %q, want error code %s", tc.method, tc.path, body, tc.code)
			}
		})
	}
	// HEAD of a manifest answers its digest, as containerd's resolver asks.
	resp, _, _ := get(t, http.MethodHead, s.url+"/v2/library/pause/manifests/3.10")
	if resp.StatusCode != 200 || resp.Header.Get("Docker-Content-Digest") != pushed.Digest.String() || resp.Header.Get("Content-Type") != ocispec.MediaTypeImageManifest {
		t.Fatalf("HEAD manifest: %s %v", resp.Status, resp.Header)
	}
}

// TestCorruptLayerIsNotPulledWhole: a blob whose bytes no longer match its digest ends short.
func TestCorruptLayerIsNotPulledWhole(t *testing.T) {
	s := startSite(t)
	layer := []byte(strings.Repeat("layer", 50000))
	m := s.pushImage(t, "library/pause", "3.10", layer)
	var manifest ocispec.Manifest
	_, raw, _ := get(t, http.MethodGet, s.url+"/v2/library/pause/manifests/"+m.Digest.String())
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	d := manifest.Layers[0].Digest
	blob := filepath.Join(s.reg.Storage, "docker/registry/v2/blobs/sha256", d.Encoded()[:2], d.Encoded(), "data")
	data, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff
	if err := os.WriteFile(blob, data, 0o600); err != nil {
		t.Fatal(err)
	}
	resp, body, err := get(t, http.MethodGet, s.url+"/v2/library/pause/blobs/"+d.String())
	if err == nil || len(body) == len(layer) {
		t.Fatalf("a corrupt layer was served whole: %s, %d bytes, %v", resp.Status, len(body), err)
	}
}

// safeRepository is the distribution spec's repository name, written out here so the fuzz
// target checks the parser against the grammar rather than against itself.
var safeRepository = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$`)

func FuzzParseOCIPath(f *testing.F) {
	for _, s := range []string{"/v2/library/pause/manifests/3.10", "/v2/a/blobs/sha256:" + strings.Repeat("a", 64), "/v2/a/../b/manifests/x", "/v2/manifests/manifests/manifests/x", "/v2//blobs/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		req, err := parseOCIPath(p)
		if err != nil {
			return
		}
		if !safeRepository.MatchString(req.name) || strings.Contains(req.name, "..") || strings.HasPrefix(req.name, "/") ||
			strings.ContainsAny(req.reference, "/ \n") || req.reference == "" {
			t.Fatalf("parseOCIPath(%q) accepted %+v", p, req)
		}
	})
}
