package sshexec_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
)

// TestANodeThatDoesNotAnswerSaysWhichAndWhen: a node whose port refuses, or that accepts and
// never says a word (a server hung in its boot), is a NotAnsweringError naming its address, the
// timeout and the time it was tried, for both the scan pin-host-keys does and a step's login;
// an error that is not about answering (a wrong key) is not one.
func TestANodeThatDoesNotAnswerSaysWhichAndWhen(t *testing.T) {
	refused := closedPort(t)
	silent := silentListener(t)
	_, pinned := ed25519Key(t)
	const timeout = 300 * time.Millisecond
	stamp := regexp.MustCompile(`tried at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	for _, tc := range []struct {
		name, addr string
		try        func(addr string) error
	}{
		{"scan, refused", refused, func(addr string) error {
			_, err := sshexec.ScanHostKey(context.Background(), addr, nil, timeout)
			return err
		}},
		{"scan, silent", silent, func(addr string) error {
			_, err := sshexec.ScanHostKey(context.Background(), addr, nil, timeout)
			return err
		}},
		{"login, refused", refused, func(addr string) error {
			_, err := sshexec.Dial(context.Background(), loginConfig(t, addr, pinned, timeout), addr)
			return err
		}},
		{"login, silent", silent, func(addr string) error {
			_, err := sshexec.Dial(context.Background(), loginConfig(t, addr, pinned, timeout), addr)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now().Add(-time.Second)
			err := tc.try(tc.addr)
			var na *sshexec.NotAnsweringError
			if !errors.As(err, &na) || !sshexec.NotAnswering(err) {
				t.Fatalf("err = %v (%T), want a NotAnsweringError", err, err)
			}
			if na.Addr != tc.addr || na.At.Before(before) || na.At.After(time.Now()) || na.Timeout != timeout {
				t.Errorf("err = %+v, want %s tried now within %s", na, tc.addr, timeout)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.addr+" did not answer within 300ms") || !stamp.MatchString(msg) {
				t.Errorf("message %q does not say which address, the timeout and when", msg)
			}
		})
	}
	if sshexec.NotAnswering(&sshexec.HostKeyChangedError{Addr: silent}) || sshexec.NotAnswering(errors.New("exit 1")) {
		t.Errorf("errors that are not about answering are taken for one")
	}
}

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// silentListener accepts connections and never writes to them.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return l.Addr().String()
}

func loginConfig(t *testing.T, addr string, pinned ssh.PublicKey, timeout time.Duration) sshexec.Config {
	t.Helper()
	signer, _ := ed25519Key(t)
	return sshexec.Config{User: "bpa", Signer: signer, Keys: pins{addr: pinned}, Timeout: timeout}
}

func ed25519Key(t *testing.T) (ssh.Signer, ssh.PublicKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return signer, signer.PublicKey()
}
