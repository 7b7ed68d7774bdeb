package charts_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

// rendered is every object of a multi-document YAML stream, by "Kind/name".
func rendered(t *testing.T, raw []byte) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(string(raw), "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			out[u.GetKind()+"/"+u.GetName()] = u
		}
	}
	return out
}

func secretData(t *testing.T, objs map[string]*unstructured.Unstructured, name string) map[string][]byte {
	t.Helper()
	s, ok := objs["Secret/"+name]
	if !ok {
		t.Fatalf("the chart renders no Secret %s", name)
	}
	data, _, _ := unstructured.NestedStringMap(s.Object, "data")
	out := map[string][]byte{}
	for k, v := range data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("Secret %s key %s: %v", name, k, err)
		}
		out[k] = b
	}
	return out
}

func container(t *testing.T, objs map[string]*unstructured.Unstructured, deployment string) map[string]any {
	t.Helper()
	cs := containers(t, objs, deployment)
	if len(cs) != 1 {
		t.Fatalf("Deployment %s: %d containers", deployment, len(cs))
	}
	for _, c := range cs {
		return c
	}
	return nil
}

// containers are a Deployment's containers by name.
func containers(t *testing.T, objs map[string]*unstructured.Unstructured, deployment string) map[string]map[string]any {
	t.Helper()
	d, ok := objs["Deployment/"+deployment]
	if !ok {
		t.Fatalf("the chart renders no Deployment %s", deployment)
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	out := map[string]map[string]any{}
	for _, c := range cs {
		out[c.(map[string]any)["name"].(string)] = c.(map[string]any)
	}
	return out
}

// rewriteArgs replaces the values of the flags in want (prefix → the value the chart must
// render) with upstream's loopback stand-ins: the rendered value is checked, then swapped for
// what this test runs.
func rewriteArgs(t *testing.T, args []string, want map[string]string, upstream string) []string {
	t.Helper()
	var out []string
	for _, a := range args {
		for prefix, v := range want {
			if !strings.HasPrefix(a, prefix) {
				continue
			}
			switch prefix {
			case "--upstream=":
				if a != prefix+v {
					t.Fatalf("the gate fronts %s, want %s", a, v)
				}
				a = prefix + "http://" + upstream
			default:
				a = prefix + v
			}
		}
		out = append(out, a)
	}
	return out
}

// runCLI runs the command until the test ends, and fails the test if it exits with an error.
func runCLI(t *testing.T, args ...string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var log testutil.SyncBuffer
	go func() { done <- cli.ExecuteContext(ctx, args, io.Discard, &log) }()
	t.Cleanup(func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("%s exited %d: %s", args[0], code, log.String())
		}
	})
}

