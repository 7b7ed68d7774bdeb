package sshexec_test

import (
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
)

func TestQuote(t *testing.T) {
	got, err := sshexec.Quote("sudo", "-n", "apt-get", "install", "--", "jq=1.6-2", "vim=2:9.0.1378-2", "libstdc++6", "pkg^1")
	if err != nil || got != `'sudo' '-n' 'apt-get' 'install' '--' 'jq=1.6-2' 'vim=2:9.0.1378-2' 'libstdc++6' 'pkg^1'` {
		t.Errorf("Quote = %s (%v)", got, err)
	}
	for _, bad := range []string{"", "a b", "a'b", "$(id)", "a;b", "`id`", "a|b", "a\nb", "a&b", "a>b", `a\b`, "a*"} {
		if _, err := sshexec.Quote("echo", bad); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("Quote(%q) = %v; want a refusal", bad, err)
		}
	}
}

func TestTrustedRefusesQuotes(t *testing.T) {
	if got := sshexec.Trusted(`${Package}\t`); got != `'${Package}\t'` {
		t.Errorf("Trusted = %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Trusted accepted a single quote")
		}
	}()
	sshexec.Trusted("it's")
}
