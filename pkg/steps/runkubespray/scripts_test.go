package runkubespray_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// TestScriptsPassShellcheck: every script of the step's folder, and every script as its pod
// runs it (with its playbook in the heredoc), passes shellcheck as POSIX sh, which /bin/sh -c
// runs them as.
func TestScriptsPassShellcheck(t *testing.T) {
	shellcheck, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck is missing: run hack/install-test-deps.sh")
	}
	files, err := filepath.Glob(filepath.Join("scripts", "*.sh"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in scripts/: %v", err)
	}
	dir := t.TempDir()
	for name, script := range map[string]string{
		"renew-certificates-as-run.sh": runkubespray.RenewCertificatesScript,
		"reset-failed-joins-as-run.sh": runkubespray.ResetFailedJoinsScript,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	for _, f := range files {
		if out, err := exec.Command(shellcheck, "--shell=sh", "--severity=style", f).CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", f, err, out)
		}
	}
}

// TestPlaybooksPassSyntaxCheck: the step's own playbooks pass ansible-playbook's syntax check
// (kubespray's images check them again with their own Ansible: TestKubesprayImage).
func TestPlaybooksPassSyntaxCheck(t *testing.T) {
	ansible, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Skip("ansible-playbook is missing: run hack/install-test-deps.sh")
	}
	files, err := filepath.Glob(filepath.Join("playbooks", "*.yml"))
	if err != nil || len(files) != 2 {
		t.Fatalf("playbooks/ holds %v, want the renewal's and the reset's: %v", files, err)
	}
	for _, f := range files {
		cmd := exec.Command(ansible, "--syntax-check", "--inventory=localhost,", f)
		cmd.Env = append(os.Environ(), "ANSIBLE_LOCAL_TEMP="+t.TempDir(), "HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("ansible-playbook --syntax-check %s: %v\n%s", f, err, out)
		}
	}
}

// TestScriptsWriteTheirPlaybooks: each script that runs one of the step's own playbooks writes
// it, whole, under the file name the image's syntax check and the tests use.
func TestScriptsWriteTheirPlaybooks(t *testing.T) {
	for _, tc := range []struct{ script, file, playbook string }{
		{runkubespray.RenewCertificatesScript, runkubespray.RenewCertificatesPlaybookFile, runkubespray.RenewCertificatesPlaybook},
		{runkubespray.ResetFailedJoinsScript, runkubespray.ResetFailedJoinsPlaybookFile, runkubespray.ResetFailedJoinsPlaybook},
	} {
		want := `playbook="${TMPDIR:-/tmp}/` + tc.file + "\"\ncat > \"$playbook\" <<'PLAYBOOK'\n" + tc.playbook + "PLAYBOOK\n"
		if !strings.Contains(tc.script, want) {
			t.Errorf("the script for %s does not write it whole:\n%s", tc.file, tc.script)
		}
	}
}
