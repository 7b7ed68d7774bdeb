package sshexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
)

// pins is a HostKeyStore in memory.
type pins map[string]ssh.PublicKey

func (p pins) Lookup(_ context.Context, addr string) (ssh.PublicKey, bool, error) {
	k, ok := p[addr]
	return k, ok, nil
}

func (p pins) Where(addr string) string { return "key " + addr + " of Secret ns/c-known-hosts" }

func dial(t *testing.T, sshd *testsshd.Server, keys pins) (*sshexec.Client, error) {
	t.Helper()
	signer, err := sshexec.LoadSigner(sshd.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sshexec.Config{User: testsshd.User(t), Signer: signer, Keys: keys, Timeout: 10 * time.Second}
	return sshexec.Dial(context.Background(), cfg, sshd.Addr())
}

// TestDialTrustsOnlyPinnedKeys: a step reaches a node only through the key pin-host-keys
// pinned for its address; an address without one is refused, naming it, not trusted on first
// use; a changed key names the pin to delete.
func TestDialTrustsOnlyPinnedKeys(t *testing.T) {
	sshd := testsshd.Start(t)
	_, err := dial(t, sshd, pins{})
	var unpinned *sshexec.NotPinnedError
	if !errors.As(err, &unpinned) || !strings.Contains(err.Error(), "no host key is pinned for "+sshd.Addr()) {
		t.Fatalf("an unpinned address: %v; want a NotPinnedError naming it", err)
	}

	other, _, _, _, err := ssh.ParseAuthorizedKey([]byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = dial(t, sshd, pins{sshd.Addr(): other})
	var changed *sshexec.HostKeyChangedError
	if !errors.As(err, &changed) || !strings.Contains(err.Error(), "delete key "+sshd.Addr()+" of Secret ns/c-known-hosts") {
		t.Fatalf("a changed key: %v; want a HostKeyChangedError naming the pin to delete", err)
	}

	node, err := dial(t, sshd, pins{sshd.Addr(): sshd.HostKey})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	out, err := node.Run(context.Background(), "'env'")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(out), "\nLC_ALL=C\n") {
		t.Errorf("a command's environment lacks LC_ALL=C:\n%s", out)
	}
}

// currentUser is the user the test's sshd accepts: the one running the tests.
// TestLostConnectionIsNotAnExit: a node that goes down under a command (a reboot, a power cut)
// is a lost connection, which the steps wait out, never mistaken for the command's failure;
// a command that exits non-zero is not a lost connection.
func TestLostConnectionIsNotAnExit(t *testing.T) {
	sshd := testsshd.Start(t)
	c, err := dial(t, sshd, pins{sshd.Addr(): sshd.HostKey})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Run(context.Background(), "false"); err == nil || sshexec.Lost(err) {
		t.Fatalf("false: %v; want an exit, not a lost connection", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), "sleep 30")
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the command runs
	sshd.Stop()
	select {
	case err := <-done:
		var exit *sshexec.ExitError
		if !sshexec.Lost(err) || errors.As(err, &exit) {
			t.Fatalf("the node went down under sleep: %v; want a lost connection", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command never returned after the node went down")
	}
	if _, err := c.Run(context.Background(), "true"); !sshexec.Lost(err) {
		t.Fatalf("a new session on a node that is down: %v; want a lost connection", err)
	}
}
