package pod_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// TestHostileNodeOutputIsNotTrusted gives install-software a node (a real sshd) whose package
// tools print crafted output: packages it did not ask about, terminal escapes, a flood of
// stderr. The report holds only the asked packages' well-formed versions, and the failure's
// reason is one bounded, printable line.
func TestHostileNodeOutputIsNotTrusted(t *testing.T) {
	bin := t.TempDir()
	script := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script("dpkg-query", `printf 'jq\tii \t1.6\033]0;pwned\007\n'
printf 'curl\tii \t7.88.1-10\n'
printf 'evil;reboot\tii \t1.0\n'
`)
	script("apt-get", `case "$*" in *update*) exit 0;; esac
i=0; while [ $i -lt 20000 ]; do printf 'E: \033[31mflood %d\033[0m\n' $i >&2; i=$((i+1)); done
printf 'E: \033]0;pwned\007%s\n' "$(head -c 3000 /dev/zero | tr '\0' x)" >&2
exit 100
`)
	sshd := testsshd.StartWithEnv(t, map[string]string{"PATH": bin + ":/usr/bin:/bin"})
	ns := env.PinnedNamespace(t, sshd)
	ref := software(t, ns, []bpav1.SoftwarePackage{{Name: "curl"}, {Name: "jq"}})
	opts := pod.InstallOptions{SSH: stepcmd.SSHOptions{KeyFile: sshd.ClientKeyFile, Port: sshd.Port, Timeout: 10 * time.Second}}
	report, err := pod.Run(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
	if err == nil {
		t.Fatal("a node whose apt-get fails succeeded")
	}
	if strings.Join(report.Installed, " ") != "curl=7.88.1-10" || strings.Join(report.Unchanged, " ") != "curl=7.88.1-10" {
		t.Errorf("installed %v unchanged %v; want curl only (jq's version is not a version)", report.Installed, report.Unchanged)
	}
	if len(report.Failed) != 1 || report.Failed[0].Package != "jq" {
		t.Fatalf("failed %+v; want jq", report.Failed)
	}
	for _, msg := range []string{report.Failed[0].Reason, err.Error()} {
		if strings.ContainsAny(msg, "\x1b\x07\n") || strings.Contains(msg, "pwned") && strings.Contains(msg, "\x1b") || len(msg) > 2048 {
			t.Errorf("a message carries the node's escapes or is unbounded (%d bytes): %q", len(msg), msg)
		}
		if !strings.Contains(msg, "apt-get exited 100: E: ]0;pwnedxxxx") || !strings.HasSuffix(msg, "…") && !strings.Contains(msg, "…") {
			t.Errorf("the message %q does not say what failed, cut short", msg)
		}
	}
}
