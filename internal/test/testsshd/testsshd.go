// Package testsshd starts a real OpenSSH sshd on 127.0.0.1 for tests, with a temporary host
// key and authorized_keys, and stops it when the test ends.
package testsshd

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

// Binary is OpenSSH's server, from Debian's openssh-server (hack/install-test-deps.sh).
const Binary = "/usr/sbin/sshd"

// Server is a running sshd.
type Server struct {
	Dir  string
	Port int
	// HostKey is the public key the server presents.
	HostKey ssh.PublicKey
	// ClientKeyFile is a private key the server accepts (OpenSSH format).
	ClientKeyFile string
	// ClientKeyPEM is its content: what must never leak.
	ClientKeyPEM []byte
	cmd          *exec.Cmd
	env          map[string]string
	noSFTP       bool
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// KnownHostsLine is the server's line in an OpenSSH known_hosts file, as a client that dials Addr
// looks it up.
func (s *Server) KnownHostsLine() string {
	return fmt.Sprintf("[127.0.0.1]:%d %s", s.Port, ssh.MarshalAuthorizedKey(s.HostKey))
}

// User is the user a test server accepts ClientKeyFile for: the one running the test (root in
// CI).
func User(t testing.TB) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

// Dial logs in as User with the client key (ClientKeyPEM), pinning HostKey; the client closes
// with the test.
func (s *Server) Dial(t testing.TB) *ssh.Client {
	t.Helper()
	signer, err := ssh.ParsePrivateKey(s.ClientKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", s.Addr(), &ssh.ClientConfig{
		User: User(t), Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(s.HostKey), Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Start starts sshd, accepting ClientKeyFile for the current user (root in CI).
func Start(t *testing.T) *Server { return StartWithEnv(t, nil) }

// StartWithEnv starts sshd setting env in every session (sshd_config SetEnv), as a node's own
// configuration would: a test node's package system (APT_CONFIG, DPKG_ADMINDIR), say.
func StartWithEnv(t *testing.T, env map[string]string) *Server {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Fatalf("%s is missing: run `make test-deps` (Debian openssh-server)", Binary)
	}
	// sshd refuses to start without its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("creating /run/sshd: %v", err)
	}
	s := &Server{Dir: testinterrupt.TempDir(t), env: env}
	pemBytes, signer := newKey(t)
	s.ClientKeyPEM = pemBytes
	s.ClientKeyFile = filepath.Join(s.Dir, "id_ed25519")
	write(t, s.ClientKeyFile, pemBytes, 0o600)
	write(t, filepath.Join(s.Dir, "authorized_keys"), ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600)
	s.newHostKey(t)
	s.start(t)
	t.Cleanup(s.stop)
	return s
}

// StartWithoutSFTP starts sshd serving no sftp subsystem, as a node whose sshd_config lacks
// the Subsystem line.
func StartWithoutSFTP(t *testing.T) *Server {
	t.Helper()
	s := StartWithEnv(t, nil)
	s.stop()
	s.noSFTP = true
	s.start(t)
	return s
}

// RestartWithNewHostKey restarts the server with another host key, as a reinstalled node.
func (s *Server) RestartWithNewHostKey(t *testing.T) {
	t.Helper()
	s.stop()
	s.newHostKey(t)
	s.start(t)
}

// sessionEnv is env with HOME set to a folder of the server's own. The login shell of a session
// run by sshd reads ~/.bashrc, and the machine user's may do anything: root's runs pyenv's
// rehash, which waits a minute for its lock in every session once a session killed with its
// server (stop) has left that lock behind. A test node's home starts empty, like a new node's.
func (s *Server) sessionEnv(t *testing.T) map[string]string {
	home := filepath.Join(s.Dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home}
	for k, v := range s.env {
		env[k] = v
	}
	return env
}

func (s *Server) newHostKey(t *testing.T) {
	pemBytes, signer := newKey(t)
	write(t, filepath.Join(s.Dir, "host_ed25519"), pemBytes, 0o600)
	s.HostKey = signer.PublicKey()
}

func (s *Server) start(t *testing.T) {
	t.Helper()
	if s.Port == 0 { // a restart keeps its port: the node's address does not change
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s.Port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	config := Config(s.Addr(), filepath.Join(s.Dir, "host_ed25519"), filepath.Join(s.Dir, "authorized_keys")) + SetEnv(s.sessionEnv(t))
	if s.noSFTP {
		config = strings.Replace(config, "Subsystem sftp internal-sftp\n", "", 1)
	}
	cfg := filepath.Join(s.Dir, "sshd_config")
	write(t, cfg, []byte(config), 0o600)
	s.cmd = exec.Command(Binary, "-D", "-e", "-f", cfg)
	// Its log (the readiness probe below makes it complain) is shown only if it fails to start.
	logFile, err := os.Create(filepath.Join(s.Dir, "sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// Die with the test process, even when it is killed before its cleanups run.
	// Its own process group, so that stopping it ends its connections too, as a node going
	// down does (a client's shared connection must not outlive it).
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting sshd: %v", err)
	}
	if err := WaitListening(s.Addr(), 10*time.Second); err != nil {
		s.stop()
		log, _ := os.ReadFile(logFile.Name())
		t.Fatalf("%v; its log:\n%s", err, log)
	}
}

// Freeze stops (SIGSTOP) every process serving a connection, and what they run, as a node
// that stops answering: the connections stay open and the kernel still acknowledges what
// arrives, but nothing replies. Stop (or the test's end) ends them.
func (s *Server) Freeze() {
	for _, pid := range descendants(s.cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
}

// Stop stops the server and every connection it serves, as a node going down.
func (s *Server) Stop() { s.stop() }

func (s *Server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	// Session processes start sessions of their own (setsid): find them by parentage.
	for _, pid := range descendants(s.cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

func newKey(t *testing.T) ([]byte, ssh.Signer) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), signer
}

func write(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

// Config is the sshd_config of a test server: listening on addr (host:port), key-only root
// logins, no PAM, an SFTP subsystem (Ansible prefers it), quiet logs.
func Config(addr, hostKey, authorizedKeys string) string {
	return fmt.Sprintf(`ListenAddress %s
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
`, addr, hostKey, authorizedKeys)
}

// SetEnv is the sshd_config line setting env in every session ("" for none). sshd reads only
// the first SetEnv line, so every variable goes on this one.
func SetEnv(env map[string]string) string {
	if len(env) == 0 {
		return ""
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	line := "SetEnv"
	for _, k := range keys {
		line += " " + k + "=" + env[k]
	}
	return line + "\n"
}

// WaitListening waits until something accepts TCP connections on addr.
func WaitListening(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sshd is not listening on %s after %s: %w", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// descendants lists the processes below pid, from /proc.
func descendants(pid int) []int {
	parents, err := testutil.ParentPIDs()
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for child, ppid := range parents {
		children[ppid] = append(children[ppid], child)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, c := range children[next] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
