package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

type uploaded struct {
	Reference, ManifestDigest, FileDigest, Source string
	Files                                         int
	Size, ResumedAt                               int64
	Sent                                          *int64
}

// siteEnv points the upload command at a secure test registry through its environment
// variables, as a site's scripts would.
func siteEnv(t *testing.T, reg *testregistry.Secure) {
	t.Setenv("BPA_REGISTRY", reg.Addr+"/site")
	t.Setenv("BPA_REGISTRY_USERNAME", reg.Username)
	t.Setenv("BPA_REGISTRY_PASSWORD", reg.Password)
}

func writeRandom(t *testing.T, name string, size int) string {
	t.Helper()
	data := make([]byte, size)
	_, _ = rand.Read(data)
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUploadBinaryAndOSImage(t *testing.T) {
	reg := testregistry.StartSecure(t)
	siteEnv(t, reg)
	state := t.TempDir()
	bin := writeRandom(t, "tool", 3<<20)
	code, stdout, stderr := run("upload", "binary", "tool:1.2.0", bin, "--ca-file", reg.CAFile, "--chunk-size", "1Mi", "--state-dir", state, "-o", "json")
	if code != 0 {
		t.Fatalf("upload binary: exit %d: %s", code, stderr)
	}
	var res uploaded
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if res.Reference != reg.Addr+"/site/binaries/tool:1.2.0" || res.Size != 3<<20 || res.Sent == nil || *res.Sent != 3<<20 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(stderr, "uploading tool: 3.0 MiB of 3.0 MiB (100%)") {
		t.Fatalf("no progress on stderr: %s", stderr)
	}

	// The OS image: text output names the reference, the manifest and the file.
	img := writeRandom(t, "ubuntu-24.04.img", 1<<20)
	code, stdout, stderr = run("upload", "os-image", "ubuntu:24.04", img, "--ca-file", reg.CAFile, "--state-dir", state)
	if code != 0 || !strings.HasPrefix(stdout, reg.Addr+"/site/os-images/ubuntu:24.04 sha256:") || !strings.Contains(stdout, " file sha256:") {
		t.Fatalf("upload os-image: exit %d: %s%s", code, stdout, stderr)
	}
	client, err := siteregistry.New(siteregistry.Config{Registry: reg.Addr + "/site", Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	a, err := client.Resolve(context.Background(), artifacts.Ref{Kind: artifacts.OSImage, Name: "ubuntu", Version: "24.04"})
	if err != nil || a.FileName() != "ubuntu-24.04.img" {
		t.Fatalf("resolve: %+v, %v", a, err)
	}
}

func TestUploadPasswordFromStdin(t *testing.T) {
	reg := testregistry.StartSecure(t)
	t.Setenv("BPA_REGISTRY_PASSWORD", "")
	bin := writeRandom(t, "tool", 100)
	root := cli.NewRootCommand()
	var out, errb bytes.Buffer
	root.SetArgs([]string{"upload", "binary", "tool:1", bin, "--registry", reg.Addr, "--username", reg.Username, "--password-stdin", "--ca-file", reg.CAFile, "--state-dir", t.TempDir()})
	root.SetIn(strings.NewReader(reg.Password + "\n"))
	root.SetOut(&out)
	root.SetErr(&errb)
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("upload with the password on stdin: %v", err)
	}
	if !strings.HasPrefix(out.String(), reg.Addr+"/binaries/tool:1 ") {
		t.Fatalf("stdout: %s", out.String())
	}
}

func TestUploadRefuses(t *testing.T) {
	reg := testregistry.StartSecure(t)
	siteEnv(t, reg)
	bin := writeRandom(t, "tool", 2<<20)
	other := writeRandom(t, "tool", 10)
	state := t.TempDir()
	if code, _, stderr := run("upload", "binary", "tool:1", bin, "--ca-file", reg.CAFile, "--state-dir", state); code != 0 {
		t.Fatal(stderr)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no registry", map[string]string{"BPA_REGISTRY": ""}, []string{"binary", "tool:1", bin}, "--registry: name the site registry"},
		{"no password", map[string]string{"BPA_REGISTRY_PASSWORD": ""}, []string{"binary", "tool:1", bin}, "no password (set BPA_REGISTRY_PASSWORD"},
		{"wrong password", map[string]string{"BPA_REGISTRY_PASSWORD": "guess"}, []string{"binary", "tool:2", bin}, "401"},
		{"bad name", nil, []string{"binary", "../tool:1", bin}, `binary "../tool:1": name "../tool"`},
		{"no version", nil, []string{"os-image", "ubuntu", bin}, "want NAME:VERSION"},
		{"bad file name", nil, []string{"binary", "tool:1", writeRandom(t, "-rf", 1)}, `file name "-rf"`},
		{"missing file", nil, []string{"binary", "tool:1", "/nonexistent/tool"}, "no such file"},
		{"over the bound", nil, []string{"binary", "tool:3", bin, "--max-size", "1Mi"}, "is 2.0 MiB, over the upload bound of 1.0 MiB (--max-size)"},
		{"bad bound", nil, []string{"binary", "tool:3", bin, "--max-size", "lots"}, `--max-size "lots": want a positive size`},
		{"another file, same version", nil, []string{"binary", "tool:1", other}, "a different file: upload it as a new version, or pass --replace"},
		{"bad output", nil, []string{"binary", "tool:1", bin, "-o", "yaml"}, `--output "yaml"`},
		{"bad list line", nil, []string{"images", "--from", listFile(t, "a b c\n")}, "images list line 1: want SOURCE [TARGET], got 3 fields"},
		{"untagged source", nil, []string{"images", "--from", listFile(t, "# mirror\n127.0.0.1:1/app\n")}, `images list line 2: source "127.0.0.1:1/app": name a tag or a digest`},
		{"digest without target", nil, []string{"images", "--from", listFile(t, "127.0.0.1:1/app@sha256:"+strings.Repeat("a", 64))}, "give the TARGET path:tag"},
		{"bad target", nil, []string{"images", "--from", listFile(t, "127.0.0.1:1/app:1 App:1")}, `target "App:1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"upload"}, tc.args...)
			args = append(args, "--ca-file", reg.CAFile)
			if tc.args[0] != "images" {
				args = append(args, "--state-dir", state)
			}
			code, stdout, stderr := run(args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code == 0 || stdout != "" || !strings.Contains(lines[len(lines)-1], tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want the last line to say %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

func listFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "images.txt")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUploadImagesFromAList(t *testing.T) {
	reg := testregistry.StartSecure(t)
	siteEnv(t, reg)
	// A source registry (a mirror the operator can reach) with one image, and an OCI layout
	// on disk with another.
	mirror := testregistry.Start(t)
	app, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	appRef, err := name.ParseReference(mirror+"/library/app:1.0", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(appRef, app); err != nil {
		t.Fatal(err)
	}
	tool, err := random.Image(2048, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(tool, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "2.0"})); err != nil {
		t.Fatal(err)
	}
	list := listFile(t, "# the site's images\n"+mirror+"/library/app:1.0\n\noci:"+dir+":2.0 tools/tool:2.0  # from disk\n")

	for run_ := 1; run_ <= 2; run_++ { // the second run finds everything there and is still right
		code, stdout, stderr := run("upload", "images", "--from", list, "--ca-file", reg.CAFile, "--source-plain-http", "--source-anonymous", "-o", "json")
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", run_, code, stderr)
		}
		var res []uploaded
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		appDigest, _ := app.Digest()
		toolDigest, _ := tool.Digest()
		if len(res) != 2 || res[0].Reference != reg.Addr+"/site/library/app:1.0" || res[0].ManifestDigest != appDigest.String() ||
			res[1].Reference != reg.Addr+"/site/tools/tool:2.0" || res[1].ManifestDigest != toolDigest.String() {
			t.Fatalf("run %d: %+v", run_, res)
		}
		if !strings.Contains(stderr, "copying 2/2 oci:") {
			t.Fatalf("run %d: no progress: %s", run_, stderr)
		}
	}
}

// TestUploadFileSet uploads a directory as kubespray's files_repo would hold it, and reads it
// back through serve-files' paths.
func TestUploadFileSet(t *testing.T) {
	reg := testregistry.StartSecure(t)
	siteEnv(t, reg)
	dir := t.TempDir()
	kubeadm := filepath.Join(dir, "dl.k8s.io", "release", "v1.33.1", "bin", "linux", "amd64", "kubeadm")
	if err := os.MkdirAll(filepath.Dir(kubeadm), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeadm, bytes.Repeat([]byte("k"), 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "runc.amd64"), []byte("runc"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run("upload", "file-set", "kubespray:v2.28.0", dir, "--ca-file", reg.CAFile, "--state-dir", t.TempDir(), "-o", "json")
	if code != 0 {
		t.Fatalf("upload file-set: exit %d: %s", code, stderr)
	}
	var res uploaded
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if res.Reference != reg.Addr+"/site/files/kubespray:v2.28.0" || res.Files != 2 || res.Size != 2<<20+4 || *res.Sent != res.Size {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(stderr, "uploading dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm: 2.0 MiB of 2.0 MiB (100%)") {
		t.Fatalf("no progress on stderr: %s", stderr)
	}
	// Text output, the second time: nothing sent.
	code, stdout, stderr = run("upload", "file-set", "kubespray:v2.28.0", dir, "--ca-file", reg.CAFile, "--state-dir", t.TempDir())
	if code != 0 || !strings.HasPrefix(stdout, reg.Addr+"/site/files/kubespray:v2.28.0 sha256:") || !strings.Contains(stdout, " 2 files 2.0 MiB") {
		t.Fatalf("second upload: exit %d: %s%s", code, stdout, stderr)
	}
	// A file, not a directory; and a set bigger than the bound.
	if code, _, stderr := run("upload", "file-set", "kubespray:v2", kubeadm, "--ca-file", reg.CAFile); code == 0 || !strings.Contains(stderr, "kubeadm: not a directory") {
		t.Fatalf("upload of a file as a set: exit %d: %s", code, stderr)
	}
	if code, _, stderr := run("upload", "file-set", "kubespray:v3", dir, "--ca-file", reg.CAFile, "--max-size", "1Mi"); code == 0 || !strings.Contains(stderr, "over the upload bound of 1.0 MiB") {
		t.Fatalf("upload over the bound: exit %d: %s", code, stderr)
	}
}

func TestServeFilesServesAnUpload(t *testing.T) {
	reg := testregistry.StartSecure(t)
	siteEnv(t, reg)
	img := writeRandom(t, "ubuntu.img", 100<<10)
	if code, _, stderr := run("upload", "os-image", "ubuntu:24.04", img, "--ca-file", reg.CAFile, "--state-dir", t.TempDir()); code != 0 {
		t.Fatal(stderr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- cli.ExecuteContext(ctx, []string{"serve-files", "--listen", addr, "--ca-file", reg.CAFile}, io.Discard, &stderr)
	}()
	want, _ := os.ReadFile(img)
	var body []byte
	t.Cleanup(cancel)
	testutil.Within(t, "serve-files to serve the upload", func() error {
		resp, err := http.Get("http://" + addr + "/os-images/ubuntu/24.04/ubuntu.img")
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		body, err = io.ReadAll(resp.Body)
		return err
	})
	if !bytes.Equal(body, want) {
		t.Fatalf("served %d bytes, uploaded %d", len(body), len(want))
	}
	cancel()
	if code := <-exited; code != 0 {
		t.Fatalf("serve-files exited %d after its context ended: %s", code, stderr.String())
	}
}

func TestRegistryGateRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"registry-gate"}, `required flag(s) "upstream" not set`},
		{[]string{"registry-gate", "--upstream", "https://127.0.0.1:5001"}, "want http://HOST:PORT, the registry beside the gate"},
		{[]string{"registry-gate", "--upstream", "http://127.0.0.1:5001/v2"}, "want http://HOST:PORT"},
		{[]string{"registry-gate", "--upstream", "http://127.0.0.1:5001", "--max-upload-size", "0"}, "--max-upload-size \"0\": want a positive size"},
		{[]string{"registry-gate", "--upstream", "http://127.0.0.1:5001", "--tls-cert-file", "/x"}, "--tls-cert-file and --tls-key-file go together"},
		{[]string{"registry-gate", "--upstream", "http://127.0.0.1:5001", "--tls-cert-file", "/nope.crt", "--tls-key-file", "/nope.key"}, "--tls-cert-file: open /nope.crt"},
	} {
		code, _, stderr := run(tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
}
