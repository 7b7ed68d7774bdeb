package fileserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

type site struct {
	reg    *testregistry.Secure
	client *siteregistry.Client
	url    string
}

func startSite(t *testing.T) *site {
	t.Helper()
	reg := testregistry.StartSecure(t)
	client, err := siteregistry.New(siteregistry.Config{Registry: reg.Addr + "/site", Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&Handler{Registry: client})
	t.Cleanup(srv.Close)
	return &site{reg: reg, client: client, url: srv.URL}
}

func (s *site) upload(t *testing.T, ref artifacts.Ref, file string, size int) (siteregistry.Pushed, []byte) {
	t.Helper()
	data := make([]byte, size)
	_, _ = rand.Read(data)
	path := filepath.Join(t.TempDir(), file)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pushed, err := s.client.PushFile(ctx, ref, path, siteregistry.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pushed, data
}

func get(t *testing.T, method, url string) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// TestOSImageWithItsChecksum is what a BareMetalHost's image.url and image.checksum read.
func TestOSImageWithItsChecksum(t *testing.T) {
	s := startSite(t)
	ref := artifacts.Ref{Kind: artifacts.OSImage, Name: "ubuntu", Version: "24.04"}
	pushed, data := s.upload(t, ref, "ubuntu-24.04.qcow2", 3<<20+7)
	imageURL := s.url + "/os-images/ubuntu/24.04/ubuntu-24.04.qcow2"

	resp, body, err := get(t, http.MethodGet, imageURL)
	if err != nil || resp.StatusCode != http.StatusOK || len(body) != len(data) || string(body) != string(data) {
		t.Fatalf("GET image: %s, %d bytes, %v", resp.Status, len(body), err)
	}
	if resp.Header.Get("ETag") != `"`+pushed.File.Digest.String()+`"` {
		t.Fatalf("ETag %q", resp.Header.Get("ETag"))
	}
	resp, sum, err := get(t, http.MethodGet, imageURL+".sha256sum")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET checksum: %s, %v", resp.Status, err)
	}
	want := sha256.Sum256(data)
	if string(sum) != hex.EncodeToString(want[:])+"  ubuntu-24.04.qcow2\n" {
		t.Fatalf("checksum file %q does not match the image", sum)
	}
	// The checksum file is what sha256sum -c reads: check the image with it, as Ironic does.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ubuntu-24.04.qcow2"), body, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SUMS"), sum, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runIn(dir, "sha256sum", "-c", "SUMS"); err != nil {
		t.Fatalf("sha256sum -c: %v: %s", err, out)
	}

	resp, body, _ = get(t, http.MethodHead, imageURL)
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(data)) || len(body) != 0 {
		t.Fatalf("HEAD: %s, length %d", resp.Status, resp.ContentLength)
	}
	req, _ := http.NewRequest(http.MethodGet, imageURL, nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET: %v, %v", r, err)
	} else {
		_ = r.Body.Close()
	}
}

func TestOnlyWhatWasUploadedIsServed(t *testing.T) {
	s := startSite(t)
	s.upload(t, artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "1.0"}, "tool", 100)
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/binaries/tool/1.0/tool", 200, ""},
		{"GET", "/binaries/tool/1.0/other", 404, "binaries/tool:1.0 holds tool, not other"},
		{"GET", "/binaries/tool/2.0/tool", 404, "binaries/tool:2.0 is not in the site registry"},
		{"GET", "/os-images/tool/1.0/tool", 404, "os-images/tool:1.0 is not in the site registry"},
		{"GET", "/binaries/tool/1.0", 404, "want /binaries/NAME/VERSION/FILE"},
		{"GET", "/etc/passwd/x/y", 404, `unknown folder "etc"`},
		{"GET", "/binaries/../1.0/tool", 404, `name ".."`},
		{"GET", "/binaries/..%2f..%2fetc/1.0/passwd", 404, `name ".."`},
		{"GET", "/binaries/tool/1.0/..", 404, `file name ".."`},
		{"GET", "/binaries/tool/1.0/.hidden", 404, `file name ".hidden"`},
		{"PUT", "/binaries/tool/1.0/tool", 405, "read-only"},
		{"DELETE", "/binaries/tool/1.0/tool", 405, "read-only"},
		{"GET", "/healthz", 200, "ok"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body, err := get(t, tc.method, s.url+tc.path)
			if err != nil || resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) {
				t.Fatalf("%s %s: %s %q, %v; want %d %q", tc.method, tc.path, resp.Status, body, err, tc.status, tc.body)
			}
		})
	}
}

func TestCorruptBlobIsNotServedWhole(t *testing.T) {
	s := startSite(t)
	pushed, data := s.upload(t, artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "1"}, "tool", 1<<20)
	hexd := pushed.File.Digest.Encoded()
	blob := filepath.Join(s.reg.Storage, "docker/registry/v2/blobs/sha256", hexd[:2], hexd, "data")
	raw, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 0xff
	if err := os.WriteFile(blob, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	resp, body, err := get(t, http.MethodGet, s.url+"/binaries/tool/1/tool")
	if err == nil || len(body) == len(data) {
		t.Fatalf("a corrupt blob was served whole: %s, %d bytes, %v", resp.Status, len(body), err)
	}
	t.Logf("the client saw %d of %d bytes, then: %v", len(body), len(data), err)
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/binaries/tool/1.0/tool", "/os-images/u/24.04/u.img.sha256sum", "/binaries/../x/y", "//a/b/c", "/binaries/a/b/c/d",
		"/files/kubespray/v2.28.0/dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm", "/files/k/1/a/../b", "/files/k/1/a//b.sha256sum"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		ref, file, err := parsePath(p)
		if err != nil {
			return
		}
		elements := strings.Split(p, "/")
		validFile := artifacts.ValidateFileName
		if ref.Kind == artifacts.FileSet {
			validFile = artifacts.ValidateSetPath
		}
		if ref.Validate() != nil || validFile(strings.TrimSuffix(file, checksumSuffix)) != nil ||
			slices.Contains(elements, "..") || slices.Contains(elements, ".") {
			t.Fatalf("parsePath(%q) accepted %v %q", p, ref, file)
		}
	})
}

func runIn(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
