// Package testregistry starts CNCF Distribution's registry (built by hack/control-plane.sh
// into bin/k8s) on 127.0.0.1 for a test, with its storage in the test's temporary directory:
// plain (Start), or as a site runs it, with TLS and htpasswd authentication (StartSecure).
package testregistry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

// Start runs the registry until the test ends and returns its host:port.
func Start(t testing.TB) string {
	t.Helper()
	return start(t, testinterrupt.TempDir(t), "", "http")
}

// start runs the registry with extra configuration (YAML under the top level) and waits for
// its /v2/ to answer (401 counts when authentication is on).
func start(t testing.TB, dir, extra, scheme string, clientOpts ...func(*http.Client)) string {
	t.Helper()
	config := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: 127.0.0.1:0
  secret: test-upload-state-secret
%s`, filepath.Join(dir, "storage"), extra)), 0o600); err != nil {
		t.Fatal(err)
	}
	return Run(t, dir, config, nil, scheme, clientOpts...)
}

// Run runs the registry on a configuration file as it is (a chart's, say) until the test ends,
// with env as extra environment (Distribution reads REGISTRY_<SECTION>_<KEY> over the file), on
// a free loopback port, and returns that host:port once /v2/ answers over scheme. Its log
// goes to dir.
func Run(t testing.TB, dir, config string, env []string, scheme string, clientOpts ...func(*http.Client)) string {
	t.Helper()
	bin := filepath.Join(testutil.RepoRoot(t), "bin", "k8s", "registry")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the registry is not built: run `make test-deps` (hack/control-plane.sh)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	logFile, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", config)
	cmd.Env = append(append(os.Environ(), env...), "REGISTRY_HTTP_ADDR="+addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logFile.Close()
		if t.Failed() {
			raw, _ := os.ReadFile(logFile.Name())
			t.Logf("registry log:\n%s", raw)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := &http.Client{}
	for _, o := range clientOpts {
		o(client)
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/v2/", nil)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return addr
			}
		}
		select {
		case <-exited:
			raw, _ := os.ReadFile(logFile.Name())
			t.Fatalf("the registry exited:\n%s", raw)
		case <-ctx.Done():
			t.Fatalf("the registry did not answer on %s within 20 s", addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
