package runkubespray_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// TestASilentNodeFailsItsTask: a node that stops answering in the middle of a task fails that
// task as UNREACHABLE instead of holding the run for ever. The real ansible-playbook, in
// run-kubespray's compiled environment (its keepalives shortened from minutes to seconds),
// runs a long task on a real sshd whose session processes are then stopped.
func TestASilentNodeFailsItsTask(t *testing.T) {
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatalf("ansible-playbook is missing: run `make test-deps` (Debian ansible-core)")
	}
	sshd := testsshd.Start(t)
	dir := t.TempDir()
	knownHosts := filepath.Join(dir, "known_hosts")
	write(t, knownHosts, sshd.KnownHostsLine())
	environ := testenv.KubesprayEnv(t, testutil.Provisioning(t, "provisioning-cluster-abc.yaml"), knownHosts, t.TempDir())
	shortened := false
	for i, e := range environ {
		if name, value, _ := strings.Cut(e, "="); name == "ANSIBLE_SSH_ARGS" && strings.Contains(value, runkubespray.SSHKeepAlive) {
			environ[i] = strings.Replace(e, runkubespray.SSHKeepAlive, " -o ServerAliveInterval=1 -o ServerAliveCountMax=3", 1)
			shortened = true
		}
	}
	if !shortened {
		t.Fatalf("run-kubespray's ANSIBLE_SSH_ARGS lack the keepalive %q:\n%s", runkubespray.SSHKeepAlive, strings.Join(environ, "\n"))
	}

	inventory, book := filepath.Join(dir, "hosts.ini"), filepath.Join(dir, "long.yml")
	write(t, inventory, fmt.Sprintf("node ansible_host=127.0.0.1 ansible_port=%d ansible_user=%s\n", sshd.Port, testsshd.User(t)))
	const task = "sleep 417"
	write(t, book, "- hosts: all\n  gather_facts: false\n  tasks:\n    - raw: "+task+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, playbook, "--inventory="+inventory, "--private-key="+sshd.ClientKeyFile, book)
	var out bytes.Buffer
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = environ, dir, &out, &out
	// Out of time, ansible-playbook goes with the ssh clients it started (its process group);
	// the shared connections they leave go with the server, when the test ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	// The node goes silent once the task runs on it.
	for !running(task) {
		select {
		case err := <-done:
			t.Fatalf("ansible-playbook ended before its task ran: %v\n%s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	sshd.Freeze()
	frozen := time.Now()
	err = <-done
	if ctx.Err() != nil {
		t.Fatalf("ansible-playbook still waited on the silent node %s after it stopped answering:\n%s", time.Since(frozen).Round(time.Second), out.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(out.String(), "UNREACHABLE") {
		t.Fatalf("ansible-playbook on a silent node: %v; want the node UNREACHABLE and the run failed\n%s", err, out.String())
	}
	t.Logf("the silent node failed its task %.1f s after it stopped answering (exit status %d)", time.Since(frozen).Seconds(), exit.ExitCode())
}

// running says whether a process runs command (its arguments joined by spaces).
func running(command string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Join(strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00"), " ") == command {
			return true
		}
	}
	return false
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
