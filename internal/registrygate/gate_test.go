package registrygate_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

const bound = 2 << 20

func randomFile(t *testing.T, size int) string {
	t.Helper()
	data := make([]byte, size)
	_, _ = rand.Read(data)
	path := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUploadsOverTheBoundAreRefused: the registry as the chart deploys it refuses any client's
// upload over the bound, whole or in chunks, and keeps taking those under it, with TLS and its
// account still in force.
func TestUploadsOverTheBoundAreRefused(t *testing.T) {
	reg := testregistry.StartBounded(t, bound)
	client, err := siteregistry.New(siteregistry.Config{Registry: reg.Addr + "/site", Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Chunked, as `upload` sends: exactly the bound passes; one byte more is refused at the
	// chunk that crosses it, after two chunks went in.
	if _, err := client.PushFile(ctx, artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "1"}, randomFile(t, bound), siteregistry.PushOptions{ChunkSize: 1 << 20}); err != nil {
		t.Fatalf("an upload of exactly the bound: %v", err)
	}
	state := t.TempDir()
	pushed, err := client.PushFile(ctx, artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "2"}, randomFile(t, bound+1), siteregistry.PushOptions{ChunkSize: 1 << 20, StateDir: state})
	if err == nil || !strings.Contains(err.Error(), "SIZE_INVALID: blob upload refused: 2097153 bytes or more, over the site registry's bound of 2.0 MiB (2097152 bytes)") {
		t.Fatalf("an upload one byte over the bound: %v", err)
	}
	if pushed.Sent != bound {
		t.Fatalf("sent %d bytes before the refusal, want the two chunks under the bound (%d)", pushed.Sent, bound)
	}
	t.Logf("refused after %d bytes: %v", pushed.Sent, err)
	// Resuming does not get round it: the gate counts from the registry's offset.
	if _, err := client.PushFile(ctx, artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "2"}, randomFile(t, bound+1), siteregistry.PushOptions{ChunkSize: 1 << 20, StateDir: state}); err == nil {
		t.Fatal("a resumed upload over the bound went through")
	}

	// Another OCI client (oras-go's monolithic push, a body of unknown length inside).
	store := memory.New()
	big := bytes.Repeat([]byte("x"), bound+100)
	layer, err := oras.PushBytes(ctx, store, ocispec.MediaTypeImageLayer, big)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Tag(ctx, layer, "big"); err != nil {
		t.Fatal(err)
	}
	repo, err := client.Repository("other/big")
	if err != nil {
		t.Fatal(err)
	}
	err = repo.Blobs().Push(ctx, layer, bytes.NewReader(big))
	if err == nil || !strings.Contains(err.Error(), "413") {
		t.Fatalf("oras-go's push of %d bytes: %v", len(big), err)
	}
	if ok, _ := repo.Blobs().Exists(ctx, layer); ok {
		t.Fatal("the registry holds the blob over the bound")
	}

	// A streamed chunk of no stated length is cut at the bound.
	streamOverTheBound(t, reg)

	// The account is still the registry's to check: a wrong password is refused.
	intruder, err := siteregistry.New(siteregistry.Config{Registry: reg.Addr + "/site", Username: reg.Username, Password: "guess", CAFile: reg.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := intruder.PushFile(ctx, artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "3"}, randomFile(t, 10), siteregistry.PushOptions{}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a push with a wrong password through the gate: %v", err)
	}
	// And what is under the bound reads back.
	a, err := client.Resolve(ctx, artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "1"})
	if err != nil || a.File.Size != bound {
		t.Fatalf("read back %+v, %v", a, err)
	}
}

// streamOverTheBound starts an upload and PATCHes a body of unknown length, one byte over the
// bound: the gate answers 413 and the registry holds no more than the bound.
func streamOverTheBound(t *testing.T, reg *testregistry.Secure) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: reg.CAs, MinVersion: tls.VersionTLS12}}}
	do := func(method, u string, body io.Reader) *http.Response {
		req, err := http.NewRequest(method, u, body)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(reg.Username, reg.Password)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	base := "https://" + reg.Addr
	resp := do(http.MethodPost, base+"/v2/site/streamed/blobs/uploads/", nil)
	_ = resp.Body.Close()
	loc, err := resp.Location()
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("starting an upload: %s, %v", resp.Status, err)
	}
	// io.MultiReader hides the length: the request goes chunked.
	resp = do(http.MethodPatch, loc.String(), io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("s"), bound+1))))
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "SIZE_INVALID") {
		t.Fatalf("a streamed chunk over the bound: %s %s", resp.Status, body)
	}
	resp = do(http.MethodGet, loc.String(), nil)
	_ = resp.Body.Close()
	if r := resp.Header.Get("Range"); resp.StatusCode == http.StatusNoContent && r != "" {
		_, last, _ := strings.Cut(r, "-")
		if n, _ := strconv.ParseInt(last, 10, 64); n >= bound {
			t.Fatalf("the registry holds %s of the refused upload", r)
		}
	}
}
