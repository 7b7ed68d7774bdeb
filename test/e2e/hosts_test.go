//go:build e2e

package e2e_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// testHost is a server as the end-to-end suite sees it: its own loopback address, a real
// OpenSSH sshd on port 22 of that address, and a private /etc/kubernetes (sshd runs in its own
// mount namespace), so each host has its own admin.conf and join marker.
type testHost struct {
	Name, IP, MAC string
	Dir           string // holds its /etc/kubernetes
	cmd           *exec.Cmd
}

// etcKubernetes is created as an empty mount point if missing, and removed at the end.
const etcKubernetes = "/etc/kubernetes"

// startHosts starts one sshd per host, accepting clientKey for root.
func startHosts(t *testing.T, clientKey ssh.PublicKey, hosts []*testHost) {
	t.Helper()
	if _, err := os.Stat(etcKubernetes); os.IsNotExist(err) {
		if err := os.Mkdir(etcKubernetes, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(etcKubernetes) })
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		h.Dir = t.TempDir()
		etc := filepath.Join(h.Dir, "etc-kubernetes")
		must(t, os.MkdirAll(etc, 0o755))
		hostKey := newPEMKey(t)
		must(t, os.WriteFile(filepath.Join(h.Dir, "host_ed25519"), hostKey, 0o600))
		must(t, os.WriteFile(filepath.Join(h.Dir, "authorized_keys"), ssh.MarshalAuthorizedKey(clientKey), 0o600))
		config := fmt.Sprintf(`ListenAddress %s:22
HostKey %s
AuthorizedKeysFile %s
PidFile none
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
Subsystem sftp internal-sftp
LogLevel ERROR
`, h.IP, filepath.Join(h.Dir, "host_ed25519"), filepath.Join(h.Dir, "authorized_keys"))
		must(t, os.WriteFile(filepath.Join(h.Dir, "sshd_config"), []byte(config), 0o600))
		log, err := os.Create(filepath.Join(h.Dir, "sshd.log"))
		must(t, err)
		h.cmd = exec.Command("unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
			`mount --bind "$1" /etc/kubernetes && exec /usr/sbin/sshd -D -e -f "$2"`, "sh", etc, filepath.Join(h.Dir, "sshd_config"))
		h.cmd.Stdout, h.cmd.Stderr = log, log
		must(t, h.cmd.Start())
		log.Close()
		host := h
		t.Cleanup(func() {
			_ = host.cmd.Process.Kill()
			_ = host.cmd.Wait()
		})
	}
	for _, h := range hosts {
		deadline := time.Now().Add(10 * time.Second)
		for {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(h.IP, "22"), 200*time.Millisecond)
			if err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(h.Dir, "sshd.log"))
				t.Fatalf("host %s: sshd not listening on %s:22: %v\n%s", h.Name, h.IP, err, log)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// file reads a file of the host's private /etc/kubernetes.
func (h *testHost) file(name string) string {
	raw, err := os.ReadFile(filepath.Join(h.Dir, "etc-kubernetes", name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}

func newPEMKey(t *testing.T) []byte {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	must(t, err)
	return pem.EncodeToMemory(block)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
