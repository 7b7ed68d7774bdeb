package testsshd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
)

// TestSessionsStartInTheServersOwnHome: a session's shell reads the startup files of a home
// of the server's own, never the machine user's (root's ~/.bashrc ran pyenv's rehash, which
// stalled every session for a minute once a killed one had left its lock), and the variables
// a test node sets still reach the session beside HOME.
func TestSessionsStartInTheServersOwnHome(t *testing.T) {
	sshd := testsshd.StartWithEnv(t, map[string]string{"NODE_VAR": "from-the-node"})
	home := filepath.Join(sshd.Dir, "home")
	// Debian's bash reads ~/.bashrc in a session sshd starts, interactive or not.
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("export READ_FROM=server-home\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := run(t, sshd, `echo "$HOME $NODE_VAR $READ_FROM"`)
	if want := home + " from-the-node server-home"; got != want {
		t.Fatalf("a session saw %q; want %q (HOME, the node's variable, what the server's own ~/.bashrc set)", got, want)
	}
}

func run(t *testing.T, sshd *testsshd.Server, command string) string {
	t.Helper()
	session, err := sshd.Dial(t).NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	out, err := session.CombinedOutput(command)
	if err != nil {
		t.Fatalf("%s: %v: %s", command, err, out)
	}
	return strings.TrimSpace(string(out))
}
