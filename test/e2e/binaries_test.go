//go:build e2e

package e2e_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

// uploadBinary uploads random bytes as binaries/NAME:VERSION with `bpa-workflow-controller
// upload binary`, as an operator does, and returns the file's digest.
func (s *suite) uploadBinary(name, version string) string {
	s.t.Helper()
	data := make([]byte, 256<<10)
	_, _ = rand.Read(data)
	file := filepath.Join(s.scratch, "uploads", version, name)
	must(s.t, os.MkdirAll(filepath.Dir(file), 0o755))
	must(s.t, os.WriteFile(file, data, 0o600))
	s.t.Setenv("BPA_REGISTRY_PASSWORD", s.registry.Password)
	var out, errb bytes.Buffer
	if code := cli.ExecuteContext(ctx(), []string{"upload", "binary", name + ":" + version, file,
		"--registry", s.registry.Addr, "--username", s.registry.Username, "--ca-file", s.registry.CAFile,
		"--state-dir", filepath.Join(s.scratch, "upload-state"), "-o", "json"}, &out, &errb); code != 0 {
		s.t.Fatalf("upload binary %s:%s: exit %d: %s", name, version, code, errb.String())
	}
	var res struct{ FileDigest string }
	must(s.t, json.Unmarshal(out.Bytes(), &res))
	sum := sha256.Sum256(data)
	if res.FileDigest != "sha256:"+hex.EncodeToString(sum[:]) {
		s.t.Fatalf("upload says digest %s, the file's is %x", res.FileDigest, sum)
	}
	say(s.t, "uploaded binaries/%s:%s %s", name, version, res.FileDigest)
	return res.FileDigest
}

// checkBinary checks the file on master-1 (its digest and mode, as the node's own sha256sum and
// stat see them) and what the Software's status says of it.
func (s *suite) checkBinary(sw *bpav1.Software, path, version, digest string) {
	s.t.Helper()
	out, err := s.hosts[0].run("sudo -n sha256sum " + path + " && sudo -n stat -c %a " + path)
	must(s.t, err)
	if f := strings.Fields(out); len(f) != 3 || "sha256:"+f[0] != digest || f[2] != "755" {
		s.t.Errorf("%s on master-1: sha256sum and mode %q, want %s and 755", path, out, digest)
	}
	cur := &bpav1.Software{}
	must(s.t, s.c.Get(ctx(), client.ObjectKeyFromObject(sw), cur))
	for _, n := range cur.Status.Nodes {
		want := 0
		if n.Node == "master-1" {
			want = 1
		}
		if len(n.Binaries) != want {
			s.t.Errorf("node %s reports binaries %+v", n.Node, n.Binaries)
			continue
		}
		if want == 1 && (n.Binaries[0].Digest != digest || n.Binaries[0].Version != version || n.Binaries[0].Path != path) {
			s.t.Errorf("master-1 reports %+v, want tool %s %s at %s", n.Binaries[0], version, digest, path)
		}
	}
	say(s.t, "master-1 has %s %s: %s", path, version, digest)
}

// uploadFileSet uploads files (path → content) as the file set ref with `bpa-workflow-controller
// upload file-set`, as an operator does.
func (s *suite) uploadFileSet(ref string, files map[string]string) {
	s.t.Helper()
	dir := testutil.WriteTree(s.t, filepath.Join(s.scratch, "file-sets", ref), files)
	s.t.Setenv("BPA_REGISTRY_PASSWORD", s.registry.Password)
	var out, errb bytes.Buffer
	if code := cli.ExecuteContext(ctx(), []string{"upload", "file-set", ref, dir,
		"--registry", s.registry.Addr, "--username", s.registry.Username, "--ca-file", s.registry.CAFile,
		"--state-dir", filepath.Join(s.scratch, "upload-state")}, &out, &errb); code != 0 {
		s.t.Fatalf("upload file-set %s: exit %d: %s", ref, code, errb.String())
	}
	say(s.t, "uploaded %s", strings.TrimSpace(out.String()))
}