func stringsOf(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestChartSiteRegistryServesUploads runs what the chart renders for the site registry: CNCF
// Distribution with the chart's configuration and generated account, the gate in front of it
// with the generated certificate and the upload bound, then the file server with its
// Deployment's arguments. Only what a pod has and this test has not is replaced: the mount
// paths of the Secrets and the volume, and the loopback addresses. An upload with the
// generated account succeeds, one without is refused, one over the bound is refused, and the
// file server serves the upload.
func TestChartSiteRegistryServesUploads(t *testing.T) {
	out, err := helm(t, "template", release, chart, "--namespace", namespace, "--set", "siteRegistry.tls.ipAddresses={127.0.0.1}",
		"--set", "siteRegistry.maxUploadSize=1Mi")
	if err != nil {
		t.Fatal(err)
	}
	objs := rendered(t, out)
	auth := secretData(t, objs, "bpa-workflow-controller-registry-auth")
	certs := secretData(t, objs, "bpa-workflow-controller-registry-tls")
	if len(auth["password"]) != 32 || string(auth["username"]) != "bpa" {
		t.Fatalf("generated account: user %q, a %d-character password", auth["username"], len(auth["password"]))
	}
	config, ok, _ := unstructured.NestedString(objs["ConfigMap/bpa-workflow-controller-registry"].Object, "data", "config.yml")
	if !ok {
		t.Fatal("no config.yml in the registry's ConfigMap")
	}
	regPod := containers(t, objs, "bpa-workflow-controller-registry")
	if args := stringsOf(regPod["registry"]["args"]); !slices.Equal(args, []string{"serve", "/etc/distribution/config.yml"}) {
		t.Fatalf("the registry container runs %v", args)
	}

	dir := t.TempDir()
	files := map[string][]byte{
		"config.yml": []byte(config), "tls.crt": certs["tls.crt"], "tls.key": certs["tls.key"],
		"ca.crt": certs["ca.crt"], "htpasswd": auth["htpasswd"],
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cas := x509.NewCertPool()
	if !cas.AppendCertsFromPEM(certs["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	// What the pod's mounts and environment give it. The registry listens on loopback, plain.
	if !strings.Contains(config, "addr: 127.0.0.1:5001") || strings.Contains(config, "tls:") {
		t.Fatalf("the registry's configuration does not keep it on the pod's loopback, without TLS:\n%s", config)
	}
	upstream := testregistry.Run(t, dir, filepath.Join(dir, "config.yml"), []string{
		"REGISTRY_AUTH_HTPASSWD_PATH=" + filepath.Join(dir, "htpasswd"),
		"REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY=" + filepath.Join(dir, "storage"),
		"REGISTRY_HTTP_SECRET=" + string(auth["http-secret"]),
	}, "http")
	// The gate as its container runs it: the Service's port is the gate's.
	addr := testutil.FreePort(t)
	runCLI(t, rewriteArgs(t, stringsOf(regPod["gate"]["args"]), map[string]string{
		"--upstream=":      "http://127.0.0.1:5001",
		"--listen=":        addr,
		"--tls-cert-file=": filepath.Join(dir, "tls.crt"),
		"--tls-key-file=":  filepath.Join(dir, "tls.key"),
	}, upstream)...)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cas, MinVersion: tls.VersionTLS12}}}
	testutil.Within(t, "the gate to answer /healthz over TLS", func() error {
		resp, err := hc.Get("https://" + addr + "/healthz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	})

	// An upload with the generated account and CA.
	bin := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(bin, bytes.Repeat([]byte("bpa\n"), 100_000), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BPA_REGISTRY_PASSWORD", string(auth["password"]))
	var stderr bytes.Buffer
	if code := cli.ExecuteContext(context.Background(), []string{"upload", "binary", "tool:1.0", bin, "--registry", addr,
		"--username", string(auth["username"]), "--ca-file", filepath.Join(dir, "ca.crt"), "--state-dir", t.TempDir()}, io.Discard, &stderr); code != 0 {
		t.Fatalf("upload with the chart's account: exit %d: %s", code, stderr.String())
	}
	anonymous, err := siteregistry.New(siteregistry.Config{Registry: addr, CAFile: filepath.Join(dir, "ca.crt")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := anonymous.PushFile(ctx, artifacts.Ref{Kind: artifacts.Binary, Name: "tool", Version: "2.0"}, bin, siteregistry.PushOptions{}); err == nil {
		t.Fatal("an anonymous push was accepted")
	}
	// A file over siteRegistry.maxUploadSize (1Mi here), with the account, is refused.
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("b"), 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := cli.ExecuteContext(context.Background(), []string{"upload", "binary", "big:1.0", big, "--registry", addr,
		"--username", string(auth["username"]), "--ca-file", filepath.Join(dir, "ca.crt"), "--state-dir", t.TempDir()}, io.Discard, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), "over the site registry's bound of 1.0 MiB (1048576 bytes)") {
		t.Fatalf("upload over the chart's bound: exit %d: %s", code, stderr.String())
	}

	// The file server as its Deployment runs it.
	fs := container(t, objs, "bpa-workflow-controller-files")
	listen := testutil.FreePort(t)
	var args []string
	for _, a := range stringsOf(fs["args"]) {
		switch {
		case strings.HasPrefix(a, "--registry="):
			if a != "--registry=bpa-workflow-controller-registry.bpa-system.svc:5000" {
				t.Fatalf("the file server reads %s", a)
			}
			a = "--registry=" + addr
		case strings.HasPrefix(a, "--ca-file="):
			a = "--ca-file=" + filepath.Join(dir, "ca.crt")
		case strings.HasPrefix(a, "--listen="):
			a = "--listen=" + listen
		}
		args = append(args, a)
	}
	env := map[string]string{}
	for _, e := range fs["env"].([]any) {
		ref, _, _ := unstructured.NestedString(e.(map[string]any), "valueFrom", "secretKeyRef", "key")
		env[e.(map[string]any)["name"].(string)] = string(auth[ref])
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	runCLI(t, args...)
	want, _ := os.ReadFile(bin)
	testutil.Within(t, "the file server serves the upload", func() error {
		resp, err := http.Get("http://" + listen + "/binaries/tool/1.0/tool")
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		got, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
			return fmt.Errorf("%s, %d bytes, %v", resp.Status, len(got), err)
		}
		return nil
	})
}

// TestChartOfflineArgs: the manager's offline arguments, from a site's values, are ones the
// controller takes, and compile a Provisioning offline against the file server's node port.
func TestChartOfflineArgs(t *testing.T) {
	out, err := helm(t, "template", release, chart, "--namespace", namespace, "--values", "testdata/site-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range stringsOf(container(t, rendered(t, out), "bpa-workflow-controller")["args"]) {
		if strings.HasPrefix(a, "--offline") {
			args = append(args, a)
		}
	}
	if len(args) != 3 {
		t.Fatalf("offline arguments %q, want --offline, --offline-mirror and --offline-kud-manifests", args)
	}
	p := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(p, []byte(`apiVersion: bpa.akraino.org/v1alpha1
kind: Provisioning
metadata: {name: edge, namespace: edge-a, labels: {cluster: edge}}
spec:
  masters: [{master-1: {mac-address: "52:54:00:00:00:01"}}]
  KUDPlugins: [multus]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := cli.ExecuteContext(context.Background(), append([]string{"compile", "-f", p}, args...), &stdout, &stderr); code != 0 {
		t.Fatalf("compile with the chart's offline arguments: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"--offline-mirror=http://10.10.0.2:30580", "--offline-kubespray-files=kubespray:v2.30.0", "http://10.10.0.2:30580/files/kud-plugins/2025.06/multus.yaml"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the Workflow lacks %q", want)
		}
	}
}
