package stepcmd_test

import (
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// TestRootCommand: root runs the words as they are; any other login user through sudo without
// a prompt; a word that could carry shell syntax is refused.
func TestRootCommand(t *testing.T) {
	for _, tc := range []struct{ user, want string }{
		{"root", `'cat' '--' '/etc/kubernetes/admin.conf'`},
		{"ubuntu", `'sudo' '-n' 'LC_ALL=C' 'cat' '--' '/etc/kubernetes/admin.conf'`},
	} {
		if got, err := stepcmd.RootCommand(tc.user, "cat", "--", "/etc/kubernetes/admin.conf"); err != nil || got != tc.want {
			t.Errorf("as %s: %q, %v; want %q", tc.user, got, err, tc.want)
		}
	}
	if got, err := stepcmd.RootCommand("root", "cat", "/etc/x;reboot"); err == nil {
		t.Errorf("a word with a ';' was sent: %q", got)
	}
}
