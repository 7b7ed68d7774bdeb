package siteregistry

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func clientFor(t *testing.T, r *testregistry.Secure, mutate func(*Config)) *Client {
	t.Helper()
	cfg := Config{Registry: r.Addr + "/site", Username: r.Username, Password: r.Password, CAFile: r.CAFile}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func randomFile(t *testing.T, name string, size int) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

func readBack(t *testing.T, c *Client, ref artifacts.Ref) (Artifact, []byte) {
	t.Helper()
	ctx := testContext(t)
	a, err := c.Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	return a, readFile(t, c, a)
}

// readFile reads an artifact's file through OpenFile, digest-checked.
func readFile(t *testing.T, c *Client, a Artifact) []byte {
	t.Helper()
	rc, err := c.OpenFile(testContext(t), a)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPushFileThenReadItBack(t *testing.T) {
	reg := testregistry.StartSecure(t)
	c := clientFor(t, reg, nil)
	ctx := testContext(t)
	path, data := randomFile(t, "tool-linux-amd64", 5<<20+123)
	ref := artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "1.0.0"}
	var progress []Progress
	pushed, err := c.PushFile(ctx, ref, path, PushOptions{ChunkSize: 1 << 20, StateDir: t.TempDir(), Progress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if pushed.Reference != reg.Addr+"/site/binaries/tool:1.0.0" || pushed.Sent != int64(len(data)) || pushed.AlreadyThere {
		t.Fatalf("pushed = %+v", pushed)
	}
	// One report before the first chunk, one after each of the 6.
	if len(progress) != 7 || progress[6].Done != int64(len(data)) {
		t.Fatalf("progress = %+v", progress)
	}
	a, got := readBack(t, c, ref)
	if !bytes.Equal(got, data) || a.FileName() != "tool-linux-amd64" || a.File.Digest != pushed.File.Digest || a.Manifest.Digest != pushed.Manifest.Digest {
		t.Fatalf("read back %d bytes as %+v, want %d bytes as %+v", len(got), a, len(data), pushed)
	}

	// The same file again: nothing sent, the same manifest.
	again, err := c.PushFile(ctx, ref, path, PushOptions{})
	if err != nil || !again.AlreadyThere || again.Sent != 0 || again.Manifest.Digest != pushed.Manifest.Digest {
		t.Fatalf("second push = %+v, %v", again, err)
	}

	// Another file under the same version is refused, unless replacing is asked for.
	other, _ := randomFile(t, "tool-linux-amd64", 1000)
	if _, err := c.PushFile(ctx, ref, other, PushOptions{}); err == nil || !strings.Contains(err.Error(), "a different file: upload it as a new version, or pass --replace") {
		t.Fatalf("push of another file under 1.0.0: %v", err)
	}
	if _, got := readBack(t, c, ref); !bytes.Equal(got, data) {
		t.Fatal("the refused push changed the version's file")
	}
	if _, err := c.PushFile(ctx, ref, other, PushOptions{Replace: true}); err != nil {
		t.Fatal(err)
	}
	if _, got := readBack(t, c, ref); len(got) != 1000 {
		t.Fatalf("after --replace the version holds %d bytes", len(got))
	}

	// The wrong kind is not read as this one.
	if _, err := c.Resolve(ctx, artifacts.Ref{Kind: artifacts.OSImage, Name: "tool", Version: "1.0.0"}); !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("os-image tool:1.0.0 resolved: %v", err)
	}
}

func TestPushIsRefusedWithoutTheSiteCredentials(t *testing.T) {
	reg := testregistry.StartSecure(t)
	path, _ := randomFile(t, "tool", 100)
	ref := artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "1"}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		// The registry answers with a basic challenge, which an anonymous client cannot meet.
		{"anonymous", func(c *Config) { c.Username, c.Password = "", "" }, "basic credential not found"},
		{"wrong password", func(c *Config) { c.Password = "guess" }, "401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := clientFor(t, reg, tc.mutate).PushFile(testContext(t), ref, path, PushOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("push: %v, want %q", err, tc.want)
			}
		})
	}
	// Nor does a client that does not trust the site's CA send anything.
	_, err := clientFor(t, reg, func(c *Config) { c.CAFile = "" }).PushFile(testContext(t), ref, path, PushOptions{})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("push without the CA: %v", err)
	}
	if _, err := clientFor(t, reg, nil).Resolve(testContext(t), ref); !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("after refused pushes: %v, want not found", err)
	}
}

// cuttingTransport breaks the connection once budget bytes of request bodies have gone out, as
// a network that drops mid-upload.
type cuttingTransport struct {
	base   http.RoundTripper
	budget atomic.Int64
	sent   atomic.Int64
}

func (c *cuttingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req = req.Clone(req.Context())
		req.Body = &cuttingBody{ReadCloser: req.Body, t: c}
	}
	return c.base.RoundTrip(req)
}

type cuttingBody struct {
	io.ReadCloser
	t *cuttingTransport
}

var errCut = errors.New("connection cut by the test")

func (b *cuttingBody) Read(p []byte) (int, error) {
	left := b.t.budget.Load() - b.t.sent.Load()
	if left <= 0 {
		return 0, errCut
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.ReadCloser.Read(p)
	b.t.sent.Add(int64(n))
	return n, err
}

func TestInterruptedUploadResumes(t *testing.T) {
	reg := testregistry.StartSecure(t)
	path, data := randomFile(t, "ubuntu.img", 10<<20)
	ref := artifacts.Ref{Kind: artifacts.OSImage, Name: "ubuntu", Version: "24.04"}
	state := t.TempDir()
	opts := PushOptions{ChunkSize: 1 << 20, StateDir: state}

	// The network drops in the middle of the fifth chunk.
	cut := &cuttingTransport{base: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: reg.CAs}}}
	cut.budget.Store(4<<20 + 300<<10)
	first, err := clientFor(t, reg, func(c *Config) { c.Transport = cut }).PushFile(testContext(t), ref, path, opts)
	if err == nil || !strings.Contains(err.Error(), "sending bytes 4194304-5242879") || strings.Contains(err.Error(), "_state") {
		t.Fatalf("interrupted push: %v", err)
	}
	if first.Sent != 4<<20 {
		t.Fatalf("the interrupted run had 4 MiB acknowledged, it says %d", first.Sent)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 1 {
		t.Fatalf("state dir holds %d files, want the interrupted upload's", len(entries))
	}

	c := clientFor(t, reg, nil)
	second, err := c.PushFile(testContext(t), ref, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	// It resumes from what the registry holds: at least the acknowledged chunks, and sends
	// only the rest.
	if second.ResumedAt < 4<<20 || second.ResumedAt > 5<<20 || second.Sent != int64(len(data))-second.ResumedAt {
		t.Fatalf("resumed push = %+v", second)
	}
	t.Logf("resumed at %d of %d bytes, sent %d", second.ResumedAt, len(data), second.Sent)
	if _, got := readBack(t, c, ref); !bytes.Equal(got, data) {
		t.Fatal("the resumed upload's file differs")
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Fatalf("state dir holds %d files after the upload finished", len(entries))
	}
}

func TestBlobWithAnotherDigestIsRefused(t *testing.T) {
	reg := testregistry.StartSecure(t)
	c := clientFor(t, reg, nil)
	ctx := testContext(t)
	path, _ := randomFile(t, "tool", 3000)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	repo, err := c.Repository("binaries/tool")
	if err != nil {
		t.Fatal(err)
	}
	// The descriptor claims other bytes than the file's.
	claimed := ocispec.Descriptor{MediaType: artifacts.LayerMediaType, Digest: digest.Digest("sha256:" + strings.Repeat("ab", 32)), Size: 3000}
	state := t.TempDir()
	_, _, err = c.uploadBlob(ctx, repo, claimed, f, "tool", PushOptions{StateDir: state, ChunkSize: 1000})
	if err == nil || !strings.Contains(err.Error(), "DIGEST_INVALID") {
		t.Fatalf("upload under another digest: %v", err)
	}
	if ok, err := repo.Blobs().Exists(ctx, claimed); ok || err != nil {
		t.Fatalf("the registry holds the refused blob: %v, %v", ok, err)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Fatalf("a refused upload left %d state files", len(entries))
	}
}

func TestUploadOverTheBoundIsRefused(t *testing.T) {
	reg := testregistry.StartSecure(t)
	c := clientFor(t, reg, nil)
	path, _ := randomFile(t, "big.img", 3<<20)
	ref := artifacts.Ref{Kind: artifacts.OSImage, Name: "big", Version: "1"}
	_, err := c.PushFile(testContext(t), ref, path, PushOptions{MaxSize: 2 << 20})
	if err == nil || !strings.Contains(err.Error(), "is 3.0 MiB, over the upload bound of 2.0 MiB (--max-size)") {
		t.Fatalf("push over the bound: %v", err)
	}
	if _, err := c.Resolve(testContext(t), ref); !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("after the refusal: %v", err)
	}
}

func TestCorruptBlobFailsTheRead(t *testing.T) {
	reg := testregistry.StartSecure(t)
	c := clientFor(t, reg, nil)
	path, _ := randomFile(t, "tool", 4096)
	ref := artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "1"}
	pushed, err := c.PushFile(testContext(t), ref, path, PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Flip a byte where Distribution keeps the blob: it serves what it has.
	hex := pushed.File.Digest.Encoded()
	blob := filepath.Join(reg.Storage, "docker/registry/v2/blobs/sha256", hex[:2], hex, "data")
	raw, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	raw[100] ^= 0xff
	if err := os.WriteFile(blob, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := c.Resolve(testContext(t), ref)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.OpenFile(testContext(t), a)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	if _, err := io.ReadAll(rc); err == nil || !strings.Contains(err.Error(), "mismatched digest") {
		t.Fatalf("reading a corrupt blob: %v", err)
	}
}
